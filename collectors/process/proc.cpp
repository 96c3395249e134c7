#include "collectors/process/proc.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "collectors/common/text.h"

namespace gpufault {

namespace {

std::optional<int64_t> num(std::string_view s) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p == s.data()) return std::nullopt;
    return v;
}

/// The whole of `s` as hex digits.
std::optional<uint64_t> hexAll(std::string_view s) {
    size_t used = 0;
    auto v = text::parseHex(s, &used);
    if (!v || used != s.size()) return std::nullopt;
    return v;
}

/// Splits on spaces and tabs, skipping empty fields.
std::vector<std::string_view> fields(std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
        while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
        size_t j = i;
        while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
        if (j > i) out.push_back(s.substr(i, j - i));
        i = j;
    }
    return out;
}

}  // namespace

std::optional<ProcStatus> parseProcStatus(std::string_view text) {
    ProcStatus st;
    bool named = false;
    text::forEachLine(text, [&](std::string_view line) {
        auto colon = line.find(':');
        if (colon == std::string_view::npos) return;
        auto key = line.substr(0, colon);
        auto value = line.substr(colon + 1);
        auto f = fields(value);
        if (key == "Name") {
            st.name = std::string(text::trim(value));
            named = true;
        } else if (key == "Tgid" && !f.empty()) {
            st.tgid = num(f[0]).value_or(0);
        } else if (key == "PPid" && !f.empty()) {
            st.ppid = num(f[0]).value_or(0);
        } else if (key == "Uid" && !f.empty()) {
            st.uid = num(f[0]);
        } else if (key == "NSpid") {
            for (auto x : f)
                if (auto n = num(x)) st.nspid.push_back(*n);
        }
    });
    if (!named) return std::nullopt;
    return st;
}

std::vector<ProcMapping> parseProcMaps(std::string_view text) {
    std::vector<ProcMapping> out;
    text::forEachLine(text, [&](std::string_view line) {
        auto f = fields(line);
        if (f.size() < 5) return;
        auto dash = f[0].find('-');
        if (dash == std::string_view::npos) return;
        auto lo = hexAll(f[0].substr(0, dash));
        auto hi = hexAll(f[0].substr(dash + 1));
        auto off = hexAll(f[2]);
        if (!lo || !hi || !off || *hi < *lo || f[1].size() != 4) return;
        ProcMapping m{*lo, *hi, *off, std::string(f[1]), ""};
        if (f.size() >= 6) {
            // The path is the rest of the line (it may contain spaces).
            auto at = line.find(f[5], static_cast<size_t>(f[4].data() - line.data()) + f[4].size());
            m.path = std::string(text::trim(line.substr(at)));
        }
        out.push_back(std::move(m));
    });
    return out;
}

std::vector<ProcModule> modulesOf(const std::vector<ProcMapping>& maps) {
    std::map<std::string, ProcModule> by;
    for (const auto& m : maps) {
        if (m.path.empty() || m.path[0] != '/') continue;
        auto [it, fresh] = by.try_emplace(m.path, ProcModule{m.path, m.start, m.end, false});
        it->second.start = std::min(it->second.start, m.start);
        it->second.end = std::max(it->second.end, m.end);
        it->second.executable |= m.perms.size() > 2 && m.perms[2] == 'x';
    }
    std::vector<ProcModule> out;
    for (auto& [p, m] : by) out.push_back(std::move(m));
    std::sort(
        out.begin(), out.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
    return out;
}

std::string parseCgroup(std::string_view text) {
    std::string v1;
    std::string v2;
    text::forEachLine(text, [&](std::string_view line) {
        auto c1 = line.find(':');
        if (c1 == std::string_view::npos) return;
        auto c2 = line.find(':', c1 + 1);
        if (c2 == std::string_view::npos) return;
        auto path = line.substr(c2 + 1);
        if (line.substr(0, c1) == "0" && c2 == c1 + 1) {
            v2 = std::string(path);
        } else if (v1.empty() && path != "/") {
            v1 = std::string(path);
        }
    });
    return !v2.empty() && v2 != "/" ? v2 : (!v1.empty() ? v1 : v2);
}

std::optional<uint64_t> parseStatStartTicks(std::string_view text) {
    auto close = text.rfind(')');
    if (close == std::string_view::npos) return std::nullopt;
    auto f = fields(text.substr(close + 1));
    // After the command: field 3 (state) is f[0], so field 22 is f[19].
    if (f.size() < 20) return std::nullopt;
    auto n = num(f[19]);
    if (!n || *n < 0) return std::nullopt;
    return static_cast<uint64_t>(*n);
}

}  // namespace gpufault
