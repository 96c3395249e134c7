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
/// blanks after the prefix are checked. Same results as amdFixedShape() on every line.
class AmdShapeCache {
  public:
    /// amdFixedShape(line).
    [[gnu::always_inline]] AmdFixedShape shape(std::string_view line) {
#if defined(__SSE2__)
        if (line.size() >= 96 && tailLen_ != 0) {
            const char* b = line.data();
            const size_t stampLen = amdFixedHeadSimd(b);
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
