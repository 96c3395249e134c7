// Byte scanners shared by the prefix parsers: no regex, no allocation, bounds-checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpufault::prefix {

inline bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
inline bool isAlpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
inline bool isAlnum(char c) {
    return isDigit(c) || isAlpha(c);
}
inline bool isHighByte(char c) {
    return static_cast<unsigned char>(c) >= 0x80;
}

/// A read position in one line. Every accessor is safe past the end (it then sees '\0').
struct Cursor {
    std::string_view s;
    size_t i = 0;

    bool done() const { return i >= s.size(); }
    char peek(size_t k = 0) const { return i + k < s.size() ? s[i + k] : '\0'; }
    std::string_view rest() const { return i < s.size() ? s.substr(i) : std::string_view{}; }

    bool eat(char c) {
        if (peek() != c || done()) return false;
        ++i;
        return true;
    }
    bool eat(std::string_view lit) {
        if (s.substr(i < s.size() ? i : s.size(), lit.size()) != lit) return false;
        i += lit.size();
        return true;
    }
    /// Skips spaces (not TABs); returns how many.
    size_t spaces() {
        size_t n = 0;
        while (peek() == ' ' && !done()) ++i, ++n;
        return n;
    }
    /// Reads `min..max` decimal digits into `v`; on failure nothing is consumed. Returns the digit
    /// count (0 on failure). More than `max` digits in a row is a failure.
    /// A value above INT64_MAX (19 digits allowed) is a failure too.
    size_t number(int64_t& v, size_t min_digits = 1, size_t max_digits = 18) {
        size_t j = i;
        uint64_t x = 0;
        bool over = false;
        while (j < s.size() && isDigit(s[j]) && j - i < max_digits) {
            auto d = static_cast<uint64_t>(s[j++] - '0');
            if (x > (static_cast<uint64_t>(INT64_MAX) - d) / 10) over = true;
            if (!over) x = x * 10 + d;
        }
        size_t n = j - i;
        if (over || n < min_digits || (j < s.size() && isDigit(s[j]))) return 0;
        v = static_cast<int64_t>(x);
        i = j;
        return n;
    }
    /// Exactly `n` digits as a number, or -1 (nothing consumed).
    int fixed(size_t n) {
        int64_t v = 0;
        size_t save = i;
        if (number(v, n, n) != n) {
            i = save;
            return -1;
        }
        return static_cast<int>(v);
    }
};

}  // namespace gpufault::prefix
