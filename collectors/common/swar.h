// Word-at-a-time byte tests ("SIMD within a register") for the per-line scanners: eight bytes
// of a line per step, little-endian (the first byte in the low bits). Callers check that eight
// bytes are readable and that the machine is little-endian (kLittleEndian).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace gpufault::swar {

inline constexpr bool kLittleEndian = std::endian::native == std::endian::little;
inline constexpr uint64_t kOnes = 0x0101010101010101ull;
inline constexpr uint64_t kHigh = 0x8080808080808080ull;

/// The eight bytes at `p`.
inline uint64_t load8(const char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
/// Nonzero iff some byte of `x` is zero.
inline uint64_t anyZeroByte(uint64_t x) {
    return (x - kOnes) & ~x & kHigh;
}
/// The high bit of every byte of `x` that differs from `c` (exact, no borrow).
inline uint64_t bytesNot(uint64_t x, char c) {
    uint64_t t = x ^ (kOnes * static_cast<unsigned char>(c));
    return (((t & ~kHigh) + ~kHigh) | t) & kHigh;
}
/// The high bit of every byte of `x` that is not an ASCII digit.
inline uint64_t nonDigits(uint64_t x) {
    uint64_t u = x ^ (kOnes * '0');  // digits become 0..9
    return (((u & ~kHigh) + kOnes * 0x76) | u) & kHigh;
}
/// The high bit of every byte of `x` that is not a hex digit.
inline uint64_t nonHex(uint64_t x) {
    uint64_t v = (x | (kOnes * 0x20)) ^ (kOnes * 0x60);  // a..f and A..F become 1..6
    uint64_t above6 = (((v & ~kHigh) + kOnes * 0x79) | v) & kHigh;
    uint64_t zero = ~(((v & ~kHigh) + ~kHigh) | v) & kHigh;
    return nonDigits(x) & (above6 | zero);
}
/// Eight ASCII digits as a number (the first one most significant).
inline uint64_t eightDigits(uint64_t v) {
    v -= kOnes * '0';
    v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFull;
    v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFull;
    return (v * 10000 + (v >> 32)) & 0xFFFFFFFFull;
}

}  // namespace gpufault::swar
