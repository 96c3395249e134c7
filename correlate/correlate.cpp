#include "correlate/correlate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <unordered_map>

#include "collectors/runtime_log/error_names.h"
#include "correlate/links.h"

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

using links::clockGap;
using links::wallClock;

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

/// A record that opens (or joins) an incident: a fault kind (opensIncident()), but not a runtime
/// error of a code programs probe for (errnames::isProbeResult(): `CUDA_ERROR_NOT_FOUND` of a
/// cuGetProcAddress): that is context of the next fault of its stream, like an allocation failure.
bool opensIncidentHere(const Evidence& e) {
    if (!opensIncident(e.kind)) return false;
    return !(e.kind == Kind::RuntimeError && e.reason && errnames::isProbeResult(*e.reason));
}

std::string signatureOf(const std::vector<const StoredEvidence*>& members,
                        const std::map<int64_t, std::string>& lastKernels) {
    // vendor, kind set, reasons and clients: what makes two incidents the same bug (v1); for an
    // Xid also its number (a GPU fallen off the bus, Xid 79, is not an application's Xid 13).
    // A record that names no kernel itself but had one kernel dispatched just before it (a ROCr
    // line after ShaderName lines) adds that kernel; records without one keep their old part.
    std::vector<std::string> parts;
    for (auto* m : members) {
        parts.push_back(fmt::format("{}|{}|{}|{}|{}",
                                    m->e.vendor.value_or(""),
                                    kindName(m->e.kind),
                                    m->e.reason.value_or(""),
                                    m->e.client.value_or(""),
                                    m->e.kernel.value_or("")));
        if (m->e.xid) parts.back() += fmt::format("|xid {}", *m->e.xid);
        if (auto k = lastKernels.find(m->id); !m->e.kernel && k != lastKernels.end())
            parts.back() += fmt::format("|dispatched {}", k->second);
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
    for (auto& s : evidence) (opensIncidentHere(s.e) ? faults : context).push_back(&s);
    auto order = [](const StoredEvidence* a, const StoredEvidence* b) {
        if (a->source != b->source) return a->source < b->source;
        if (a->e.line != b->e.line) return a->e.line < b->e.line;
        return a->id < b->id;
    };
    std::sort(faults.begin(), faults.end(), order);
    std::sort(context.begin(), context.end(), order);
    if (stopped()) return std::nullopt;

    links::UnionFind uf(faults, rules.max_gap_s, links::processRuns(faults));
    links::Linker linker{rules};
    // Same stream: each record against its recent predecessors.
    for (size_t i = 0; i < faults.size(); ++i) {
        if (stopped()) return std::nullopt;
        size_t lo = i > static_cast<size_t>(rules.neighbours) ? i - rules.neighbours : 0;
        for (size_t j = i; j-- > lo;) {
            if (faults[j]->source_id != faults[i]->source_id) break;
            // A stream is in time order: past a predecessor that a clock puts more than
            // max_gap_s away, every earlier record is further still (or has no clock to say).
            if (links::apartOnAClock(*faults[j], *faults[i], rules.max_gap_s)) break;
            // Already one set: join() would do nothing (and the reason text costs a format).
            if (uf.find(j) == uf.find(i)) continue;
            if (auto w = linker.why(*faults[j], *faults[i]); !w.why.empty())
                uf.join(j, i, std::move(w));
        }
    }
    // Across streams: records naming addresses in one 2 MiB region, unless a set has two or
    // more candidates there that exclude each other (ranks, pids): then nothing tells which is
    // its, and none is joined (the candidates are noted for `show`).
    std::map<uint64_t, std::vector<size_t>> byRegion;
    for (size_t i = 0; i < faults.size(); ++i)
        if (faults[i]->e.address && (*faults[i]->e.address >> 21) != 0)
            byRegion[*faults[i]->e.address >> 21].push_back(i);
    std::vector<std::pair<size_t, size_t>> ambiguous;  // (record, a candidate not joined)
    for (auto& [region, idx] : byRegion) {
        if (stopped()) return std::nullopt;
        auto edges = regionEdges(uf, linker, faults, idx);
        for (auto& e : edges) {
            if (e.ambiguous) {
                ambiguous.emplace_back(e.a, e.b);
                continue;
            }
            uf.join(e.a, e.b, std::move(e.link));
        }
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
                    {fmt::format("same process: host pid {} is pid {} in its namespace (NSpid)",
                                 *k.e.pid,
                                 inner),
                     true});
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
                uf.join(k,
                        r,
                        {fmt::format("same process: pid {} was spawned by run #{}", *e.pid, run),
                         true});
            }
        }
    }

    // A core joins the record of its process (pid, or the crashing thread's tid that a segfault
    // line prints) whose wall time lies at most core_before_s after and core_after_s before
    // the core's time; the closest in time wins (the first in stream order on a tie). Records
    // are looked up by pid and tid, not scanned per core. A runtime record without a pid of
    // its own counts under the pid its journal states (`python3[4242]: Memory access fault …`:
    // the process that wrote the line to the journal, which ROCr's abort() then dumped).
    std::unordered_map<int64_t, std::vector<size_t>> withPid, withTid;
    auto pidOf = [](const Evidence& f) { return f.pid ? f.pid : links::journalPid(f); };
    for (size_t i = 0; i < faults.size(); ++i) {
        const auto& f = faults[i]->e;
        auto pid = pidOf(f);
        if (f.kind == Kind::Coredump || !pid || !wallClock(*faults[i])) continue;
        withPid[*pid].push_back(i);
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
            bool samePid = *pidOf(f) == *core.pid;
            // comm is cut to 15 characters; a thread's own name may differ from the process's
            if (samePid && f.process && core.process &&
                f.process->substr(0, 15) != core.process->substr(0, 15))
                continue;
            auto ft = wallClock(*faults[i]);
            if (!ft || ft->utc != ct->utc || ft->yearless) continue;  // no instant to compare
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
                {fmt::format("core of pid {}, written {} s after the record", *core.pid, bestGap),
                 true});
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
            inc.members.push_back({faults[i]->id, "member", i == root ? "first" : uf.linkOf(i)});
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
        // a pid a record states itself before one only its journal states (a launcher's)
        for (auto* m : members)
            if (!inc.pid) inc.pid = links::ownPid(m->e);
        for (auto* m : members) {
            if (!inc.pid && m->e.pid) inc.pid = m->e.pid;
            if (!inc.process && m->e.process) inc.process = m->e.process;
            if (!inc.reason && m->e.reason) inc.reason = m->e.reason;
            if (!inc.kernel && m->e.kernel) inc.kernel = m->e.kernel;
        }
        inc.signature = signatureOf(members, links.last_kernels);
        out.push_back(std::move(inc));
    }

    // Records a region link could not choose between: each is noted in the other's incident
    // (`show`: "could be pid A or pid B"), at most 8 per incident.
    std::set<std::pair<size_t, int64_t>> noted;
    for (auto [a, b] : ambiguous)
        for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}}) {
            size_t inc = incidentOf[x];
            // a core is never a candidate: its rows are looked up by incident without a role
            if (inc == incidentOf[y] || noted.contains({inc, faults[y]->id}) ||
                faults[y]->e.kind == Kind::Coredump)
                continue;
            if (std::count_if(out[inc].members.begin(), out[inc].members.end(), [](auto& m) {
                    return m.role == "candidate";
                }) >= 8)
                continue;
            noted.insert({inc, faults[y]->id});
            out[inc].members.push_back(
                {faults[y]->id,
                 "candidate",
                 fmt::format("same 2 MiB region 0x{:x}, not joined: another record there could "
                             "be this one's too",
                             (*faults[y]->e.address >> 21) << 21)});
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
                if (gap ? !gap->exceeds(rules.reset_after_s)
                        : f->source_id == c->source_id && after) {
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
                if (f->e.rank && c->e.rank && *f->e.rank != *c->e.rank) continue;
                best = incidentOf[*from];
                std::string what = c->e.kind == Kind::AllocFailure
                                       ? std::string("allocation failure")
                                       : "probe result " + c->e.reason.value_or("");
                if (f->e.time.runtime_us && c->e.time.runtime_us)
                    why = fmt::format(
                        "{} {:.3f} s ({} lines) before",
                        what,
                        static_cast<double>(*f->e.time.runtime_us - *c->e.time.runtime_us) / 1e6,
                        f->e.line - c->e.line);
                else if (auto g = clockGap(*f, *c))  // the kernel's clock, or wall stamps
                    why = fmt::format("{} {} ({} lines) before",
                                      what,
                                      g->tolerance > 0 ? fmt::format("{:.0f} s", g->s)
                                                       : fmt::format("{:.3f} s", g->s),
                                      f->e.line - c->e.line);
                else
                    why = fmt::format("{} {} lines before", what, f->e.line - c->e.line);
                break;
            }
        }
        if (best) out[*best].members.push_back({c->id, "context", why});
    }
    return out;
}

}  // namespace gpufault
