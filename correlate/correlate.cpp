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
           k == Kind::GpuReset;
}

namespace {

/// Disjoint sets of records. A join is refused when any two records of the two sets
/// contradict each other (two pids of one namespace, two devices, ...), so a record without a
/// pid cannot chain two processes into one incident.
struct UnionFind {
    std::vector<size_t> parent;
    std::vector<std::string> link;             // why each set root joined its parent
    std::vector<std::vector<size_t>> members;  // per root
    explicit UnionFind(size_t n) : parent(n), link(n), members(n) {
        std::iota(parent.begin(), parent.end(), 0);
        for (size_t i = 0; i < n; ++i) members[i] = {i};
    }
    size_t find(size_t x) {
        while (parent[x] != x) x = parent[x] = parent[parent[x]];
        return x;
    }
    // Joins b's set into a's (the earlier record stays the root) unless `conflict(i, j)` holds
    // for a pair of their members.
    template <typename Conflict>
    void join(size_t a, size_t b, std::string why, Conflict&& conflict) {
        size_t ra = find(a), rb = find(b);
        if (ra == rb) return;
        for (size_t i : members[ra])
            for (size_t j : members[rb])
                if (conflict(i, j)) return;
        if (rb < ra) std::swap(ra, rb);
        parent[rb] = ra;
        link[rb] = std::move(why);
        members[ra].insert(members[ra].end(), members[rb].begin(), members[rb].end());
        members[rb].clear();
    }
};

/// Seconds between two records on a clock both carry; nullopt when they share none.
std::optional<double> clockGap(const Evidence& a, const Evidence& b) {
    if (a.time.kernel_s && b.time.kernel_s) return std::fabs(*a.time.kernel_s - *b.time.kernel_s);
    if (a.time.runtime_us && b.time.runtime_us)
        return std::fabs(static_cast<double>(*a.time.runtime_us - *b.time.runtime_us)) / 1e6;
    if (a.time.wall && b.time.wall && a.time.wall->size() == 19 && b.time.wall->size() == 19)
        return *a.time.wall == *b.time.wall ? 0.0 : 1e9;  // to the second; different = unknown gap
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
        if (auto gap = clockGap(x, y); gap && *gap > rules.max_gap_s) return true;
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
        auto gap = clockGap(x, y);
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
    }
    std::sort(parts.begin(), parts.end());
    parts.erase(std::unique(parts.begin(), parts.end()), parts.end());
    uint64_t h = 1469598103934665603ull;
    for (auto& p : parts)
        for (unsigned char c : p + ";") h = (h ^ c) * 1099511628211ull;
    return fmt::format("{:016x}", h);
}

}  // namespace

std::vector<IncidentRecord> correlate(const std::vector<StoredEvidence>& evidence,
                                      const CorrelationRules& rules) {
    std::vector<const StoredEvidence*> faults, context;
    for (auto& s : evidence) (opensIncident(s.e.kind) ? faults : context).push_back(&s);
    auto order = [](const StoredEvidence* a, const StoredEvidence* b) {
        if (a->source != b->source) return a->source < b->source;
        if (a->e.line != b->e.line) return a->e.line < b->e.line;
        return a->id < b->id;
    };
    std::sort(faults.begin(), faults.end(), order);
    std::sort(context.begin(), context.end(), order);

    UnionFind uf(faults.size());
    Linker linker{faults, rules};
    auto conflict = [&](size_t i, size_t j) { return linker.contradicts(*faults[i], *faults[j]); };
    // Same stream: each record against its recent predecessors.
    for (size_t i = 0; i < faults.size(); ++i) {
        size_t lo = i > static_cast<size_t>(rules.neighbours) ? i - rules.neighbours : 0;
        for (size_t j = i; j-- > lo;) {
            if (faults[j]->source_id != faults[i]->source_id) break;
            if (auto w = linker.why(*faults[j], *faults[i]); !w.empty()) uf.join(j, i, w, conflict);
        }
    }
    // Across streams: records naming addresses in one 2 MiB region.
    std::map<uint64_t, std::vector<size_t>> byRegion;
    for (size_t i = 0; i < faults.size(); ++i)
        if (faults[i]->e.address && (*faults[i]->e.address >> 21) != 0)
            byRegion[*faults[i]->e.address >> 21].push_back(i);
    for (auto& [region, idx] : byRegion)
        for (size_t a = 0; a < idx.size(); ++a)
            for (size_t b = a + 1; b < idx.size() && b < a + 64; ++b)
                if (faults[idx[a]]->source_id != faults[idx[b]]->source_id)
                    if (auto w = linker.why(*faults[idx[a]], *faults[idx[b]]); !w.empty())
                        uf.join(idx[a], idx[b], w, conflict);

    std::map<size_t, std::vector<size_t>> groups;  // root → members, root first
    for (size_t i = 0; i < faults.size(); ++i) groups[uf.find(i)].push_back(i);

    std::vector<IncidentRecord> out;
    std::vector<size_t> incidentOf(faults.size());
    for (auto& [root, idx] : groups) {
        IncidentRecord inc;
        std::vector<const StoredEvidence*> members;
        for (size_t i : idx) {
            members.push_back(faults[i]);
            incidentOf[i] = out.size();
            inc.members.push_back({faults[i]->id, "member", i == root ? "first" : uf.link[i]});
        }
        // Most specific first: kind priority, then fault-family errors, then stream order.
        std::stable_sort(members.begin(), members.end(), [](auto* a, auto* b) {
            int pa = kindPriority(a->e.kind), pb = kindPriority(b->e.kind);
            if (pa != pb) return pa < pb;
            return isFaultFamilyError(a->e) && !isFaultFamilyError(b->e);
        });
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

    // Context: a GPU reset joins the incident of the same device that precedes it closely; an
    // allocation failure joins the next incident of its stream (and process).
    for (auto* c : context) {
        std::optional<size_t> best;
        std::string why;
        for (size_t i = 0; i < faults.size(); ++i) {
            const auto* f = faults[i];
            if (c->e.kind == Kind::GpuReset) {
                if (!c->e.pci || !f->e.pci || *c->e.pci != *f->e.pci) continue;
                auto gap = clockGap(f->e, c->e);
                bool after = f->source_id == c->source_id ? f->e.line <= c->e.line : true;
                if (gap ? *gap <= rules.reset_after_s : f->source_id == c->source_id && after) {
                    best = incidentOf[i];
                    why = fmt::format("reset of {} after the fault", *c->e.pci);
                }
            } else if (f->source_id == c->source_id && f->e.line >= c->e.line &&
                       (!f->e.pid || !c->e.pid || *f->e.pid == *c->e.pid)) {
                best = incidentOf[i];
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
