#include "schema/alloc_queries.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "schema/distance.h"

namespace gpufault {

namespace {

/// The recording processes the members of an incident (CTE `members`) join: their
/// fault_alloc_process rows, less an `only recording` row (a record without a clock) when a
/// member of the same pid with a clock (wall or kernel time) does not join that recording: the
/// clocked record of the fault decides (hostile review 4, E).
constexpr std::string_view kCover =
    "cover AS (SELECT f.* FROM members w JOIN fault_alloc_process f ON f.evidence_id = w.id "
    "WHERE f.how <> 'only recording' OR NOT EXISTS (SELECT 1 FROM members w2 JOIN fault_clock "
    "c2 ON c2.evidence_id = w2.id WHERE c2.pid = w.pid AND (c2.wall_us IS NOT NULL OR "
    "c2.mono_us IS NOT NULL) AND NOT EXISTS (SELECT 1 FROM fault_alloc_process f2 WHERE "
    "f2.evidence_id = w2.id AND f2.alloc_process_id = f.alloc_process_id)))";

/// `WITH members AS (the member records of incident ?1), cover AS (kCover), ` and `rest`.
std::string withMembers(std::string_view rest) {
    std::string sql =
        "WITH members AS (SELECT e.* FROM incident_evidence m JOIN evidence e ON e.id = "
        "m.evidence_id WHERE m.incident_id = ?1 AND m.role = 'member'), ";
    sql += kCover;
    sql += ", ";
    sql += rest;
    return sql;
}

}  // namespace

db::Result<std::vector<AllocationDistanceRow>> queryIncidentAllocations(db::Db& d,
                                                                        int64_t incident) {
    // Each member record with an address against the allocations of the incident's process:
    // the recording process that held a member record's pid at that record's time (a ROCr line
    // without pid joined to an amdgpu record of pid P is measured against P's), and for a
    // record in a run's captured output, that run's allocations (kCover: a member with a clock
    // decides for its pid over one without).
    auto s = d.prepare(withMembers(
        "pairs AS (SELECT "
        "e.id AS eid, a.id AS aid, CASE WHEN a.free_line IS NULL THEN 0 WHEN c.clock = 'mono' AND "
        "a.freed_mono_us IS NOT NULL THEN a.freed_mono_us < c.fault_lo_us WHEN c.clock = 'wall' "
        "AND a.freed_wall_us < c.fault_lo_us THEN 1 WHEN c.clock = 'wall' AND a.freed_wall_us > "
        "c.fault_hi_us THEN 0 END AS freed_before, c.how AS how, CASE WHEN r.ended_by IS NOT 'exec' "
        "THEN 0 WHEN c.clock = 'mono' AND r.ended_mono_us IS NOT NULL THEN r.ended_mono_us < "
        "c.fault_lo_us WHEN c.clock = 'wall' AND r.ended_wall_us < c.fault_lo_us THEN 1 WHEN "
        "c.clock = 'wall' AND r.ended_wall_us > c.fault_hi_us THEN 0 END AS exec_before FROM "
        "members e JOIN cover c JOIN "
        "alloc_processes r ON r.id = c.alloc_process_id JOIN allocations a ON a.source_id = "
        "r.source_id AND a.pid = r.pid AND a.start_line = r.line WHERE e.address IS NOT NULL AND "
        "(c.clock IS NULL OR c.clock = 'mono' AND (a.mono_us IS NULL OR a.mono_us <= "
        "c.fault_hi_us) OR c.clock = 'wall' AND (a.wall_us IS NULL OR a.wall_us <= "
        "c.fault_hi_us)) UNION ALL SELECT e.id, a.id, CASE WHEN a.free_line IS NULL THEN 0 END, "
        "'run', CASE WHEN EXISTS (SELECT 1 FROM alloc_processes q WHERE q.source_id = a.source_id "
        "AND q.pid = a.pid AND q.line = a.start_line AND q.ended_by = 'exec') THEN NULL ELSE 0 "
        "END FROM members e JOIN runs rn ON rn.source_id = e.source_id JOIN allocations a ON "
        "a.run_id = rn.id WHERE e.address IS NOT NULL AND (e.pid IS NULL OR a.pid = e.pid)) "
        "SELECT e.id, a.id, e.address, src.path, a.line, a.pid, a.kind, a.api, a.mem, a.device, "
        "a.wall_us, a.ptr, a.end, a.stack, a.free_api, a.freed_wall_us, p.freed_before, p.how, "
        "EXISTS (SELECT 1 FROM alloc_processes q WHERE q.source_id = a.source_id AND q.pid = "
        "a.pid AND q.line = a.start_line AND q.ended_by = 'exec'), (SELECT fs.path || ':' || "
        "a.free_line FROM sources fs WHERE fs.id = a.free_source_id), p.exec_before FROM pairs p JOIN evidence "
        "e ON e.id = p.eid JOIN allocations a ON a.id = p.aid JOIN sources src ON src.id = "
        "a.source_id ORDER BY e.id, a.line DESC, a.id, p.how = 'run' DESC"));
    if (!s) return std::unexpected(s.error());
    s->bind(1, incident);
    std::vector<AllocationDistanceRow> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        AllocationDistanceRow r;
        int i = 0;
        r.evidence_id = s->i64(i++);
        r.allocation_id = s->i64(i++);
        r.address = static_cast<uint64_t>(s->i64(i++));
        r.source = s->str(i++);
        r.line = s->i64(i++);
        r.pid = s->i64(i++);
        r.kind = s->str(i++);
        r.api = s->str(i++);
        r.mem = s->optStr(i++);
        r.device = s->optI64(i++);
        r.wall_us = s->optI64(i++);
        r.ptr = static_cast<uint64_t>(s->i64(i++));
        r.end = static_cast<uint64_t>(s->i64(i++));
        r.stack = s->optStr(i++);
        r.free_api = s->optStr(i++);
        r.freed_wall_us = s->optI64(i++);
        if (auto fb = s->optI64(i++)) r.freed_before = *fb != 0;
        r.how = s->str(i++);
        r.exec_replaced = s->i64(i++) != 0;
        r.free_elsewhere = s->optStr(i++);
        auto eb = s->optI64(i++);
        r.exec_before = eb ? std::optional<bool>(*eb != 0) : std::nullopt;
        // one row per (record, allocation): a run's pairing first, then the first witness's
        if (!out.empty() && out.back().evidence_id == r.evidence_id &&
            out.back().allocation_id == r.allocation_id)
            continue;
        auto m = measureSpan(r.address, r.ptr, r.end);
        r.distance = m.distance;
        r.from_ptr = m.from_ptr;
        r.below = m.below;
        r.inside = m.inside;
        r.same_2mib = m.same_2mib;
        out.push_back(std::move(r));
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
        if (x.evidence_id != y.evidence_id) return x.evidence_id < y.evidence_id;
        return distanceOrder(x.distance) < distanceOrder(y.distance);
    });  // ties keep the query's order: newest line first
    return out;
}

}  // namespace gpufault
