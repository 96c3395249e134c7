// Equality of short byte strings (runtime thread handles, `0x` + 12 hex digits mostly) without
// a memcmp call.
#pragma once

#include <cstdint>
#include <cstring>
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

}  // namespace gpufault
