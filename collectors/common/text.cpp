#include "collectors/common/text.h"

#include <fmt/format.h>
#include <sys/time.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <cstdint>
#include <ctime>

#include "collectors/common/simd.h"
#include "collectors/common/swar.h"

namespace gpufault::text {

namespace {
bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/// Hex digit values by byte, -1 for other bytes (one load per digit in parseHex()).
constexpr auto kHexValue = [] {
    std::array<int8_t, 256> t{};
    for (int c = 0; c < 256; ++c)
        t[c] = static_cast<int8_t>(c >= '0' && c <= '9'   ? c - '0'
                                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                          : -1);
    return t;
}();
/// The value of eight ASCII hex digits (the first in the low byte: little-endian), a word at a
/// time: each byte to its nibble, then pairs, quads and halves merged.
[[gnu::always_inline]] inline uint64_t eightHexDigits(uint64_t v) {
    v = (v & 0x0f0f0f0f0f0f0f0full) + 9 * ((v >> 6) & 0x0101010101010101ull);
    v = (v & 0x00ff00ff00ff00ffull) << 4 | ((v >> 8) & 0x00ff00ff00ff00ffull);
    v = (v & 0x0000ffff0000ffffull) << 8 | ((v >> 16) & 0x0000ffff0000ffffull);
    return (v & 0xffffffffull) << 16 | v >> 32;
}

/// Digits [p, p + n), 1 ≤ n ≤ 16, with 16 bytes readable at `p` and all n hex digits.
[[gnu::always_inline]] inline uint64_t hexRun(const char* p, size_t n) {
    if (n <= 8) return eightHexDigits(swar::load8(p) << (8 - n) * 8);
    return eightHexDigits(swar::load8(p) << (16 - n) * 8) << 32 |
           eightHexDigits(swar::load8(p + n - 8));
}
}  // namespace

int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string_view trimLeft(std::string_view s) {
    size_t i = 0;
    while (i < s.size() && isSpace(s[i])) ++i;
    return s.substr(i);
}

std::string_view trimRight(std::string_view s) {
    size_t n = s.size();
    while (n > 0 && isSpace(s[n - 1])) --n;
    return s.substr(0, n);
}

std::string_view trim(std::string_view s) {
    return trimRight(trimLeft(s));
}

std::optional<uint64_t> parseHex(std::string_view s, size_t* consumed, bool allow_underscore) {
    size_t i = 0;
    if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) i = 2;
    uint64_t v = 0;
    // Fast path: 1–16 digits, ended by the view's end or a byte that ends them here too (no
    // overflow check is needed, no '_' to skip); anything else takes the loop below.
    const size_t start = i;
    if constexpr (simd::kSimd && swar::kLittleEndian) {
        // Sixteen bytes at once where the view has them: the run's length from a digit mask,
        // its value a word at a time.
        if (s.size() - start >= 16) {
            const char* p = s.data() + start;
            const auto n = static_cast<size_t>(std::countr_zero(~simd::hexDigits(simd::load16(p))));
            if (n > 0 && (n < 16 ? !(allow_underscore && p[n] == '_')
                                 : s.size() - start == 16 ||
                                       (kHexValue[static_cast<unsigned char>(p[16])] < 0 &&
                                        !(allow_underscore && p[16] == '_')))) {
                if (consumed) *consumed = start + n;
                return hexRun(p, n);
            }
        }
    }
    const size_t lim = std::min(s.size(), start + 16);
    for (int d; i < lim && (d = kHexValue[static_cast<unsigned char>(s[i])]) >= 0; ++i)
        v = (v << 4) | static_cast<uint64_t>(d);
    if (i > start && (i == s.size() || (kHexValue[static_cast<unsigned char>(s[i])] < 0 &&
                                        !(allow_underscore && s[i] == '_')))) {
        if (consumed) *consumed = i;
        return v;
    }
    i = start;
    v = 0;
    size_t digits = 0;
    for (; i < s.size(); ++i) {
        int d = kHexValue[static_cast<unsigned char>(s[i])];
        if (d < 0) {
            if (allow_underscore && s[i] == '_' && digits > 0) continue;
            break;
        }
        if (v >> 60) return std::nullopt;  // overflow
        v = (v << 4) | static_cast<uint64_t>(d);
        ++digits;
    }
    if (digits == 0) return std::nullopt;
    if (consumed) *consumed = i;
    return v;
}

std::optional<int64_t> parseDec(std::string_view s, size_t* consumed) {
    size_t i = 0;
    bool neg = false;
    if (!s.empty() && s[0] == '-') {
        neg = true;
        i = 1;
    }
    size_t start = i;
    uint64_t v = 0;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
        if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
        v = v * 10 + static_cast<uint64_t>(s[i] - '0');
    }
    if (i == start || v > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    if (consumed) *consumed = i;
    return neg ? -static_cast<int64_t>(v) : static_cast<int64_t>(v);
}

std::optional<uint64_t> parseGroupedDec(std::string_view s, size_t* consumed) {
    size_t i = 0;
    uint64_t v = 0;
    size_t digits = 0;
    for (; i < s.size(); ++i) {
        char c = s[i];
        if (c == ',' && digits > 0 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9')
            continue;
        if (c < '0' || c > '9') break;
        const auto d = static_cast<uint64_t>(c - '0');
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            return std::nullopt;  // past 2^64 - 1 (which itself is taken)
        v = v * 10 + d;
        ++digits;
    }
    if (digits == 0) return std::nullopt;
    if (consumed) *consumed = i;
    return v;
}

std::optional<std::string_view> after(std::string_view s,
                                      std::string_view key,
                                      std::string_view stops) {
    size_t p = s.find(key);
    if (p == std::string_view::npos) return std::nullopt;
    std::string_view rest = s.substr(p + key.size());
    size_t e = rest.find_first_of(stops);
    return rest.substr(0, e);
}

std::string hexAddr(uint64_t v) {
    return fmt::format("0x{:x}", v);
}

std::optional<std::string> normalizePci(std::string_view s) {
    if (startsWith(s, "PCI:")) s.remove_prefix(4);
    // Forms: DDDD:BB:DD.F, BB:DD.F, DDDD:BB:DD (NVIDIA)
    auto isHex = [](std::string_view t) {
        if (t.empty()) return false;
        for (char c : t)
            if (hexDigit(c) < 0) return false;
        return true;
    };
    std::string_view domain = "0000", bus, dev, fn = "0";
    size_t c1 = s.find(':');
    if (c1 == std::string_view::npos) return std::nullopt;
    size_t c2 = s.find(':', c1 + 1);
    std::string_view rest;
    if (c2 != std::string_view::npos) {
        domain = s.substr(0, c1);
        bus = s.substr(c1 + 1, c2 - c1 - 1);
        rest = s.substr(c2 + 1);
    } else {
        bus = s.substr(0, c1);
        rest = s.substr(c1 + 1);
    }
    size_t dot = rest.find('.');
    if (dot != std::string_view::npos) {
        dev = rest.substr(0, dot);
        fn = rest.substr(dot + 1);
    } else {
        dev = rest;
    }
    if (domain.size() != 4 || bus.size() != 2 || dev.size() != 2 || fn.size() != 1)
        return std::nullopt;
    if (!isHex(domain) || !isHex(bus) || !isHex(dev) || !isHex(fn)) return std::nullopt;
    std::string out = fmt::format("{}:{}:{}.{}", domain, bus, dev, fn);
    for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
}

std::string utcNowIso() {
    timeval tv{};
    ::gettimeofday(&tv, nullptr);
    tm t{};
    ::gmtime_r(&tv.tv_sec, &t);
    return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
                       t.tm_year + 1900,
                       t.tm_mon + 1,
                       t.tm_mday,
                       t.tm_hour,
                       t.tm_min,
                       t.tm_sec,
                       static_cast<long>(tv.tv_usec));
}

size_t utf8Length(std::string_view s) {
    if (s.empty()) return 0;
    auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    unsigned char c = b(0);
    if (c < 0x80) return 1;
    size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || s.size() < n) return 0;
    for (size_t i = 1; i < n; ++i)
        if ((b(i) & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;  // surrogates
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;  // above U+10FFFF
    return n;
}

}  // namespace gpufault::text
