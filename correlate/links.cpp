#include "correlate/links.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "collectors/common/log_line.h"

namespace gpufault::links {

namespace {

/// 2000-01-01T00:00:00 as wallSeconds() counts it: year-less stamps count from there.
constexpr int64_t kYear2000_s = 946684800;

}  // namespace

std::optional<WallClock> wallClock(const StoredEvidence& r) {
    if (r.wall_utc_us) {
        if (r.wall_zone == "local_ambiguous") return std::nullopt;
        int64_t us = *r.wall_utc_us;
        return WallClock{us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000),
                         true,
                         r.wall_zone == "stated",
                         r.source_id};
    }
    if (r.e.time.wall_utc_s) return WallClock{*r.e.time.wall_utc_s, true, true, r.source_id};
    if (r.e.time.wall && r.e.time.wall->size() == 19)
        if (auto w = wallSeconds(*r.e.time.wall)) return WallClock{*w, false, false, r.source_id};
    // `MM-DDTHH:MM:SS` (journald `short`, syslog): its second of a leap year (2000), so that
    // Feb 29 is one; wallApart() compares two modulo a year
    if (r.e.time.wall && r.e.time.wall->size() == 14 && (*r.e.time.wall)[2] == '-')
        if (auto w = wallSeconds("2000-" + *r.e.time.wall))
            return WallClock{*w - kYear2000_s, false, false, r.source_id, true};
    return std::nullopt;
}

bool oneBasis(const WallClock& a, const WallClock& b) {
    return a.zoned == b.zoned && a.yearless == b.yearless &&
           (a.zoned || (a.source == b.source && a.utc == b.utc));
}

int64_t wallApart(const WallClock& a, const WallClock& b) {
    if (!a.yearless || !b.yearless) return std::llabs(a.s - b.s);
    constexpr int64_t kDay = 86400, kFeb29 = 59 * kDay, kMar1 = 60 * kDay;
    auto fold = [](int64_t d, int64_t year) {
        d = std::llabs(d) % year;
        return std::min(d, year - d);
    };
    int64_t d = fold(a.s - b.s, 366 * kDay);  // a leap year
    auto common = [&](int64_t s) { return s >= kMar1 ? s - kDay : s; };
    bool feb29 = (a.s >= kFeb29 && a.s < kMar1) || (b.s >= kFeb29 && b.s < kMar1);
    if (!feb29) d = std::min(d, fold(common(a.s) - common(b.s), 365 * kDay));  // a common one
    return d;
}

std::optional<int64_t> journalPid(const Evidence& e) {
    auto v = e.attr("journal_pid");
    if (!v || v->empty() || v->size() > 18) return std::nullopt;
    int64_t pid = 0;
    for (char c : *v) {
        if (c < '0' || c > '9') return std::nullopt;
        pid = pid * 10 + (c - '0');
    }
    return pid;
}

std::optional<int64_t> ownPid(const Evidence& e) {
    if (!e.pid || isKernelSide(e.kind)) return e.pid;
    auto j = journalPid(e);
    return j && *j == *e.pid ? std::nullopt : e.pid;
}

namespace {

/// A core's time (the file's modification) is not the instant of the fault: it is compared
/// only by the core link, never as a shared clock.
std::optional<WallClock> wallOf(const StoredEvidence& r) {
    return r.e.kind == Kind::Coredump ? std::nullopt : wallClock(r);
}

/// Slot in Traits::oneFault for a record with a fault address of a kind its process reports
/// once, because it dies of the fault: ROCr's line (the runtime aborts after printing it), an
/// Xid stating an address (31: the context is dead), the kernel's segfault line (printed only
/// for a signal the process does not handle). nullopt for every other record.
std::optional<size_t> oneFaultSlot(const Evidence& e) {
    if (!e.address) return std::nullopt;
    switch (e.kind) {
        case Kind::RocrMemoryFault:
            return 0;
        case Kind::NvidiaXid:
            return 1;
        case Kind::CpuSegfault:
            return 2;
        default:
            return std::nullopt;
    }
}

bool samePidSpace(const StoredEvidence& a, const StoredEvidence& b) {
    bool ka = isKernelSide(a.e.kind), kb = isKernelSide(b.e.kind);
    if (ka && kb) return true;
    return !ka && !kb && a.source_id == b.source_id;
}

/// Wall times on two bases (docs/correlation.md "Zone-less wall times") further apart than any
/// two zone offsets explain, plus `gap` and the second the stamps are read to.
bool wallsFarApart(const std::optional<WallClock>& a,
                   const std::optional<WallClock>& b,
                   double gap) {
    // a year-less stamp has no instant to compare with another basis
    return a && b && !oneBasis(*a, *b) && !a->yearless && !b->yearless &&
           static_cast<double>(std::llabs(a->s - b->s)) >
               static_cast<double>(kZoneSlack_s) + gap + kWallResolution_s;
}

long long linesApart(const StoredEvidence& a, const StoredEvidence& b) {
    return std::llabs(static_cast<long long>(a.e.line) - static_cast<long long>(b.e.line));
}

}  // namespace

std::optional<Gap> clockGap(const StoredEvidence& ra, const StoredEvidence& rb) {
    const Evidence &a = ra.e, &b = rb.e;
    if (a.time.kernel_s && b.time.kernel_s)
        return Gap{std::fabs(*a.time.kernel_s - *b.time.kernel_s), 0};
    if (a.time.runtime_us && b.time.runtime_us)
        return Gap{std::fabs(static_cast<double>(*a.time.runtime_us - *b.time.runtime_us)) / 1e6,
                   0};
    auto wa = wallOf(ra), wb = wallOf(rb);
    if (wa && wb && oneBasis(*wa, *wb))
        return Gap{static_cast<double>(wallApart(*wa, *wb)), kWallResolution_s};
    return std::nullopt;
}

std::string gapText(const Gap& g) {
    return g.tolerance > 0 ? fmt::format("within {:.0f} s (wall clock)", g.s)
                           : fmt::format("within {:.3f} s", g.s);
}

bool apartOnAClock(const StoredEvidence& ra, const StoredEvidence& rb, double gap) {
    if (auto g = clockGap(ra, rb)) return g->exceeds(gap);
    return wallsFarApart(wallOf(ra), wallOf(rb), gap);
}

std::optional<uint64_t> faultRegion(const Evidence& e) {
    if (!e.address || e.kind == Kind::Coredump) return std::nullopt;
    return *e.address >> 21;
}

Traits Traits::of(const StoredEvidence& s) {
    Traits t;
    const Evidence& e = s.e;
    t.node = e.gpu_node;
    t.pci = e.pci;
    t.vendor = e.vendor;
    t.rank = e.rank;
    if (e.pid) {
        if (isKernelSide(e.kind))
            t.kernelPids.push_back({*e.pid, e.tid});
        else if (auto own = ownPid(e))
            t.streamPids.push_back({s.source_id, *own});
    }
    if (auto j = isKernelSide(e.kind) ? std::nullopt : journalPid(e))
        t.journalPids.push_back({s.source_id, *j});
    if (e.time.kernel_s) t.kMin = t.kMax = *e.time.kernel_s;
    if (e.time.runtime_us) t.rMin = t.rMax = static_cast<double>(*e.time.runtime_us) / 1e6;
    if (auto w = wallOf(s)) {
        if (w->zoned)
            t.zMin = t.zMax = w->s;
        else
            t.localWalls.push_back(*w);
        if (!w->yearless) t.wMin = t.wMax = w->s;
    }
    if (auto slot = oneFaultSlot(e)) t.oneFault[*slot] = *e.address >> 21;
    if (auto r = faultRegion(e)) t.regions.insert(*r);
    return t;
}

bool Traits::conflicts(const Traits& o, double maxGap) const {
    auto differ = [](const auto& a, const auto& b) { return a && b && *a != *b; };
    if (differ(node, o.node) || differ(pci, o.pci) || differ(vendor, o.vendor) ||
        differ(rank, o.rank))
        return true;
    // wall clocks of one basis, read to the second
    double wallLimit = maxGap + kWallResolution_s;
    if (zMin && o.zMin &&
        static_cast<double>(std::max(*zMax, *o.zMax) - std::min(*zMin, *o.zMin)) > wallLimit)
        return true;
    for (auto& w1 : localWalls)
        for (auto& w2 : o.localWalls)
            if (oneBasis(w1, w2) && static_cast<double>(wallApart(w1, w2)) > wallLimit) return true;
    for (size_t k = 0; k < std::size(oneFault); ++k)
        if (differ(oneFault[k], o.oneFault[k])) return true;
    for (auto& [p1, t1] : kernelPids)
        for (auto& [p2, t2] : o.kernelPids)
            if (p1 != p2 && !(t1 && *t1 == p2) && !(t2 && *t2 == p1)) return true;
    for (auto& [s1, p1] : streamPids)
        for (auto& [s2, p2] : o.streamPids)
            if (s1 == s2 && p1 != p2) return true;
    for (auto& [s1, p1] : journalPids)
        for (auto& [s2, p2] : o.journalPids)
            if (s1 == s2 && p1 != p2) return true;
    for (auto& [s1, lo1, hi1] : streamRuns)
        for (auto& [s2, lo2, hi2] : o.streamRuns)
            if (s1 == s2 && (hi1 < lo2 || hi2 < lo1)) return true;
    auto span = [&](const auto& lo1, const auto& hi1, const auto& lo2, const auto& hi2) {
        if (!lo1 || !lo2) return false;
        return std::max(*hi1, *hi2) - std::min(*lo1, *lo2) > maxGap;
    };
    if (wMin && o.wMin &&
        static_cast<double>(std::max(*wMax, *o.wMax) - std::min(*wMin, *o.wMin)) >
            static_cast<double>(kZoneSlack_s) + wallLimit)
        return true;  // no zone offset explains it (zone-less times: to the second)
    return span(kMin, kMax, o.kMin, o.kMax) || span(rMin, rMax, o.rMin, o.rMax);
}

bool Traits::bringsRegion(const Traits& o) const {
    bool mineSmaller = regions.size() <= o.regions.size();
    const auto& small = mineSmaller ? regions : o.regions;
    const auto& large = mineSmaller ? o.regions : regions;
    return std::any_of(small.begin(), small.end(), [&](uint64_t r) { return !large.contains(r); });
}

void Traits::merge(Traits&& o) {
    if (!node) node = o.node;
    if (!pci) pci = std::move(o.pci);
    if (!vendor) vendor = std::move(o.vendor);
    if (!rank) rank = o.rank;
    for (size_t k = 0; k < std::size(oneFault); ++k)
        if (!oneFault[k]) oneFault[k] = o.oneFault[k];
    auto add = [](auto& into, const auto& from) {
        for (const auto& x : from)
            if (into.size() < 16 && std::find(into.begin(), into.end(), x) == into.end())
                into.push_back(x);
    };
    add(kernelPids, o.kernelPids);
    add(streamPids, o.streamPids);
    add(journalPids, o.journalPids);
    for (const auto& [src, lo, hi] : o.streamRuns) {  // the processes both sets may be of
        auto same = std::find_if(streamRuns.begin(), streamRuns.end(), [&](const auto& r) {
            return std::get<0>(r) == src;
        });
        if (same == streamRuns.end()) {
            if (streamRuns.size() < 16) streamRuns.emplace_back(src, lo, hi);
        } else {
            std::get<1>(*same) = std::max(std::get<1>(*same), lo);
            std::get<2>(*same) = std::min(std::get<2>(*same), hi);
        }
    }
    add(localWalls, o.localWalls);
    auto widen = [](auto& lo, auto& hi, const auto& olo, const auto& ohi) {
        if (!olo) return;
        lo = lo ? std::min(*lo, *olo) : *olo;
        hi = hi ? std::max(*hi, *ohi) : *ohi;
    };
    widen(kMin, kMax, o.kMin, o.kMax);
    widen(rMin, rMax, o.rMin, o.rMax);
    widen(wMin, wMax, o.wMin, o.wMax);
    widen(zMin, zMax, o.zMin, o.zMax);
    // the smaller set into the larger: each region is moved O(log n) times in all
    if (regions.size() < o.regions.size()) regions.swap(o.regions);
    regions.insert(o.regions.begin(), o.regions.end());
}

UnionFind::UnionFind(const std::vector<const StoredEvidence*>& recs,
                     double maxGap,
                     const std::vector<std::optional<std::pair<int64_t, int64_t>>>& runs)
    : parent_(recs.size()), link_(recs.size()), maxGap_(maxGap) {
    std::iota(parent_.begin(), parent_.end(), 0);
    traits_.reserve(recs.size());
    for (size_t i = 0; i < recs.size(); ++i) {
        traits_.push_back(Traits::of(*recs[i]));
        if (i < runs.size() && runs[i])
            traits_.back().streamRuns.emplace_back(
                recs[i]->source_id, runs[i]->first, runs[i]->second);
    }
}

std::vector<std::optional<std::pair<int64_t, int64_t>>> processRuns(
    const std::vector<const StoredEvidence*>& recs) {
    std::vector<std::optional<std::pair<int64_t, int64_t>>> runs(recs.size());
    std::map<std::pair<int64_t, std::optional<int64_t>>, int64_t> ended;  // (source, rank) → ends
    for (size_t i = 0; i < recs.size(); ++i) {
        const Evidence& e = recs[i]->e;
        if (e.pid || isKernelSide(e.kind)) continue;
        int64_t& n = ended[{recs[i]->source_id, e.rank}];
        if (endsProcess(e)) {
            runs[i] = {n, n};
            ++n;
        } else {
            runs[i] = {n > 0 ? n - 1 : 0, n};
        }
    }
    return runs;
}

size_t UnionFind::find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
}

bool UnionFind::join(size_t a, size_t b, Link link) {
    size_t ra = find(a), rb = find(b);
    if (ra == rb || traits_[ra].conflicts(traits_[rb], maxGap_) ||
        (!link.same_process && traits_[ra].bringsRegion(traits_[rb])))
        return false;
    if (rb < ra) std::swap(ra, rb);
    parent_[rb] = ra;
    link_[rb] = std::move(link.why);
    traits_[ra].merge(std::move(traits_[rb]));
    traits_[rb] = Traits{};
    return true;
}

bool UnionFind::conflicts(size_t a, size_t b) {
    size_t ra = find(a), rb = find(b);
    return ra != rb && traits_[ra].conflicts(traits_[rb], maxGap_);
}

std::vector<RegionEdge> regionEdges(UnionFind& uf,
                                    const Linker& linker,
                                    const std::vector<const StoredEvidence*>& recs,
                                    const std::vector<size_t>& idx) {
    std::vector<RegionEdge> edges;
    for (size_t a = 0; a < idx.size(); ++a)
        for (size_t b = a + 1; b < idx.size() && b < a + 64; ++b) {
            size_t x = idx[a], y = idx[b];
            if (recs[x]->source_id == recs[y]->source_id || uf.find(x) == uf.find(y) ||
                uf.conflicts(x, y))
                continue;
            if (auto w = linker.why(*recs[x], *recs[y]); !w.why.empty())
                edges.push_back({x, y, std::move(w), false});
        }
    // The candidate sets of each set; two of them that exclude each other make it ambiguous.
    std::map<size_t, std::vector<size_t>> partners;
    for (const auto& e : edges) {
        partners[uf.find(e.a)].push_back(uf.find(e.b));
        partners[uf.find(e.b)].push_back(uf.find(e.a));
    }
    std::set<size_t> torn;
    for (auto& [root, p] : partners) {
        std::sort(p.begin(), p.end());
        p.erase(std::unique(p.begin(), p.end()), p.end());
        for (size_t i = 0; i < p.size() && !torn.contains(root); ++i)
            for (size_t j = i + 1; j < p.size(); ++j)
                if (uf.conflicts(p[i], p[j])) {
                    torn.insert(root);
                    break;
                }
    }
    for (auto& e : edges) e.ambiguous = torn.contains(uf.find(e.a)) || torn.contains(uf.find(e.b));
    return edges;
}

bool Linker::contradicts(const StoredEvidence& a, const StoredEvidence& b) const {
    const Evidence &x = a.e, &y = b.e;
    if (x.gpu_node && y.gpu_node && *x.gpu_node != *y.gpu_node) return true;
    if (x.pci && y.pci && *x.pci != *y.pci) return true;
    if (x.vendor && y.vendor && *x.vendor != *y.vendor) return true;
    // ranks of one job are processes of their own, whichever stream printed them
    if (x.rank && y.rank && *x.rank != *y.rank) return true;
    if (samePidSpace(a, b)) {
        // runtime lines of one journal: the journal's pids (stream openers), and the pids the
        // lines state themselves, each compared with their own kind
        auto jx = journalPid(x), jy = journalPid(y);
        if (!isKernelSide(x.kind) && jx && jy && *jx != *jy) return true;
        auto px = ownPid(x), py = ownPid(y);
        // the kernel prints a thread id in segfault lines: tid of one may be the other's
        if (px && py && *px != *py && !(x.tid && *x.tid == *py) && !(y.tid && *y.tid == *px))
            return true;
    }
    // two faults that each end their process, at addresses in different regions
    if (auto sx = oneFaultSlot(x);
        sx && sx == oneFaultSlot(y) && (*x.address >> 21) != (*y.address >> 21))
        return true;
    if (auto gap = clockGap(a, b); gap && gap->exceeds(rules.max_gap_s)) return true;
    return wallsFarApart(wallOf(a), wallOf(b), rules.max_gap_s);
}

Link Linker::why(const StoredEvidence& a, const StoredEvidence& b) const {
    if (contradicts(a, b)) return {};
    const Evidence &x = a.e, &y = b.e;
    // The first 2 MiB (NULL and near-NULL pointers) is shared by unrelated faults.
    if (x.address && y.address && (*x.address >> 21) == (*y.address >> 21) &&
        (*x.address >> 21) != 0)
        return {fmt::format("same 2 MiB region 0x{:x}", (*x.address >> 21) << 21), false};
    auto gap = clockGap(a, b);
    bool close = gap ? !gap->exceeds(rules.max_gap_s)
                     : a.source_id == b.source_id && linesApart(a, b) <= rules.same_stream_lines;
    bool sameSide = isKernelSide(x.kind) == isKernelSide(y.kind);
    if (!sameSide) {
        // A pid or proximity alone never joins kernel and runtime records; a kernel record and a
        // program line of one journal that states the same host pid for it, close, do.
        const Evidence& k = isKernelSide(x.kind) ? x : y;
        const Evidence& r = isKernelSide(x.kind) ? y : x;
        auto jp = journalPid(r);
        if (!close || a.source_id != b.source_id || !k.pid || !jp ||
            (*jp != *k.pid && !(k.tid && *k.tid == *jp)))
            return {};
        return {
            gap ? fmt::format("same pid {} in one journal, {}", *jp, gapText(*gap))
                : fmt::format("same pid {} in one journal, {} lines apart", *jp, linesApart(a, b)),
            true};
    }
    if (!close) return {};
    // (kernel records: pids that contradicts() let through are one, or a tid is the other's
    // pid; runtime records of one journal may state another pid than the journal's)
    if (x.pid && y.pid && (isKernelSide(x.kind) || *x.pid == *y.pid) && samePidSpace(a, b))
        return {gap ? fmt::format("same pid {} {}", *x.pid, gapText(*gap))
                    : fmt::format("same pid {} in one stream", *x.pid),
                true};
    if (a.source_id != b.source_id) return {};
    // Both state a rank (one, or contradicts() refused): one process of the job, as a pid.
    if (x.rank && y.rank) {
        // (a compose service's or unranked worker's identity is one process too, not a rank)
        std::string who = statedRank(x.rank) ? fmt::format("rank {}", *x.rank) : "process prefix";
        return {gap ? fmt::format("same {} {}", who, gapText(*gap))
                    : fmt::format("same {} in one stream, {} lines apart", who, linesApart(a, b)),
                true};
    }
    // An Xid without a pid belongs to the channel named by the Xid 43 that follows it
    // (13 → 43), not to an earlier process's Xid 31 of the same device.
    bool xidWithoutPid =
        (x.kind == Kind::NvidiaXid || y.kind == Kind::NvidiaXid) && (!x.pid || !y.pid);
    bool chain13to43 = x.kind == Kind::NvidiaXid && y.kind == Kind::NvidiaXid && !x.pid && y.pid &&
                       y.xid && *y.xid == 43 && x.line < y.line;
    if (x.pci && y.pci && (!xidWithoutPid || (!x.pid && !y.pid) || chain13to43))
        return {fmt::format("same device {} in one stream", *x.pci), false};
    if (!isKernelSide(x.kind) && (!ownPid(x) || !ownPid(y)))
        return {gap ? (gap->tolerance > 0
                           ? fmt::format("same stream, {:.0f} s apart (wall clock)", gap->s)
                           : fmt::format("same stream, {:.3f} s apart", gap->s))
                    : fmt::format("same stream, {} lines apart", linesApart(a, b)),
                false};
    return {};
}

}  // namespace gpufault::links
