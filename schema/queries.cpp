#include "schema/queries.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "schema/context_stream.h"
#include "schema/distance.h"
#include "schema/fault_nearest.h"
#include "schema/query_rows.h"

namespace gpufault {

using namespace query_rows;

namespace {

constexpr const char* kEvidenceColumns =
    "e.id, e.source_id, s.path, e.line, e.kind, e.vendor, e.kernel_s, e.wall, e.runtime_us, "
    "e.address, e.address_exact, e.pci, e.gpu_node, e.pid, e.process, e.tid, e.thread, "
    "e.runtime_tid, e.vmid, e.pasid, e.hub, e.retry, e.client, e.status, e.access, e.reason, "
    "e.xid, e.kernel, e.module, e.module_offset, e.rank, e.count, e.wall_utc_us, e.wall_zone, "
    "e.attrs, e.raw";
/// The same columns with raw left empty and of attrs only `journal_pid` and `stack` (what
/// correlation needs: the join, and a core's stack signature in the incident's signature; a
/// tenth of the memory). Columns of kEvidenceColumns: what a query selects after them starts
/// here.
constexpr int kEvidenceCount = 36;

/// SQL: the line of the last process-ending record (ROCr's fault: the runtime aborts) before
/// the record `e` (an alias) in its stream and rank, when neither states a pid; 0 when none.
/// A stream that states no pid holds one program's runs one after another: the operands and
/// dispatches before that line are an earlier process's (docs/correlation.md "Contradictions").
std::string processStartSql(std::string_view e) {
    return fmt::format(
        "ifnull((SELECT max(px.line) FROM evidence px WHERE px.source_id = {0}.source_id AND "
        "px.kind = 'rocr_memory_fault' AND px.pid IS NULL AND px.rank IS {0}.rank AND px.line < "
        "{0}.line AND {0}.pid IS NULL), 0)",
        e);
}
const std::string kEvidenceColumnsNoText =
    std::string(kEvidenceColumns).substr(0, std::string_view(kEvidenceColumns).find("e.attrs")) +
    "CASE WHEN instr(e.attrs, '\"journal_pid\"') > 0 OR instr(e.attrs, '\"stack\"') > 0 THEN "
    "json_object('journal_pid', json_extract(e.attrs, '$.journal_pid'), 'stack', "
    "json_extract(e.attrs, '$.stack')) END, ''";

std::optional<bool> optBool(const db::Stmt& s, int c) {
    return s.isNull(c) ? std::nullopt : std::optional<bool>(s.i64(c) != 0);
}

StoredEvidence readEvidence(const db::Stmt& s, int c0 = 0) {
    StoredEvidence r;
    int c = c0;
    r.id = s.i64(c++);
    r.source_id = s.i64(c++);
    r.source = s.str(c++);
    Evidence& e = r.e;
    e.line = static_cast<uint64_t>(s.i64(c++));
    e.kind = kindFromName(s.str(c++)).value_or(Kind::RuntimeError);
    e.vendor = s.optStr(c++);
    if (!s.isNull(c)) e.time.kernel_s = s.f64(c);
    ++c;
    e.time.wall = s.optStr(c++);
    e.time.runtime_us = s.optI64(c++);
    e.address = optU64(s, c++);
    e.address_exact = optBool(s, c++);
    e.pci = s.optStr(c++);
    e.gpu_node = s.optI64(c++);
    e.pid = s.optI64(c++);
    e.process = s.optStr(c++);
    e.tid = s.optI64(c++);
    e.thread = s.optStr(c++);
    e.runtime_tid = s.optStr(c++);
    e.vmid = s.optI64(c++);
    e.pasid = s.optI64(c++);
    e.hub = s.optStr(c++);
    e.retry = optBool(s, c++);
    e.client = s.optStr(c++);
    e.status = s.optI64(c++);
    e.access = s.optStr(c++);
    e.reason = s.optStr(c++);
    e.xid = s.optI64(c++);
    e.kernel = s.optStr(c++);
    e.module = s.optStr(c++);
    e.module_offset = optU64(s, c++);
    e.rank = s.optI64(c++);
    e.count = static_cast<uint32_t>(s.i64(c++));
    r.wall_utc_us = s.optI64(c++);
    r.wall_zone = s.optStr(c++);
    if (auto a = s.optStr(c++)) {
        auto j = nlohmann::json::parse(*a, nullptr, false);
        if (j.is_object())
            for (auto& [k, v] : j.items())
                if (!v.is_null())  // a key the lean columns ask for that this row lacks
                    e.attrs.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
    e.raw = s.str(c++);
    return r;
}

}  // namespace

db::Result<std::vector<StoredEvidence>> queryEvidence(db::Db& d, const EvidenceFilter& f) {
    // Records after an id (the daemon after each commit: `watch`, process snapshots) are a
    // range of rowids: NOT INDEXED makes SQLite read that range and sort it. Otherwise it walks
    // the whole identity index for the ORDER BY (seconds on a store of a million records,
    // at every commit of the daemon's loop).
    std::string sql = fmt::format(
        "SELECT {} FROM evidence e {} JOIN sources s ON s.id = e.source_id WHERE (?1 IS NULL OR "
        "e.kind = ?1) AND (?2 IS NULL OR s.path = ?2 OR substr(s.path, -length(?2) - 1) = '/' || "
        "?2 OR (?2 = '-' AND s.kind = 'stdin')) AND (?3 IS NULL OR e.id IN (SELECT "
        "evidence_id FROM incident_evidence WHERE incident_id = ?3 AND role != 'candidate')) AND "
        "{} "
        "ORDER BY e.source_id, e.line, e.id",
        f.with_text ? std::string(kEvidenceColumns) : kEvidenceColumnsNoText,
        f.after_id ? "NOT INDEXED" : "",
        f.after_id ? "e.id > ?4" : "?4 IS NULL");
    auto s = d.prepare(sql);
    if (!s) return std::unexpected(s.error());
    s->bind(1, f.kind).bind(2, f.source).bind(3, f.incident).bind(4, f.after_id);
    return collect<StoredEvidence>(*s, [](const db::Stmt& st) { return readEvidence(st); });
}

db::Result<std::vector<OperandRow>> queryOperands(db::Db& d) {
    auto s =
        d.prepare(fmt::format("SELECT {} FROM operands o {} ORDER BY o.source_id, o.line, o.id",
                              kOperandColumns,
                              kOperandJoins));
    if (!s) return std::unexpected(s.error());
    return collect<OperandRow>(*s, [](const db::Stmt& st) { return readOperand(st, 0); });
}

db::Result<std::vector<DispatchRow>> queryDispatches(db::Db& d) {
    auto s = d.prepare(
        "SELECT d.id, s.path, d.line, d.runtime_us, d.pid, d.runtime_tid, k.name, d.rank FROM "
        "dispatches d JOIN sources s ON s.id = d.source_id JOIN kernels k ON k.id = d.kernel_id "
        "ORDER BY d.source_id, d.line");
    if (!s) return std::unexpected(s.error());
    return collect<DispatchRow>(*s, readDispatch);
}

db::Result<std::vector<KernelCountRow>> queryKernelCounts(db::Db& d) {
    auto s = d.prepare(
        "SELECT k.name, c.pid, s.path, c.n, c.first_line, c.last_line FROM dispatch_counts c "
        "JOIN kernels k ON k.id = c.kernel_id JOIN sources s ON s.id = c.source_id "
        "ORDER BY c.n DESC, k.name");
    if (!s) return std::unexpected(s.error());
    return collect<KernelCountRow>(*s, [](const db::Stmt& st) {
        return KernelCountRow{st.str(0), st.optI64(1), st.str(2), st.i64(3), st.i64(4), st.i64(5)};
    });
}

db::Result<std::vector<CountRow>> queryEvidenceByGpu(db::Db& d) {
    auto s = d.prepare(
        "SELECT kind, coalesce(pci, 'node-' || gpu_node, ''), count(*) FROM evidence "
        "GROUP BY 1, 2 ORDER BY 1, 2");
    if (!s) return std::unexpected(s.error());
    return collect<CountRow>(*s, [](const db::Stmt& st) {
        return CountRow{st.str(0), st.str(1), st.i64(2)};
    });
}

db::Result<std::vector<RunRow>> queryRuns(db::Db& d, std::optional<int64_t> id) {
    auto s = d.prepare(
        "SELECT r.id, r.command, r.cwd, r.host, r.boot_id, r.started, r.ended, r.exit_status, "
        "r.signal, r.pid, r.pids, r.env, r.spool, r.source_id, (SELECT count(*) FROM evidence e "
        "WHERE e.source_id = r.source_id) FROM runs r WHERE ?1 IS NULL OR r.id = ?1 ORDER BY r.id");
    if (!s) return std::unexpected(s.error());
    s->bind(1, id);
    return collect<RunRow>(*s, [](const db::Stmt& st) {
        RunRow r;
        r.id = st.i64(0);
        r.run.command = st.str(1);
        r.run.cwd = st.str(2);
        r.run.host = st.str(3);
        r.run.boot_id = st.str(4);
        r.run.started = st.str(5);
        r.run.ended = st.optStr(6);
        r.run.exit_status = st.optI64(7);
        r.run.signal = st.optI64(8);
        r.run.pid = st.optI64(9);
        r.run.pids = st.str(10);
        r.run.env = st.str(11);
        r.run.spool = st.optStr(12);
        r.run.source_id = st.optI64(13);
        r.evidence = st.i64(14);
        return r;
    });
}

db::Result<std::vector<ProcessRow>> queryProcesses(db::Db& d, std::optional<int64_t> incident) {
    auto s = d.prepare(
        "SELECT id, pid, boot_id, taken_at, start_ticks, name, ppid, uid, nspid, cgroup, cmdline, "
        "evidence_id FROM processes p WHERE ?1 IS NULL OR p.evidence_id IN (SELECT evidence_id "
        "FROM incident_evidence WHERE incident_id = ?1 AND role = 'member') ORDER BY id");
    if (!s) return std::unexpected(s.error());
    s->bind(1, incident);
    auto rows = collect<ProcessRow>(*s, [](const db::Stmt& st) {
        ProcessRow r;
        r.id = st.i64(0);
        r.p.pid = st.i64(1);
        r.p.boot_id = st.str(2);
        r.p.taken_at = st.str(3);
        r.p.start_ticks = st.optI64(4);
        r.p.name = st.str(5);
        r.p.ppid = st.optI64(6);
        r.p.uid = st.optI64(7);
        r.p.nspid = st.str(8);
        r.p.cgroup = st.str(9);
        r.p.cmdline = st.str(10);
        r.p.evidence_id = st.optI64(11);
        return r;
    });
    if (!rows) return rows;
    auto m = d.prepare(
        "SELECT path, start, end, executable FROM process_modules WHERE process_id = ?1 "
        "ORDER BY start");
    if (!m) return std::unexpected(m.error());
    for (auto& r : *rows) {
        m->bind(1, r.id);
        for (;;) {
            auto row = m->step();
            if (!row) return std::unexpected(row.error());
            if (!*row) break;
            r.p.modules.push_back({m->str(0),
                                   static_cast<uint64_t>(m->i64(1)),
                                   static_cast<uint64_t>(m->i64(2)),
                                   m->i64(3) != 0});
        }
        m->reset();
    }
    return rows;
}

db::Result<DeviceHistory> queryDeviceHistory(db::Db& d, const std::string& pci) {
    DeviceHistory h;
    std::string cols = kEvidenceColumnsNoText;
    // "Last": in the log stored last (the source of the newest row), its last line. A parser
    // may store a held record after the records of later lines, so within one log the id is
    // not line order; across logs it is the only order the store knows.
    auto reset = d.prepare(fmt::format(
        "SELECT {} FROM evidence e JOIN sources s ON s.id = e.source_id WHERE e.pci = ?1 AND "
        "e.kind = 'gpu_reset' AND json_extract(e.attrs, '$.result') = 'succeeded' ORDER BY "
        "e.source_id = (SELECT x.source_id FROM evidence x WHERE x.pci = ?1 AND x.kind = "
        "'gpu_reset' AND json_extract(x.attrs, '$.result') = 'succeeded' ORDER BY x.id DESC "
        "LIMIT 1) DESC, e.line DESC, e.id DESC LIMIT 1",
        cols));
    if (!reset) return std::unexpected(reset.error());
    reset->bind(1, pci);
    auto r = reset->step();
    if (!r) return std::unexpected(r.error());
    // After the baseline: a later line of its own log (a parser may store a held reset after
    // the records of later lines), or a record stored after it from another log.
    int64_t after = 0;
    std::optional<int64_t> afterSource, afterLine;
    if (*r) {
        h.last_good_reset = readEvidence(*reset);
        after = h.last_good_reset->id;
        afterSource = h.last_good_reset->source_id;
        afterLine = static_cast<int64_t>(h.last_good_reset->e.line);
    }
    // The fault records after the baseline (same "last" as above), counted and the last one.
    auto faults = d.prepare(fmt::format(
        "WITH f AS (SELECT x.id, x.source_id, x.line FROM evidence x WHERE x.pci = ?1 AND (CASE "
        "WHEN x.source_id = ?3 THEN x.line > ?4 ELSE x.id > ?2 END) AND (x.kind IN "
        "('amdgpu_page_fault', 'nvidia_xid') OR (x.kind = 'gpu_reset' AND "
        "ifnull(json_extract(x.attrs, '$.result'), '') != 'succeeded' AND "
        "ifnull(json_extract(x.attrs, '$.trigger'), '') != 'reset_begin'))), "
        "last AS (SELECT f.id FROM f ORDER BY f.source_id = (SELECT source_id FROM f ORDER BY id "
        "DESC LIMIT 1) DESC, f.line DESC, f.id DESC LIMIT 1) "
        "SELECT {}, (SELECT count(*) FROM f) FROM evidence e JOIN sources s ON s.id = "
        "e.source_id WHERE e.id = (SELECT id FROM last)",
        cols));
    if (!faults) return std::unexpected(faults.error());
    faults->bind(1, pci).bind(2, after).bind(3, afterSource).bind(4, afterLine);
    auto f = faults->step();
    if (!f) return std::unexpected(f.error());
    if (*f) {
        h.last_fault = readEvidence(*faults);
        h.faults = faults->i64(faults->columns() - 1);
    }
    return h;
}

db::Result<int64_t> maxEvidenceId(db::Db& d) {
    auto s = d.prepare("SELECT ifnull(max(id), 0) FROM evidence");
    if (!s) return std::unexpected(s.error());
    auto row = s->step();
    if (!row) return std::unexpected(row.error());
    return s->i64(0);
}

db::Result<int64_t> maxIncidentEvidenceId(db::Db& d) {
    auto s = d.prepare("SELECT ifnull(max(evidence_id), 0) FROM incident_evidence");
    if (!s) return std::unexpected(s.error());
    auto row = s->step();
    if (!row) return std::unexpected(row.error());
    return s->i64(0);
}

db::Result<std::vector<CountRow>> queryIncidentsBySignature(db::Db& d) {
    auto s =
        d.prepare("SELECT kind, signature, count(*) FROM incidents GROUP BY 1, 2 ORDER BY 1, 2");
    if (!s) return std::unexpected(s.error());
    return collect<CountRow>(*s, [](const db::Stmt& st) {
        return CountRow{st.str(0), st.str(1), st.i64(2)};
    });
}

db::Result<std::vector<IncidentRow>> queryIncidents(db::Db& d, std::optional<int64_t> id) {
    auto s = d.prepare(
        "SELECT i.id, i.kind, i.vendor, i.address, i.pid, i.process, i.reason, i.kernel, "
        "i.signature, (SELECT count(*) FROM incident_evidence m WHERE m.incident_id = i.id AND "
        "m.role = 'member'), s.path, e.line, (SELECT group_concat(k, ',') FROM (SELECT DISTINCT "
        "e2.kind AS k FROM incident_evidence m2 JOIN evidence e2 ON e2.id = m2.evidence_id WHERE "
        "m2.incident_id = i.id AND m2.role = 'member' ORDER BY e2.kind)) FROM incidents i JOIN "
        "evidence e ON e.id = i.first_evidence JOIN sources s ON s.id = e.source_id WHERE ?1 IS "
        "NULL OR i.id = ?1 ORDER BY i.id");
    if (!s) return std::unexpected(s.error());
    s->bind(1, id);
    return collect<IncidentRow>(*s, [](const db::Stmt& st) {
        IncidentRow r;
        r.id = st.i64(0);
        r.kind = st.str(1);
        r.vendor = st.optStr(2);
        r.address = optU64(st, 3);
        r.pid = st.optI64(4);
        r.process = st.optStr(5);
        r.reason = st.optStr(6);
        r.kernel = st.optStr(7);
        r.signature = st.str(8);
        r.members = st.i64(9);
        r.source = st.str(10);
        r.line = st.i64(11);
        r.kinds = st.str(12);
        return r;
    });
}

db::Result<std::vector<IncidentMemberRow>> queryIncidentMembers(db::Db& d, int64_t incident) {
    auto s = d.prepare(fmt::format(
        "SELECT {}, m.role, m.link FROM incident_evidence m JOIN evidence e ON e.id = "
        "m.evidence_id JOIN sources s ON s.id = e.source_id WHERE m.incident_id = ?1 ORDER BY "
        "m.role DESC, e.source_id, e.line",
        kEvidenceColumns));
    if (!s) return std::unexpected(s.error());
    s->bind(1, incident);
    return collect<IncidentMemberRow>(*s, [](const db::Stmt& st) {
        IncidentMemberRow r;
        r.ev = readEvidence(st);
        r.role = st.str(kEvidenceCount);
        r.link = st.str(kEvidenceCount + 1);
        return r;
    });
}

db::Result<std::vector<DistanceRow>> queryIncidentDistances(
    db::Db& d,
    int64_t incident,
    size_t nearest,
    size_t latest,
    std::map<int64_t, int64_t>* totals,
    const std::map<int64_t, ContextStream>* context) {
    // Operands of the fault's own stream (the view), then operands of the incident's other
    // member streams: a kernel record (Xid 31, amdgpu) joined to a job's output by a process
    // link has its operands there. Across streams lines do not order: no rank in time, and
    // none is known to be logged after the fault. Both sides skip an operand of another
    // stated rank (the view does; the second here).
    auto s = d.prepare(fmt::format(
        "WITH members AS (SELECT evidence_id FROM incident_evidence WHERE incident_id = ?1 AND "
        "role = 'member'), member_sources AS (SELECT DISTINCT e.source_id FROM evidence e "
        "JOIN members m ON m.evidence_id = e.id) "
        "SELECT * FROM (SELECT v.evidence_id, v.address, v.distance AS dist, v.from_ptr, v.inside, "
        "v.same_2mib, "
        "v.rank_in_time, {0}, o.line AS oline, v.operand_line > v.fault_line FROM "
        "fault_operand_distance v JOIN operands o ON o.id = v.operand_id {1} JOIN evidence fe ON "
        "fe.id = v.evidence_id WHERE v.evidence_id = ?2 AND "
        "v.operand_line > {2} "
        "UNION ALL "
        "SELECT e.id, e.address, NULL, NULL, NULL, NULL, NULL, {0}, o.line, 0 FROM evidence e "
        "JOIN operands o ON o.source_id IN "
        "(SELECT source_id FROM member_sources) AND o.source_id != e.source_id AND (o.rank IS "
        "NULL OR e.rank IS NULL OR o.rank = e.rank) {1} WHERE e.id = ?2 AND e.address IS NOT "
        "NULL)",
        kOperandColumns,
        kOperandJoins,
        processStartSql("fe")));
    if (!s) return std::unexpected(s.error());
    // One member at a time: `v.evidence_id = ?` reaches into the view (its window partitions
    // by the fault); `IN (members)` made SQLite compute every fault × operand pair of the
    // store first (10 000 operands, 100 faults: seconds; hostile review 16, i2 H3).
    auto m = d.prepare(
        "SELECT evidence_id FROM incident_evidence WHERE incident_id = ?1 AND role = 'member' "
        "ORDER BY evidence_id");
    if (!m) return std::unexpected(m.error());
    m->bind(1, incident);
    auto member_ids = collect<int64_t>(*m, [](const db::Stmt& st) { return st.i64(0); });
    if (!member_ids) return std::unexpected(member_ids.error());
    // The distance fields of `r` from its address and operand span.
    auto measure = [](DistanceRow& r) {
        auto m = measureSpan(r.address, r.op.o.ptr, r.op.o.end);
        r.distance = m.distance;
        r.from_ptr = m.from_ptr;
        r.below = m.below;
        r.inside = m.inside;
        r.same_2mib = m.same_2mib;
    };
    auto read = [&measure](const db::Stmt& st) {
        DistanceRow r;
        r.evidence_id = st.i64(0);
        r.address = static_cast<uint64_t>(st.i64(1));
        r.rank_in_time = st.optI64(6);
        r.op = readOperand(st, 7);
        measure(r);
        r.after_fault = st.optI64(23).value_or(0) != 0;
        return r;
    };
    auto byDistance = [](const DistanceRow& x, const DistanceRow& y) {
        if (x.after_fault != y.after_fault) return y.after_fault;
        auto dx = distanceOrder(x.distance), dy = distanceOrder(y.distance);
        if (dx != dy) return dx < dy;
        // ties: by ORDER (rank in time before the fault; other streams' have none)
        if (x.rank_in_time.has_value() != y.rank_in_time.has_value())
            return x.rank_in_time.has_value();
        if (x.rank_in_time != y.rank_in_time) return *x.rank_in_time < *y.rank_in_time;
        return x.op.o.line < y.op.o.line;
    };
    auto byTime = [](const DistanceRow& x, const DistanceRow& y) {
        return x.rank_in_time.value_or(INT64_MAX) < y.rank_in_time.value_or(INT64_MAX);
    };
    // Keeps, per record, the `nearest` first by distance and the `latest` first by time.
    auto trim = [&](std::vector<DistanceRow>& rows) {
        std::stable_sort(rows.begin(), rows.end(), byDistance);
        if (rows.size() <= nearest) return;
        std::vector<DistanceRow> rest(std::make_move_iterator(rows.begin() + nearest),
                                      std::make_move_iterator(rows.end()));
        rows.resize(nearest);
        size_t k = std::min(latest, rest.size());
        std::partial_sort(rest.begin(), rest.begin() + static_cast<long>(k), rest.end(), byTime);
        rows.insert(rows.end(),
                    std::make_move_iterator(rest.begin()),
                    std::make_move_iterator(rest.begin() + static_cast<long>(k)));
        std::stable_sort(rows.begin(), rows.end(), byDistance);
    };
    std::map<int64_t, std::vector<DistanceRow>> per;
    std::map<int64_t, int64_t> counts;
    size_t cap = nearest == SIZE_MAX ? SIZE_MAX : 2 * (nearest + latest) + 64;
    for (int64_t member : *member_ids) {
        s->reset();
        s->bind(1, incident).bind(2, member);
        for (;;) {
            auto row = s->step();
            if (!row) return std::unexpected(row.error());
            if (!*row) break;
            auto r = read(*s);
            ++counts[r.evidence_id];
            auto& bucket = per[r.evidence_id];
            bucket.push_back(std::move(r));
            if (bucket.size() > cap) trim(bucket);
        }
        // The dispatch context's operands, measured against the member's address.
        if (!context) continue;
        auto c = context->find(member);
        if (c == context->end()) continue;
        auto a = contextProbeOf(d, member);
        if (!a) return std::unexpected(a.error());
        if (!*a) continue;
        auto each = forEachContextOperand(d, c->second, [&](OperandRow&& op) {
            DistanceRow r;
            r.evidence_id = member;
            r.address = (*a)->address;
            r.op = std::move(op);
            measure(r);
            ++counts[member];
            auto& bucket = per[member];
            bucket.push_back(std::move(r));
            if (bucket.size() > cap) trim(bucket);
        });
        if (!each) return std::unexpected(each.error());
    }
    std::vector<DistanceRow> out;
    for (auto& [id, rows] : per) {
        trim(rows);
        out.insert(out.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
    }
    std::stable_sort(out.begin(), out.end(), byDistance);
    if (totals) *totals = std::move(counts);
    return out;
}

db::Result<std::vector<DispatchRow>> queryIncidentDispatches(db::Db& d,
                                                             int64_t incident,
                                                             int limit) {
    // Only before the incident's first record of each stream (a dispatch logged after the
    // fault is no candidate for its kernel) and after the end of an earlier process there.
    auto s = d.prepare(fmt::format(
        "SELECT d.id, s.path, d.line, d.runtime_us, d.pid, d.runtime_tid, k.name, d.rank FROM "
        "dispatches d JOIN sources s ON s.id = d.source_id JOIN kernels k ON k.id = d.kernel_id "
        "WHERE d.id IN (SELECT d2.id FROM incident_evidence m JOIN evidence e ON e.id = "
        "m.evidence_id JOIN dispatches d2 ON d2.source_id = e.source_id AND d2.line < e.line AND "
        "d2.line > {} AND "
        "(d2.pid IS NULL OR e.pid IS NULL OR d2.pid = e.pid) AND (d2.rank IS NULL OR e.rank IS "
        "NULL OR d2.rank = e.rank) WHERE m.incident_id = ?1 AND m.role = 'member' AND NOT EXISTS "
        "(SELECT 1 FROM incident_evidence m3 JOIN evidence e3 ON e3.id = m3.evidence_id WHERE "
        "m3.incident_id = ?1 AND m3.role = 'member' AND e3.source_id = e.source_id AND e3.line < "
        "e.line)) ORDER BY d.source_id, d.line DESC LIMIT ?2",
        processStartSql("e")));
    if (!s) return std::unexpected(s.error());
    s->bind(1, incident).bind(2, static_cast<int64_t>(limit));
    return collect<DispatchRow>(*s, readDispatch);
}

std::optional<LastKernel> lastKernelOf(const std::vector<DispatchRow>& newestFirst) {
    if (newestFirst.empty()) return std::nullopt;
    const DispatchRow& top = newestFirst.front();
    LastKernel k{top.d.kernel, {}};
    for (const auto& r : newestFirst) {
        if (r.source != top.source || !r.d.pid) continue;
        bool close = r.d.time.runtime_us && top.d.time.runtime_us
                         ? *top.d.time.runtime_us - *r.d.time.runtime_us <= 2000000
                         : top.d.line - r.d.line <= 50;
        if (!close) continue;
        auto seen = std::find_if(k.by_process.begin(), k.by_process.end(), [&](const auto& p) {
            return p.first == *r.d.pid;
        });
        if (seen == k.by_process.end()) k.by_process.emplace_back(*r.d.pid, r.d.kernel);
    }
    return k;
}

db::Result<std::map<int64_t, LastKernel>> queryLastKernels(
    db::Db& d, const std::vector<int64_t>& evidence, std::map<int64_t, ContextStream>* contexts) {
    // The pairing of queryIncidentDispatches(), for one record: its stream's dispatches before
    // its line, of its pid and rank where both state one (newest first, via the index on
    // (source_id, line)).
    // The record (stream, line, pid, rank, address); then its dispatches by the index on
    // (source_id, line), newest first, after an earlier process's end in a stream that states
    // no pid (as queryIncidentDispatches() has it; the ends read once, not a subquery per
    // record over the stream's evidence).
    auto head = d.prepare(
        "SELECT e.source_id, e.line, e.pid, e.rank, e.address FROM evidence e WHERE e.id = ?1");
    if (!head) return std::unexpected(head.error());
    auto ends = queryRunEnds(d);
    if (!ends) return std::unexpected(ends.error());
    auto s = d.prepare(
        "SELECT d.id, s.path, d.line, d.runtime_us, d.pid, d.runtime_tid, k.name, d.rank FROM "
        "dispatches d JOIN sources s ON s.id = d.source_id JOIN kernels k ON k.id = d.kernel_id "
        "WHERE d.source_id = ?1 AND d.line < ?2 AND d.line > ?3 AND (d.pid IS NULL OR ?4 IS "
        "NULL OR d.pid = ?4) AND (d.rank IS NULL OR ?5 IS NULL OR d.rank = ?5) ORDER BY d.line "
        "DESC LIMIT ?6");
    if (!s) return std::unexpected(s.error());
    std::map<int64_t, LastKernel> out;
    std::vector<ContextProbe> probes;  // records whose stream dispatched nothing before them
    for (int64_t id : evidence) {
        head->reset();
        head->bind(1, id);
        auto found = head->step();
        if (!found) return std::unexpected(found.error());
        if (!*found) continue;
        const int64_t source = head->i64(0);
        const auto line = static_cast<uint64_t>(head->i64(1));
        const std::optional<int64_t> pid = head->optI64(2), rank = head->optI64(3),
                                     address = head->optI64(4);
        s->reset();
        s->bind(1, source)
            .bind(2, line)
            .bind(3, pid ? 0 : runStart(*ends, source, rank, line))
            .bind(4, pid)
            .bind(5, rank)
            .bind(6, static_cast<int64_t>(kLastKernelWindow));
        auto rows = collect<DispatchRow>(*s, readDispatch);
        if (!rows) return std::unexpected(rows.error());
        if (auto k = lastKernelOf(*rows)) {
            out.emplace(id, std::move(*k));
            continue;
        }
        if (address) probes.push_back({id, source, static_cast<uint64_t>(*address), rank});
    }
    auto matches = queryContextStreams(d, probes);
    if (!matches) return std::unexpected(matches.error());
    for (const auto& [id, m] : *matches) {
        const ContextStream* c = m.chosen();
        if (!c) continue;
        if (contexts) contexts->emplace(id, *c);  // its operands count even without dispatches
        auto rows = queryContextDispatches(d, *c, kLastKernelWindow);
        if (!rows) return std::unexpected(rows.error());
        if (auto k = lastKernelOf(*rows)) out.emplace(id, std::move(*k));
    }
    return out;
}

db::Result<std::vector<FaultRow>> queryFaults(db::Db& d) {
    auto s = d.prepare(fmt::format(
        "SELECT {0}, (SELECT incident_id FROM incident_evidence m WHERE m.evidence_id = e.id AND "
        "m.role = 'member'), {1} FROM evidence e JOIN sources s ON s.id = e.source_id WHERE "
        "e.kind IN ('amdgpu_page_fault', 'rocr_memory_fault', 'nvidia_xid', 'sanitizer_report', "
        "'cpu_segfault', 'coredump') ORDER BY e.source_id, e.line, e.id",
        kEvidenceColumns,
        processStartSql("e")));
    if (!s) return std::unexpected(s.error());
    std::vector<NearestProbe> probes;
    auto rows = collect<FaultRow>(*s, [&probes](const db::Stmt& st) {
        FaultRow r;
        r.ev = readEvidence(st);
        r.incident = st.optI64(kEvidenceCount);
        if (r.ev.e.address)
            probes.push_back(NearestProbe{r.ev.id,
                                          r.ev.source_id,
                                          r.ev.e.line,
                                          *r.ev.e.address,
                                          r.ev.e.pid,
                                          r.ev.e.rank,
                                          static_cast<uint64_t>(st.i64(kEvidenceCount + 1))});
        return r;
    });
    if (!rows) return rows;
    // The nearest operand in C++, one pass over each stream's operands: the view's fault ×
    // operand join with its window took 4.7 s for 100 faults × 10 000 operands.
    auto nearest = nearestOperands(d, probes);
    if (!nearest) return std::unexpected(nearest.error());
    std::vector<int64_t> ids;
    for (const auto& r : *rows) ids.push_back(r.ev.id);
    std::map<int64_t, ContextStream> contexts;
    auto last = queryLastKernels(d, ids, &contexts);
    if (!last) return std::unexpected(last.error());
    // A fault with a dispatch context: the nearer of its own stream's operand and the
    // context's (as `show` puts both in one table).
    std::vector<NearestProbe> moved;
    for (const auto& p : probes) {
        auto c = contexts.find(p.evidence_id);
        if (c == contexts.end()) continue;
        moved.push_back(NearestProbe{p.evidence_id,
                                     c->second.source_id,
                                     std::min<uint64_t>(c->second.before_line - 1, INT64_MAX),
                                     p.address,
                                     c->second.pid,
                                     c->second.rank ? c->second.rank : p.rank,
                                     c->second.after_line});
    }
    auto viaContext = nearestOperands(d, moved);
    if (!viaContext) return std::unexpected(viaContext.error());
    for (auto& [id, n] : *viaContext) {
        auto own = nearest->find(id);
        if (own == nearest->end() || nearerThan(n, own->second)) (*nearest)[id] = std::move(n);
    }
    for (auto& r : *rows) {
        auto n = nearest->find(r.ev.id);
        if (n == nearest->end()) continue;
        r.nearest = n->second.name;
        r.nearest_distance = n->second.distance;
        r.nearest_inside = n->second.inside;
        r.nearest_after = n->second.after;
    }
    for (auto& r : *rows) {
        auto k = last->find(r.ev.id);
        if (k == last->end()) continue;
        if (k->second.ambiguous())
            r.kernel_candidates = k->second.by_process;
        else
            r.last_kernel = k->second.kernel;
    }
    return rows;
}

namespace {
/// Refuses, at prepare time, functions whose result leaks the process's memory layout:
/// `fts3_tokenizer('simple')` returns the address of a tokenizer module (a pointer into the
/// SQLite library), which a query's output would hand to whoever reads it.
int refuseLeakyFunctions(
    void*, int action, const char*, const char* function, const char*, const char*) {
    if (action == SQLITE_FUNCTION && function && sqlite3_stricmp(function, "fts3_tokenizer") == 0)
        return SQLITE_DENY;
    return SQLITE_OK;
}
}  // namespace

db::Result<Table> runQuery(db::Db& d, const std::string& sql, double timeout_s) {
    sqlite3_set_authorizer(d.handle(), refuseLeakyFunctions, nullptr);
    auto s = d.prepareOne(sql);
    sqlite3_set_authorizer(d.handle(), nullptr, nullptr);
    if (!s) return std::unexpected(s.error());
    if (!s->readonly())
        return std::unexpected(db::Error{"query is read-only: this statement would write"});
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(timeout_s));
    d.setDeadline(deadline);
    Table t;
    for (int c = 0; c < s->columns(); ++c) t.columns.emplace_back(s->columnName(c));
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        std::vector<std::optional<std::string>> cells;
        std::vector<int> types;
        for (int c = 0; c < s->columns(); ++c) {
            types.push_back(s->columnType(c));
            cells.push_back(s->optStr(c));
        }
        t.rows.push_back(std::move(cells));
        t.types.push_back(std::move(types));
    }
    return t;
}

}  // namespace gpufault
