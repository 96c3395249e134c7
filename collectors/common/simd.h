// Sixteen bytes at a time (SSE2, part of every x86-64 CPU) for the per-line skip of API trace
// lines: masks of the bytes of one class, bit i for byte i. kSimd is false elsewhere; callers
// then take their scalar path. Callers make sure 16 bytes are readable at every address.
#pragma once

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace gpufault::simd {

#if defined(__SSE2__)
inline constexpr bool kSimd = true;

/// The 16 bytes at `p` (unaligned).
inline __m128i load16(const char* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}
/// Bytes equal to `c`.
inline uint32_t eq(__m128i v, char c) {
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c))));
}
/// Bytes whose value lies in [lo, lo + n] (unsigned).
inline __m128i inRange(__m128i v, char lo, char n) {
    __m128i x = _mm_sub_epi8(v, _mm_set1_epi8(lo));
    return _mm_cmpeq_epi8(_mm_min_epu8(x, _mm_set1_epi8(n)), x);
}
/// ASCII digits.
inline uint32_t digits(__m128i v) {
    return static_cast<uint32_t>(_mm_movemask_epi8(inRange(v, '0', 9)));
}
/// Hex digits (either case).
inline uint32_t hexDigits(__m128i v) {
    __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
    return static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_or_si128(inRange(v, '0', 9), inRange(lower, 'a', 5))));
}
/// Identifier bytes `[A-Za-z0-9_]`.
inline uint32_t identChars(__m128i v) {
    __m128i lower = _mm_or_si128(v, _mm_set1_epi8(0x20));
    __m128i m = _mm_or_si128(inRange(v, '0', 9), inRange(lower, 'a', 25));
    m = _mm_or_si128(m, _mm_cmpeq_epi8(v, _mm_set1_epi8('_')));
    return static_cast<uint32_t>(_mm_movemask_epi8(m));
}
/// Bytes where `a` and `b` are equal.
inline uint32_t eq16(__m128i a, __m128i b) {
    return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(a, b)));
}
/// True iff the first `n` (≤ 16) bytes at `p` equal those at `lit16` (16 readable bytes).
inline bool startsWith(const char* p, const char* lit16, unsigned n) {
    uint32_t m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(load16(p), load16(lit16))));
    uint32_t want = (1u << n) - 1;
    return (m & want) == want;
}
#else
inline constexpr bool kSimd = false;
#endif

}  // namespace gpufault::simd
