#include "collectors/coredump/systemd_coredump.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <map>

namespace gpufault::coredump {

namespace {

template <class T>
std::optional<T> number(std::string_view s, int base = 10) {
    T v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
    if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

std::string_view get(const FieldMap& f, const char* name) {
    auto it = f.find(name);
    return it == f.end() ? std::string_view() : std::string_view(it->second);
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

/// `#N  0xPC SYMBOL (MODULE + 0xOFF)` or `#N  0xPC SYMBOL (MODULE)`; nullopt otherwise.
std::optional<Frame> parseFrame(std::string_view l) {
    if (l.empty() || l[0] != '#') return std::nullopt;
    auto sp = l.find(' ');
    if (sp == std::string_view::npos || !number<unsigned>(l.substr(1, sp - 1))) return std::nullopt;
    l = trim(l.substr(sp));
    if (!l.starts_with("0x")) return std::nullopt;
    sp = l.find(' ');
    auto pc = number<uint64_t>(l.substr(2, sp == std::string_view::npos ? l.npos : sp - 2), 16);
    if (!pc || sp == std::string_view::npos) return std::nullopt;
    l = trim(l.substr(sp));
    // The module part is the last parenthesised group: symbols may hold parentheses.
    if (l.empty() || l.back() != ')') return std::nullopt;
    size_t depth = 0, open = std::string_view::npos;
    for (size_t i = l.size(); i-- > 0;) {
        if (l[i] == ')') ++depth;
        if (l[i] == '(' && --depth == 0) {
            open = i;
            break;
        }
    }
    if (open == std::string_view::npos) return std::nullopt;
    Frame f;
    f.pc = *pc;
    auto symbol = trim(l.substr(0, open));
    auto mod = l.substr(open + 1, l.size() - open - 2);
    if (auto plus = mod.rfind(" + 0x"); plus != std::string_view::npos) {
        f.module_offset = number<uint64_t>(mod.substr(plus + 5), 16);
        mod = mod.substr(0, plus);
    }
    if (!symbol.empty() && symbol != "n/a") f.symbol = std::string(symbol);
    if (!mod.empty() && mod != "n/a") f.module = std::string(mod);
    return f;
}

std::string moduleBase(std::string_view m) {
    auto slash = m.rfind('/');
    return std::string(slash == std::string_view::npos ? m : m.substr(slash + 1));
}

}  // namespace

std::optional<CoreStack> parseStackTraceText(std::string_view message,
                                             const StackTextLimits& lim,
                                             StackTextCounts* counts) {
    CoreStack s;
    StackTextCounts n;
    size_t frames = 0;                            // of the current block, kept or not
    std::map<std::string, std::string> buildIds;  // module base name → build-id
    Thread* cur = nullptr;
    constexpr std::string_view kHead = "Stack trace of thread ";
    while (!message.empty()) {
        auto nl = message.find('\n');
        auto line = trim(message.substr(0, nl));
        message = nl == std::string_view::npos ? std::string_view() : message.substr(nl + 1);
        if (line.starts_with(kHead)) {
            auto tid = line.substr(kHead.size());
            if (tid.ends_with(':')) tid.remove_suffix(1);
            ++n.threads;
            frames = 0;
            if (s.threads.size() >= lim.max_threads) {
                // The frames that follow belong to a thread not kept.
                s.threads_truncated = true;
                cur = nullptr;
                continue;
            }
            cur = &s.threads.emplace_back();
            cur->tid = number<int64_t>(tid).value_or(0);
            cur->crashed = s.threads.size() == 1;
            continue;
        }
        if (line.starts_with("Module ")) {
            auto at = line.find(" with build-id ");
            if (at != std::string_view::npos) {
                auto rest = line.substr(7);
                auto name = rest.substr(0, rest.find(' '));
                auto id = line.substr(at + 15);
                id = id.substr(0, id.find_first_of(" ,"));
                buildIds[moduleBase(name)] = std::string(id);
            }
            continue;
        }
        if (n.threads == 0) continue;
        auto f = parseFrame(line);
        if (f) n.most_frames = std::max(n.most_frames, ++frames);
        if (!cur) continue;
        if (f) {
            if (cur->frames.size() >= lim.max_frames) {
                cur->frames_truncated = true;
                continue;
            }
            f->activation = cur->frames.empty();
            cur->frames.push_back(std::move(*f));
        }
    }
    if (s.threads.empty()) return std::nullopt;
    if (counts) *counts = n;
    for (auto& t : s.threads)
        for (auto& f : t.frames)
            if (f.module)
                if (auto it = buildIds.find(moduleBase(*f.module)); it != buildIds.end())
                    f.build_id = it->second;
    return s;
}

std::vector<std::string> stackCapWarnings(const CoreStack& s,
                                          const StackTextLimits& lim,
                                          const StackTextCounts* counts) {
    std::vector<std::string> w;
    if (s.threads_truncated)
        w.push_back(counts ? fmt::format("MESSAGE stack trace: {} threads: the first {} kept",
                                         counts->threads,
                                         lim.max_threads)
                           : fmt::format("MESSAGE stack trace: more than {0} threads: the "
                                         "first {0} kept",
                                         lim.max_threads));
    size_t cut = 0;
    for (const auto& t : s.threads) cut += t.frames_truncated;
    if (cut)
        w.push_back(fmt::format(
            "MESSAGE stack trace: {} thread{} with more than {} frames{}: the first {} kept",
            cut,
            cut == 1 ? "" : "s",
            lim.max_frames,
            counts ? fmt::format(" (up to {})", counts->most_frames) : "",
            lim.max_frames));
    return w;
}

bool attestedBySystemdCoredump(const FieldMap& f) {
    return get(f, "_UID") == "0" && (get(f, "_COMM") == "systemd-coredum" ||
                                     get(f, "SYSLOG_IDENTIFIER") == "systemd-coredump");
}

Result<CoredumpEntry> parseCoredumpEntry(const FieldMap& f) {
    if (get(f, "MESSAGE_ID") != kCoredumpMessageId)
        return std::unexpected(Error{"not a systemd-coredump entry (MESSAGE_ID)"});
    if (!f.contains("COREDUMP_PID"))
        return std::unexpected(Error{"systemd-coredump entry without COREDUMP_PID"});
    auto pid = number<int64_t>(get(f, "COREDUMP_PID"));
    if (!pid || *pid <= 0 || *pid > kMaxPid)
        return std::unexpected(
            Error{fmt::format("COREDUMP_PID={:.40} is not a pid (1..{}): crash not stored",
                              get(f, "COREDUMP_PID"),
                              kMaxPid)});
    CoredumpEntry e;
    e.pid = *pid;
    e.uid = number<int64_t>(get(f, "COREDUMP_UID"));
    e.gid = number<int64_t>(get(f, "COREDUMP_GID"));
    e.signal = number<int>(get(f, "COREDUMP_SIGNAL"));
    if (f.contains("COREDUMP_SIGNAL") && (!e.signal || *e.signal < 1 || *e.signal > 64)) {
        e.warnings.push_back(
            fmt::format("COREDUMP_SIGNAL={:.40} is not a signal (1..64): stored "
                        "as unknown",
                        get(f, "COREDUMP_SIGNAL")));
        e.signal.reset();
    }
    e.timestamp_us = number<uint64_t>(get(f, "COREDUMP_TIMESTAMP"));
    if (f.contains("COREDUMP_TIMESTAMP") &&
        (!e.timestamp_us || *e.timestamp_us / 1000000 > uint64_t(kMaxEpochSeconds))) {
        e.warnings.push_back(
            fmt::format("COREDUMP_TIMESTAMP={:.40} is not a time from 1970 to "
                        "9999 (µs): stored as unknown",
                        get(f, "COREDUMP_TIMESTAMP")));
        e.timestamp_us.reset();
    }
    e.rlimit = number<uint64_t>(get(f, "COREDUMP_RLIMIT"));
    e.comm = get(f, "COREDUMP_COMM");
    e.exe = get(f, "COREDUMP_EXE");
    e.unit = get(f, "COREDUMP_UNIT");
    e.hostname = get(f, "COREDUMP_HOSTNAME");
    e.boot_id = get(f, "COREDUMP_BOOT_ID");
    if (e.boot_id.empty()) e.boot_id = get(f, "_BOOT_ID");
    if (auto fn = get(f, "COREDUMP_FILENAME"); !fn.empty()) e.filename = std::string(fn);
    e.truncated = get(f, "COREDUMP_TRUNCATED") == "1";
    e.in_journal = f.contains("COREDUMP");
    e.message = get(f, "MESSAGE");
    if (!e.filename && !e.in_journal) {
        // rlimit -1 (unlimited) reads as a huge unsigned number; below a page systemd refuses.
        if (e.rlimit && *e.rlimit < 4096)
            e.not_kept = fmt::format("core not kept: RLIMIT_CORE {} bytes", *e.rlimit);
        else
            // ExternalSizeMax/ProcessSizeMax, or Storage=none: the entry is the same for both
            // (coredump.c submit_coredump(); the sizes are in a separate message), hostile
            // review 151, LOW 5.
            e.not_kept = "core not kept: size limit, or Storage=none";
    }
    StackTextCounts counts;
    e.stack = parseStackTraceText(e.message, {}, &counts);
    if (e.stack)
        for (auto& w : stackCapWarnings(*e.stack, {}, &counts)) e.warnings.push_back(std::move(w));
    e.attested = attestedBySystemdCoredump(f);
    return e;
}

std::optional<CoredumpFileName> parseCoredumpFileName(std::string_view name) {
    if (!name.starts_with("core.")) return std::nullopt;
    CoredumpFileName n;
    for (std::string_view ext : {"zst", "lz4", "xz"})
        if (name.ends_with(std::string(".") + std::string(ext))) {
            n.compression = ext;
            name.remove_suffix(ext.size() + 1);
            break;
        }
    // From the right: USEC, PID, BOOTID, UID; what remains after "core." is COMM (escaped
    // by systemd, so it holds no '.').
    std::string_view parts[4];
    for (auto& p : parts) {
        auto dot = name.rfind('.');
        if (dot == std::string_view::npos || dot < 5) return std::nullopt;
        p = name.substr(dot + 1);
        name = name.substr(0, dot);
    }
    auto usec = number<uint64_t>(parts[0]);
    auto pid = number<int64_t>(parts[1]);
    auto uid = number<int64_t>(parts[3]);
    if (!usec || !pid || !uid || parts[2].size() != 32) return std::nullopt;
    for (char c : parts[2])
        if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n.timestamp_us = *usec;
    n.pid = *pid;
    n.uid = *uid;
    n.boot_id = parts[2];
    auto comm = name.substr(5);
    for (size_t i = 0; i < comm.size(); ++i) {
        if (comm[i] == '\\' && i + 3 < comm.size() && comm[i + 1] == 'x')
            if (auto v = number<unsigned>(comm.substr(i + 2, 2), 16)) {
                n.comm += static_cast<char>(*v);
                i += 3;
                continue;
            }
        n.comm += comm[i];
    }
    return n;
}

std::string coredumpKey(std::string_view boot_id, int64_t pid, uint64_t timestamp_us) {
    return fmt::format("systemd-coredump:{}:{}:{}", boot_id, pid, timestamp_us);
}

}  // namespace gpufault::coredump
