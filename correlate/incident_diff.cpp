#include "correlate/incident_diff.h"

#include <unordered_map>

namespace gpufault {

namespace {

bool sameFields(const IncidentRecord& a, const IncidentRecord& b) {
    return a.kind == b.kind && a.vendor == b.vendor && a.address == b.address && a.pid == b.pid &&
           a.process == b.process && a.reason == b.reason && a.kernel == b.kernel &&
           a.signature == b.signature;
}

}  // namespace

size_t IncidentChanges::rows(const std::vector<IncidentRecord>& fresh) const {
    size_t n = drop.size() + drop_members.size() + update.size() + put.size();
    for (size_t i : add) n += 1 + fresh[i].members.size();
    return n;
}

IncidentChanges diffIncidents(const std::vector<StoredIncident>& stored,
                              const std::vector<IncidentRecord>& fresh) {
    IncidentChanges ch;
    std::unordered_map<int64_t, size_t> byFirst;  // first evidence → stored index
    for (size_t i = 0; i < stored.size(); ++i)
        if (!byFirst.emplace(stored[i].first_evidence, i).second) ch.drop.push_back(stored[i].id);
    std::vector<bool> matched(stored.size(), false);
    std::unordered_map<int64_t, const IncidentMember*> had;
    std::unordered_map<int64_t, bool> seen;
    for (size_t f = 0; f < fresh.size(); ++f) {
        const auto& inc = fresh[f];
        if (inc.members.empty()) continue;
        auto it = byFirst.find(inc.members.front().evidence_id);
        if (it == byFirst.end() || matched[it->second]) {
            ch.add.push_back(f);
            continue;
        }
        matched[it->second] = true;
        const auto& old = stored[it->second];
        if (!sameFields(old.record, inc)) ch.update.emplace_back(old.id, f);
        had.clear();
        for (const auto& m : old.record.members) had.emplace(m.evidence_id, &m);
        seen.clear();
        for (const auto& m : inc.members) {
            if (!seen.emplace(m.evidence_id, true).second) continue;
            auto h = had.find(m.evidence_id);
            if (h == had.end() || h->second->role != m.role || h->second->link != m.link)
                ch.put.emplace_back(old.id, m);
        }
        for (const auto& m : old.record.members)
            if (!seen.contains(m.evidence_id)) ch.drop_members.emplace_back(old.id, m.evidence_id);
    }
    for (size_t i = 0; i < stored.size(); ++i)
        if (!matched[i] && byFirst.at(stored[i].first_evidence) == i)
            ch.drop.push_back(stored[i].id);
    return ch;
}

}  // namespace gpufault
