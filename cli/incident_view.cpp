#include "cli/incident_view.h"

#include <fmt/format.h>

#include "cli/output.h"
#include "collectors/common/evidence_json.h"

namespace gpufault::cli {

nlohmann::json evidenceJson(const StoredEvidence& s) {
    nlohmann::json j = toJson(s.e);
    if (s.e.time.wall) {  // the instant the store derived (docs/evidence.md "Wall time")
        j["time"]["wall_utc_us"] = s.wall_utc_us ? nlohmann::json(*s.wall_utc_us) : nullptr;
        j["time"]["wall_zone"] = s.wall_zone ? nlohmann::json(*s.wall_zone) : nullptr;
    }
    j["id"] = s.id;
    j["source"] = s.source;
    return j;
}

std::optional<IncidentView> loadIncident(db::Db& d, int64_t id, int dispatches, bool& missing) {
    missing = false;
    auto fail = [](const db::Error& e) {
        printText(stderr, "gpufault: {}\n", e.message);
        return std::nullopt;
    };
    auto inc = queryIncidents(d, id);
    if (!inc) return fail(inc.error());
    if (inc->empty()) {
        missing = true;
        printText(stderr, "gpufault: no incident {} (see `gpufault incidents`)\n", id);
        return std::nullopt;
    }
    IncidentView v;
    v.incident = inc->front();
    auto m = queryIncidentMembers(d, id);
    if (!m) return fail(m.error());
    v.members = std::move(*m);
    auto dist = queryIncidentDistances(d, id, kNearestOperands, kLatestOperands, &v.operand_totals);
    if (!dist) return fail(dist.error());
    v.distances = std::move(*dist);
    auto disp = queryIncidentDispatches(d, id, dispatches);
    if (!disp) return fail(disp.error());
    v.dispatches = std::move(*disp);
    auto window = queryIncidentDispatches(d, id, kLastKernelWindow);
    if (!window) return fail(window.error());
    v.last = lastKernelOf(*window);
    auto al = queryIncidentAllocations(d, id);
    if (!al) return fail(al.error());
    v.allocations = std::move(*al);
    auto miss = queryAllocationMisses(d, id, !v.allocations.empty());
    if (!miss) return fail(miss.error());
    v.misses = std::move(*miss);
    return v;
}

namespace {

/// The member whose address is the incident's address (the first such record).
std::optional<int64_t> primaryRecord(const IncidentView& v) {
    for (const auto& m : v.members)
        if (m.role == "member" && m.ev.e.address && v.incident.address &&
            *m.ev.e.address == *v.incident.address)
            return m.ev.id;
    return std::nullopt;
}

}  // namespace

std::vector<AllocationDistanceRow> primaryAllocations(const IncidentView& v) {
    auto primary = primaryRecord(v);
    std::vector<AllocationDistanceRow> out;
    for (const auto& r : v.allocations)
        if (!primary || r.evidence_id == *primary) out.push_back(r);
    if (!primary && !out.empty()) {  // one record's rows only
        int64_t first = out.front().evidence_id;
        std::erase_if(out, [&](const auto& r) { return r.evidence_id != first; });
    }
    return out;
}

std::optional<FaultAddress> faultAddress(const IncidentView& v) {
    std::optional<FaultAddress> best;
    for (const auto& m : v.members) {
        const auto& e = m.ev.e;
        if (m.role != "member" || !e.address) continue;
        FaultAddress a{*e.address, e.address_exact.value_or(true), m.ev.id};
        bool own = v.incident.address && *e.address == *v.incident.address;
        // an exact record beats an inexact one; among equals the incident's own address first
        int rank = (a.exact ? 2 : 0) + (own ? 1 : 0);
        int bestRank =
            best ? (best->exact ? 2 : 0) +
                       (v.incident.address && best->address == *v.incident.address ? 1 : 0)
                 : -1;
        if (rank > bestRank) best = a;
    }
    return best;
}

std::string faultAddressText(const FaultAddress& a) {
    if (!a.exact)
        return fmt::format(
            "page {} (exact byte unknown: the record states a page or masked "
            "address)",
            addr16(a.address));
    return fmt::format("{}  {}", addr16(a.address), alignmentText(a.address));
}

std::vector<DistanceRow> primaryDistances(const IncidentView& v) {
    auto fa = faultAddress(v);
    std::vector<DistanceRow> out;
    for (const auto& r : v.distances)
        if (!fa || r.evidence_id == fa->evidence_id) out.push_back(r);
    return out;
}

}  // namespace gpufault::cli
