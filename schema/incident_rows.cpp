#include "schema/incident_rows.h"

#include <unordered_map>

namespace gpufault {

db::Result<std::vector<StoredIncident>> loadIncidents(db::Db& d) {
    auto inc = d.prepare(
        "SELECT id, kind, vendor, address, pid, process, reason, kernel, signature, first_evidence "
        "FROM incidents "
        "ORDER BY id");
    if (!inc) return std::unexpected(inc.error());
    std::vector<StoredIncident> out;
    std::unordered_map<int64_t, size_t> at;
    for (;;) {
        auto row = inc->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        StoredIncident s;
        s.id = inc->i64(0);
        s.record.kind = inc->str(1);
        s.record.vendor = inc->optStr(2);
        if (auto a = inc->optI64(3)) s.record.address = static_cast<uint64_t>(*a);
        s.record.pid = inc->optI64(4);
        s.record.process = inc->optStr(5);
        s.record.reason = inc->optStr(6);
        s.record.kernel = inc->optStr(7);
        s.record.signature = inc->isNull(8) ? "" : inc->str(8);
        s.first_evidence = inc->i64(9);
        at.emplace(s.id, out.size());
        out.push_back(std::move(s));
    }
    // rowid order is the order replaceIncidents and IncidentWriter wrote them in.
    auto mem = d.prepare(
        "SELECT incident_id, evidence_id, role, link FROM incident_evidence ORDER BY rowid");
    if (!mem) return std::unexpected(mem.error());
    for (;;) {
        auto row = mem->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        auto it = at.find(mem->i64(0));
        if (it == at.end()) continue;
        out[it->second].record.members.push_back({mem->i64(1), mem->str(2), mem->str(3)});
    }
    return out;
}

db::Result<IncidentWriter> IncidentWriter::open(db::Db& d) {
    IncidentWriter w(d);
    auto prep = [&](db::Stmt& s, const char* sql) -> db::Result<void> {
        auto st = d.prepare(sql);
        if (!st) return std::unexpected(st.error());
        s = std::move(*st);
        return {};
    };
    for (auto r :
         {prep(w.dropMembers_, "DELETE FROM incident_evidence WHERE incident_id = ?1"),
          prep(w.dropRow_, "DELETE FROM incidents WHERE id = ?1"),
          prep(w.dropMember_,
               "DELETE FROM incident_evidence WHERE incident_id = ?1 AND evidence_id = ?2"),
          prep(w.update_,
               "UPDATE incidents SET kind = ?2, vendor = ?3, address = ?4, pid = ?5, "
               "process = ?6, reason = ?7, kernel = ?8, signature = ?9, "
               "first_evidence = ?10 WHERE id = ?1"),
          prep(w.put_,
               "INSERT OR REPLACE INTO incident_evidence(incident_id, evidence_id, role, "
               "link) VALUES(?1,?2,?3,?4)"),
          prep(w.add_,
               "INSERT INTO incidents(kind, vendor, address, pid, process, reason, "
               "kernel, signature, first_evidence) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)")})
        if (!r) return std::unexpected(r.error());
    return w;
}

db::Result<void> IncidentWriter::dropIncident(int64_t id) {
    dropMembers_.bind(1, id);
    if (auto r = dropMembers_.run(); !r) return r;
    dropRow_.bind(1, id);
    return dropRow_.run();
}

db::Result<void> IncidentWriter::dropMember(int64_t incident, int64_t evidence) {
    dropMember_.bind(1, incident).bind(2, evidence);
    return dropMember_.run();
}

db::Result<void> IncidentWriter::updateIncident(int64_t id, const IncidentRecord& r) {
    update_.bind(1, id).bind(2, r.kind).bind(3, r.vendor).bind(4, r.address).bind(5, r.pid);
    update_.bind(6, r.process).bind(7, r.reason).bind(8, r.kernel).bind(9, r.signature);
    update_.bind(10, r.members.empty() ? int64_t{0} : r.members.front().evidence_id);
    return update_.run();
}

db::Result<void> IncidentWriter::putMember(int64_t incident, const IncidentMember& m) {
    put_.bind(1, incident).bind(2, m.evidence_id).bind(3, m.role).bind(4, m.link);
    return put_.run();
}

db::Result<int64_t> IncidentWriter::addIncident(const IncidentRecord& r) {
    add_.bind(1, r.kind).bind(2, r.vendor).bind(3, r.address).bind(4, r.pid);
    add_.bind(5, r.process).bind(6, r.reason).bind(7, r.kernel).bind(8, r.signature);
    add_.bind(9, r.members.empty() ? int64_t{0} : r.members.front().evidence_id);
    if (auto x = add_.run(); !x) return std::unexpected(x.error());
    return d_->lastInsertId();
}

}  // namespace gpufault
