// The SIMD shape check of amdFixedShape(), inline for the per-line skip of the ingest reading
// thread (a call and the returned struct cost a tenth of the check).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "collectors/common/simd.h"
#include "collectors/runtime_log/amd_log_prefix.h"

namespace gpufault {

#if defined(__SSE2__)
/// The head columns of amdFixedShape()'s SIMD path for a line of ≥ 96 bytes at `b` (every load
/// stays inside them): `:L:`, the file, the source line, `: ` and the stamp. The stamp's length
/// (8–15), or 0 when the head is not in the fixed shape.
[[gnu::always_inline]] inline size_t amdFixedHeadSimd(const char* b) {
    using namespace simd;
    // Colons of columns 0..34; digits and spaces from column 29 (bit i: column 29 + i), which
    // covers the source line, the `: ` and up to 26 stamp digits; columns 1 and 3 by bytes.
    const uint64_t colon = eq(load16(b), ':') | uint64_t{eq(load16(b + 16), ':')} << 16 |
                           uint64_t{eq(load16(b + 32), ':')} << 32;
    // `:L:`, the file without ':' up to column 28, `:` in 28 and 33, nothing else up to 34.
    constexpr uint64_t kColons = 1ull | 1ull << 2 | 1ull << 28 | 1ull << 33;
    if ((colon & ((1ull << 35) - 1)) != kColons) return 0;
    const __m128i w = load16(b + 29);
    const uint64_t digit = digits(w) | uint64_t{digits(load16(b + 45))} << 16;
    const uint32_t space = eq(w, ' ');
    constexpr uint64_t kDigits = 1ull | 1ull << 6;  // columns 29 and 35
    if (static_cast<unsigned char>(b[1] - '0') >= 10 || (digit & kDigits) != kDigits ||
        !(space >> 5 & 1) || b[3] == ' ' || b[3] == '\t')
        return 0;
    // The source line: digits from column 29, then spaces up to column 33.
    const uint64_t ld = digit & 0xf, ls = space & 0xf;
    if ((ld | ls) != 0xf || (ld & (ld + 1)) != 0) return 0;
    // The stamp: 8–15 digits from column 35.
    const size_t stampLen = static_cast<size_t>(std::countr_zero(~(digit >> 6)));
    return stampLen < 8 || stampLen > 15 ? 0 : stampLen;
}

/// `sh` with its message offset moved past the blanks after the prefix (a line of `size` bytes
/// at `b`).
[[gnu::always_inline]] inline AmdFixedShape amdFixedBlanks(const char* b,
                                                           size_t size,
                                                           AmdFixedShape sh) {
    while (sh.message < size && (b[sh.message] == ' ' || b[sh.message] == '\t')) ++sh.message;
    return sh;
}

/// The rest of amdFixedShape()'s SIMD path after amdFixedHeadSimd() found `stampLen` (a line of
/// `size` ≥ 96 bytes at `b`): ` us: [pid:N tid:0x…]` and the blanks after it.
[[gnu::always_inline]] inline AmdFixedShape amdFixedTailSimd(const char* b,
                                                             size_t stampLen,
                                                             size_t size) {
    using namespace simd;
    alignas(16) static constexpr char kUs[16] = " us: [pid:";
    alignas(16) static constexpr char kTid[16] = "tid:0x";
    const char* r = b + 35 + stampLen;
    if (!startsWith(r, kUs, 10)) return {};
    const char* t = r + 10;
    const size_t pidLen = static_cast<size_t>(std::countr_zero(~digits(load16(t))));
    if (pidLen == 0 || pidLen > 7) return {};
    const char* u = t + pidLen;
    const size_t blanks = static_cast<size_t>(std::countr_zero(~eq(load16(u), ' ')));
    if (blanks > 7) return {};
    const char* h = u + blanks;
    if (!startsWith(h, kTid, 6)) return {};
    const size_t hexLen = static_cast<size_t>(std::countr_zero(~hexDigits(load16(h + 6))));
    if (hexLen == 0 || hexLen > 15 || h[6 + hexLen] != ']') return {};
    AmdFixedShape sh;
    sh.message = static_cast<size_t>(h + 7 + hexLen - b);
    sh.stamp_len = static_cast<uint8_t>(stampLen);
    sh.pid_at = static_cast<uint8_t>(t - b);
    sh.pid_len = static_cast<uint8_t>(pidLen);
    sh.tid_at = static_cast<uint8_t>(h + 4 - b);
    sh.tid_len = static_cast<uint8_t>(2 + hexLen);
    return amdFixedBlanks(b, size, sh);
}
#endif

/// amdFixedShape() inline: SIMD for lines of ≥ 96 bytes, the out-of-line scalar path for others.
[[gnu::always_inline]] inline AmdFixedShape amdFixedShapeInline(std::string_view line) {
    if constexpr (std::endian::native != std::endian::little) return {};
#if defined(__SSE2__)
    if (line.size() >= 96) {
        const size_t stampLen = amdFixedHeadSimd(line.data());
        return stampLen == 0 ? AmdFixedShape{}
                             : amdFixedTailSimd(line.data(), stampLen, line.size());
    }
#endif
    return amdFixedShapeScalar(line);
}

}  // namespace gpufault
