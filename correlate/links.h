// The join rules of correlation v1 (docs/correlation.md): what contradicts a join, why two
// records join, and the disjoint sets that refuse a join their members would contradict.
// Internal to correlate/ (correlate.cpp drives them).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "correlate/correlate.h"

namespace gpufault::links {

/// A record's wall clock for comparisons, seconds: the instant the store derived (the zone the
/// record stated, else the ingesting zone; not a DST-ambiguous reading), or the stamp's stated
/// instant; for a record not read from a store without one, the printed date counted on its own
/// unstated zone (`utc` false); for a stamp without a year (journald `short`, syslog:
/// `MM-DDTHH:MM:SS`), its second of the year, compared only modulo a year (`yearless`: Dec 31
/// 23:59:59 and Jan 01 00:00:00 are one second apart). `zoned`: the record stated its zone (or
/// an epoch); a zone-less time (`dmesg -T`, journald `short-full`, `short`) is right only in the
/// zone it was written in, which the line does not say (docs/correlation.md "Zone-less wall
/// times"). Every wall clock reads to the second (kWallResolution_s).
struct WallClock {
    int64_t s = 0;
    bool utc = false;
    bool zoned = false;
    int64_t source = 0;  ///< the record's stream: zone-less times of one stream share a zone
    bool yearless = false;
    bool operator==(const WallClock&) const = default;
};
std::optional<WallClock> wallClock(const StoredEvidence& r);

/// The resolution of a wall clock, seconds: stamps 1 s apart may be 2 s or a microsecond apart.
inline constexpr double kWallResolution_s = 1.0;

/// How far a zone-less wall time may lie from the instant it means, seconds: the widest two
/// zone offsets differ by 26 h (-12:00 to +14:00).
inline constexpr int64_t kZoneSlack_s = 26 * 3600;

/// True when two wall clocks read on one basis, so that their difference is a gap: both
/// stated their zone, or both are zone-less times of one stream (read in one zone), with a
/// year or both without one.
bool oneBasis(const WallClock& a, const WallClock& b);

/// Seconds between two wall clocks of one basis (oneBasis): |a - b|; for year-less ones the
/// least the stamps can be apart in any year (modulo a leap or a common year).
int64_t wallApart(const WallClock& a, const WallClock& b);

/// The gap between two records on a clock both carry: `s` what the clocks read (seconds),
/// `tolerance` their resolution (0 for the kernel's and the runtime's clocks, 1 s for wall
/// stamps): the records are surely further apart than `limit` only when s - tolerance > limit.
struct Gap {
    double s = 0;
    double tolerance = 0;
    bool exceeds(double limit) const { return s - tolerance > limit; }
};

/// The gap between two records on a clock both carry (a core's file time is none); nullopt
/// when they share none (a zone-less wall time and a zoned one, zone-less times of two
/// streams, a year-less stamp and one with a year).
std::optional<Gap> clockGap(const StoredEvidence& a, const StoredEvidence& b);

/// A gap as a link states it: `within 0.012 s` on the kernel's or runtime's clock, `within 1 s
/// (wall clock)` for wall stamps.
std::string gapText(const Gap& g);

/// True when a clock both records carry puts them surely more than `gap` seconds apart (wall
/// stamps, read to the second, by more than gap + 1 s; wall times on two bases by more than
/// kZoneSlack_s + gap + 1 s).
bool apartOnAClock(const StoredEvidence& a, const StoredEvidence& b, double gap);

/// The pid a journal stated for a runtime record's line (attr `journal_pid`: `ident[PID]:`,
/// `_PID`): a pid of the journal's host, the kernel's namespace; nullopt without one.
std::optional<int64_t> journalPid(const Evidence& e);

/// A record's pid as its own line stated it (a kernel record's; a runtime record's AMD log
/// prefix, …): nullopt for a runtime record whose pid is only its journal's. A journal states
/// the pid that opened the stream, so its children's lines (a launcher's workers) share it
/// while their AMD log prefixes state their own.
std::optional<int64_t> ownPid(const Evidence& e);

/// The 2 MiB region (`address >> 21`) of a record's fault address; nullopt without one and for
/// a core (its `si_addr` is a CPU address that only its process link compares).
std::optional<uint64_t> faultRegion(const Evidence& e);

/// Why two records (or sets) are one incident. `same_process`: the link proves one process (a
/// pid or rank stated in one namespace, /proc NSpid, a run's pids, a core's pid), so it may
/// bring a second 2 MiB region into an incident; a link by region, device or stream proximity
/// never does (docs/correlation.md "Regions").
struct Link {
    std::string why;  ///< empty: no link
    bool same_process = false;
};

/// What a set of records states that another set could contradict: one GPU node, device,
/// vendor and rank at most, the kernel (pid, tid) pairs, one pid per runtime stream (and one
/// journal pid: docs/correlation.md "Contradictions"), the span
/// of each clock (wall clocks with their 1 s resolution), the region of each one-fault kind, and
/// the 2 MiB regions of all fault addresses. O(1) per join but for the regions (merged smaller into
/// larger).
struct Traits {
    std::optional<int64_t> node;
    std::optional<std::string> pci, vendor;
    std::optional<int64_t> rank;
    std::optional<int64_t> zMin, zMax;  // zoned wall times: seconds
    std::vector<WallClock> localWalls;  // zone-less (and year-less) wall times, per stream
    std::optional<int64_t> wMin, wMax;  // every wall time with a year, any basis: seconds
    std::vector<std::pair<int64_t, std::optional<int64_t>>> kernelPids;  // (pid, tid)
    std::vector<std::pair<int64_t, int64_t>> streamPids;   // (source, pid its line states)
    std::vector<std::pair<int64_t, int64_t>> journalPids;  // (source, journal_pid)
    /// (source, first, last): the processes a pid-less runtime record may be of, numbered by
    /// the process-ending records before it in its stream and rank (processRuns()); a set
    /// holds the intersection of its members'
    std::vector<std::tuple<int64_t, int64_t, int64_t>> streamRuns;
    std::optional<double> kMin, kMax, rMin, rMax;  // seconds
    /// the region of the set's ROCr fault, addressed Xid, segfault (kinds a process reports
    /// once: it dies of the fault)
    std::optional<uint64_t> oneFault[3];
    std::set<uint64_t> regions;  ///< faultRegion() of every member that has one

    static Traits of(const StoredEvidence& s);
    /// A contradiction between the two sets (docs/correlation.md "Contradictions").
    bool conflicts(const Traits& o, double maxGap) const;
    /// True when each set holds a 2 MiB region the other lacks (a join would add a region to
    /// both): only a same-process link may join them.
    bool bringsRegion(const Traits& o) const;
    void merge(Traits&& o);
};

/// Disjoint sets of records, joined only when their Traits allow it.
class UnionFind {
  public:
    /// `runs`: processRuns() of `recs` (empty: none known).
    UnionFind(const std::vector<const StoredEvidence*>& recs,
              double maxGap,
              const std::vector<std::optional<std::pair<int64_t, int64_t>>>& runs = {});
    size_t find(size_t x);
    /// Joins b's set into a's (the earlier record stays the root) unless they conflict, or the
    /// link is not one of a process and would bring a second region. False: not joined.
    bool join(size_t a, size_t b, Link link);
    /// True when the sets of a and b contradict each other (Traits::conflicts).
    bool conflicts(size_t a, size_t b);
    /// Why the set rooted at x joined its parent ("" for a root).
    const std::string& linkOf(size_t x) const { return link_[x]; }

  private:
    std::vector<size_t> parent_;
    std::vector<std::string> link_;
    std::vector<Traits> traits_;  // per root
    double maxGap_;
};

/// The record-level rules: contradictions and links between two records.
struct Linker {
    const CorrelationRules& rules;

    /// Reasons that forbid a join, whatever else matches.
    bool contradicts(const StoredEvidence& a, const StoredEvidence& b) const;
    /// Why a and b are one incident; an empty Link when they are not.
    Link why(const StoredEvidence& a, const StoredEvidence& b) const;
};

/// The processes each pid-less runtime record (no pid stated) of `recs` (sorted by source,
/// line, id) may be of within its stream and rank, as (first, last): N, the number of pid-less
/// process-ending records (endsProcess(): ROCr's fault, after which the runtime aborts) before
/// it there. Such a record ends process N (N, N); another one is of process N, or of N - 1
/// (an error other threads printed while the runtime aborted): (N - 1, N). A stream that states
/// no pid (a CI log, a terminal transcript) holds the runs of one program one after another
/// (docs/correlation.md "Contradictions"). nullopt for a record that states a pid, and for
/// kernel-side records.
std::vector<std::optional<std::pair<int64_t, int64_t>>> processRuns(
    const std::vector<const StoredEvidence*>& recs);

/// A link by 2 MiB region between records of two streams (docs/correlation.md, link 1).
struct RegionEdge {
    size_t a = 0, b = 0;  ///< indexes into the records
    Link link;
    /// a's set or b's has another candidate in the region that excludes this one (two ranks,
    /// two pids): nothing tells which is its, so the edge is not joined.
    bool ambiguous = false;
};

/// The region links among `idx` (records of one 2 MiB region in stream order, each compared
/// with its next 64) between sets that are not one and do not conflict. Edges are computed on
/// the sets as they are before any of them is joined.
std::vector<RegionEdge> regionEdges(UnionFind& uf,
                                    const Linker& linker,
                                    const std::vector<const StoredEvidence*>& recs,
                                    const std::vector<size_t>& idx);

}  // namespace gpufault::links
