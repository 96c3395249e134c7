// `cores` (the cores in the store) and `stack` (one core's threads and frames).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/stack_view.h"
#include "cli/store_open.h"
#include "collectors/common/text.h"
#include "collectors/coredump/signature.h"
#include "schema/core_queries.h"

namespace gpufault::cli {

namespace {

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json parsed(const std::string& s) {
    auto j = nlohmann::json::parse(s, nullptr, false);
    return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

nlohmann::json frameJson(const coredump::Frame& f) {
    return {{"pc", text::hexAddr(f.pc)},
            {"module", opt(f.module)},
            {"build_id", opt(f.build_id)},
            {"module_offset",
             f.module_offset ? nlohmann::json(fmt::format("0x{:x}", *f.module_offset))
                             : nlohmann::json(nullptr)},
            {"symbol", opt(f.symbol)},
            {"symbol_offset",
             f.symbol_offset ? nlohmann::json(fmt::format("0x{:x}", *f.symbol_offset))
                             : nlohmann::json(nullptr)},
            {"file", opt(f.file)},
            {"line", opt(f.line)}};
}

nlohmann::json coreJson(const CoreRow& r) {
    const auto& c = r.core;
    return {
        {"id", r.id},
        {"kind", c.kind},
        {"incident", opt(r.incident)},
        {"evidence_id", opt(r.evidence_id)},
        {"path", c.path},
        {"size", c.size},
        {"time", c.time_from == "unknown" ? nlohmann::json(nullptr) : nlohmann::json(c.time)},
        {"time_from", c.time_from},
        {"pid", opt(c.pid)},
        {"tid", opt(c.tid)},
        {"process", opt(c.process)},
        {"signal", opt(c.signal)},
        {"si_code", opt(c.si_code)},
        {"si_addr",
         c.signal_addr ? nlohmann::json(text::hexAddr(*c.signal_addr)) : nlohmann::json(nullptr)},
        {"e_machine", c.e_machine},
        {"threads", r.threads},
        {"threads_truncated", c.threads_truncated},
        {"stack_partial", opt(stackPartial(c))},
        {"signature", opt(c.signature)},
        {"signature_frames", parsed(c.signature_frames)},
        {"modules_without_file", parsed(c.modules_missing)},
        {"runtimes", parsed(c.runtimes)},
        {"meta", c.meta ? parsed(*c.meta) : nlohmann::json(nullptr)},
        {"origin", c.origin},
        {"note", opt(c.note)},
        {"exe", opt(c.exe)},
        {"seconds", c.seconds}};
}

/// The first frame of the crashing thread that is not generic (abort, raise, …).
std::string topFrame(db::Db& d, const CoreRow& r) {
    if (r.core.kind != "cpu") return "-";
    auto th = queryCoreThreads(d, r.id, false);
    if (!th || th->empty() || th->front().frames.empty()) return "-";
    for (const auto& f : th->front().frames)
        if (!coredump::isGenericFrame(f)) return coredump::describeFrame(f);
    return coredump::describeFrame(th->front().frames.front());
}

}  // namespace

int cmdCores(const Global& g, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto rows = queryCores(store->db());
    if (!rows) {
        printText(stderr, "gpufault: {}\n", rows.error().message);
        return 2;
    }
    TextTable t{{"ID",
                 "KIND",
                 "PID",
                 "PROCESS",
                 "SIGNAL",
                 "ADDRESS",
                 "THREADS",
                 "INCIDENT",
                 "SIGNATURE",
                 "TOP FRAME",
                 "PATH"},
                {}};
    for (const auto& r : *rows) {
        if (json) {
            auto j = coreJson(r);
            j["top_frame"] = topFrame(store->db(), r);
            printJsonLine(stdout, j);
            continue;
        }
        const auto& c = r.core;
        t.rows.push_back({std::to_string(r.id),
                          c.kind,
                          orDash(c.pid),
                          orDash(c.process),
                          c.signal ? coredump::signalName(static_cast<int>(*c.signal)) : "-",
                          c.signal_addr ? addr16(*c.signal_addr) : "-",
                          std::to_string(r.threads),
                          orDash(r.incident),
                          orDash(c.signature),
                          printable(topFrame(store->db(), r)),
                          printable(c.path.empty() ? c.note.value_or("-") : c.path)});
    }
    if (!json) t.print(stdout);
    return 0;
}

int cmdStack(const Global& g, int64_t id, bool all, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto rows = queryCores(store->db(), id);
    if (!rows) {
        printText(stderr, "gpufault: {}\n", rows.error().message);
        return 2;
    }
    if (rows->empty()) {
        printText(stderr, "gpufault: no core {} (see gpufault cores)\n", id);
        return 1;
    }
    const auto& r = rows->front();
    auto threads = queryCoreThreads(store->db(), id, all);
    if (!threads) {
        printText(stderr, "gpufault: {}\n", threads.error().message);
        return 2;
    }
    if (json) {
        auto j = coreJson(r);
        j["stacks"] = nlohmann::json::array();
        for (const auto& t : *threads) {
            nlohmann::json tj{{"tid", t.tid},
                              {"crashed", t.crashed},
                              {"frames_truncated", t.frames_truncated},
                              {"unwind_error", opt(t.error)},
                              {"frames", nlohmann::json::array()}};
            for (const auto& f : t.frames) tj["frames"].push_back(frameJson(f));
            j["stacks"].push_back(std::move(tj));
        }
        printJsonLine(stdout, j);
        return 0;
    }
    fmt::print("Core {}: {}\n{}", r.id, coreTitle(r), coreFacts(r, "  "));
    if (r.incident) fmt::print("  incident   {} (gpufault show {})\n", *r.incident, *r.incident);
    if (r.core.kind != "cpu") {
        fmt::print("\nA GPU core: its metadata is stored, it is not unwound.\n");
        return 0;
    }
    if (threads->empty()) fmt::print("\nNo stack: {}.\n", r.core.note.value_or("none stored"));
    for (const auto& t : *threads) fmt::print("\n{}", threadText(t, SIZE_MAX, ""));
    if (!all && r.threads > 1)
        fmt::print("\n{} other threads: gpufault stack {} --all-threads\n", r.threads - 1, id);
    return 0;
}

}  // namespace gpufault::cli
