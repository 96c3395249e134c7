// Small, allocation-free text helpers shared by the parsers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpufault::text {

/// Leading/trailing ASCII whitespace (space, TAB, CR, LF, VT, FF) removed.
std::string_view trim(std::string_view s);
std::string_view trimLeft(std::string_view s);
std::string_view trimRight(std::string_view s);

/// True when `s` starts/ends with `p`.
inline bool startsWith(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}
inline bool endsWith(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

/// The value of one hex digit, -1 for any other character.
int hexDigit(char c);

/// Parses hex digits at the start of `s` (an optional `0x`/`0X` is skipped; `_` separators as
/// in NVIDIA's `0x17_00592000` are accepted when `allow_underscore`). On success returns the
/// value and sets `*consumed` to the characters used. Fails on no digits or overflow past 64 bits.
std::optional<uint64_t> parseHex(std::string_view s,
                                 size_t* consumed = nullptr,
                                 bool allow_underscore = false);
/// Parses decimal digits at the start of `s` (optional leading '-'). Fails on no digits/overflow.
std::optional<int64_t> parseDec(std::string_view s, size_t* consumed = nullptr);
/// Parses a decimal with `,` digit grouping (`7,055,657,985`).
std::optional<uint64_t> parseGroupedDec(std::string_view s, size_t* consumed = nullptr);

/// The text after the first occurrence of `key` up to the first char in `stops` (or end).
/// nullopt when `key` does not occur.
std::optional<std::string_view> after(std::string_view s,
                                      std::string_view key,
                                      std::string_view stops = " ");

/// `0x` + lowercase hex, no padding.
std::string hexAddr(uint64_t v);

/// The length in bytes (1–4) of the well-formed UTF-8 sequence that starts `s` (RFC 3629: no
/// overlong forms, no surrogates, at most U+10FFFF); 0 when `s` is empty or starts with a byte
/// that begins none (a stray continuation byte, a cut sequence, 0xC0, 0xF5…).
size_t utf8Length(std::string_view s);

/// Calls `f(line)` for each '\n'-separated line of `text` (without the '\n'; a last line
/// without one included).
template <typename F>
void forEachLine(std::string_view text, F&& f) {
    while (!text.empty()) {
        auto nl = text.find('\n');
        f(text.substr(0, nl));
        if (nl == std::string_view::npos) break;
        text.remove_prefix(nl + 1);
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SS.uuuuuuZ` (the store's time stamps).
std::string utcNowIso();

/// Normalises a PCI address to `DDDD:BB:DD.F`: accepts `0000:c6:00.0`, `c6:00.0`,
/// `PCI:0000:01:00` (NVIDIA, no function → `.0`). nullopt when it is not one.
std::optional<std::string> normalizePci(std::string_view s);

}  // namespace gpufault::text
