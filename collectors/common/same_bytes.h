// Short byte strings on the matching thread's per-line path (runtime thread handles, `0x` + 12
// hex digits mostly; kernel names): equality without a memcmp call, a hash of (pid, handle) for
// small caches, and an assign without the generic replace path.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpufault {

/// a == b; strings of 8–16 bytes are compared as two (overlapping) 8-byte words inline, others
/// through memcmp.
[[gnu::always_inline]] inline bool sameBytes(std::string_view a, std::string_view b) {
    const size_t n = a.size();
    if (n != b.size()) return false;
    if (n >= 8 && n <= 16) {
        uint64_t a0, b0, a1, b1;
        std::memcpy(&a0, a.data(), 8);
        std::memcpy(&b0, b.data(), 8);
        std::memcpy(&a1, a.data() + n - 8, 8);
        std::memcpy(&b1, b.data() + n - 8, 8);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    return n == 0 || std::memcmp(a.data(), b.data(), n) == 0;
}

/// A hash of (n, s) from n and the last eight bytes of s (all of a shorter s); equal keys hash
/// equal. For direct-mapped caches: take the high bits.
[[gnu::always_inline]] inline uint64_t shortKeyHash(int64_t n, std::string_view s) {
    uint64_t w = 0;
    if (s.size() >= 8)
        std::memcpy(&w, s.data() + s.size() - 8, 8);
    else if (!s.empty())
        std::memcpy(&w, s.data(), s.size());
    w ^= static_cast<uint64_t>(n) * 0x9E3779B97F4A7C15ull;
    w *= 0xBF58476D1CE4E5B9ull;
    return w ^ (w >> 29);
}

/// s = v (v must not point into s), with no allocation when s has the capacity.
[[gnu::always_inline]] inline void assignBytes(std::string& s, std::string_view v) {
    // GCC 12's resize_and_overwrite passes the grown capacity, not v.size(), as the operation's
    // size when it reallocates: the size written and returned is v.size() whatever it passes.
    s.resize_and_overwrite(v.size(), [v](char* p, size_t) {
        if (!v.empty()) std::memcpy(p, v.data(), v.size());
        return v.size();
    });
}

}  // namespace gpufault
