// Parser of the AMD_LOG_LEVEL line prefix (ROCclr/clr `amd::log_printf`), FORMATS.md §3.1.
#include "collectors/runtime_log/amd_log_prefix.h"

#include "collectors/common/text.h"

namespace gpufault {

namespace {

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
bool isBlank(char c) {
    return c == ' ' || c == '\t';
}
bool isHex(char c) {
    return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

size_t skipBlanks(std::string_view s, size_t i) {
    while (i < s.size() && isBlank(s[i])) ++i;
    return i;
}

/// Decimal digits at `i` (at most `max_digits`); advances `i`. nullopt when there are none or
/// more than `max_digits`.
std::optional<int64_t> digits(std::string_view s, size_t& i, size_t max_digits) {
    const size_t start = i, n = s.size();
    int64_t v = 0;
    while (i < n && isDigit(s[i])) {
        if (i - start == max_digits) return std::nullopt;
        v = v * 10 + (s[i++] - '0');
    }
    if (i == start) return std::nullopt;
    return v;
}

bool eat(std::string_view s, size_t& i, char c) {
    if (i >= s.size() || s[i] != c) return false;
    ++i;
    return true;
}

bool eat(std::string_view s, size_t& i, std::string_view lit) {
    if (s.size() - i < lit.size() || s.compare(i, lit.size(), lit) != 0) return false;
    i += lit.size();
    return true;
}

/// `0x` + 1–16 hex digits at `i`; returns the view (with `0x`) and advances `i`, or "".
std::string_view hexToken(std::string_view s, size_t& i) {
    size_t j = i;
    if (!eat(s, j, "0x")) return {};
    const size_t first = j;
    while (j < s.size() && isHex(s[j]) && j - first < 16) ++j;
    if (j == first) return {};
    std::string_view tok = s.substr(i, j - i);
    i = j;
    return tok;
}

/// The pid/tid part after `us:` and the message start; fills `p`. `i` points after `us:`.
void parsePidTid(std::string_view s, size_t i, AmdLogPrefix& p) {
    size_t j = skipBlanks(s, i);
    p.message_offset = j;
    size_t k = j;
    if (eat(s, k, "[pid:")) {  // 5.7–6.2 `[pid:%-5d tid:0x%s]`, 6.3+ `[pid:%u tid: 0x%05zx]`
        k = skipBlanks(s, k);
        auto pid = digits(s, k, 10);
        k = skipBlanks(s, k);
        if (!pid || !eat(s, k, "tid:")) return;
        k = skipBlanks(s, k);
        auto tid = hexToken(s, k);
        if (tid.empty() || !eat(s, k, ']')) return;
        p.pid = pid;
        p.runtime_tid = tid;
        p.message_offset = skipBlanks(s, k);
        return;
    }
    if (k < s.size() && isDigit(s[k])) {  // 4.5–5.6 `%-5d: [tid:0x%s]`, pid may touch the colon
        auto pid = digits(s, k, 10);
        k = skipBlanks(s, k);
        if (!pid || !eat(s, k, ':')) return;
        k = skipBlanks(s, k);
        if (!eat(s, k, "[tid:")) return;
        k = skipBlanks(s, k);
        auto tid = hexToken(s, k);
        if (tid.empty() || !eat(s, k, ']')) return;
        p.pid = pid;
        p.runtime_tid = tid;
        p.message_offset = skipBlanks(s, k);
    }
}

}  // namespace

std::optional<AmdLogPrefix> parseAmdLogPrefix(std::string_view s) {
    AmdLogPrefix p;
    size_t i = skipBlanks(s, 0);
    // A paste may have lost the leading ':'; then only the stamped layouts are accepted.
    const bool leading_colon = eat(s, i, ':');
    i = skipBlanks(s, i);  // log_timestamped prints the level with `% 2d`
    auto level = digits(s, i, 1);
    if (!level || !eat(s, i, ':')) return std::nullopt;
    p.level = static_cast<int>(*level);

    size_t file_end = s.find(':', i);
    if (file_end == std::string_view::npos || file_end - i > 1024) return std::nullopt;
    p.file = text::trim(s.substr(i, file_end - i));
    i = skipBlanks(s, file_end + 1);
    p.src_line = digits(s, i, 9);
    if (!p.src_line) return std::nullopt;
    i = skipBlanks(s, i);
    if (!eat(s, i, ':')) return std::nullopt;
    size_t after_line = skipBlanks(s, i);
    size_t k = after_line;

    if (eat(s, k, '(')) {  // log_timestamped `(%010lld) us %s`
        auto stamp = digits(s, k, 18);
        if (stamp && eat(s, k, ')') && eat(s, k, " us")) {
            p.runtime_us = stamp;
            p.message_offset = skipBlanks(s, k);
            return p;
        }
    } else if (k < s.size() && isDigit(s[k])) {
        auto stamp = digits(s, k, 18);
        if (stamp) {
            eat(s, k, 'd');  // the `%010lud us` typo of one 2024 commit
            size_t m = skipBlanks(s, k);
            if (eat(s, m, "us:")) {  // ROCm 3.7+
                p.runtime_us = stamp;
                parsePidTid(s, m, p);
                return p;
            }
            if (eat(s, k, ':')) {  // ROCm 3.3/3.5: 100 ns units, no `us`
                p.runtime_us = *stamp / 10;
                p.message_offset = skipBlanks(s, k);
                return p;
            }
        }
    }
    if (!leading_colon) return std::nullopt;
    p.message_offset = after_line;  // log_entry `:%d:%s:%d: %s`
    return p;
}

}  // namespace gpufault
