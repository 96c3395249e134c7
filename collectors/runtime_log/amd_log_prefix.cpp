// Parser of the AMD_LOG_LEVEL line prefix (ROCclr/clr `amd::log_printf`), FORMATS.md §3.1.
#include "collectors/runtime_log/amd_log_prefix.h"

#include <bit>
#include <cstring>

#include "collectors/common/simd.h"
#include "collectors/common/swar.h"
#include "collectors/runtime_log/amd_fixed_shape.h"

namespace gpufault {

namespace {

// A forward scanner over the line: raw pointers and no optionals on the per-line path (this
// runs on every line of a multi-GB AMD_LOG_LEVEL log).
struct Scan {
    const char* p;
    const char* e;

    static bool digit(char c) { return static_cast<unsigned char>(c - '0') < 10; }
    static bool hex(char c) { return digit(c) || static_cast<unsigned char>((c | 0x20) - 'a') < 6; }
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
    /// A literal (a string constant: the compiler unrolls the compare).
    template <size_t N>
    bool eat(const char (&lit)[N]) {
        constexpr size_t n = N - 1;
        if (static_cast<size_t>(e - p) < n) return false;
        for (size_t i = 0; i < n; ++i)
            if (p[i] != lit[i]) return false;
        p += n;
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

/// Level, file and source line in any padding; `c` is left after the line's `:` and blanks.
bool generalHead(Scan& c, AmdLogPrefix& pr, bool& leading_colon) {
    c.blanks();
    // A paste may have lost the leading ':'; then only the stamped layouts are accepted.
    leading_colon = c.eat(':');
    c.blanks();  // log_timestamped prints the level with `% 2d`
    int64_t level = 0;
    if (!c.number(level, 1) || !c.eat(':')) return false;
    pr.level = static_cast<int>(level);

    const char* fileStart = c.p;
    auto* colon = static_cast<const char*>(std::memchr(c.p, ':', static_cast<size_t>(c.e - c.p)));
    if (!colon || colon - fileStart > 1024) return false;
    const char* fileEnd = colon;
    while (fileStart < fileEnd && (*fileStart == ' ' || *fileStart == '\t')) ++fileStart;
    while (fileEnd > fileStart && (fileEnd[-1] == ' ' || fileEnd[-1] == '\t')) --fileEnd;
    pr.file = std::string_view(fileStart, static_cast<size_t>(fileEnd - fileStart));
    c.p = colon + 1;
    c.blanks();
    int64_t srcLine = 0;
    if (!c.number(srcLine, 9)) return false;
    pr.src_line = srcLine;
    c.blanks();
    if (!c.eat(':')) return false;
    c.blanks();
    return true;
}

using namespace swar;

/// The column checks of the printf head `:%d:%-25s:%-4d: ` (file ≤ 25 and line ≤ 4 characters):
/// `:L:`, no ':' up to column 28, ':' in columns 28 and 33, the line's first digit in column 29,
/// `: ` and a digit in column 35, the line's digits then spaces up to column 33.
bool fixedHeadShape(const char* b, size_t n) {
    if (n < 40 || b[0] != ':' || !Scan::digit(b[1]) || b[2] != ':' || b[28] != ':' ||
        b[33] != ':' || b[34] != ' ' || !Scan::digit(b[35]) || !Scan::digit(b[29]) || b[3] == ' ' ||
        b[3] == '\t')
        return false;
    // No ':' in columns 3..27 (else memchr would stop there).
    const uint64_t colons = kOnes * ':';
    if (anyZeroByte(load8(b + 3) ^ colons) | anyZeroByte(load8(b + 11) ^ colons) |
        anyZeroByte(load8(b + 19) ^ colons) | anyZeroByte(load8(b + 20) ^ colons))
        return false;
    size_t i = 30;
    while (i < 33 && Scan::digit(b[i])) ++i;
    for (; i < 33; ++i)
        if (b[i] != ' ') return false;
    return true;
}

/// The head in the printf columns of every `:%d:%-25s:%-4d: ` layout (no TABs in the padding):
/// fixedHeadShape(), the file padded to column 28, the line padded to column 33. Gives what
/// generalHead() would (`c` after the blanks), or false when the line is not in exactly this
/// shape and generalHead() must decide.
bool fixedHead(std::string_view s, Scan& c, AmdLogPrefix& pr) {
    if constexpr (!kLittleEndian) return false;
    const char* b = s.data();
    if (!fixedHeadShape(b, s.size())) return false;
    // The file ends at the last non-space byte before column 28.
    size_t end = 3;
    if (uint64_t m = bytesNot(load8(b + 20), ' ')) {
        end = 20 + (63 - static_cast<size_t>(std::countl_zero(m))) / 8 + 1;
    } else if (uint64_t m2 = bytesNot(load8(b + 12), ' ')) {
        end = 12 + (63 - static_cast<size_t>(std::countl_zero(m2))) / 8 + 1;
    } else if (uint64_t m3 = bytesNot(load8(b + 4), ' ')) {
        end = 4 + (63 - static_cast<size_t>(std::countl_zero(m3))) / 8 + 1;
    } else {
        end = 4;  // b[3] is not a blank
    }
    if (b[end - 1] == '\t') return false;
    // The source line: digits from column 29 (the shape checked the spaces after them).
    int64_t line = 0;
    for (size_t i = 29; i < 33 && Scan::digit(b[i]); ++i) line = line * 10 + (b[i] - '0');
    pr.level = b[1] - '0';
    pr.file = std::string_view(b + 3, end - 3);
    pr.src_line = line;
    c.p = b + 35;
    return true;
}

/// Where the fields of the ROCm 5.7–6.2 rest `%010lld us: [pid:%-5d tid:0x%s] ` lie.
struct TailShape {
    const char* stamp;     ///< first stamp digit (column 35)
    const char* stampEnd;  ///< the ` us: [pid:` after it
    const char* pid;       ///< first pid digit
    const char* pidEnd;
    const char* tid;   ///< the `0x`
    size_t tidDigits;  ///< hex digits after `0x`
    size_t message;    ///< offset of the message (after the blanks)
};

/// After the head: the rest `%010lld us: [pid:%-5d tid:0x%s] ` (8–15 stamp digits, 1–7 pid
/// digits, 1–15 tid digits) checked a word at a time, or false for any other text.
bool fixedTailShape(std::string_view s, TailShape& sh) {
    const char* b = s.data();
    const char* e = b + s.size();
    const char* q = b + 35;
    if (e - q < 16 || nonDigits(load8(q)) != 0) return false;
    uint64_t more = nonDigits(load8(q + 8));
    if (more == 0) return false;
    const size_t n = 8 + static_cast<size_t>(std::countr_zero(more)) / 8;
    const char* r = q + n;
    if (e - r < 18 || std::memcmp(r, " us: [pid:", 10) != 0) return false;
    const char* t = r + 10;
    uint64_t pidEnd = nonDigits(load8(t));
    const size_t pidLen = static_cast<size_t>(std::countr_zero(pidEnd)) / 8;  // 8 if none
    if (pidLen == 0 || pidLen == 8) return false;
    const char* u = t + pidLen;
    if (e - u < 8) return false;
    uint64_t nonSpace = bytesNot(load8(u), ' ');
    if (nonSpace == 0) return false;
    const char* h = u + static_cast<size_t>(std::countr_zero(nonSpace)) / 8;
    if (e - h < 22 || std::memcmp(h, "tid:0x", 6) != 0) return false;
    const char* x = h + 4;  // the `0x`
    uint64_t hexEnd = nonHex(load8(x + 2));
    size_t hexLen = static_cast<size_t>(std::countr_zero(hexEnd)) / 8;
    if (hexLen == 8) {
        hexEnd = nonHex(load8(x + 10));
        if (hexEnd == 0) return false;
        hexLen = 8 + static_cast<size_t>(std::countr_zero(hexEnd)) / 8;
    }
    if (hexLen == 0 || x[2 + hexLen] != ']') return false;
    const char* m = x + 3 + hexLen;
    while (m < e && (*m == ' ' || *m == '\t')) ++m;
    sh = TailShape{q, r, t, u, x, hexLen, static_cast<size_t>(m - b)};
    return true;
}

/// After fixedHead(): the fixed rest's stamp, pid, tid and message start as the general path
/// would fill them, or false (nothing changed) for any other text.
bool fixedTail(std::string_view s, AmdLogPrefix& pr) {
    TailShape sh;
    if (!fixedTailShape(s, sh)) return false;
    int64_t stamp = static_cast<int64_t>(eightDigits(load8(sh.stamp)));
    for (const char* d = sh.stamp + 8; d < sh.stampEnd; ++d) stamp = stamp * 10 + (*d - '0');
    int64_t pid = 0;
    for (const char* d = sh.pid; d < sh.pidEnd; ++d) pid = pid * 10 + (*d - '0');
    pr.runtime_us = stamp;
    pr.pid = pid;
    pr.runtime_tid = std::string_view(sh.tid, 2 + sh.tidDigits);
    pr.message_offset = sh.message;
    return true;
}

/// The prefix with the head already found (`fast`: try fixedHead() first).
std::optional<AmdLogPrefix> parse(std::string_view s, bool fast) {
    AmdLogPrefix pr;
    Scan c{s.data(), s.data() + s.size()};
    bool leading_colon = true;
    if (fast && fixedHead(s, c, pr)) {
        if (fixedTail(s, pr)) return pr;
    } else if (!generalHead(c, pr, leading_colon)) {
        return std::nullopt;
    }
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

}  // namespace

std::optional<AmdLogPrefix> parseAmdLogPrefix(std::string_view line) {
    return parse(line, true);
}

std::optional<AmdLogPrefix> parseAmdLogPrefixGeneral(std::string_view line) {
    return parse(line, false);
}

AmdFixedShape amdFixedShape(std::string_view line) {
    return amdFixedShapeInline(line);
}

AmdFixedShape amdFixedShapeScalar(std::string_view line) {
    if constexpr (!kLittleEndian) return {};
    TailShape sh;
    if (!fixedHeadShape(line.data(), line.size()) || !fixedTailShape(line, sh)) return {};
    const char* b = line.data();
    AmdFixedShape r;
    r.message = sh.message;
    r.stamp_len = static_cast<uint8_t>(sh.stampEnd - sh.stamp);
    r.pid_at = static_cast<uint8_t>(sh.pid - b);
    r.pid_len = static_cast<uint8_t>(sh.pidEnd - sh.pid);
    r.tid_at = static_cast<uint8_t>(sh.tid - b);
    r.tid_len = static_cast<uint8_t>(2 + sh.tidDigits);
    return r;
}

}  // namespace gpufault
