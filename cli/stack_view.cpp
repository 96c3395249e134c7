#include "cli/stack_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "cli/output.h"
#include "collectors/common/demangle.h"
#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/gpu_core.h"
#include "collectors/coredump/signature.h"

namespace gpufault::cli {

namespace {

std::string baseName(const std::string& p) {
    auto s = p.rfind('/');
    return s == std::string::npos ? p : p.substr(s + 1);
}

}  // namespace

std::string coreTitle(const CoreRow& r) {
    const auto& c = r.core;
    if (c.kind != "cpu") {
        auto meta = nlohmann::json::parse(c.meta.value_or("{}"), nullptr, false);
        std::string target = meta.is_object() && meta.contains("target")
                                 ? ", " + meta["target"].get<std::string>()
                                 : "";
        return fmt::format("{} core{}{} (e_machine {})",
                           c.kind,
                           c.pid ? fmt::format(" of pid {}", *c.pid) : "",
                           target,
                           c.e_machine);
    }
    std::string s = fmt::format("{} pid {}", printable(c.process.value_or("?")), orDash(c.pid));
    if (c.signal) {
        s += ", " + coredump::signalName(static_cast<int>(*c.signal));
        if (c.si_code) {
            auto code =
                coredump::sigCodeName(static_cast<int>(*c.signal), static_cast<int>(*c.si_code));
            if (!code.empty()) s += fmt::format(" ({})", code);
        }
    }
    if (c.signal_addr) s += " at " + addr16(*c.signal_addr);
    return s;
}

std::optional<std::string> stackPartial(const CoreRecord& c) {
    if (!c.meta) return std::nullopt;
    auto m = nlohmann::json::parse(*c.meta, nullptr, false);
    if (!m.is_object()) return std::nullopt;
    auto it = m.find("stack_partial");
    if (it == m.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

namespace {

/// The core's threads by its notes when the thread cap was hit (meta `threads_total`).
std::optional<int64_t> threadsTotal(const CoreRecord& c) {
    auto m = nlohmann::json::parse(c.meta.value_or("{}"), nullptr, false);
    if (!m.is_object()) return std::nullopt;
    auto it = m.find("threads_total");
    if (it == m.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<int64_t>();
}

uint32_t u32(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned()) return 0;
    auto v = it->get<uint64_t>();
    return v <= UINT32_MAX ? static_cast<uint32_t>(v) : 0;
}

std::string dim3(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_array() || it->size() != 3) return "?";
    auto at = [&](size_t k) -> int64_t {
        const auto& v = (*it)[k];
        return v.is_number_integer() ? v.get<int64_t>() : 0;  // a double is not a dim3 value
    };
    return fmt::format("({},{},{})", at(0), at(1), at(2));
}

/// A CUDA GPU core's exceptions (meta `exceptions`, `exceptions_total`), one line per exception:
/// how many warps, the first one's SM, warp, block and thread, its pc and the kernel offset.
std::string exceptionLines(const CoreRecord& c, const std::string& indent) {
    auto m = nlohmann::json::parse(c.meta.value_or("{}"), nullptr, false);
    if (!m.is_object() || !m.contains("exceptions") || !m["exceptions"].is_array()) return {};
    std::vector<std::pair<std::string, std::pair<size_t, const nlohmann::json*>>> kinds;
    size_t seen = 0;  // ingest keeps 64: an edited store's longer list is not walked
    for (const auto& x : m["exceptions"]) {
        if (++seen > coredump::kMaxExceptions) break;
        if (!x.is_object()) continue;
        auto e = x.find("exception");
        std::string name = e != x.end() && e->is_string() ? e->get<std::string>() : "";
        if (name.empty()) name = fmt::format("exception {}", u32(x, "code"));
        auto it =
            std::find_if(kinds.begin(), kinds.end(), [&](auto& k) { return k.first == name; });
        if (it == kinds.end())
            kinds.push_back({name, {1, &x}});
        else
            ++it->second.first;
    }
    std::string out;
    for (const auto& [name, seen] : kinds) {
        const auto& x = *seen.second;
        // A forged or cut core's tables may lead nowhere: then no SM, warp or block is stated.
        std::string where =
            x.contains("sm") ? fmt::format("SM {}", u32(x, "sm")) : std::string("SM unknown");
        if (u32(x, "lanes"))
            where += fmt::format("{}{} thread {} ({} lanes)",
                                 x.contains("warp") ? fmt::format(" warp {}", u32(x, "warp"))
                                                    : std::string(", warp unknown,"),
                                 x.contains("block") ? " block " + dim3(x, "block") : "",
                                 dim3(x, "thread"),
                                 u32(x, "lanes"));
        std::string pc;
        if (auto it = x.find("pc"); it != x.end() && it->is_number_unsigned())
            pc = fmt::format(", pc {}", addr16(it->get<uint64_t>()));
        if (auto k = x.find("kernel"), o = x.find("kernel_offset");
            k != x.end() && k->is_string() && o != x.end() && o->is_number_unsigned())
            pc += fmt::format(" = {}+0x{:x}",
                              shortKernelName(demangle(k->get<std::string>()), 48),
                              o->get<uint64_t>());
        out += fmt::format("{}exception  {}: {} {}, first {}{}\n",
                           indent,
                           printable(name),
                           seen.first,
                           seen.first == 1 ? "warp or SM" : "warps or SMs",
                           where,
                           printable(pc));
    }
    auto t = m.find("exceptions_total");
    size_t total = t != m.end() && t->is_number_unsigned() ? t->get<size_t>() : 0;
    if (total > m["exceptions"].size())
        out += fmt::format("{}exception  … {} in all; the first {} are stored\n",
                           indent,
                           total,
                           m["exceptions"].size());
    return out;
}

}  // namespace

std::string coreFacts(const CoreRow& r, const std::string& indent) {
    const auto& c = r.core;
    // A time the producer did not give, or gave out of range, is unknown, not 1970.
    std::string written =
        c.time_from == "unknown" ? "at an unknown time" : fmt::format("{} ({})", utcText(c.time), c.time_from);
    std::string out = fmt::format("{}core       {}, {}, written {}{}\n",
                                  indent,
                                  printable(c.path.empty() ? "-" : c.path),
                                  sizeText(static_cast<uint64_t>(c.size)),
                                  written,
                                  c.origin == "file" ? "" : ", from " + c.origin);
    if (c.note) out += fmt::format("{}note       {}\n", indent, printable(*c.note));
    out += exceptionLines(c, indent);
    // An --exe refused at ingest (another build-id, not an ELF): never the exe, frames without it.
    if (auto m = nlohmann::json::parse(c.meta.value_or("{}"), nullptr, false);
        m.is_object() && m.contains("exe_refused") && m["exe_refused"].is_string())
        out += fmt::format("{}exe        refused: {} (the frames did not use it)\n",
                           indent,
                           printable(m["exe_refused"].get<std::string>()));
    if (c.exe) {
        std::string caveat;
        auto m = nlohmann::json::parse(c.meta.value_or("{}"), nullptr, false);
        if (m.is_object() && m.contains("exe_unverified")) {
            auto named = m.find("exe_named");
            caveat = named != m.end() && named->is_string()
                         ? " (unverified: the core keeps no build-id; it names " +
                               printable(named->get<std::string>()) + ")"
                         : " (unverified: the core keeps no build-id and names no executable)";
        }
        out += fmt::format("{}exe        {}{}\n", indent, printable(*c.exe), caveat);
    }
    if (auto m = nlohmann::json::parse(c.meta.value_or("{}"), nullptr, false);
        m.is_object() && m.contains("modules_refused") && m["modules_refused"].is_array())
        for (const auto& w : m["modules_refused"])
            if (w.is_string())
                out += fmt::format("{}refused    {}\n", indent, printable(w.get<std::string>()));
    if (c.signature)
        out += fmt::format("{}stack sig  {} (the core's: top frames of the crashing thread)\n",
                           indent,
                           *c.signature);
    auto rt = nlohmann::json::parse(c.runtimes, nullptr, false);
    if (rt.is_object() && !rt.empty()) {
        std::string s;
        for (auto& [k, v] : rt.items())
            s += (s.empty() ? "" : ", ") + k + " " + v.get<std::string>();
        out += fmt::format("{}runtimes   {}\n", indent, printable(s));
    }
    auto missing = nlohmann::json::parse(c.modules_missing, nullptr, false);
    if (missing.is_array() && !missing.empty()) {
        std::string s;
        for (auto& m : missing) s += (s.empty() ? "" : ", ") + m.get<std::string>();
        out += fmt::format(
            "{}no file    {} (frames by build-id + offset; --debuginfo-path DIR "
            "with .build-id/xx/… names them)\n",
            indent,
            printable(s));
    }
    if (auto why = stackPartial(c))
        out += fmt::format(
            "{}partial    the stack is partial: {} (the crashing thread first; "
            "a longer limit: ingest --unwind-seconds, cores.unwind_seconds)\n",
            indent,
            printable(*why));
    else if (c.threads_truncated)
        out += fmt::format("{}threads    {}{} stored: the thread limit was reached\n",
                           indent,
                           r.threads,
                           threadsTotal(c) ? fmt::format(" of {}", *threadsTotal(c)) : "");
    return out;
}

std::string frameLine(size_t n, const coredump::Frame& f) {
    std::string s = fmt::format("#{:<2} 0x{:016x} ", n, f.pc);
    s += f.symbol ? printable(*f.symbol) : "n/a";
    if (f.symbol && f.symbol_offset) s += fmt::format(" + 0x{:x}", *f.symbol_offset);
    if (f.module)
        s += f.module_offset
                 ? fmt::format(" ({} + 0x{:x})", printable(baseName(*f.module)), *f.module_offset)
                 : fmt::format(" ({})", printable(baseName(*f.module)));
    if (f.file) s += " " + printable(*f.file) + (f.line ? fmt::format(":{}", *f.line) : "");
    if (!f.symbol && f.build_id) s += " " + *f.build_id;
    return s;
}

std::string threadText(const coredump::Thread& t, size_t max_frames, const std::string& indent) {
    std::string out = fmt::format("{}Thread {}{}:\n", indent, t.tid, t.crashed ? " (crashed)" : "");
    for (size_t i = 0; i < t.frames.size() && i < max_frames; ++i)
        out += indent + frameLine(i, t.frames[i]) + "\n";
    if (t.frames.size() > max_frames)
        out += fmt::format(
            "{}… {} more frames (gpufault stack)\n", indent, t.frames.size() - max_frames);
    if (t.frames_truncated) out += indent + "(frame limit reached)\n";
    if (t.frames.empty() && t.error)
        out += fmt::format("{}(no frames: {})\n", indent, printable(*t.error));
    return out;
}

std::vector<RuntimeThread> runtimeThreads(const std::vector<coredump::Thread>& threads,
                                          size_t max_frames) {
    std::vector<RuntimeThread> hits;
    for (const auto& t : threads) {
        if (t.crashed) continue;
        for (size_t i = 0; i < t.frames.size(); ++i)
            if (t.frames[i].module && coredump::isGpuRuntimeModule(*t.frames[i].module)) {
                size_t end = std::min(t.frames.size(), i + 3);
                hits.push_back({&t, end > max_frames ? end - max_frames : 0, end});
                break;
            }
    }
    return hits;
}

std::string runtimeThreadsText(const std::vector<coredump::Thread>& threads,
                               size_t max_threads,
                               size_t max_frames,
                               const std::string& indent) {
    auto hits = runtimeThreads(threads, max_frames);
    if (hits.empty()) return "";
    std::string out = fmt::format("{}{} other thread{} inside the GPU runtime:\n",
                                  indent,
                                  hits.size(),
                                  hits.size() == 1 ? "" : "s");
    for (size_t h = 0; h < hits.size() && h < max_threads; ++h) {
        const auto& t = *hits[h].thread;
        out += fmt::format("{}Thread {}:\n", indent, t.tid);
        if (hits[h].begin > 0) out += fmt::format("{}… {} inner frames\n", indent, hits[h].begin);
        for (size_t i = hits[h].begin; i < hits[h].end; ++i)
            out += indent + frameLine(i, t.frames[i]) + "\n";
    }
    if (hits.size() > max_threads)
        out += fmt::format("{}… {} more threads inside the GPU runtime (gpufault stack)\n",
                           indent,
                           hits.size() - max_threads);
    return out;
}

}  // namespace gpufault::cli
