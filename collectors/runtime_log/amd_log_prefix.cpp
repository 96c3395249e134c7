// Parser of the AMD_LOG_LEVEL line prefix (ROCclr/clr `amd::log_printf`), FORMATS.md §3.1.
#include "collectors/runtime_log/amd_log_prefix.h"

#include <cstring>

namespace gpufault {

namespace {

// A forward scanner over the line: raw pointers and no optionals on the per-line path (this
// runs on every line of a multi-GB AMD_LOG_LEVEL log).
struct Scan {
    const char* p;
    const char* e;

    static bool digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }
    static bool hex(char c) {
        return digit(c) || static_cast<unsigned char>((c | 0x20) - 'a') < 6;
    }
    size_t pos(const char* base) const { return static_cast<size_t>(p - base); }
    bool more() const { return p < e; }
    void blanks() {
        while (p < e && (*p == ' ' || *p == '\t')) ++p;
    }
    bool eat(char c) {
        if (p >= e || *p != c) return false;
        ++p;
        return true;
    }
    bool eat(std::string_view lit) {
        if (static_cast<size_t>(e - p) < lit.size() || std::memcmp(p, lit.data(), lit.size()) != 0)
            return false;
        p += lit.size();
        return true;
    }
    /// Decimal digits (at least one, at most `max`: a longer run fails) into `v`.
    bool number(int64_t& v, int max) {
        const char* s = p;
        int64_t x = 0;
        while (p < e && digit(*p)) {
            if (p - s == max) return false;
            x = x * 10 + (*p++ - '0');
        }
        if (p == s) return false;
        v = x;
        return true;
    }
    /// `0x` + 1–16 hex digits; the view with `0x`, or "" (nothing consumed).
    std::string_view hexToken() {
        if (e - p < 3 || p[0] != '0' || p[1] != 'x' || !hex(p[2])) return {};
        const char* s = p;
        p += 2;
        while (p < e && hex(*p) && p - s < 18) ++p;
        return {s, static_cast<size_t>(p - s)};
    }
};

/// The pid/tid part after `us:` and the message start; fills `pr`. `c` points after `us:`.
void parsePidTid(std::string_view s, Scan c, AmdLogPrefix& pr) {
    c.blanks();
    pr.message_offset = c.pos(s.data());
    int64_t pid = 0;
    if (c.eat("[pid:")) {  // 5.7–6.2 `[pid:%-5d tid:0x%s]`, 6.3+ `[pid:%u tid: 0x%05zx]`
        c.blanks();
        if (!c.number(pid, 10)) return;
        c.blanks();
        if (!c.eat("tid:")) return;
        c.blanks();
    } else if (c.more() && Scan::digit(*c.p)) {  // 4.5–5.6 `%-5d: [tid:0x%s]`, pid may touch ':'
        if (!c.number(pid, 10)) return;
        c.blanks();
        if (!c.eat(':')) return;
        c.blanks();
        if (!c.eat("[tid:")) return;
        c.blanks();
    } else {
        return;
    }
    auto tid = c.hexToken();
    if (tid.empty() || !c.eat(']')) return;
    pr.pid = pid;
    pr.runtime_tid = tid;
    c.blanks();
    pr.message_offset = c.pos(s.data());
}

}  // namespace

std::optional<AmdLogPrefix> parseAmdLogPrefix(std::string_view s) {
    AmdLogPrefix pr;
    Scan c{s.data(), s.data() + s.size()};
    c.blanks();
    // A paste may have lost the leading ':'; then only the stamped layouts are accepted.
    const bool leading_colon = c.eat(':');
    c.blanks();  // log_timestamped prints the level with `% 2d`
    int64_t level = 0;
    if (!c.number(level, 1) || !c.eat(':')) return std::nullopt;
    pr.level = static_cast<int>(level);

    const char* fileStart = c.p;
    auto* colon = static_cast<const char*>(std::memchr(c.p, ':', static_cast<size_t>(c.e - c.p)));
    if (!colon || colon - fileStart > 1024) return std::nullopt;
    const char* fileEnd = colon;
    while (fileStart < fileEnd && (*fileStart == ' ' || *fileStart == '\t')) ++fileStart;
    while (fileEnd > fileStart && (fileEnd[-1] == ' ' || fileEnd[-1] == '\t')) --fileEnd;
    pr.file = std::string_view(fileStart, static_cast<size_t>(fileEnd - fileStart));
    c.p = colon + 1;
    c.blanks();
    int64_t srcLine = 0;
    if (!c.number(srcLine, 9)) return std::nullopt;
    pr.src_line = srcLine;
    c.blanks();
    if (!c.eat(':')) return std::nullopt;
    c.blanks();
    const size_t afterLine = c.pos(s.data());

    int64_t stamp = 0;
    if (c.eat('(')) {  // log_timestamped `(%010lld) us %s`
        if (c.number(stamp, 18) && c.eat(')') && c.eat(" us")) {
            pr.runtime_us = stamp;
            c.blanks();
            pr.message_offset = c.pos(s.data());
            return pr;
        }
    } else if (c.more() && Scan::digit(*c.p) && c.number(stamp, 18)) {
        c.eat('d');  // the `%010lud us` typo of one 2024 commit
        Scan m = c;
        m.blanks();
        if (m.eat("us:")) {  // ROCm 3.7+
            pr.runtime_us = stamp;
            parsePidTid(s, m, pr);
            return pr;
        }
        if (c.eat(':')) {  // ROCm 3.3/3.5: 100 ns units, no `us`
            pr.runtime_us = stamp / 10;
            c.blanks();
            pr.message_offset = c.pos(s.data());
            return pr;
        }
    }
    if (!leading_colon) return std::nullopt;
    pr.message_offset = afterLine;  // log_entry `:%d:%s:%d: %s`
    return pr;
}

}  // namespace gpufault
