#include "correlate/correlate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace gpufault {

bool isKernelSide(Kind k) {
    return k == Kind::AmdgpuPageFault || k == Kind::NvidiaXid || k == Kind::CpuSegfault ||
           k == Kind::GpuReset || k == Kind::Coredump;
}

std::optional<int64_t> wallSeconds(std::string_view wall) {
    // YYYY-MM-DDTHH:MM:SS as a count of seconds on its own (unstated) zone: differences only.
    if (wall.size() != 19 || wall[4] != '-' || wall[10] != 'T') return std::nullopt;
    auto num = [&](size_t at, size_t n) -> std::optional<int64_t> {
        int64_t v = 0;
        for (size_t i = at; i < at + n; ++i) {
            if (wall[i] < '0' || wall[i] > '9') return std::nullopt;
            v = v * 10 + (wall[i] - '0');
        }
        return v;
    };
    auto y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
         sec = num(17, 2);
    if (!y || !mo || !d || !h || !mi || !sec || *mo < 1 || *mo > 12) return std::nullopt;
    // days from civil (Howard Hinnant's algorithm)
    int64_t yy = *y - (*mo <= 2), era = (yy >= 0 ? yy : yy - 399) / 400, yoe = yy - era * 400;
    int64_t doy = (153 * (*mo + (*mo > 2 ? -3 : 9)) + 2) / 5 + *d - 1;
    int64_t days = era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
    return days * 86400 + *h * 3600 + *mi * 60 + *sec;
}

namespace {

/// A record's wall clock for comparisons, seconds: the instant the store derived (the zone the
/// record stated, else the ingesting zone; not a DST-ambiguous reading), or the stamp's stated
/// instant; for a record not read from a store without one, the printed date counted on its own
/// unstated zone (`utc` false). Two clocks compare only when both are instants or both are not.
struct WallClock {
    int64_t s = 0;
    bool utc = false;
    bool operator==(const WallClock&) const = default;
};
std::optional<WallClock> wallClock(const StoredEvidence& r) {
    if (r.wall_utc_us) {
        if (r.wall_zone == "local_ambiguous") return std::nullopt;
        int64_t us = *r.wall_utc_us;
        return WallClock{us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000), true};
    }
    if (r.e.time.wall_utc_s) return WallClock{*r.e.time.wall_utc_s, true};
    if (r.e.time.wall && r.e.time.wall->size() == 19)
        if (auto w = wallSeconds(*r.e.time.wall)) return WallClock{*w, false};
    return std::nullopt;
}

/// A core's time (the file's modification) is not the instant of the fault: it is compared
/// only by the core link, never as a shared clock.
std::optional<WallClock> wallOf(const StoredEvidence& r) {
    return r.e.kind == Kind::Coredump ? std::nullopt : wallClock(r);
}

/// What a set of records states that another set could contradict: one GPU node, device and
/// vendor at most, the kernel (pid, tid) pairs, one pid per runtime stream, and the span of each
/// clock. Merging two sets is refused when the union would hold a contradiction, so a record
/// without a pid can never chain two processes into one incident. O(1) per join.
struct Traits {
    std::optional<int64_t> node;
    std::optional<std::string> pci, vendor;
    std::optional<WallClock> wall;
    std::vector<std::pair<int64_t, std::optional<int64_t>>> kernelPids;  // (pid, tid)
    std::vector<std::pair<int64_t, int64_t>> streamPids;                 // (source, pid)
    std::optional<double> kMin, kMax, rMin, rMax;                        // seconds

    static Traits of(const StoredEvidence& s) {
        Traits t;
        const Evidence& e = s.e;
        t.node = e.gpu_node;
        t.pci = e.pci;
        t.vendor = e.vendor;
        if (e.pid) {
            if (isKernelSide(e.kind))
                t.kernelPids.push_back({*e.pid, e.tid});
            else
                t.streamPids.push_back({s.source_id, *e.pid});
        }
        if (e.time.kernel_s) t.kMin = t.kMax = *e.time.kernel_s;
        if (e.time.runtime_us) t.rMin = t.rMax = static_cast<double>(*e.time.runtime_us) / 1e6;
        t.wall = wallOf(s);
        return t;
    }

    bool conflicts(const Traits& o, double maxGap) const {
        auto differ = [](const auto& a, const auto& b) { return a && b && *a != *b; };
        if (differ(node, o.node) || differ(pci, o.pci) || differ(vendor, o.vendor) ||
            (wall && o.wall && wall->utc == o.wall->utc && wall->s != o.wall->s))
            return true;
        for (auto& [p1, t1] : kernelPids)
            for (auto& [p2, t2] : o.kernelPids)
                if (p1 != p2 && !(t1 && *t1 == p2) && !(t2 && *t2 == p1)) return true;
        for (auto& [s1, p1] : streamPids)
            for (auto& [s2, p2] : o.streamPids)
                if (s1 == s2 && p1 != p2) return true;
        auto span = [&](const auto& lo1, const auto& hi1, const auto& lo2, const auto& hi2) {
            if (!lo1 || !lo2) return false;
            return std::max(*hi1, *hi2) - std::min(*lo1, *lo2) > maxGap;
        };
        return span(kMin, kMax, o.kMin, o.kMax) || span(rMin, rMax, o.rMin, o.rMax);
    }

    void merge(const Traits& o) {
        if (!node) node = o.node;
        if (!pci) pci = o.pci;
        if (!vendor) vendor = o.vendor;
        if (!wall) wall = o.wall;
        auto add = [](auto& into, const auto& from) {
            for (const auto& x : from)
                if (into.size() < 16 && std::find(into.begin(), into.end(), x) == into.end())
                    into.push_back(x);
        };
        add(kernelPids, o.kernelPids);
        add(streamPids, o.streamPids);
        auto widen = [](auto& lo, auto& hi, const auto& olo, const auto& ohi) {
            if (!olo) return;
            lo = lo ? std::min(*lo, *olo) : *olo;
            hi = hi ? std::max(*hi, *ohi) : *ohi;
        };
        widen(kMin, kMax, o.kMin, o.kMax);
        widen(rMin, rMax, o.rMin, o.rMax);
    }
};

/// Disjoint sets of records, joined only when their Traits do not conflict.
struct UnionFind {
    std::vector<size_t> parent;
    std::vector<std::string> link;  // why each set root joined its parent
    std::vector<Traits> traits;     // per root
    double maxGap;
    UnionFind(const std::vector<const StoredEvidence*>& recs, double gap)
        : parent(recs.size()), link(recs.size()), maxGap(gap) {
        std::iota(parent.begin(), parent.end(), 0);
        traits.reserve(recs.size());
        for (auto* r : recs) traits.push_back(Traits::of(*r));
    }
    size_t find(size_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    }
    // Joins b's set into a's (the earlier record stays the root) unless they conflict.
    void join(size_t a, size_t b, std::string why) {
        size_t ra = find(a), rb = find(b);
        if (ra == rb || traits[ra].conflicts(traits[rb], maxGap)) return;
        if (rb < ra) std::swap(ra, rb);
        parent[rb] = ra;
        link[rb] = std::move(why);
        traits[ra].merge(traits[rb]);
        traits[rb] = Traits{};
    }
};

/// Seconds between two records on a clock both carry; nullopt when they share none.
std::optional<double> clockGap(const StoredEvidence& ra, const StoredEvidence& rb) {
    const Evidence &a = ra.e, &b = rb.e;
    if (a.time.kernel_s && b.time.kernel_s) return std::fabs(*a.time.kernel_s - *b.time.kernel_s);
    if (a.time.runtime_us && b.time.runtime_us)
        return std::fabs(static_cast<double>(*a.time.runtime_us - *b.time.runtime_us)) / 1e6;
    auto wa = wallOf(ra), wb = wallOf(rb);
    if (wa && wb && wa->utc == wb->utc)
        return *wa == *wb ? 0.0 : 1e9;  // to the second; different = unknown gap
    return std::nullopt;
}

struct Linker {
    const std::vector<const StoredEvidence*>& ev;
    const CorrelationRules& rules;

    bool samePidSpace(const StoredEvidence& a, const StoredEvidence& b) const {
        bool ka = isKernelSide(a.e.kind), kb = isKernelSide(b.e.kind);
        if (ka && kb) return true;
        return !ka && !kb && a.source_id == b.source_id;
    }

    /// Reasons that forbid a join, whatever else matches.
    bool contradicts(const StoredEvidence& a, const StoredEvidence& b) const {
        const Evidence &x = a.e, &y = b.e;
        if (x.gpu_node && y.gpu_node && *x.gpu_node != *y.gpu_node) return true;
        if (x.pci && y.pci && *x.pci != *y.pci) return true;
        if (x.vendor && y.vendor && *x.vendor != *y.vendor) return true;
        if (x.pid && y.pid && *x.pid != *y.pid && samePidSpace(a, b)) {
            // the kernel prints a thread id in segfault lines: tid of one may be the other's
            bool tidMatch = (x.tid && *x.tid == *y.pid) || (y.tid && *y.tid == *x.pid);
            if (!tidMatch) return true;
        }
        if (auto gap = clockGap(a, b); gap && *gap > rules.max_gap_s) return true;
        return false;
    }

    /// Why a and b are one incident, or "" when they are not.
    std::string why(const StoredEvidence& a, const StoredEvidence& b) const {
        if (contradicts(a, b)) return {};
        const Evidence &x = a.e, &y = b.e;
        // The first 2 MiB (NULL and near-NULL pointers) is shared by unrelated faults.
        if (x.address && y.address && (*x.address >> 21) == (*y.address >> 21) &&
            (*x.address >> 21) != 0)
            return fmt::format("same 2 MiB region 0x{:x}", (*x.address >> 21) << 21);
        bool sameSide = isKernelSide(x.kind) == isKernelSide(y.kind);
        if (!sameSide)
            return {};  // a pid or proximity alone never joins kernel and runtime records
        auto gap = clockGap(a, b);
        bool close =
            gap ? *gap <= rules.max_gap_s
                : a.source_id == b.source_id &&
                      std::llabs(static_cast<long long>(x.line) - static_cast<long long>(y.line)) <=
                          rules.same_stream_lines;
        if (!close) return {};
        if (x.pid && y.pid && samePidSpace(a, b))
            return gap ? fmt::format("same pid {} within {:.3f} s", *x.pid, *gap)
                       : fmt::format("same pid {} in one stream", *x.pid);
        if (a.source_id == b.source_id) {
            // An Xid without a pid belongs to the channel named by the Xid 43 that follows it
            // (13 → 43), not to an earlier process's Xid 31 of the same device.
            bool xidWithoutPid =
                (x.kind == Kind::NvidiaXid || y.kind == Kind::NvidiaXid) && (!x.pid || !y.pid);
            bool chain13to43 = x.kind == Kind::NvidiaXid && y.kind == Kind::NvidiaXid && !x.pid &&
                               y.pid && y.xid && *y.xid == 43 && x.line < y.line;
            if (x.pci && y.pci && (!xidWithoutPid || (!x.pid && !y.pid) || chain13to43))
                return fmt::format("same device {} in one stream", *x.pci);
            if (!isKernelSide(x.kind) && (!x.pid || !y.pid))
                return gap ? fmt::format("same stream, {:.3f} s apart", *gap)
                           : fmt::format("same stream, {} lines apart",
                                         std::llabs(static_cast<long long>(x.line) -
                                                    static_cast<long long>(y.line)));
        }
        return {};
    }
};

int kindPriority(Kind k) {
    switch (k) {
        case Kind::RocrMemoryFault:
            return 0;
        case Kind::AmdgpuPageFault:
            return 1;
        case Kind::SanitizerReport:
            return 2;
        case Kind::NvidiaXid:
            return 3;
        case Kind::CpuSegfault:
            return 4;
        case Kind::HsaQueueError:
            return 5;
        case Kind::MissingCodeObject:
            return 6;
        case Kind::RuntimeError:
            return 7;
        case Kind::Coredump:
            return 8;
        default:
            return 9;
    }
}

/// Errors that a memory fault produces (CUDA/HIP 700, 710, 715–719 and their driver names).
bool isFaultFamilyError(const Evidence& e) {
    if (!e.reason) return false;
    static constexpr std::string_view kNames[] = {"IllegalAddress",
                                                  "ILLEGAL_ADDRESS",
                                                  "LaunchFailure",
                                                  "LAUNCH_FAILED",
                                                  "Assert",
                                                  "ASSERT",
                                                  "IllegalInstruction",
                                                  "ILLEGAL_INSTRUCTION",
                                                  "MisalignedAddress",
                                                  "MISALIGNED_ADDRESS",
                                                  "InvalidAddressSpace",
                                                  "INVALID_ADDRESS_SPACE",
                                                  "InvalidPc",
                                                  "INVALID_PC",
                                                  "HardwareStackError",
                                                  "HARDWARE_STACK_ERROR"};
    for (auto n : kNames)
        if (e.reason->find(n) != std::string::npos) return true;
    return false;
}

std::string signatureOf(const std::vector<const StoredEvidence*>& members) {
    // vendor, kind set, reasons and clients: what makes two incidents the same bug (v1).
    std::vector<std::string> parts;
    for (auto* m : members) {
        parts.push_back(fmt::format("{}|{}|{}|{}|{}",
                                    m->e.vendor.value_or(""),
                                    kindName(m->e.kind),
                                    m->e.reason.value_or(""),
                                    m->e.client.value_or(""),
                                    m->e.kernel.value_or("")));
        if (auto stack = m->e.attr("stack")) parts.back() += fmt::format("|stack {}", *stack);
    }
    std::sort(parts.begin(), parts.end());
    parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
    uint64_t h = 1469598103934665603ull;
    for (auto& p : parts)
        for (unsigned char c : p + ";") h = (h ^ c) * 1099511628211ull;
    return fmt::format("{:016x}", h);
}

/// Asks `stop` once every 4096 calls (it may be a system call); true from then on.
class Interrupt {
  public:
    explicit Interrupt(const std::function<bool()>& stop) : stop_(stop) {}
    bool operator()() {
        if (hit_) return true;
        if (!stop_ || (++n_ & 4095) != 1) return false;
        return hit_ = stop_();
    }

  private:
    const std::function<bool()>& stop_;
    uint64_t n_ = 0;
    bool hit_ = false;
};

}  // namespace

std::vector<IncidentRecord> correlate(const std::vector<StoredEvidence>& evidence,
                                      const CorrelationRules& rules,
                                      const ProcessLinks& links) {
    return *correlateUnless({}, evidence, rules, links);
}

std::optional<std::vector<IncidentRecord>> correlateUnless(
    const std::function<bool()>& stop,
    const std::vector<StoredEvidence>& evidence,
    const CorrelationRules& rules,
    const ProcessLinks& links) {
    Interrupt stopped(stop);
    std::vector<const StoredEvidence*> faults, context;
    for (auto& s : evidence) (opensIncident(s.e.kind) ? faults : context).push_back(&s);
    auto order = [](const StoredEvidence* a, const StoredEvidence* b) {
        if (a->source != b->source) return a->source < b->source;
        if (a->e.line != b->e.line) return a->e.line < b->e.line;
        return a->id < b->id;
    };
    std::sort(faults.begin(), faults.end(), order);
    std::sort(context.begin(), context.end(), order);
    if (stopped()) return std::nullopt;

    UnionFind uf(faults, rules.max_gap_s);
    Linker linker{faults, rules};
    // Same stream: each record against its recent predecessors.
    for (size_t i = 0; i < faults.size(); ++i) {
        if (stopped()) return std::nullopt;
        size_t lo = i > static_cast<size_t>(rules.neighbours) ? i - rules.neighbours : 0;
        for (size_t j = i; j-- > lo;) {
            if (faults[j]->source_id != faults[i]->source_id) break;
            // Already one set: join() would do nothing (and the reason text costs a format).
            if (uf.find(j) == uf.find(i)) continue;
            if (auto w = linker.why(*faults[j], *faults[i]); !w.empty()) uf.join(j, i, w);
        }
    }
    // Across streams: records naming addresses in one 2 MiB region.
    std::map<uint64_t, std::vector<size_t>> byRegion;
    for (size_t i = 0; i < faults.size(); ++i)
        if (faults[i]->e.address && (*faults[i]->e.address >> 21) != 0)
            byRegion[*faults[i]->e.address >> 21].push_back(i);
    for (auto& [region, idx] : byRegion)
        for (size_t a = 0; a < idx.size(); ++a) {
            if (stopped()) return std::nullopt;
            for (size_t b = a + 1; b < idx.size() && b < a + 64; ++b)
                if (faults[idx[a]]->source_id != faults[idx[b]]->source_id &&
                    uf.find(idx[a]) != uf.find(idx[b]))
                    if (auto w = linker.why(*faults[idx[a]], *faults[idx[b]]); !w.empty())
                        uf.join(idx[a], idx[b], w);
        }
    // Kernel and runtime records of one process whose pids differ because the runtime ran in
    // a container: /proc/PID/status NSpid, read while it lived, says so.
    std::map<int64_t, std::pair<std::vector<size_t>, std::vector<size_t>>> byProcess;
    for (size_t i = 0; i < faults.size(); ++i) {
        const auto& e = faults[i]->e;
        if (!e.pid) continue;
        if (isKernelSide(e.kind)) {
            if (auto it = links.ns_pids.find(*e.pid); it != links.ns_pids.end())
                byProcess[it->second].first.push_back(i);
        } else {
            byProcess[*e.pid].second.push_back(i);
        }
    }
    for (auto& [inner, sides] : byProcess) {
        auto& [kernel, runtime] = sides;
        if (kernel.empty()) continue;
        for (size_t r = 0; r < runtime.size() && r < 64; ++r) {
            const auto& k = *faults[kernel.front()];
            if (linker.contradicts(k, *faults[runtime[r]])) continue;
            uf.join(kernel.front(),
                    runtime[r],
                    fmt::format("same process: host pid {} is pid {} in its namespace (NSpid)",
                                *k.e.pid,
                                inner));
        }
    }

    // Kernel records of a pid that a `gpufault run` job spawned, and the fault records of that
    // run's captured output (which state no pid, or the job's own).
    std::map<int64_t, std::vector<size_t>> bySource;
    for (size_t i = 0; i < faults.size(); ++i)
        if (!isKernelSide(faults[i]->e.kind)) bySource[faults[i]->source_id].push_back(i);
    for (size_t k = 0; k < faults.size(); ++k) {
        const auto& e = faults[k]->e;
        if (!isKernelSide(e.kind) || !e.pid) continue;
        auto it = links.run_sources.find(*e.pid);
        if (it == links.run_sources.end()) continue;
        for (const auto& [source, run] : it->second) {
            auto recs = bySource.find(source);
            if (recs == bySource.end()) continue;
            for (size_t n = 0; n < recs->second.size() && n < 64; ++n) {
                size_t r = recs->second[n];
                if (linker.contradicts(*faults[k], *faults[r])) continue;
                uf.join(
                    k, r, fmt::format("same process: pid {} was spawned by run #{}", *e.pid, run));
            }
        }
    }

    // A core joins the record of its process (pid, or the crashing thread's tid that a segfault
    // line prints) whose wall time lies at most core_before_s after and core_after_s before
    // the core's time; the closest in time wins (the first in stream order on a tie). Records
    // are looked up by pid and tid, not scanned per core.
    std::unordered_map<int64_t, std::vector<size_t>> withPid, withTid;
    for (size_t i = 0; i < faults.size(); ++i) {
        const auto& f = faults[i]->e;
        if (f.kind == Kind::Coredump || !f.pid || !wallClock(*faults[i])) continue;
        withPid[*f.pid].push_back(i);
        if (f.tid) withTid[*f.tid].push_back(i);
    }
    std::vector<size_t> candidates;
    for (size_t c = 0; c < faults.size(); ++c) {
        if (stopped()) return std::nullopt;
        const auto& core = faults[c]->e;
        if (core.kind != Kind::Coredump || !core.pid) continue;
        auto ct = wallClock(*faults[c]);  // the core's time: an instant (stated)
        if (!ct) continue;
        candidates.clear();
        auto add = [&](const auto& index, int64_t key) {
            if (auto it = index.find(key); it != index.end())
                candidates.insert(candidates.end(), it->second.begin(), it->second.end());
        };
        add(withPid, *core.pid);
        if (core.tid && *core.tid != *core.pid) add(withPid, *core.tid);
        add(withTid, *core.pid);
        std::sort(candidates.begin(), candidates.end());
        candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
        std::optional<size_t> best;
        int64_t bestGap = 0;
        for (size_t i : candidates) {
            if (stopped()) return std::nullopt;
            const auto& f = faults[i]->e;
            bool samePid = *f.pid == *core.pid;
            // comm is cut to 15 characters; a thread's own name may differ from the process's
            if (samePid && f.process && core.process &&
                f.process->substr(0, 15) != core.process->substr(0, 15))
                continue;
            auto ft = wallClock(*faults[i]);
            if (!ft || ft->utc != ct->utc) continue;
            int64_t gap = ct->s - ft->s;
            if (gap < -rules.core_before_s || gap > rules.core_after_s) continue;
            if (!best || std::llabs(gap) < std::llabs(bestGap)) {
                best = i;
                bestGap = gap;
            }
        }
        if (best)
            uf.join(
                *best,
                c,
                fmt::format("core of pid {}, written {} s after the record", *core.pid, bestGap));
    }

    std::map<size_t, std::vector<size_t>> groups;  // root → members, root first
    for (size_t i = 0; i < faults.size(); ++i) groups[uf.find(i)].push_back(i);

    std::vector<IncidentRecord> out;
    std::vector<size_t> incidentOf(faults.size());
    for (auto& [root, idx] : groups) {
        if (stopped()) return std::nullopt;
        IncidentRecord inc;
        std::vector<const StoredEvidence*> members;
        for (size_t i : idx) {
            members.push_back(faults[i]);
            incidentOf[i] = out.size();
            inc.members.push_back({faults[i]->id, "member", i == root ? "first" : uf.link[i]});
        }
        // Most specific first: kind priority, then fault-family errors, then stream order (the
        // keys computed once per record: the reason text is searched for 16 names).
        std::vector<std::pair<int, const StoredEvidence*>> keyed;
        keyed.reserve(members.size());
        for (auto* m : members)
            keyed.emplace_back(kindPriority(m->e.kind) * 2 + (isFaultFamilyError(m->e) ? 0 : 1), m);
        std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
            return a.first < b.first;
        });
        for (size_t k = 0; k < keyed.size(); ++k) members[k] = keyed[k].second;
        const StoredEvidence* primary = members.front();
        inc.kind = std::string(kindName(primary->e.kind));
        inc.vendor = primary->e.vendor;
        // The most exact address: an exact one beats a page start.
        bool exact = false;
        for (auto* m : members) {  // members are in priority order, then stream order
            if (!m->e.address) continue;
            bool e = m->e.address_exact.value_or(false);
            if (!inc.address || (e && !exact)) {
                inc.address = m->e.address;
                exact = e;
            }
        }
        for (auto* m : members) {
            if (!inc.pid && m->e.pid) inc.pid = m->e.pid;
            if (!inc.process && m->e.process) inc.process = m->e.process;
            if (!inc.reason && m->e.reason) inc.reason = m->e.reason;
            if (!inc.kernel && m->e.kernel) inc.kernel = m->e.kernel;
        }
        inc.signature = signatureOf(members);
        out.push_back(std::move(inc));
    }

    // Context: a GPU reset joins the incident of the same device that precedes it closely (the
    // last such fault in stream order); an allocation failure joins the next incident of its
    // stream (and process). Faults are looked up by device and by stream, not scanned per record.
    std::unordered_map<std::string, std::vector<size_t>> byPci;
    std::unordered_map<int64_t, std::vector<size_t>> byStream;  // in line order
    for (size_t i = 0; i < faults.size(); ++i) {
        if (faults[i]->e.pci) byPci[*faults[i]->e.pci].push_back(i);
        byStream[faults[i]->source_id].push_back(i);
    }
    for (auto* c : context) {
        if (stopped()) return std::nullopt;
        std::optional<size_t> best;
        std::string why;
        if (c->e.kind == Kind::GpuReset) {
            auto it = c->e.pci ? byPci.find(*c->e.pci) : byPci.end();
            if (it == byPci.end()) continue;
            // The last match in stream order: searched from the end, the first match ends it.
            for (auto i = it->second.rbegin(); i != it->second.rend(); ++i) {
                if (stopped()) return std::nullopt;
                const auto* f = faults[*i];
                auto gap = clockGap(*f, *c);
                bool after = f->source_id == c->source_id ? f->e.line <= c->e.line : true;
                if (gap ? *gap <= rules.reset_after_s : f->source_id == c->source_id && after) {
                    best = incidentOf[*i];
                    why = fmt::format("reset of {} after the fault", *c->e.pci);
                    break;
                }
            }
        } else if (auto it = byStream.find(c->source_id); it != byStream.end()) {
            const auto& idx = it->second;
            auto from = std::partition_point(
                idx.begin(), idx.end(), [&](size_t i) { return faults[i]->e.line < c->e.line; });
            for (; from != idx.end(); ++from) {
                if (stopped()) return std::nullopt;
                const auto* f = faults[*from];
                if (f->e.pid && c->e.pid && *f->e.pid != *c->e.pid) continue;
                best = incidentOf[*from];
                if (f->e.time.runtime_us && c->e.time.runtime_us)
                    why = fmt::format(
                        "allocation failure {:.3f} s ({} lines) before",
                        static_cast<double>(*f->e.time.runtime_us - *c->e.time.runtime_us) / 1e6,
                        f->e.line - c->e.line);
                else
                    why = fmt::format("allocation failure {} lines before", f->e.line - c->e.line);
                break;
            }
        }
        if (best) out[*best].members.push_back({c->id, "context", why});
    }
    return out;
}

}  // namespace gpufault
