#include "schema/group_queries.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <utility>

namespace gpufault {

namespace {

/// The incidents, in id order.
constexpr const char* kIncidents =
    "SELECT id, ifnull(signature, ''), kind, vendor, reason, kernel, pid, process FROM incidents "
    "ORDER BY id";

/// Their member records, by incident then id: kind, time (the record's instant, else its core's),
/// crash frame, client, input, the runs (id TAB host) and device hosts of the record, joined
/// by newlines, and its Xid. One pass with index lookups (a subquery per incident over all members
/// was quadratic: 190 s for the 112 incidents of the real fixtures).
constexpr const char* kMembers =
    "SELECT m.incident_id, e.kind, ifnull(e.wall_utc_us, (SELECT c.time * 1000000 FROM cores c "
    "WHERE c.evidence_id = e.id)), json_extract(e.attrs, '$.frame'), e.client, e.source_id, "
    "(SELECT group_concat(r.id || char(9) || ifnull(r.host, ''), char(10)) FROM runs r WHERE "
    "r.source_id = e.source_id), "
    "(SELECT group_concat(dv.host, char(10)) FROM evidence_device ed JOIN devices dv ON dv.id = "
    "ed.device_id WHERE ed.evidence_id = e.id AND dv.host != ''), e.xid "
    "FROM incident_evidence m JOIN evidence e ON e.id = m.evidence_id WHERE m.role = 'member' "
    "ORDER BY m.incident_id, e.id";

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
    int64_t first = 0;  ///< the group's first incident: what makes the signature
    std::set<std::pair<int64_t, std::string>> processes;
    std::set<std::string> runs, hosts, sources;
    std::set<int64_t> timed;  ///< incidents with a member instant
};

}  // namespace

db::Result<std::vector<IncidentGroup>> queryIncidentGroups(db::Db& d, size_t examples) {
    auto s = d.prepare(kIncidents);
    if (!s) return std::unexpected(s.error());
    std::vector<IncidentGroup> groups;
    std::vector<Sets> sets;
    std::map<std::string, size_t> index;
    std::map<int64_t, size_t> groupOf;  // incident id -> group
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        int64_t id = s->i64(0);
        auto [it, added] = index.emplace(s->str(1), groups.size());
        if (added) {
            IncidentGroup g;
            g.signature = s->str(1);
            g.kind = s->str(2);
            g.vendor = s->optStr(3);
            g.reason = s->optStr(4);
            g.kernel = s->optStr(5);
            groups.push_back(std::move(g));
            sets.emplace_back().first = id;
        }
        groupOf[id] = it->second;
        auto& g = groups[it->second];
        ++g.incidents;
        if (g.examples.size() < examples) g.examples.push_back(id);
        if (auto pid = s->optI64(6))
            sets[it->second].processes.emplace(*pid, s->optStr(7).value_or(""));
    }
    auto m = d.prepare(kMembers);
    if (!m) return std::unexpected(m.error());
    std::map<int64_t, std::set<std::string>> kindsOf;  // first incident of a group: its kinds
    for (;;) {
        auto row = m->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        int64_t id = m->i64(0);
        auto at = groupOf.find(id);
        if (at == groupOf.end()) continue;  // stored between the two statements
        auto& g = groups[at->second];
        auto& set = sets[at->second];
        bool first = set.first == id;
        if (first) kindsOf[id].insert(m->str(1));
        if (auto t = m->optI64(2)) {
            if (!g.first_us || *t < *g.first_us) g.first_us = t;
            if (!g.last_us || *t > *g.last_us) g.last_us = t;
            set.timed.insert(id);
        }
        if (first && !g.frame) g.frame = m->optStr(3);
        if (first && !g.client) g.client = m->optStr(4);
        if (first && !g.xid) g.xid = m->optI64(8);
        set.sources.insert(std::to_string(m->i64(5)));
        for (auto& r : lines(m->optStr(6))) {
            auto tab = r.find('\t');
            set.runs.insert(r.substr(0, tab));
            if (tab != std::string::npos && tab + 1 < r.size()) set.hosts.insert(r.substr(tab + 1));
        }
        for (auto& h : lines(m->optStr(7))) set.hosts.insert(h);
    }
    for (size_t k = 0; k < groups.size(); ++k) {
        for (const auto& kind : kindsOf[sets[k].first])
            groups[k].kinds += (groups[k].kinds.empty() ? "" : ",") + kind;
        groups[k].processes = static_cast<int64_t>(sets[k].processes.size());
        groups[k].runs = static_cast<int64_t>(sets[k].runs.size());
        groups[k].sources = static_cast<int64_t>(sets[k].sources.size());
        groups[k].timed = static_cast<int64_t>(sets[k].timed.size());
        groups[k].hosts.assign(sets[k].hosts.begin(), sets[k].hosts.end());
    }
    // Stable: groups are in order of their first incident, which breaks ties.
    std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
        return a.incidents > b.incidents;
    });
    return groups;
}

}  // namespace gpufault
