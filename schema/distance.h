// The signed distance from a fault address to a range [ptr, end), exact for every 64-bit
// address (0 .. 2^64-1): the store keeps addresses as the signed 64-bit pattern, so SQL's signed
// arithmetic is wrong at and above 2^63; this computes in unsigned and __int128 arithmetic.
#pragma once

#include <cstdint>
#include <optional>

namespace gpufault {

/// Where an address lies relative to [ptr, end) (bytes).
struct Span {
    /// <0: address − ptr (below ptr); 0 inside; ≥0: address − end (at or above end). None when
    /// the exact value is outside the signed 64-bit range (|d| ≥ 2^63): refused, not clamped.
    std::optional<int64_t> distance;
    std::optional<int64_t> from_ptr;  ///< address − ptr, none when outside the signed 64-bit range
    bool below = false;               ///< address < ptr (unsigned)
    bool inside = false;              ///< ptr ≤ address < end (unsigned)
    bool same_2mib = false;           ///< address in the 2 MiB page of ptr or of end − 1
};

/// A signed 128-bit value as int64, none when it does not fit.
inline std::optional<int64_t> fitI64(__int128 v) {
    if (v < static_cast<__int128>(INT64_MIN) || v > static_cast<__int128>(INT64_MAX))
        return std::nullopt;
    return static_cast<int64_t>(v);
}

/// Measures `address` against [ptr, end) (all as unsigned 64-bit; end ≥ ptr).
inline Span measureSpan(uint64_t address, uint64_t ptr, uint64_t end) {
    Span s;
    __int128 a = address, p = ptr, e = end;
    s.below = address < ptr;
    s.inside = address >= ptr && address < end;
    s.distance = s.below ? fitI64(a - p) : s.inside ? std::optional<int64_t>(0) : fitI64(a - e);
    s.from_ptr = fitI64(a - p);
    uint64_t last = end > ptr ? end - 1 : ptr;
    s.same_2mib = (address >> 21) == (ptr >> 21) || (address >> 21) == (last >> 21);
    return s;
}

/// |distance| for ordering: exact distances by magnitude, refused ones after all of them.
inline unsigned __int128 distanceOrder(const std::optional<int64_t>& d) {
    if (!d) return static_cast<unsigned __int128>(1) << 64;
    return *d < 0 ? static_cast<unsigned __int128>(-static_cast<__int128>(*d))
                  : static_cast<unsigned __int128>(*d);
}

}  // namespace gpufault
