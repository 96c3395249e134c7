#include "cli/incident_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/output.h"
#include "collectors/common/evidence_json.h"
#include "collectors/common/log_line.h"

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
    // No dispatch in the member streams: the dispatch context of another stream, if one
    // places a member's address (EVIDENCE.md "Dispatch context across streams").
    auto own = queryIncidentDispatches(d, id, 1);
    if (!own) return fail(own.error());
    std::map<int64_t, ContextStream> chosen;
    if (own->empty()) {
        auto ctx = queryIncidentContext(d, id);
        if (!ctx) return fail(ctx.error());
        v.context = std::move(*ctx);
        auto fa = faultAddress(v);
        v.dispatch_context = incidentContext(
            v.context, fa ? std::optional<int64_t>(fa->evidence_id) : std::nullopt, chosen);
    }
    auto dist = queryIncidentDistances(d,
                                       id,
                                       kNearestOperands,
                                       kLatestOperands,
                                       &v.operand_totals,
                                       chosen.empty() ? nullptr : &chosen);
    if (!dist) return fail(dist.error());
    v.distances = std::move(*dist);
    auto dispatchesOf = [&](int limit) {
        return v.dispatch_context ? queryContextDispatches(d, *v.dispatch_context, limit)
                                  : queryIncidentDispatches(d, id, limit);
    };
    auto disp = dispatchesOf(dispatches);
    if (!disp) return fail(disp.error());
    v.dispatches = std::move(*disp);
    auto window = dispatchesOf(kLastKernelWindow);
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

namespace {
std::string contextWho(const ContextStream& c) {
    std::string who = c.pid ? fmt::format("pid {}", *c.pid) : std::string("the process");
    if (auto r = statedRank(c.rank)) who += fmt::format(" rank {}", *r);
    who += fmt::format(" in {}", c.source);
    if (c.after_line && c.before_line != UINT64_MAX)
        who += fmt::format(" (the run of lines {}-{})", c.after_line + 1, c.before_line);
    else if (c.after_line)
        who += fmt::format(" (the run after line {})", c.after_line);
    else if (c.before_line != UINT64_MAX)
        who += fmt::format(" (the run up to line {})", c.before_line);
    return who;
}
}  // namespace

std::string dispatchContextText(const IncidentView& v) {
    if (const auto& c = v.dispatch_context)
        return fmt::format(
            "dispatches and operands of {}: no member stream logged a dispatch, and its operand "
            "{} [{}, {}) at line {} {} the fault address",
            contextWho(*c),
            c->operand,
            addr16(c->ptr),
            addr16(c->end),
            c->operand_line,
            c->inside ? "holds" : "meets the 2 MiB region of");
    // Candidates of every member record (each once): two or more left it without a context.
    std::vector<std::string> who;
    for (const auto& [ev, m] : v.context)
        for (const auto& c : m.candidates)
            if (auto w = contextWho(c); std::find(who.begin(), who.end(), w) == who.end())
                who.push_back(std::move(w));
    if (who.size() < 2) return {};
    std::string list;
    for (const auto& w : who) list += fmt::format("{}{}", list.empty() ? "" : " or ", w);
    return fmt::format(
        "none chosen: operands of {} place the fault address, nothing tells which process "
        "faulted",
        list);
}

}  // namespace gpufault::cli
