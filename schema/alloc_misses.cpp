#include "schema/alloc_misses.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace gpufault {

namespace {

/// A member record of the incident with the clocks view fault_clock knows for it.
struct MemberClock {
    std::optional<int64_t> pid, wall_us, mono_us, proc_start_ticks;
    std::optional<std::string> boot_id, proc_boot_id;
    bool joined = false;  ///< fault_alloc_process chose a recording for it, or its run's
    bool in_run = false;  ///< it is in a run's captured output
};

/// One recording process (alloc_processes row).
struct Recording {
    std::optional<std::string> boot_id;
    std::optional<int64_t> start_ticks, wall_us, mono_us, ended_wall_us, ended_mono_us;
    std::string identity() const {
        return fmt::format("{}/{}/{}",
                           boot_id.value_or(""),
                           start_ticks ? std::to_string(*start_ticks) : "",
                           wall_us ? std::to_string(*wall_us) : "");
    }
};

/// Why fault_alloc_process did not choose `r` for `c` (its rules, in its order); "" when it
/// would have (the only recording of a record without a clock).
std::string whyNot(const MemberClock& c, const Recording& r, size_t identities) {
    if (c.proc_start_ticks && c.proc_boot_id && r.start_ticks && r.boot_id) {
        if (*c.proc_boot_id != *r.boot_id) return "recorded on another boot";
        if (*c.proc_start_ticks != *r.start_ticks)
            return "another process had the pid (its /proc start time differs)";
        return "";
    }
    if (c.boot_id && r.boot_id && *c.boot_id != *r.boot_id) return "recorded on another boot";
    auto onClock = [](int64_t fault_lo,
                      int64_t fault_hi,
                      const std::optional<int64_t>& start,
                      const std::optional<int64_t>& ended) -> std::string {
        if (*start > fault_hi) return "started after the fault";
        if (ended && *ended < fault_lo) return "ended before the fault";
        return "a later recording of the pid started before the fault";
    };
    if (c.mono_us && r.mono_us && r.boot_id == c.boot_id)
        return onClock(*c.mono_us, *c.mono_us, r.mono_us, r.ended_mono_us);
    if (c.wall_us && r.wall_us)
        return onClock(*c.wall_us, *c.wall_us + 999999, r.wall_us, r.ended_wall_us);
    if (identities > 1)
        return fmt::format("the fault's records have no time to tell which of the {} held the pid",
                           identities);
    return "";  // the pid's only recording: joined ('only recording')
}

db::Result<std::vector<MemberClock>> memberClocks(db::Db& d, int64_t incident) {
    auto s = d.prepare(
        "SELECT e.pid, c.wall_us, c.mono_us, c.proc_start_ticks, c.boot_id, c.proc_boot_id, "
        "EXISTS (SELECT 1 FROM fault_alloc_process f WHERE f.evidence_id = e.id) OR EXISTS "
        "(SELECT 1 FROM runs rn JOIN allocations a ON a.run_id = rn.id WHERE rn.source_id = "
        "e.source_id AND (e.pid IS NULL OR a.pid = e.pid)), EXISTS (SELECT 1 FROM runs rn WHERE "
        "rn.source_id = e.source_id) FROM incident_evidence m JOIN evidence e ON e.id = "
        "m.evidence_id LEFT JOIN fault_clock c ON c.evidence_id = e.id WHERE m.incident_id = ?1 "
        "AND m.role = 'member' ORDER BY e.id");
    if (!s) return std::unexpected(s.error());
    s->bind(1, incident);
    std::vector<MemberClock> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        MemberClock m;
        m.pid = s->optI64(0);
        m.wall_us = s->optI64(1);
        m.mono_us = s->optI64(2);
        m.proc_start_ticks = s->optI64(3);
        m.boot_id = s->optStr(4);
        m.proc_boot_id = s->optStr(5);
        m.joined = s->i64(6) != 0;
        m.in_run = s->i64(7) != 0;
        out.push_back(std::move(m));
    }
    return out;
}

db::Result<std::vector<Recording>> recordingsOf(db::Db& d, int64_t pid) {
    auto s = d.prepare(
        "SELECT boot_id, start_ticks, wall_us, mono_us, ended_wall_us, ended_mono_us FROM "
        "alloc_processes WHERE pid = ?1 ORDER BY id");
    if (!s) return std::unexpected(s.error());
    s->bind(1, pid);
    std::vector<Recording> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.push_back(
            {s->optStr(0), s->optI64(1), s->optI64(2), s->optI64(3), s->optI64(4), s->optI64(5)});
    }
    return out;
}

/// Every pid with recordings, newest first, with its count of recording processes.
db::Result<std::vector<std::pair<int64_t, int64_t>>> recordingPids(db::Db& d) {
    auto s = d.prepare(
        "SELECT pid, count(DISTINCT ifnull(boot_id, '') || '/' || ifnull(start_ticks, '') || "
        "'/' || ifnull(wall_us, '')) FROM alloc_processes GROUP BY pid ORDER BY max(id) DESC");
    if (!s) return std::unexpected(s.error());
    std::vector<std::pair<int64_t, int64_t>> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.emplace_back(s->i64(0), s->i64(1));
    }
    return out;
}

}  // namespace

db::Result<std::vector<AllocationMiss>> queryAllocationMisses(db::Db& d,
                                                              int64_t incident,
                                                              bool met) {
    std::vector<AllocationMiss> out;
    auto all = recordingPids(d);
    if (!all) return std::unexpected(all.error());
    if (all->empty()) return out;
    auto members = memberClocks(d, incident);
    if (!members) return std::unexpected(members.error());

    std::map<int64_t, std::vector<const MemberClock*>> byPid;
    for (const auto& m : *members)
        if (m.pid) byPid[*m.pid].push_back(&m);
    bool anyRecorded = false;
    for (const auto& [pid, ms] : byPid) {
        auto recs = recordingsOf(d, pid);
        if (!recs) return std::unexpected(recs.error());
        if (recs->empty()) {
            // Joined through a thread id a recording's allocations carry (020): that process.
            if (!std::ranges::any_of(ms, [](const MemberClock* m) { return m->joined; }))
                continue;
            anyRecorded = true;
            if (met) continue;
            AllocationMiss miss;
            miss.pid = pid;
            miss.recordings = 1;
            miss.why = fmt::format(
                "the recording of the process that faulted (pid {} is a thread of it) has no "
                "allocation made before the fault",
                pid);
            out.push_back(std::move(miss));
            continue;
        }
        anyRecorded = true;
        std::set<std::string> ids;
        for (const auto& r : *recs) ids.insert(r.identity());
        AllocationMiss miss;
        miss.pid = pid;
        miss.recordings = static_cast<int64_t>(ids.size());
        bool joined = std::ranges::any_of(ms, [](const MemberClock* m) { return m->joined; });
        if (joined) {
            if (met) continue;
            miss.why =
                "the recording of the process that faulted has no allocation made "
                "before the fault";
            out.push_back(std::move(miss));
            continue;
        }
        std::vector<std::string> whys;
        for (const auto* m : ms)
            for (const auto& r : *recs)
                if (auto w = whyNot(*m, r, ids.size());
                    !w.empty() && std::ranges::find(whys, w) == whys.end())
                    whys.push_back(std::move(w));
        for (const auto& w : whys) miss.why += (miss.why.empty() ? "" : "; ") + w;
        if (miss.why.empty()) miss.why = "not the process that faulted";
        out.push_back(std::move(miss));
    }
    if (met || anyRecorded) return out;

    // No member pid has a recording: name the recordings there are and what the fault lacks.
    AllocationMiss miss;
    miss.pid_count = static_cast<int64_t>(all->size());
    for (const auto& [pid, n] : *all) {
        miss.recordings += n;
        if (miss.pids.size() < 4) miss.pids.push_back(pid);
    }
    if (byPid.empty()) {
        bool inRun = std::ranges::any_of(*members, [](const auto& m) { return m.in_run; });
        miss.why = inRun ? "the run whose output holds the fault recorded no allocation"
                         : "the fault's records name no pid (docs/preload.md: a kernel record "
                           "of the pid, or the job run by `gpufault run --record-allocations`)";
    } else {
        std::string pids;
        for (const auto& [pid, ms] : byPid)
            pids += (pids.empty() ? "" : ", ") + std::to_string(pid);
        miss.why = fmt::format("the fault is of pid {}", pids);
    }
    out.push_back(std::move(miss));
    return out;
}

}  // namespace gpufault
