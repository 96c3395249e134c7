// amdFixedShape() for a stream of lines: most lines of a level-3 log repeat the previous line's
// prefix after the stamp (` us: [pid:N  tid:0x…] ` and the blanks), so that part is compared
// with the last accepted line's bytes instead of being checked field by field.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "collectors/common/simd.h"
#include "collectors/runtime_log/amd_fixed_shape.h"
#include "collectors/runtime_log/amd_log_prefix.h"

namespace gpufault {

/// amdFixedShape() with the tail of the last line it accepted remembered (the bytes from the
/// stamp's end through the `]` of the tid). A line whose tail holds the same bytes has the same
/// tail fields (they are a function of those bytes), so only its head columns, its stamp and the
/// blanks after the prefix are checked; the head columns only when they are not the bytes of a
/// head accepted before (headStamp()). Same results as amdFixedShape() on every line.
class AmdShapeCache {
  public:
    /// amdFixedShape(line).
    [[gnu::always_inline]] AmdFixedShape shape(std::string_view line) {
#if defined(__SSE2__)
        if (line.size() >= 96 && tailLen_ != 0) {
            const char* b = line.data();
            const size_t stampLen = headStamp(b);
            if (stampLen == 0) return {};
            const size_t r = 35 + stampLen;
            if (r + kTail <= line.size()) {
                using namespace simd;
                const uint64_t same = eq16(load16(b + r), tail_[0]) |
                                      uint64_t{eq16(load16(b + r + 16), tail_[1])} << 16 |
                                      uint64_t{eq16(load16(b + r + 32), tail_[2])} << 32;
                if ((same & tailMask_) == tailMask_) {
                    AmdFixedShape sh = rel_;
                    sh.message += r;
                    sh.stamp_len = static_cast<uint8_t>(stampLen);
                    sh.pid_at = static_cast<uint8_t>(sh.pid_at + r);
                    sh.tid_at = static_cast<uint8_t>(sh.tid_at + r);
                    return amdFixedBlanks(b, line.size(), sh);
                }
            }
            const AmdFixedShape sh = amdFixedTailSimd(b, stampLen, line.size());
            remember(line, sh);
            return sh;
        }
#endif
        const AmdFixedShape sh = amdFixedShapeInline(line);
        remember(line, sh);
        return sh;
    }

  private:
#if defined(__SSE2__)
    /// amdFixedHeadSimd(b) (a line of ≥ 96 bytes at `b`). The head columns 0–34 (level, file,
    /// source line) repeat for every line of one call site: when they hold the same bytes as a
    /// head accepted before (a direct-mapped cache on a hash of columns 0–7 and 27–34), only
    /// the stamp is checked (8–15 digits from column 35, the only later bytes that
    /// amdFixedHeadSimd() reads).
    [[gnu::always_inline]] size_t headStamp(const char* b) {
        using namespace simd;
        const uint64_t c = loadHeadEnd(b);
        const __m128i a0 = load16(b), a1 = load16(b + 16);
        const auto key = static_cast<uint64_t>(_mm_cvtsi128_si64(a0)) ^ c;  // file, line
        Head& h = heads_[(key * 0x9E3779B97F4A7C15ull) >> (64 - kHeadBits)];
        if ((eq16(a0, h.a) & eq16(a1, h.b)) == 0xffff && c == h.c) {
            const auto n = static_cast<size_t>(std::countr_zero(~digits(load16(b + 35))));
            return n < 8 || n > 15 ? 0 : n;  // n is 16 when the run goes on
        }
        const size_t n = amdFixedHeadSimd(b);
        if (n != 0) h = {a0, a1, c};
        return n;
    }
    static constexpr unsigned kHeadBits = 7;  ///< 128 heads (6 KiB)
    /// A head amdFixedHeadSimd() accepts (with a valid stamp after it), which every entry holds
    /// until a line's head replaces it: an entry never holds bytes that were not checked.
    alignas(16) static constexpr char kAnyHead[48] = ":3:x                        :1   : ";
    struct Head {
        __m128i a = simd::load16(kAnyHead), b = simd::load16(kAnyHead + 16);  ///< columns 0–31
        uint64_t c = loadHeadEnd(kAnyHead);                                   ///< columns 27–34
    };
    static uint64_t loadHeadEnd(const char* b) {
        uint64_t c;
        std::memcpy(&c, b + 27, 8);
        return c;
    }
    Head heads_[1u << kHeadBits];
#endif
    static constexpr size_t kTail = 48;  ///< bytes compared: a tail is at most this long
    /// Keeps the tail of an accepted line: from the stamp's end through the tid's `]`.
    void remember(std::string_view line, const AmdFixedShape& sh) {
        if (sh.message == 0) return;
        const size_t r = 35 + size_t{sh.stamp_len};
        const size_t n = size_t{sh.tid_at} + sh.tid_len + 1 - r;  // through the `]`
        if (n > kTail) return;
        alignas(16) char bytes[kTail] = {};
        std::memcpy(bytes, line.data() + r, n);
#if defined(__SSE2__)
        for (int i = 0; i < 3; ++i) tail_[i] = simd::load16(bytes + 16 * i);
#endif
        tailLen_ = n;
        tailMask_ = (uint64_t{1} << n) - 1;
        rel_ = sh;
        rel_.message = n;
        rel_.pid_at = static_cast<uint8_t>(sh.pid_at - r);
        rel_.tid_at = static_cast<uint8_t>(sh.tid_at - r);
    }
#if defined(__SSE2__)
    __m128i tail_[3] = {};
#endif
    size_t tailLen_ = 0;  ///< 0: nothing remembered
    uint64_t tailMask_ = 0;
    AmdFixedShape
        rel_;  ///< the remembered shape, offsets from the stamp's end (message: the `]`'s end)
};

}  // namespace gpufault
