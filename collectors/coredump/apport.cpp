#include "collectors/coredump/apport.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <vector>

namespace gpufault::coredump {

namespace {

template <class T>
std::optional<T> number(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.remove_suffix(1);
    T v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

bool keyChars(std::string_view k) {
    if (k.empty()) return false;
    for (char c : k)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_'))
            return false;
    return true;
}

}  // namespace

std::optional<std::string> decodeBase64(std::string_view s) {
    static const std::array<int8_t, 256> table = [] {
        std::array<int8_t, 256> t{};
        t.fill(-1);
        const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int i = 0; i < 64; ++i) t[static_cast<unsigned char>(a[i])] = static_cast<int8_t>(i);
        return t;
    }();
    while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
    if (s.size() % 4) return std::nullopt;
    size_t pad = s.ends_with("==") ? 2 : s.ends_with("=") ? 1 : 0;
    std::string out(s.size() / 4 * 3, '\0');
    char* o = out.data();
    const auto* in = reinterpret_cast<const unsigned char*>(s.data());
    size_t full = s.size() - (pad ? 4 : 0);  // groups without '='
    for (size_t i = 0; i < full; i += 4) {
        int a = table[in[i]], b = table[in[i + 1]], c = table[in[i + 2]], d = table[in[i + 3]];
        if ((a | b | c | d) < 0) return std::nullopt;
        uint32_t w = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6) | uint32_t(d);
        *o++ = static_cast<char>(w >> 16);
        *o++ = static_cast<char>((w >> 8) & 0xff);
        *o++ = static_cast<char>(w & 0xff);
    }
    if (pad) {
        size_t i = full;
        int a = table[in[i]], b = table[in[i + 1]];
        int c = pad == 1 ? table[in[i + 2]] : 0;
        if ((a | b | c) < 0) return std::nullopt;
        uint32_t w = (uint32_t(a) << 18) | (uint32_t(b) << 12) | (uint32_t(c) << 6);
        *o++ = static_cast<char>(w >> 16);
        if (pad == 1) *o++ = static_cast<char>((w >> 8) & 0xff);
    }
    out.resize(static_cast<size_t>(o - out.data()));
    return out;
}

Result<void> ApportReader::line(std::string_view l, uint64_t n) {
    auto fail = [&](const std::string& m) {
        return std::unexpected(Error{fmt::format("line {}: {}", n, m)});
    };
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (!l.empty() && l[0] == ' ') {
        if (key_.empty()) return fail("continuation line before any field");
        auto v = l.substr(1);
        if (binary_) {
            auto bytes = decodeBase64(v);
            if (!bytes) return fail(fmt::format("{}: invalid base64", key_));
            r_.binary[key_] += bytes->size();
            if (key_ == "CoreDump")
                if (auto r = onCore_(*bytes); !r) return fail(r.error().message);
            return {};
        }
        auto& s = r_.fields[key_];
        if (s.size() + v.size() + 1 > maxText_) {
            r_.truncated_fields = true;
            return {};
        }
        if (!s.empty()) s += '\n';
        s.append(v);
        return {};
    }
    if (l.empty()) return {};  // apport writes none; tolerate a trailing blank line
    auto colon = l.find(':');
    if (colon == std::string_view::npos || !keyChars(l.substr(0, colon)))
        return fail("not a 'Key: value' line of an apport report");
    key_ = std::string(l.substr(0, colon));
    auto v = l.substr(colon + 1);
    if (!v.empty() && v[0] == ' ') v.remove_prefix(1);
    binary_ = v == "base64";
    if (binary_) {
        r_.binary.emplace(key_, 0);
        return {};
    }
    r_.fields[key_] = std::string(v.substr(0, maxText_));
    return {};
}

namespace {

struct Mapping {
    uint64_t start = 0, end = 0;
    std::string path;
};

/// `/proc/PID/maps` lines: `start-end perms offset dev inode path`.
std::vector<Mapping> parseMaps(std::string_view s) {
    std::vector<Mapping> out;
    while (!s.empty()) {
        auto nl = s.find('\n');
        auto l = s.substr(0, nl);
        s = nl == std::string_view::npos ? std::string_view() : s.substr(nl + 1);
        auto dash = l.find('-'), sp = l.find(' ');
        if (dash == std::string_view::npos || sp == std::string_view::npos || dash > sp) continue;
        Mapping m;
        auto a = std::from_chars(l.data(), l.data() + dash, m.start, 16);
        auto b = std::from_chars(l.data() + dash + 1, l.data() + sp, m.end, 16);
        if (a.ec != std::errc{} || b.ec != std::errc{}) continue;
        auto slash = l.find('/');
        if (slash == std::string_view::npos) continue;  // anonymous, [heap], [stack]
        m.path = std::string(l.substr(slash));
        out.push_back(std::move(m));
    }
    return out;
}

/// One gdb frame line; nullopt for other lines (locals of `bt full`).
std::optional<Frame> gdbFrame(std::string_view l) {
    if (!l.starts_with("#")) return std::nullopt;
    auto sp = l.find(' ');
    if (sp == std::string_view::npos) return std::nullopt;
    l = l.substr(sp);
    while (!l.empty() && l.front() == ' ') l.remove_prefix(1);
    Frame f;
    if (l.starts_with("0x")) {
        auto end = l.find(' ');
        auto hex = l.substr(2, end == std::string_view::npos ? l.npos : end - 2);
        if (std::from_chars(hex.data(), hex.data() + hex.size(), f.pc, 16).ec != std::errc{})
            return std::nullopt;
        l = end == std::string_view::npos ? std::string_view() : l.substr(end + 1);
        if (l.starts_with("in ")) l.remove_prefix(3);
    }
    auto paren = l.find(" (");
    auto sym = l.substr(0, paren);
    if (!sym.empty() && sym != "??") f.symbol = std::string(sym);
    if (auto at = l.rfind(" at "); at != std::string_view::npos && at > paren) {
        auto loc = l.substr(at + 4);
        auto colon = loc.rfind(':');
        if (colon != std::string_view::npos) {
            f.file = std::string(loc.substr(0, colon));
            f.line = number<int64_t>(loc.substr(colon + 1));
        }
    } else if (auto from = l.rfind(" from "); from != std::string_view::npos) {
        f.module = std::string(l.substr(from + 6));
    }
    return f;
}

}  // namespace

std::optional<CoreStack> ApportReport::stack() const {
    auto st = fields.find("Stacktrace");
    if (st == fields.end()) return std::nullopt;
    std::vector<Mapping> maps;
    if (auto m = fields.find("ProcMaps"); m != fields.end()) maps = parseMaps(m->second);
    CoreStack s;
    auto& t = s.threads.emplace_back();
    t.tid = pid().value_or(0);
    t.crashed = true;
    std::string_view text = st->second;
    while (!text.empty()) {
        auto nl = text.find('\n');
        auto l = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
        auto f = gdbFrame(l);
        if (!f) continue;
        if (t.frames.size() >= 256) {  // the unwinder's frame cap
            t.frames_truncated = true;
            break;
        }
        f->activation = t.frames.empty();
        for (const auto& m : maps)
            if (f->pc && f->pc >= m.start && f->pc < m.end) {
                uint64_t base = m.start;
                for (const auto& o : maps)
                    if (o.path == m.path) base = std::min(base, o.start);
                f->module = m.path;
                f->module_offset = f->pc - base;
                break;
            }
        t.frames.push_back(std::move(*f));
    }
    return s;
}

namespace {

/// The text after `Pid:` in ProcStatus (the first such line), trimmed; nullopt without one.
std::optional<std::string_view> pidText(const std::map<std::string, std::string>& fields) {
    auto it = fields.find("ProcStatus");
    if (it == fields.end()) return std::nullopt;
    std::string_view s = it->second;
    while (!s.empty()) {
        auto nl = s.find('\n');
        auto l = s.substr(0, nl);
        if (l.starts_with("Pid:")) {
            l.remove_prefix(4);
            while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
            return l;
        }
        s = nl == std::string_view::npos ? std::string_view() : s.substr(nl + 1);
    }
    return std::nullopt;
}

}  // namespace

std::optional<int64_t> ApportReport::pid() const {
    auto t = pidText(fields);
    auto p = t ? number<int64_t>(*t) : std::nullopt;
    if (!p || *p <= 0 || *p > kMaxPid) return std::nullopt;
    return p;
}

std::optional<int> ApportReport::signal() const {
    auto it = fields.find("Signal");
    auto s = it == fields.end() ? std::nullopt : number<int>(it->second);
    if (!s || *s < 1 || *s > 64) return std::nullopt;
    return s;
}

std::vector<std::string> ApportReport::warnings() const {
    std::vector<std::string> w;
    if (auto t = pidText(fields); t && !pid())
        w.push_back(fmt::format(
            "ProcStatus Pid: {:.40} is not a pid (1..{}): stored as unknown", *t, kMaxPid));
    if (auto it = fields.find("Signal"); it != fields.end() && !signal())
        w.push_back(
            fmt::format("Signal: {:.40} is not a signal (1..64): stored as unknown", it->second));
    if (auto it = fields.find("Date"); it != fields.end() && !wall())
        w.push_back(fmt::format(
            "Date: {:.40} is not a date (asctime form, 1970 to 9999): the time is unknown",
            it->second));
    return w;
}

std::string ApportReport::executable() const {
    auto it = fields.find("ExecutablePath");
    return it == fields.end() ? std::string() : it->second;
}

std::optional<std::string> ApportReport::wall() const {
    auto it = fields.find("Date");
    if (it == fields.end()) return std::nullopt;
    char wd[4] = {}, mon[4] = {};
    int day = 0, h = 0, m = 0, s = 0, y = 0;
    if (std::sscanf(it->second.c_str(), "%3s %3s %d %d:%d:%d %d", wd, mon, &day, &h, &m, &s, &y) !=
        7)
        return std::nullopt;
    static constexpr std::string_view kMonths = "JanFebMarAprMayJunJulAugSepOctNovDec";
    auto at = kMonths.find(mon);
    if (at == std::string_view::npos || at % 3 || day < 1 || day > 31 || h > 23 || m > 59 ||
        s > 60 || y < 1970 || y > 9999)
        return std::nullopt;
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}", y, at / 3 + 1, day, h, m, s);
}

}  // namespace gpufault::coredump
