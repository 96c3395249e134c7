#include "schema/group_queries.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace gpufault {

namespace {

/// Per incident: its fields, then facts over its member records (times, kinds, the first crash
/// frame, runs, hosts, sources, the first UTCL2/MC client). Hosts and lists are joined with
/// newlines (a host name has none).
constexpr const char* kIncidentFacts =
    "WITH mem AS (SELECT m.incident_id AS iid, e.* FROM incident_evidence m JOIN evidence e ON "
    "e.id = m.evidence_id WHERE m.role = 'member'), "
    "times AS (SELECT iid, wall_utc_us AS t FROM mem WHERE wall_utc_us IS NOT NULL UNION ALL "
    "SELECT mem.iid, c.time * 1000000 FROM mem JOIN cores c ON c.evidence_id = mem.id) "
    "SELECT i.id, ifnull(i.signature, ''), i.kind, i.vendor, i.reason, i.kernel, i.pid, "
    "i.process, "
    "(SELECT min(t) FROM times WHERE times.iid = i.id), "
    "(SELECT max(t) FROM times WHERE times.iid = i.id), "
    "(SELECT group_concat(k, ',') FROM (SELECT DISTINCT kind AS k FROM mem WHERE mem.iid = i.id "
    "ORDER BY k)), "
    "(SELECT json_extract(attrs, '$.frame') FROM mem WHERE mem.iid = i.id AND "
    "json_extract(attrs, '$.frame') IS NOT NULL ORDER BY mem.id LIMIT 1), "
    "(SELECT group_concat(r, char(10)) FROM (SELECT DISTINCT r.id AS r FROM mem JOIN runs r ON "
    "r.source_id = mem.source_id WHERE mem.iid = i.id)), "
    "(SELECT group_concat(h, char(10)) FROM (SELECT r.host AS h FROM mem JOIN runs r ON "
    "r.source_id = mem.source_id WHERE mem.iid = i.id AND ifnull(r.host, '') != '' UNION "
    "SELECT dv.host FROM mem JOIN evidence_device ed ON ed.evidence_id = mem.id JOIN devices dv "
    "ON dv.id = ed.device_id WHERE mem.iid = i.id AND dv.host != '')), "
    "(SELECT group_concat(s, char(10)) FROM (SELECT DISTINCT source_id AS s FROM mem WHERE "
    "mem.iid = i.id)), "
    "(SELECT client FROM mem WHERE mem.iid = i.id AND client IS NOT NULL ORDER BY mem.id LIMIT "
    "1) "
    "FROM incidents i ORDER BY i.id";

std::vector<std::string> lines(const std::optional<std::string>& s) {
    std::vector<std::string> out;
    if (!s) return out;
    std::istringstream in(*s);
    for (std::string l; std::getline(in, l);)
        if (!l.empty()) out.push_back(l);
    return out;
}

/// What the groups are counted from, besides the first incident's fields.
struct Sets {
    std::set<std::pair<int64_t, std::string>> processes;
    std::set<std::string> runs, hosts, sources;
};

}  // namespace

db::Result<std::vector<IncidentGroup>> queryIncidentGroups(db::Db& d, size_t examples) {
    auto s = d.prepare(kIncidentFacts);
    if (!s) return std::unexpected(s.error());
    std::vector<IncidentGroup> groups;
    std::vector<Sets> sets;
    std::map<std::string, size_t> index;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        int64_t id = s->i64(0);
        std::string sig = s->str(1);
        auto [it, added] = index.emplace(sig, groups.size());
        if (added) {
            IncidentGroup g;
            g.signature = sig;
            g.kind = s->str(2);
            g.vendor = s->optStr(3);
            g.reason = s->optStr(4);
            g.kernel = s->optStr(5);
            g.kinds = s->str(10);
            g.frame = s->optStr(11);
            g.client = s->optStr(15);
            groups.push_back(std::move(g));
            sets.emplace_back();
        }
        auto& g = groups[it->second];
        auto& set = sets[it->second];
        ++g.incidents;
        if (g.examples.size() < examples) g.examples.push_back(id);
        if (auto pid = s->optI64(6)) set.processes.emplace(*pid, s->optStr(7).value_or(""));
        if (auto t = s->optI64(8); t && (!g.first_us || *t < *g.first_us)) g.first_us = t;
        if (auto t = s->optI64(9); t && (!g.last_us || *t > *g.last_us)) g.last_us = t;
        for (auto& r : lines(s->optStr(12))) set.runs.insert(r);
        for (auto& h : lines(s->optStr(13))) set.hosts.insert(h);
        for (auto& x : lines(s->optStr(14))) set.sources.insert(x);
    }
    for (size_t k = 0; k < groups.size(); ++k) {
        groups[k].processes = static_cast<int64_t>(sets[k].processes.size());
        groups[k].runs = static_cast<int64_t>(sets[k].runs.size());
        groups[k].sources = static_cast<int64_t>(sets[k].sources.size());
        groups[k].hosts.assign(sets[k].hosts.begin(), sets[k].hosts.end());
    }
    // Stable: groups are in order of their first incident, which breaks ties.
    std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
        return a.incidents > b.incidents;
    });
    return groups;
}

}  // namespace gpufault
