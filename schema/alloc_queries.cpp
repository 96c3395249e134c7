#include "schema/alloc_queries.h"

namespace gpufault {

db::Result<std::vector<AllocationDistanceRow>> queryIncidentAllocations(db::Db& d,
                                                                        int64_t incident) {
    auto s = d.prepare(
        "SELECT v.evidence_id, v.allocation_id, v.address, v.distance, v.from_ptr, v.inside, "
        "v.same_2mib, src.path, a.line, a.pid, a.kind, a.api, a.mem, a.device, a.wall_us, a.ptr, "
        "a.end, a.stack, a.free_api, a.freed_wall_us FROM fault_allocation_distance v JOIN "
        "allocations a ON a.id = v.allocation_id JOIN sources src ON src.id = a.source_id WHERE "
        "v.evidence_id IN (SELECT evidence_id FROM incident_evidence WHERE incident_id = ?1 AND "
        "role = 'member') ORDER BY v.evidence_id, abs(v.distance), a.line DESC");
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
        r.distance = s->i64(i++);
        r.from_ptr = s->i64(i++);
        r.inside = s->i64(i++) != 0;
        r.same_2mib = s->i64(i++) != 0;
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
        out.push_back(std::move(r));
    }
    return out;
}

}  // namespace gpufault
