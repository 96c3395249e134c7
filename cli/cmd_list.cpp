// Listing subcommands: events, incidents, faults, operands, dispatches, kernels.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/incident_view.h"
#include "cli/output.h"
#include "cli/store_open.h"
#include "collectors/common/demangle.h"
#include "collectors/common/evidence_json.h"
#include "collectors/common/log_line.h"
#include "collectors/common/text.h"
#include "schema/core_queries.h"
#include "schema/queries.h"

namespace gpufault::cli {

namespace {

template <typename T>
bool failed(const db::Result<T>& r) {
    if (r) return false;
    printText(stderr, "gpufault: {}\n", r.error().message);
    return true;
}

std::string where(const StoredEvidence& s) {
    return fmt::format("{}:{}", s.source, s.e.line);
}

std::string optAddr(const std::optional<uint64_t>& a) {
    return a ? addr16(*a) : "-";
}

/// The stack signature of the core in a record's incident, if any.
std::optional<std::string> stackOf(const std::map<int64_t, std::string>& stacks, int64_t id) {
    auto it = stacks.find(id);
    return it == stacks.end() ? std::nullopt : std::optional<std::string>(it->second);
}

/// A STACK column is shown only when some record has a core's stack (no change otherwise).
void addStackColumn(TextTable& t, const std::vector<std::optional<std::string>>& stacks) {
    bool any = false;
    for (auto& s : stacks) any |= s.has_value();
    if (!any) return;
    t.header.push_back("STACK");
    for (size_t i = 0; i < t.rows.size(); ++i) t.rows[i].push_back(orDash(stacks[i]));
}

nlohmann::json optJson(const std::optional<std::string>& s) {
    return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}

/// A kernel name in a table, as `show` prints it: demangled, without its parameter list, at
/// most 100 characters (the mangled name stays in --json).
std::string kernelCell(const std::string& mangled) {
    return shortKernelName(mangled, 100);
}

/// A one-line description of the record (what the table shows besides the fixed columns).
std::string detail(const Evidence& e) {
    std::vector<std::string> p;
    if (e.reason) p.push_back(*e.reason);
    if (e.client) p.push_back("client " + *e.client);
    if (e.xid) p.push_back(fmt::format("Xid {}", *e.xid));
    if (e.gpu_node) p.push_back(fmt::format("node-{}", *e.gpu_node));
    if (e.pci) p.push_back(*e.pci);
    if (e.kernel) p.push_back(*e.kernel);
    if (e.module) p.push_back(fmt::format("{}+0x{:x}", *e.module, e.module_offset.value_or(0)));
    if (e.attr("unended")) p.push_back(kUnendedNote);
    std::string s;
    for (auto& x : p) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? "-" : s;
}

/// LAST KERNEL of `faults`: the last dispatched kernel; `? (N candidates)` when N processes
/// dispatched just before a fault that states no pid (as `show` says); with no dispatch logged,
/// the kernel the record names (a sanitizer report's); `-` when none.
std::string lastKernelCell(const FaultRow& r) {
    if (!r.kernel_candidates.empty())
        return fmt::format("? ({} candidates)", r.kernel_candidates.size());
    if (r.last_kernel) return kernelCell(*r.last_kernel);
    if (r.ev.e.kernel) return kernelCell(*r.ev.e.kernel);
    return "-";
}

nlohmann::json operandJson(const OperandRow& r) {
    return {{"id", r.id},
            {"source", r.source},
            {"line", r.o.line},
            {"pid", r.o.pid ? nlohmann::json(*r.o.pid) : nlohmann::json(nullptr)},
            {"name", r.o.name},
            {"ptr", text::hexAddr(r.o.ptr)},
            {"end", text::hexAddr(r.o.end)},
            {"size", r.o.end - r.o.ptr},
            {"arg_ptr",
             r.o.arg_ptr ? nlohmann::json(text::hexAddr(*r.o.arg_ptr)) : nlohmann::json(nullptr)},
            {"shape", r.o.shape ? nlohmann::json(*r.o.shape) : nlohmann::json(nullptr)},
            {"stride", r.o.stride ? nlohmann::json(*r.o.stride) : nlohmann::json(nullptr)},
            {"dtype", r.o.dtype ? nlohmann::json(*r.o.dtype) : nlohmann::json(nullptr)},
            {"origin", r.o.origin},
            {"rank", statedRank(r.o.rank) ? nlohmann::json(*r.o.rank) : nlohmann::json(nullptr)},
            {"dispatch_kernel",
             r.dispatch_kernel ? nlohmann::json(*r.dispatch_kernel) : nlohmann::json(nullptr)}};
}

}  // namespace

int cmdEvents(const Global& g,
              bool json,
              const std::optional<std::string>& kind,
              const std::optional<std::string>& source) {
    if (kind && !kindFromName(*kind)) {
        std::string known;
        for (int k = 0; k <= static_cast<int>(Kind::Coredump); ++k)
            known += fmt::format("{}{}", k ? ", " : "", kindName(static_cast<Kind>(k)));
        printText(stderr, "gpufault: unknown kind '{}' (kinds: {})\n", *kind, known);
        return 2;
    }
    auto store = openForQuery(g);
    if (!store) return 2;
    EvidenceFilter filter;
    filter.kind = kind;
    filter.source = source;
    auto rows = queryEvidence(store->db(), filter);
    if (failed(rows)) return 2;
    auto stacks = queryStackSignatures(store->db());
    if (failed(stacks)) return 2;
    if (json) {
        for (auto& r : *rows) {
            auto j = evidenceJson(r);
            j["stack"] = optJson(stackOf(*stacks, r.id));
            printJsonLine(stdout, j);
        }
        return 0;
    }
    TextTable t{{"ID", "KIND", "WHERE", "ADDRESS", "PID", "DETAIL"}, {}};
    std::vector<std::optional<std::string>> stackCol;
    for (auto& r : *rows) {
        t.rows.push_back({std::to_string(r.id),
                          std::string(kindName(r.e.kind)),
                          where(r),
                          optAddr(r.e.address),
                          orDash(r.e.pid),
                          detail(r.e)});
        stackCol.push_back(stackOf(*stacks, r.id));
    }
    addStackColumn(t, stackCol);
    t.print(stdout);
    return 0;
}

int cmdIncidents(const Global& g, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto rows = queryIncidents(store->db());
    if (failed(rows)) return 2;
    TextTable t{
        {"ID", "KIND", "RECORDS", "ADDRESS", "PID", "PROCESS", "REASON", "FIRST RECORD", "KINDS"},
        {}};
    for (auto& r : *rows) {
        if (json) {
            printJsonLine(
                stdout,
                {{"id", r.id},
                 {"kind", r.kind},
                 {"kinds", r.kinds},
                 {"records", r.members},
                 {"vendor", r.vendor ? nlohmann::json(*r.vendor) : nlohmann::json(nullptr)},
                 {"address",
                  r.address ? nlohmann::json(text::hexAddr(*r.address)) : nlohmann::json(nullptr)},
                 {"pid", r.pid ? nlohmann::json(*r.pid) : nlohmann::json(nullptr)},
                 {"process", r.process ? nlohmann::json(*r.process) : nlohmann::json(nullptr)},
                 {"reason", r.reason ? nlohmann::json(*r.reason) : nlohmann::json(nullptr)},
                 {"kernel", r.kernel ? nlohmann::json(*r.kernel) : nlohmann::json(nullptr)},
                 {"signature", r.signature},
                 {"source", r.source},
                 {"line", r.line}});
            continue;
        }
        t.rows.push_back({std::to_string(r.id),
                          r.kind,
                          std::to_string(r.members),
                          optAddr(r.address),
                          orDash(r.pid),
                          orDash(r.process),
                          orDash(r.reason),
                          fmt::format("{}:{}", r.source, r.line),
                          r.kinds});
    }
    if (!json) t.print(stdout);
    return 0;
}

int cmdFaults(const Global& g, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto rows = queryFaults(store->db());
    if (failed(rows)) return 2;
    auto stacks = queryStackSignatures(store->db());
    if (failed(stacks)) return 2;
    TextTable t{{"INCIDENT",
                 "RECORD",
                 "KIND",
                 "ADDRESS",
                 "2MiB",
                 "NEAREST OPERAND",
                 "DISTANCE",
                 "LAST KERNEL"},
                {}};
    std::vector<std::optional<std::string>> stackCol;
    for (auto& r : *rows) {
        const auto& e = r.ev.e;
        bool exact = e.address_exact.value_or(true);  // a page or masked address: no verdicts
        std::optional<bool> aligned;
        if (e.address && exact) aligned = *e.address % 0x200000 == 0;
        if (json) {
            nlohmann::json j = evidenceJson(r.ev);
            j.erase("raw");
            j["incident"] = r.incident ? nlohmann::json(*r.incident) : nlohmann::json(nullptr);
            j["nearest_operand"] = r.nearest ? nlohmann::json(*r.nearest) : nlohmann::json(nullptr);
            j["nearest_distance"] =
                r.nearest_distance ? nlohmann::json(*r.nearest_distance) : nlohmann::json(nullptr);
            j["nearest_inside"] =
                r.nearest ? nlohmann::json(r.nearest_inside) : nlohmann::json(nullptr);
            j["nearest_after_fault"] =
                r.nearest ? nlohmann::json(r.nearest_after) : nlohmann::json(nullptr);
            j["last_kernel"] =
                r.last_kernel ? nlohmann::json(*r.last_kernel) : nlohmann::json(nullptr);
            j["last_kernel_demangled"] =
                r.last_kernel ? nlohmann::json(demangle(*r.last_kernel)) : nlohmann::json(nullptr);
            if (!r.kernel_candidates.empty()) {  // ambiguous: as `report --format json` says it
                j["kernel_candidates"] = nlohmann::json::array();
                for (const auto& [pid, k] : r.kernel_candidates)
                    j["kernel_candidates"].push_back({{"pid", pid}, {"kernel", k}});
            }
            j["stack"] = optJson(stackOf(*stacks, r.ev.id));
            printJsonLine(stdout, j);
            continue;
        }
        std::string dist = r.nearest ? "2^63 B or more away" : "-";  // NULL: not exact in 64 bits
        if (r.nearest_distance)
            dist = !exact ? approxSpanText(r.nearest_inside,
                                           *r.nearest_distance < 0,
                                           r.nearest_distance,
                                           std::nullopt)
                   : r.nearest_inside        ? std::string("inside")
                   : *r.nearest_distance < 0 ? humanBytes(*r.nearest_distance) + " below ptr"
                                             : aboveEndText(*r.nearest_distance);
        // INCIDENT is what `show` and `report` take; RECORD the evidence id `events` prints.
        t.rows.push_back({orDash(r.incident),
                          std::to_string(r.ev.id),
                          std::string(kindName(e.kind)),
                          e.address && !exact ? "page " + addr16(*e.address) : optAddr(e.address),
                          aligned ? (*aligned ? "yes" : "no") : "-",
                          r.nearest && r.nearest_after ? *r.nearest + " (logged after the fault)"
                                                       : orDash(r.nearest),
                          dist,
                          lastKernelCell(r)});
        stackCol.push_back(stackOf(*stacks, r.ev.id));
    }
    addStackColumn(t, stackCol);
    if (!json) t.print(stdout);
    return 0;
}

int cmdOperands(const Global& g, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto rows = queryOperands(store->db());
    if (failed(rows)) return 2;
    TextTable t{{"ID", "WHERE", "NAME", "PTR", "END", "SIZE", "SHAPE", "DTYPE", "ORIGIN"}, {}};
    for (auto& r : *rows) {
        if (json) {
            printJsonLine(stdout, operandJson(r));
            continue;
        }
        t.rows.push_back({std::to_string(r.id),
                          fmt::format("{}:{}", r.source, r.o.line),
                          r.o.name,
                          addr16(r.o.ptr),
                          addr16(r.o.end),
                          sizeText(r.o.end - r.o.ptr),
                          orDash(r.o.shape),
                          orDash(r.o.dtype),
                          r.o.origin});
    }
    if (!json) t.print(stdout);
    return 0;
}

int cmdDispatches(const Global& g, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto rows = queryDispatches(store->db());
    if (failed(rows)) return 2;
    TextTable t{{"ID", "WHERE", "PID", "THREAD", "RUNTIME_US", "KERNEL"}, {}};
    for (auto& r : *rows) {
        if (json) {
            printJsonLine(
                stdout,
                {{"id", r.id},
                 {"source", r.source},
                 {"line", r.d.line},
                 {"pid", r.d.pid ? nlohmann::json(*r.d.pid) : nlohmann::json(nullptr)},
                 {"runtime_tid", r.d.runtime_tid},
                 {"rank",
                  statedRank(r.d.rank) ? nlohmann::json(*r.d.rank) : nlohmann::json(nullptr)},
                 {"runtime_us",
                  r.d.time.runtime_us ? nlohmann::json(*r.d.time.runtime_us)
                                      : nlohmann::json(nullptr)},
                 {"kernel", r.d.kernel},
                 {"kernel_demangled", demangle(r.d.kernel)}});
            continue;
        }
        t.rows.push_back({std::to_string(r.id),
                          fmt::format("{}:{}", r.source, r.d.line),
                          orDash(r.d.pid),
                          r.d.runtime_tid.empty() ? "-" : r.d.runtime_tid,
                          orDash(r.d.time.runtime_us),
                          kernelCell(r.d.kernel)});
    }
    if (!json) t.print(stdout);
    return 0;
}

int cmdKernels(const Global& g, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto rows = queryKernelCounts(store->db());
    if (failed(rows)) return 2;
    TextTable t{{"DISPATCHES", "PID", "SOURCE", "LINES", "KERNEL"}, {}};
    for (auto& r : *rows) {
        if (json) {
            printJsonLine(stdout,
                          {{"kernel", r.kernel},
                           {"kernel_demangled", demangle(r.kernel)},
                           {"pid", r.pid ? nlohmann::json(*r.pid) : nlohmann::json(nullptr)},
                           {"source", r.source},
                           {"dispatches", r.n},
                           {"first_line", r.first_line},
                           {"last_line", r.last_line}});
            continue;
        }
        t.rows.push_back({std::to_string(r.n),
                          orDash(r.pid),
                          r.source,
                          fmt::format("{}-{}", r.first_line, r.last_line),
                          kernelCell(r.kernel)});
    }
    if (!json) t.print(stdout);
    return 0;
}

int cmdProcesses(const Global& g, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto rows = queryProcesses(store->db());
    if (failed(rows)) return 2;
    TextTable t{{"ID", "PID", "NAME", "NSPID", "CGROUP", "MODULES", "RECORD", "TAKEN"}, {}};
    for (auto& r : *rows) {
        const ProcessRecord& p = r.p;
        if (json) {
            auto mods = nlohmann::json::array();
            for (const auto& m : p.modules)
                mods.push_back({{"path", m.path},
                                {"start", text::hexAddr(m.start)},
                                {"end", text::hexAddr(m.end)},
                                {"executable", m.executable}});
            printJsonLine(
                stdout,
                {{"id", r.id},
                 {"pid", p.pid},
                 {"boot_id", p.boot_id},
                 {"taken_at", p.taken_at},
                 {"start_ticks", p.start_ticks ? nlohmann::json(*p.start_ticks) : nullptr},
                 {"name", p.name},
                 {"ppid", p.ppid ? nlohmann::json(*p.ppid) : nullptr},
                 {"uid", p.uid ? nlohmann::json(*p.uid) : nullptr},
                 {"nspid", nlohmann::json::parse(p.nspid, nullptr, false)},
                 {"cgroup", p.cgroup},
                 {"cmdline", nlohmann::json::parse(p.cmdline, nullptr, false)},
                 {"evidence_id", p.evidence_id ? nlohmann::json(*p.evidence_id) : nullptr},
                 {"modules", mods}});
            continue;
        }
        t.rows.push_back({std::to_string(r.id),
                          std::to_string(p.pid),
                          p.name,
                          p.nspid,
                          p.cgroup,
                          std::to_string(p.modules.size()),
                          orDash(p.evidence_id),
                          p.taken_at});
    }
    if (!json) t.print(stdout);
    return 0;
}

int cmdRuns(const Global& g, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto rows = queryRuns(store->db());
    if (failed(rows)) return 2;
    TextTable t{{"RUN", "STARTED", "ENDED", "EXIT", "PID", "RECORDS", "COMMAND"}, {}};
    for (auto& r : *rows) {
        const RunRecord& x = r.run;
        std::string exit = x.signal ? fmt::format("signal {}", *x.signal) : orDash(x.exit_status);
        if (json) {
            auto j = nlohmann::json{
                {"run", r.id},
                {"command", nlohmann::json::parse(x.command, nullptr, false)},
                {"cwd", x.cwd},
                {"host", x.host},
                {"boot_id", x.boot_id},
                {"started", x.started},
                {"ended", x.ended ? nlohmann::json(*x.ended) : nullptr},
                {"exit_status", x.exit_status ? nlohmann::json(*x.exit_status) : nullptr},
                {"signal", x.signal ? nlohmann::json(*x.signal) : nullptr},
                {"pid", x.pid ? nlohmann::json(*x.pid) : nullptr},
                {"pids", nlohmann::json::parse(x.pids, nullptr, false)},
                {"env", nlohmann::json::parse(x.env, nullptr, false)},
                {"spool", x.spool ? nlohmann::json(*x.spool) : nullptr},
                {"records", r.evidence}};
            printJsonLine(stdout, j);
            continue;
        }
        std::string cmd;
        auto argv = nlohmann::json::parse(x.command, nullptr, false);
        if (argv.is_array())
            for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a.get<std::string>();
        t.rows.push_back({std::to_string(r.id),
                          x.started,
                          x.ended.value_or("-"),
                          exit,
                          orDash(x.pid),
                          std::to_string(r.evidence),
                          cmd});
    }
    if (!json) t.print(stdout);
    return 0;
}

}  // namespace gpufault::cli
