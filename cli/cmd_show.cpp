// `show` (everything about one incident) and `report` (an upstream bug-report draft).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <span>

#include "cli/commands.h"
#include "cli/diagnosis_view.h"
#include "cli/incident_view.h"
#include "cli/output.h"
#include "cli/report_sections.h"
#include "cli/stack_view.h"
#include "cli/store_open.h"
#include "collectors/common/demangle.h"
#include "collectors/common/log_line.h"
#include "collectors/common/text.h"
#include "schema/core_queries.h"
#include "schema/queries.h"

namespace gpufault::cli {

namespace {

/// The modules that say which GPU runtime a process ran: HIP, ROCr, CUDA, the math libraries.
bool runtimeModule(const std::string& path) {
    for (const char* k : {"libamdhip64",
                          "libhsa-runtime64",
                          "libcudart",
                          "libcuda.so",
                          "librocblas",
                          "libhipblaslt",
                          "libMIOpen",
                          "librccl",
                          "libnccl",
                          "libtorch_hip",
                          "libtorch_cuda",
                          "libamd_comgr"})
        if (path.find(k) != std::string::npos) return true;
    return false;
}

/// `  snapshot   …` lines: what /proc said about an incident's process while it lived.
std::string processText(const ProcessRow& r) {
    const auto& p = r.p;
    auto ns = nlohmann::json::parse(p.nspid, nullptr, false);
    std::string nspid;
    if (ns.is_array() && ns.size() > 1)
        for (const auto& x : ns) nspid += (nspid.empty() ? "" : " ") + x.dump();
    std::string out =
        fmt::format("  snapshot   {} pid {} (ppid {}, uid {}){}{}, taken {}\n",
                    printable(p.name),
                    p.pid,
                    orDash(p.ppid),
                    orDash(p.uid),
                    nspid.empty() ? "" : ", NSpid " + nspid,
                    p.cgroup.empty() || p.cgroup == "/" ? "" : ", cgroup " + printable(p.cgroup),
                    p.taken_at);
    std::string mods;
    for (const auto& m : p.modules)
        if (runtimeModule(m.path)) mods += (mods.empty() ? "" : ", ") + printable(m.path);
    out += fmt::format("             {} modules mapped{}{}\n",
                       p.modules.size(),
                       mods.empty() ? "" : "; GPU runtime: ",
                       mods);
    return out;
}

/// What the record states beyond kind and address, on one line.
std::string facts(const Evidence& e) {
    std::vector<std::string> f;
    if (e.xid) f.push_back(fmt::format("Xid {}", *e.xid));
    if (e.pci) f.push_back(*e.pci);
    if (e.gpu_node) f.push_back(fmt::format("node-{}", *e.gpu_node));
    if (e.pid) f.push_back(fmt::format("pid {}{}", *e.pid, e.process ? " " + *e.process : ""));
    if (statedRank(e.rank)) f.push_back(fmt::format("rank {}", *e.rank));
    if (e.vmid) f.push_back(fmt::format("vmid {}", *e.vmid));
    if (e.pasid) f.push_back(fmt::format("pasid {}", *e.pasid));
    if (e.client) f.push_back("client " + *e.client);
    if (e.access) f.push_back(*e.access);
    if (e.status) f.push_back(fmt::format("status 0x{:08X}", *e.status));
    if (e.reason) f.push_back(*e.reason);
    if (auto m = e.attr("message"); m && !e.reason) f.push_back(std::string(*m));
    if (e.kernel) f.push_back("kernel " + shortKernelName(*e.kernel, 80));
    if (e.module) f.push_back(fmt::format("{}+0x{:x}", *e.module, e.module_offset.value_or(0)));
    if (auto a = e.attr("nearest_alloc"))
        f.push_back(fmt::format("sanitizer: {} B {} the nearest allocation {} of {} B",
                                e.attr("nearest_distance").value_or("?"),
                                e.attr("nearest_side").value_or("after"),
                                *a,
                                e.attr("nearest_alloc_size").value_or("?")));
    if (e.count > 1)
        f.push_back(fmt::format("×{} (identical lines folded into this record)", e.count));
    if (auto n = e.attr("callbacks_suppressed"))
        f.push_back(
            fmt::format("the kernel's rate limit dropped {} messages before it (fault "
                        "counts are lower bounds)",
                        *n));
    if (e.attr("unended")) f.push_back(kUnendedNote);
    std::string s;
    for (auto& x : f) s += (s.empty() ? "" : ", ") + x;
    return s;
}

/// The records a region link could not choose between (role "candidate"), as "pid 100 python3
/// (#1) or rank 1 (#4)": each by its pid, else its rank, else where it is; "" when none.
std::string candidatesText(const IncidentView& v) {
    std::string s;
    for (const auto& m : v.members) {
        if (m.role != "candidate") continue;
        const auto& e = m.ev.e;
        std::string who = e.pid ? fmt::format("pid {}{}", *e.pid, e.process ? " " + *e.process : "")
                          : statedRank(e.rank) ? fmt::format("rank {}", *e.rank)
                                               : fmt::format("{}:{}", m.ev.source, e.line);
        s += fmt::format("{}{} (#{})", s.empty() ? "" : " or ", who, m.ev.id);
    }
    return s;
}

/// The rank (`[rankN]:`, NCCL's `[Rank N]`) its member records state (one at most: two ranks
/// never join); nullopt when none states one.
std::optional<int64_t> incidentRank(const IncidentView& v) {
    for (const auto& m : v.members)
        if (m.role == "member" && m.ev.e.rank) return m.ev.e.rank;
    return std::nullopt;
}

/// "inside, N from ptr", "N below ptr", "N above end"; a distance of 2^63 B or more is refused
/// (no exact 64-bit figure), not clamped.
std::string spanText(bool inside,
                     bool below,
                     const std::optional<int64_t>& distance,
                     const std::optional<int64_t>& from_ptr,
                     bool exact = true) {
    if (!exact) return approxSpanText(inside, below, distance, from_ptr);
    if (inside) return fmt::format("inside, {} from ptr", humanBytes(from_ptr.value_or(0)));
    if (!distance) return below ? "2^63 B or more below ptr" : "2^63 B or more above end";
    if (below) return fmt::format("{} below ptr", humanBytes(*distance));
    return aboveEndText(*distance);
}

/// A JSON number, or null when the value was refused.
nlohmann::json optJson(const std::optional<int64_t>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

std::string distanceText(const DistanceRow& r, bool exact) {
    return spanText(r.inside, r.below, r.distance, r.from_ptr, exact);
}

/// `exact` false: the fault address is a page start or masked, distances are to it (approxSpanText).
TextTable operandTable(const std::vector<DistanceRow>& rows, bool exact) {
    TextTable t{{"OPERAND", "PTR", "END", "SIZE", "DISTANCE", "SAME 2MiB", "ORDER", "WHERE"}, {}};
    for (const auto& r : rows)
        t.rows.push_back({r.op.o.name,
                          addr16(r.op.o.ptr),
                          addr16(r.op.o.end),
                          sizeText(r.op.o.end - r.op.o.ptr),
                          distanceText(r, exact),
                          r.same_2mib ? "yes" : "no",
                          r.after_fault ? std::string("after fault") : orDash(r.rank_in_time),
                          fmt::format("{}:{}", r.op.source, r.op.o.line)});
    return t;
}

constexpr size_t kAllocationRows = 10;

/// The "… N more operands" line (text), "" when all were printed.
std::string moreOperandsText(int64_t total, size_t shown, int64_t evidence, bool md) {
    if (total <= static_cast<int64_t>(shown)) return "";
    std::string q = fmt::format(
        "gpufault query \"SELECT * FROM fault_operand_distance WHERE evidence_id = {} ORDER BY "
        "abs(distance)\"",
        evidence);
    return fmt::format("… {} more operands: {}\n", total - static_cast<int64_t>(shown), md ? "`" + q + "`" : q);
}

std::string allocationDistanceText(const AllocationDistanceRow& r) {
    return spanText(r.inside, r.below, r.distance, r.from_ptr);
}

/// live (not freed before the fault), or freed before it (the use-after-free signature), or
/// freed with the order unknown (no clock shared with the fault, or within its second). A
/// buffer of a program image an exec replaced: gone at the exec when that came before the fault,
/// and when the order is not known (joined without a clock, a run's output) said so.
std::string allocationState(const AllocationDistanceRow& r) {
    if (!r.free_api && r.exec_before == true) return "gone at exec, before the fault";
    if (!r.free_api && r.exec_replaced && !r.exec_before) return "gone at exec, order unknown";
    if (!r.free_api) return "live";
    // a free another file of the recording recorded is named by its file and line
    std::string api = *r.free_api + (r.free_elsewhere ? " at " + *r.free_elsewhere : "");
    if (!r.freed_before) return "freed (" + api + "), order unknown";
    return *r.freed_before ? "FREED before fault (" + api + ")" : "live (freed after, " + api + ")";
}

/// One line on allocation recordings the fault did not meet, and why.
std::string missText(const AllocationMiss& m) {
    // Without a time on the fault the recordings are not ruled out, only not told apart
    // (schema/alloc_misses.cpp): "none of the process that faulted" would claim too much.
    if (m.pid && m.why.starts_with("the fault's records have no time to tell"))
        return fmt::format(
            "Allocations: pid {} has {} in the store, and which of them "
            "(if any) is the process that faulted is not known: {} (docs/preload.md \"Reused "
            "pids\")",
            *m.pid,
            counted(m.recordings, "allocation recording"),
            printable(m.why));
    if (m.pid)
        return fmt::format(
            "Allocations: pid {} has {} in the store, none of the "
            "process that faulted: {} (docs/preload.md \"Reused pids\")",
            *m.pid,
            counted(m.recordings, "allocation recording"),
            printable(m.why));
    std::string pids;
    for (int64_t p : m.pids) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    if (m.pid_count > static_cast<int64_t>(m.pids.size())) pids += ", …";
    return fmt::format(
        "Allocations: {} in the store (pid{} {}), none "
        "joined: {}",
        counted(m.recordings, "allocation recording"),
        m.pid_count == 1 ? "" : "s",
        pids,
        printable(m.why));
}

/// The processes `rows` come from, for a heading: `pid 21039`, `pids 21039, 21040` (a run's
/// recordings join every process of the run: a PID column then tells the rows apart).
std::string allocationPids(const std::vector<AllocationDistanceRow>& rows) {
    std::vector<int64_t> pids;
    for (const auto& r : rows)
        if (std::find(pids.begin(), pids.end(), r.pid) == pids.end()) pids.push_back(r.pid);
    std::sort(pids.begin(), pids.end());
    return fmt::format("pid{} {}", pids.size() == 1 ? "" : "s", fmt::join(pids, ", "));
}

/// The shim's allocations nearest the fault, with the caching-allocator caveat.
void printAllocations(const std::vector<AllocationDistanceRow>& rows) {
    const std::string pids = allocationPids(rows);
    const bool several = pids.starts_with("pids");
    fmt::print("\nAllocations recorded by the preload shim, by |distance| from {} ({} of {})\n",
               addr16(rows.front().address),
               rows.size(),
               pids);
    fmt::print(
        "  Under PyTorch's caching allocator these are segments (the allocator's "
        "cudaMalloc/hipMalloc blocks), not tensors.\n");
    TextTable t{
        {"API", "PTR", "END", "SIZE", "DISTANCE", "SAME 2MiB", "DEVICE", "STATE", "STACK", "WHERE"},
        {}};
    if (several) t.header.insert(t.header.begin(), "PID");
    for (size_t i = 0; i < rows.size() && i < kAllocationRows; ++i) {
        const auto& r = rows[i];
        std::string stack = r.stack ? r.stack->substr(0, r.stack->find(';')) : "-";
        t.rows.push_back({r.api,
                          addr16(r.ptr),
                          addr16(r.end),
                          sizeText(r.end - r.ptr),
                          allocationDistanceText(r),
                          r.same_2mib ? "yes" : "no",
                          orDash(r.device),
                          allocationState(r),
                          printable(stack),
                          fmt::format("{}:{}", printable(r.source), r.line)});
        if (several) t.rows.back().insert(t.rows.back().begin(), std::to_string(r.pid));
    }
    t.print(stdout);
    if (rows.size() > kAllocationRows)
        fmt::print(
            "  {} more: gpufault query \"SELECT * FROM fault_allocation_distance WHERE "
            "evidence_id = {} ORDER BY abs(distance)\"\n",
            rows.size() - kAllocationRows,
            rows.front().evidence_id);
}

/// The exact signed figure of humanBytes() without its unit: `+1,539,178,496`, `-16`, `0`.
std::string signedExact(int64_t b) {
    std::string h = humanBytes(b);
    return h.substr(0, h.find(" B"));
}

/// printAllocations() as Markdown (report --format md): the same rows and columns.
void printAllocationsMarkdown(const std::vector<AllocationDistanceRow>& rows) {
    fmt::print("### Fault address vs. recorded allocations\n\n");
    fmt::print(
        "Allocations recorded by the preload shim, by |distance| from `{}` ({} of {}). Under "
        "PyTorch's caching allocator these are segments (the allocator's cudaMalloc/hipMalloc "
        "blocks), not tensors.\n\n",
        addr16(rows.front().address),
        rows.size(),
        allocationPids(rows));
    const bool several = allocationPids(rows).starts_with("pids");
    fmt::print("{}| api | ptr | end | size | distance | same 2 MiB | device | state | stack | "
               "where |\n",
               several ? "| pid " : "");
    fmt::print("{}|---|---|---|---:|---:|---|---:|---|---|---|\n", several ? "|---:" : "");
    for (size_t i = 0; i < rows.size() && i < kAllocationRows; ++i) {
        const auto& r = rows[i];
        std::string stack = r.stack ? r.stack->substr(0, r.stack->find(';')) : "-";
        if (several) fmt::print("| {} ", r.pid);
        fmt::print("| {} | `{}` | `{}` | {} | {} | {} | {} | {} | {} | {} |\n",
                   mdCell(mdText(r.api)),
                   addr16(r.ptr),
                   addr16(r.end),
                   sizeText(r.end - r.ptr),
                   allocationDistanceText(r),
                   r.same_2mib ? "yes" : "no",
                   orDash(r.device),
                   allocationState(r),
                   mdCell(mdText(stack)),
                   mdCell(mdCode(fmt::format("{}:{}", r.source, r.line))));
    }
    if (rows.size() > kAllocationRows)
        fmt::print(
            "\n{} more: `gpufault query \"SELECT * FROM fault_allocation_distance WHERE "
            "evidence_id = {} ORDER BY abs(distance)\"`\n",
            rows.size() - kAllocationRows,
            rows.front().evidence_id);
    fmt::print("\n");
}

/// A record's raw text for printing: a core's (one line written by ingest) with any line break
/// escaped, so a symbol name holding one cannot print a forged line; a log record's as stored,
/// its lines kept.
std::string rawText(const Evidence& e) {
    return e.kind == Kind::Coredump ? printable(e.raw, true) : e.raw;
}

std::string firstLines(const std::string& raw, size_t n) {
    std::string out;
    size_t start = 0;
    for (size_t i = 0; i < n && start < raw.size(); ++i) {
        size_t e = raw.find('\n', start);
        out += "      " +
               printable(raw.substr(start, e == std::string::npos ? std::string::npos : e - start),
                         true) +
               "\n";
        if (e == std::string::npos) break;
        start = e + 1;
    }
    return out;
}

/// When one record happened, on the best clock it states: `at` the reading, `clock` what it is
/// read on. The UTC instant the store derived from its wall time (`2025-06-05T12:40:08Z`, "UTC"),
/// else seconds since the boot its log covers, else its wall time as printed (zone or year
/// unknown), else the runtime's clock (AMD_LOG_LEVEL µs). Unset when it states no time.
struct RecordTime {
    std::string at, clock;
};
std::optional<RecordTime> recordTime(const StoredEvidence& r) {
    const auto& t = r.e.time;
    if (r.wall_utc_us) {
        int64_t us = *r.wall_utc_us;
        return RecordTime{utcText(us / 1000000 - (us % 1000000 < 0 ? 1 : 0)), "(UTC)"};
    }
    if (t.kernel_s)
        return RecordTime{fmt::format("{:.6f} s", *t.kernel_s),
                          "since boot (the boot " + printable(r.source) + " covers)"};
    if (t.wall) return RecordTime{printable(*t.wall), "(wall clock as printed, zone unknown)"};
    if (t.runtime_us)
        return RecordTime{fmt::format("{} µs", *t.runtime_us),
                          "on the runtime's clock (" + printable(r.source) + ")"};
    return std::nullopt;
}

/// The first and last member records' times: `first A, last B CLOCK` (`A CLOCK` when they
/// read the same). By UTC instant when records have one (those without are left out), else
/// the first and last member in stream order with a time. "" when no member states a time.
std::string incidentTimeText(const IncidentView& v) {
    std::optional<RecordTime> first, last;
    std::optional<int64_t> lo, hi;
    for (const auto& m : v.members) {
        if (m.role != "member" || !m.ev.wall_utc_us) continue;
        if (!lo || *m.ev.wall_utc_us < *lo) lo = m.ev.wall_utc_us, first = recordTime(m.ev);
        if (!hi || *m.ev.wall_utc_us > *hi) hi = m.ev.wall_utc_us, last = recordTime(m.ev);
    }
    if (!first)
        for (const auto& m : v.members) {
            auto t = m.role == "member" ? recordTime(m.ev) : std::nullopt;
            if (!t) continue;
            if (!first) first = t;
            last = t;
        }
    if (!first) return "";
    if (first->at == last->at && first->clock == last->clock) return first->at + " " + first->clock;
    if (first->clock == last->clock)
        return fmt::format("first {}, last {} {}", first->at, last->at, first->clock);
    return fmt::format("first {} {}, last {} {}", first->at, first->clock, last->at, last->clock);
}

/// Records of other roles than "member" (`show`'s sections after the tables), one table row per
/// role: its heading, what it prints of each record.
struct RolePrinter {
    const char* role;
    const char* heading;
    bool facts;    ///< the record's facts line (facts())
    size_t lines;  ///< raw lines shown (0: none)
};
constexpr RolePrinter kRolePrinters[] = {
    {"candidate", "Could be its (records of other incidents; none joined)", true, 0},
    {"context", "Context (resets, allocation failures, probe results)", false, 3},
};

/// Prints the section of `p.role`'s records, nothing when there is none.
void printRole(const IncidentView& v, const RolePrinter& p) {
    bool any = false;
    for (const auto& m : v.members) {
        if (m.role != p.role) continue;
        if (!any) fmt::print("\n{}\n", p.heading);
        any = true;
        fmt::print("  #{} {} {}:{}  [{}]\n",
                   m.ev.id,
                   kindName(m.ev.e.kind),
                   printable(m.ev.source),
                   m.ev.e.line,
                   m.link);
        if (auto f = facts(m.ev.e); p.facts && !f.empty()) fmt::print("      {}\n", printable(f));
        if (p.lines) fmt::print("{}", firstLines(rawText(m.ev.e), p.lines));
    }
}

}  // namespace

int cmdShow(const Global& g, int64_t id, int dispatches) {
    auto store = openForQuery(g);
    if (!store) return 2;
    bool missing = false;
    auto v = loadIncident(store->db(), id, dispatches, missing);
    if (!v) return missing ? 1 : 2;
    const auto& i = v->incident;
    fmt::print("Incident {}: {} ({} record{}: {})\n",
               i.id,
               i.kind,
               i.members,
               i.members == 1 ? "" : "s",
               i.kinds);
    fmt::print("{}", diagnosisText(store->db(), id));
    if (auto t = incidentTimeText(*v); !t.empty()) fmt::print("  time       {}\n", t);
    auto fa = faultAddress(*v);
    if (fa) fmt::print("  address    {}\n", faultAddressText(*fa));
    if (i.pid || i.process)
        fmt::print(
            "  process    pid {}{}\n", orDash(i.pid), i.process ? " " + printable(*i.process) : "");
    if (auto procs = queryProcesses(store->db(), id); procs)
        for (const auto& r : *procs) fmt::print("{}", processText(r));
    if (auto r = statedRank(incidentRank(*v))) fmt::print("  rank       {}\n", *r);
    if (auto c = candidatesText(*v); !c.empty())
        fmt::print("  could be   {}: same 2 MiB region, nothing tells which, none joined\n",
                   printable(c));
    if (i.reason) fmt::print("  reason     {}\n", printable(*i.reason));
    if (i.kernel) fmt::print("  kernel     {}\n", printable(demangle(*i.kernel)));
    if (const auto& last = v->last; last && last->ambiguous()) {
        fmt::print("  last ShaderName  ambiguous: {} processes dispatched just before the fault\n",
                   last->by_process.size());
        for (const auto& [pid, k] : last->by_process)
            fmt::print("                   pid {}: {}\n", pid, printable(demangle(k)));
    } else if (last) {
        const std::string& k = last->kernel;
        std::string d = demangle(k);
        fmt::print("  last ShaderName  {}{}\n",
                   printable(d),
                   d != k ? "\n                   (" + printable(k) + ")" : "");
    }
    if (auto c = dispatchContextText(*v); !c.empty()) fmt::print("  context    {}\n", printable(c));
    fmt::print(
        "  signature  {} (the incident's: vendor, kinds, reason, client, kernel, core stack)\n"
        "\nEvidence\n",
        i.signature);
    for (const auto& m : v->members) {
        if (m.role != "member") continue;
        const auto& e = m.ev.e;
        fmt::print("  #{} {} {}:{}{}  [{}]\n",
                   m.ev.id,
                   kindName(e.kind),
                   printable(m.ev.source),
                   e.line,
                   e.address ? "  " + addr16(*e.address) : "",
                   m.link);
        if (auto f = facts(e); !f.empty()) fmt::print("      {}\n", printable(f));
        fmt::print("{}", firstLines(rawText(e), 12));
    }
    if (auto cores = queryIncidentCores(store->db(), id); cores)
        for (const auto& c : *cores) {
            fmt::print("\nCore {}: {}\n{}", c.id, coreTitle(c), coreFacts(c, "  "));
            if (auto th = queryCoreThreads(store->db(), c.id, false); th)
                for (const auto& t : *th) fmt::print("{}", threadText(t, 24, "  "));
            if (c.threads > 1) {
                fmt::print(
                    "  {} other threads: gpufault stack {} --all-threads\n", c.threads - 1, c.id);
                if (auto all = queryCoreThreads(store->db(), c.id, true); all)
                    fmt::print("{}", runtimeThreadsText(*all, 8, 6, "  "));
            }
        }
    auto prim = primaryDistances(*v);
    if (!prim.empty()) {
        bool exact = !fa || fa->exact;
        fmt::print("\nOperands by |distance| from {}{}\n",
                   exact ? "" : "the page start ",
                   addr16(prim.front().address));
        std::vector<DistanceRow> nearest(
            prim.begin(), prim.begin() + static_cast<long>(std::min(prim.size(), kNearestOperands)));
        operandTable(nearest, exact).print(stdout);
        fmt::print("{}", moreOperandsText(v->operand_totals[prim.front().evidence_id], nearest.size(), prim.front().evidence_id, false));
        // Ranked (logged before the fault in its stream) by rank; then other streams' operands
        // (their lines do not order with the fault's), latest line first; then those logged
        // after the fault.
        auto group = [](const DistanceRow& r) {
            return r.rank_in_time ? 0 : r.after_fault ? 2 : 1;
        };
        auto byTime = prim;
        std::stable_sort(
            byTime.begin(), byTime.end(), [&](const DistanceRow& a, const DistanceRow& b) {
                if (group(a) != group(b)) return group(a) < group(b);
                if (group(a) == 0) return *a.rank_in_time < *b.rank_in_time;
                return group(a) == 1 && a.op.o.line > b.op.o.line;
            });
        if (byTime.size() > kLatestOperands) byTime.resize(kLatestOperands);
        size_t counts[3] = {0, 0, 0};
        for (const auto& r : byTime) ++counts[group(r)];
        std::string parts;
        auto part = [&](size_t n, const char* what) {
            if (n)
                parts += fmt::format(
                    "{}{}", parts.empty() ? "the " : ", then ", fmt::format("{} {}", n, what));
        };
        part(counts[0], "logged last before the fault");
        part(counts[1], "of other streams, latest line first");
        part(counts[2], "logged after the fault");
        fmt::print("\nOperands by time ({})\n", parts);
        operandTable(byTime, exact).print(stdout);
    } else if (v->allocations.empty()) {
        fmt::print("\nNo operands recorded near this fault (README: \"Operand lines\").\n");
    }
    if (auto al = primaryAllocations(*v); !al.empty()) printAllocations(al);
    for (const auto& m : v->misses) fmt::print("\n{}\n", missText(m));
    if (!v->dispatches.empty()) {
        fmt::print("\nLast dispatches (newest first)\n");
        TextTable t{{"WHERE", "PID", "THREAD", "RUNTIME_US", "KERNEL"}, {}};
        for (const auto& d : v->dispatches)
            t.rows.push_back({fmt::format("{}:{}", d.source, d.d.line),
                              orDash(d.d.pid),
                              d.d.runtime_tid.empty() ? "-" : d.d.runtime_tid,
                              orDash(d.d.time.runtime_us),
                              shortKernelName(d.d.kernel, 100)});
        t.print(stdout);
    }
    for (const auto& p : kRolePrinters) printRole(*v, p);
    return 0;
}

int cmdReport(const Global& g, int64_t id, const std::string& format) {
    auto store = openForQuery(g);
    if (!store) return 2;
    bool missing = false;
    auto v = loadIncident(store->db(), id, 8, missing);
    if (!v) return missing ? 1 : 2;
    const auto& i = v->incident;
    auto prim = primaryDistances(*v);
    auto fa = faultAddress(*v);
    bool exact = !fa || fa->exact;
    std::optional<std::string> lastKernel = i.kernel;
    const auto& last = v->last;          // decided as `faults` and `show` decide it
    bool dispatched = last.has_value();  // else the kernel is the one a record names
    if (dispatched) lastKernel = last->kernel;
    std::vector<std::pair<int64_t, std::string>> ambiguous;  // two processes dispatched
    if (last && last->ambiguous()) {
        ambiguous = last->by_process;
        lastKernel.reset();
    }
    auto env = incidentEnvironment(store->db(), *v);
    if (format == "json") {
        nlohmann::json j;
        j["incident"] = i.id;
        j["kind"] = i.kind;
        j["kinds"] = i.kinds;
        j["vendor"] = i.vendor ? nlohmann::json(*i.vendor) : nlohmann::json(nullptr);
        j["address"] = fa ? nlohmann::json(text::hexAddr(fa->address)) : nlohmann::json(nullptr);
        j["address_exact"] = fa ? nlohmann::json(fa->exact) : nlohmann::json(nullptr);
        j["align_2mib"] =  // unknown for a page or masked address
            fa && fa->exact ? nlohmann::json(fa->address % 0x200000 == 0) : nlohmann::json(nullptr);
        j["reason"] = i.reason ? nlohmann::json(*i.reason) : nlohmann::json(nullptr);
        j["kernel"] = lastKernel ? nlohmann::json(*lastKernel) : nlohmann::json(nullptr);
        if (!ambiguous.empty()) {
            j["kernel_candidates"] = nlohmann::json::array();
            for (const auto& [pid, k] : ambiguous)
                j["kernel_candidates"].push_back({{"pid", pid}, {"kernel", k}});
        }
        j["signature"] = i.signature;
        j["time"] = incidentTimeText(*v).empty() ? nlohmann::json(nullptr)
                                                 : nlohmann::json(incidentTimeText(*v));
        if (const auto& c = v->dispatch_context)
            j["dispatch_context"] = {{"source", c->source},
                                     {"pid", optJson(c->pid)},
                                     {"operand", c->operand},
                                     {"operand_line", c->operand_line},
                                     {"ptr", text::hexAddr(c->ptr)},
                                     {"end", text::hexAddr(c->end)},
                                     {"inside", c->inside}};
        else
            j["dispatch_context"] = nullptr;
        j["environment"] = environmentJson(env);
        j["diagnosis"] = diagnosisJson(store->db(), id);
        j["evidence"] = nlohmann::json::array();
        for (const auto& m : v->members) {
            auto e = evidenceJson(m.ev);
            e["role"] = m.role;
            e["link"] = m.link;
            j["evidence"].push_back(e);
        }
        j["operands"] = nlohmann::json::array();
        for (const auto& r : prim)
            j["operands"].push_back({{"name", r.op.o.name},
                                     {"ptr", text::hexAddr(r.op.o.ptr)},
                                     {"end", text::hexAddr(r.op.o.end)},
                                     {"distance", optJson(r.distance)},
                                     {"from_ptr", optJson(r.from_ptr)},
                                     {"inside", r.inside},
                                     {"same_2mib", r.same_2mib},
                                     {"approximate", !exact},
                                     {"logged_after_fault", r.after_fault}});
        // the nearest and latest rows only (kNearestOperands, kLatestOperands); all of them: total
        j["operands_total"] = prim.empty() ? 0 : v->operand_totals[prim.front().evidence_id];
        j["allocations"] = nlohmann::json::array();
        for (const auto& r : primaryAllocations(*v))
            j["allocations"].push_back(
                {{"api", r.api},
                 {"pid", r.pid},
                 {"ptr", text::hexAddr(r.ptr)},
                 {"end", text::hexAddr(r.end)},
                 {"distance", optJson(r.distance)},
                 {"from_ptr", optJson(r.from_ptr)},
                 {"inside", r.inside},
                 {"same_2mib", r.same_2mib},
                 {"freed", r.free_api.has_value()},
                 {"image_replaced_by_exec",
                  r.exec_before ? nlohmann::json(*r.exec_before) : nlohmann::json(nullptr)},
                 {"freed_in",
                  r.free_elsewhere ? nlohmann::json(*r.free_elsewhere) : nlohmann::json(nullptr)},
                 {"freed_before_fault",
                  r.freed_before ? nlohmann::json(*r.freed_before) : nlohmann::json(nullptr)},
                 {"joined_by", r.how},
                 {"stack", r.stack ? nlohmann::json(*r.stack) : nlohmann::json(nullptr)}});
        j["allocations_unjoined"] = nlohmann::json::array();
        for (const auto& m : v->misses)
            j["allocations_unjoined"].push_back({{"pid", optJson(m.pid)},
                                                 {"recordings", m.recordings},
                                                 {"pids", m.pids},
                                                 {"pid_count", m.pid_count},
                                                 {"why", m.why}});
        j["cores"] = coresJson(store->db(), id);
        printJsonLine(stdout, j);
        return 0;
    }
    std::string vendor = i.vendor.value_or("");
    fmt::print("{}", reportTitle(i));
    fmt::print("{}", diagnosisMarkdown(store->db(), id));
    fmt::print("### Summary\n\n");
    fmt::print("- Evidence: {}: {}\n", counted(i.members, "record"), i.kinds);
    if (auto t = incidentTimeText(*v); !t.empty()) fmt::print("- Time: {}\n", mdText(t));
    if (fa && fa->exact)
        fmt::print("- Fault address: `{}`; {}\n", addr16(fa->address), alignmentText(fa->address));
    else if (fa)
        fmt::print(
            "- Fault address: page `{}` (exact byte unknown: the record states a page or masked "
            "address; no alignment or off-by-one can be told from it)\n",
            addr16(fa->address));
    if (i.pid || i.process)
        fmt::print("- Process: {} (pid {})\n", mdText(i.process.value_or("?")), orDash(i.pid));
    if (auto r = statedRank(incidentRank(*v))) fmt::print("- Rank: {}\n", *r);
    if (auto c = candidatesText(*v); !c.empty())
        fmt::print("- Could be: {} (same 2 MiB region, nothing tells which; not joined)\n",
                   mdText(c));
    if (i.reason) fmt::print("- Reason: {}\n", mdText(*i.reason));
    if (auto c = dispatchContextText(*v); !c.empty())
        fmt::print("- Dispatch context: {}\n", mdText(c));
    for (const auto& m : v->members)  // compute-sanitizer measures the access itself
        if (auto a = m.ev.e.attr("nearest_alloc"))
            fmt::print("- compute-sanitizer: {} B {} the nearest allocation {} of {} B\n",
                       mdText(m.ev.e.attr("nearest_distance").value_or("?")),
                       mdText(m.ev.e.attr("nearest_side").value_or("after")),
                       mdCode(*a),
                       mdText(m.ev.e.attr("nearest_alloc_size").value_or("?")));
    fmt::print("- Signature: {}\n\n", mdCode(i.signature));
    fmt::print("{}", environmentMarkdown(env, vendor));
    fmt::print("{}", kernelMarkdown(i, lastKernel, dispatched, ambiguous));
    if (!prim.empty()) {
        fmt::print("### Fault address vs. recorded operands\n\n");
        if (!exact)
            fmt::print(
                "Distances are from the page start `{}`, not the faulting byte (unknown): "
                "approximate.\n\n",
                addr16(fa->address));
        fmt::print(
            "| operand | ptr | end | size (bytes) | distance (bytes) | distance | inside | same 2 "
            "MiB |\n");
        fmt::print("|---|---|---|---:|---:|---:|---|---|\n");
        size_t shown = std::min(prim.size(), kNearestOperands);
        for (const auto& r : std::span(prim).first(shown)) {
            std::string where = r.inside ? "from ptr" : r.below ? "below ptr" : "above end";
            auto od = r.inside ? r.from_ptr : r.distance;
            if (exact && !r.inside && !r.below && od && *od == 0)
                where = "above end (the first byte past it)";
            if (!exact) where = "≈ page start " + where;
            std::string d = od ? signedExact(*od) : "n/a";
            std::string human = od ? humanBytes(*od) : "2^63 B or more";
            if (auto p = human.find(" ("); p != std::string::npos)
                human = human.substr(p + 2, human.size() - p - 3);  // "-4.08 GiB"
            fmt::print("| {}{} | `{}` | `{}` | {} | {} {} | {} | {} | {} |\n",
                       mdCell(mdText(r.op.o.name)),
                       r.after_fault ? " (logged after the fault)" : "",
                       addr16(r.op.o.ptr),
                       addr16(r.op.o.end),
                       r.op.o.end - r.op.o.ptr,
                       d,
                       where,
                       human,
                       r.inside ? (exact ? "yes" : "page start") : "no",
                       r.same_2mib ? "yes" : "no");
        }
        fmt::print("\n{}", moreOperandsText(v->operand_totals[prim.front().evidence_id], shown, prim.front().evidence_id, true));
        if (v->operand_totals[prim.front().evidence_id] > static_cast<int64_t>(shown)) fmt::print("\n");
    }
    if (auto al = primaryAllocations(*v); !al.empty()) printAllocationsMarkdown(al);
    for (const auto& m : v->misses) fmt::print("{}\n\n", missText(m));  // gpufault's own text
    printCoresMarkdown(store->db(), id);
    fmt::print("### Evidence\n\n");
    for (const auto& m : v->members) {
        const auto suppressed = m.ev.e.attr("callbacks_suppressed");
        fmt::print("{} ({}{}{}{}{})\n\n{}\n",
                   mdCode(fmt::format("{}:{}", m.ev.source, m.ev.e.line)),
                   kindName(m.ev.e.kind),
                   statedRank(m.ev.e.rank) ? fmt::format(", rank {}", *m.ev.e.rank) : "",
                   m.ev.e.count > 1 ? fmt::format(", ×{} identical lines", m.ev.e.count) : "",
                   suppressed ? fmt::format(", after {} messages the kernel's rate limit dropped",
                                            mdText(*suppressed))
                              : "",
                   m.role == "member"    ? ""
                   : m.role == "context" ? ", context"
                                         : ", could be this incident's, not joined",
                   mdFence(printableLines(rawText(m.ev.e))));
    }
    fmt::print(
        "_Drafted by gpufault from the records above; please add the versions marked unknown "
        "and the kernel version (`uname -r`)._\n");
    return 0;
}

}  // namespace gpufault::cli
