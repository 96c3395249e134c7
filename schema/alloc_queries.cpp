#include "schema/alloc_queries.h"

#include <algorithm>

#include "schema/distance.h"

namespace gpufault {

db::Result<std::vector<AllocationDistanceRow>> queryIncidentAllocations(db::Db& d,
                                                                        int64_t incident) {
    // Each member record with an address against the allocations of the incident's processes:
    // the pid of any member record (a ROCr line without pid joined to an amdgpu record of pid P
    // is measured against P's allocations), and for a record without pid in a run's captured
    // output, that run's allocations.
    auto s = d.prepare(
        "WITH members AS (SELECT e.* FROM incident_evidence m JOIN evidence e ON e.id = "
        "m.evidence_id WHERE m.incident_id = ?1 AND m.role = 'member'), pids AS (SELECT DISTINCT "
        "pid FROM members WHERE pid IS NOT NULL) "
        "SELECT e.id, a.id, e.address, src.path, a.line, a.pid, a.kind, a.api, a.mem, a.device, "
        "a.wall_us, a.ptr, a.end, a.stack, a.free_api, a.freed_wall_us FROM members e JOIN "
        "allocations a ON a.pid IN (SELECT pid FROM pids) OR (e.pid IS NULL AND a.run_id IN "
        "(SELECT r.id FROM runs r WHERE r.source_id = e.source_id)) JOIN sources src ON src.id = "
        "a.source_id WHERE e.address IS NOT NULL ORDER BY e.id, a.line DESC");
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
