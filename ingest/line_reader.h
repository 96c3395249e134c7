// Reads a stream in chunks and hands out lines (views into its buffers) with byte offsets.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/simd.h"
#include "ingest/long_line.h"
#include "schema/store.h"

namespace gpufault {

/// The first '\n' in [p, e), nullptr when none: 32 bytes a step with SSE2 (lines of log files
/// are a few hundred bytes, where a libc call costs more than the search).
inline const char* findNewlineSse2(const char* p, const char* e) {
    if constexpr (simd::kSimd) {
        for (; e - p >= 32; p += 32) {
            const uint32_t m =
                simd::eq(simd::load16(p), '\n') | simd::eq(simd::load16(p + 16), '\n') << 16;
            if (m) return p + std::countr_zero(m);
        }
    }
    return static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(e - p)));
}
/// The same, 64 bytes a step with AVX2; only where the CPU has it (x86-64 only).
const char* findNewlineAvx2(const char* p, const char* e);
/// findNewlineAvx2 where the CPU has AVX2, else findNewlineSse2 (chosen once, at start-up).
extern const char* (*const kFindNewline)(const char*, const char*);
/// The first '\n' in [p, e), nullptr when none: the fastest search this CPU has.
inline const char* findNewline(const char* p, const char* e) {
    return kFindNewline(p, e);
}

/// Where the first `max` '\n' of [b, e) lie, as offsets from `b` into `out` (room for `max`);
/// returns how many it found. The newline mask of 64 bytes at `p` comes from `mask64(p)`; the
/// positions are taken from each mask bit by bit, so a line costs a few instructions whatever
/// its length, where a search per line restarted at every line start.
template <typename Mask64>
[[gnu::always_inline]] inline size_t findLineEndsWith(
    const char* b, const char* e, size_t max, uint32_t* out, Mask64&& mask64) {
    size_t n = 0;
    const char* p = b;
    for (; n < max && e - p >= 64; p += 64)
        for (uint64_t m = mask64(p); m != 0 && n < max; m &= m - 1)
            out[n++] = static_cast<uint32_t>(p - b) + static_cast<uint32_t>(std::countr_zero(m));
    while (n < max) {  // the last bytes, fewer than 64
        const void* nl = std::memchr(p, '\n', static_cast<size_t>(e - p));
        if (!nl) break;
        out[n++] = static_cast<uint32_t>(static_cast<const char*>(nl) - b);
        p = static_cast<const char*>(nl) + 1;
    }
    return n;
}
/// findLineEndsWith() with SSE2 masks (without SSE2: memchr line by line).
inline size_t findLineEndsSse2(const char* b, const char* e, size_t max, uint32_t* out) {
#if defined(__SSE2__)
    return findLineEndsWith(b, e, max, out, [](const char* p) {
        return uint64_t{simd::eq(simd::load16(p), '\n')} |
               uint64_t{simd::eq(simd::load16(p + 16), '\n')} << 16 |
               uint64_t{simd::eq(simd::load16(p + 32), '\n')} << 32 |
               uint64_t{simd::eq(simd::load16(p + 48), '\n')} << 48;
    });
#else
    size_t n = 0;
    for (const char* p = b; n < max;) {
        const void* nl = std::memchr(p, '\n', static_cast<size_t>(e - p));
        if (!nl) break;
        out[n++] = static_cast<uint32_t>(static_cast<const char*>(nl) - b);
        p = static_cast<const char*>(nl) + 1;
    }
    return n;
#endif
}
/// The same with AVX2 masks; only where the CPU has it (x86-64 only).
size_t findLineEndsAvx2(const char* b, const char* e, size_t max, uint32_t* out);
/// findLineEndsAvx2 where the CPU has AVX2, else findLineEndsSse2 (chosen once, at start-up).
extern size_t (*const kFindLineEnds)(const char*, const char*, size_t, uint32_t*);

/// Lines of a file descriptor, read(2) in 4 MiB chunks into two buffers used in turn: a line
/// handed out stays valid until the reader has moved on to the other buffer and back, and the
/// `reuse` hook runs before a buffer is written again (a consumer on another thread waits there
/// until it is done with the lines in it). Lines over max_line are cut (`truncated`); one
/// longer than what is left of the buffer is a copy, cutLongLine() of it (LongLine: after a
/// '\r', '\r' + the text after the last one), as gpufaultd's file tail takes it.
class LineReader {
  public:
    /// Bytes of each of the two buffers (read(2) size), unless a long line grows them.
    static constexpr size_t kChunk = 1 << 22;
    /// `chunk`: bytes of each buffer, 0 for kChunk (the benchmarks sweep it).
    LineReader(int fd, size_t max_line, std::function<void()> reuse = {}, size_t chunk = 0);
    /// Fills the buffer's first bytes without consuming them (for the fingerprint).
    db::Result<std::string_view> peek(size_t n);
    /// Sets the hook that runs before a buffer is written again.
    void setReuse(std::function<void()> reuse) { reuse_ = std::move(reuse); }
    /// Tells the reader that its fd was positioned at `offset` (resume), so offsets stay absolute.
    void setBase(uint64_t offset) { base_ = offset; }
    /// Descriptors that become readable to end a read that waits (a pipe's): each read first
    /// polls them with the input, and fails with "cancelled" once one is readable. -1: none.
    void setCancel(int fd, int other = -1) {
        cancel_ = fd;
        cancel2_ = other;
    }
    /// Next line (without '\n'); nullopt at end. `truncated` is set for lines over max_line.
    db::Result<std::optional<std::string_view>> next(uint64_t& line_offset, bool& truncated);
    /// Consumes up to `max` lines that end in the current buffer (after a call to next() or
    /// none), appending to `ends` where each ends (its '\n') relative to `base`, the first
    /// line's start, and sets `base_offset` to that line's offset. The lines are not cut at
    /// max_line (the caller does that) and stay valid as next()'s do. Returns how many lines it
    /// took: 0 (nothing consumed) when no line ends in the buffer, or while a long line is being
    /// skipped: then call next().
    size_t takeBuffered(std::vector<uint32_t>& ends,
                        size_t max,
                        const char*& base,
                        uint64_t& base_offset) {
        if (skipping_ || max == 0) return 0;
        const char* b = bufs_[cur_].data() + pos_;
        const char* e = bufs_[cur_].data() + end_;
        const size_t had = ends.size();
        ends.resize(had + max);
        const size_t n = kFindLineEnds(b, e, max, ends.data() + had);
        ends.resize(had + n);
        const char* s = n == 0 ? b : b + ends.back() + 1;
        base = b;
        base_offset = base_ + pos_;
        pos_ += static_cast<size_t>(s - b);
        lastCr_ = true;
        return n;
    }
    /// Whether the last line handed out may contain a '\r' (false: it certainly does not). A
    /// file without carriage returns is searched for them once per buffer, not once per line.
    bool lastLineMayHaveCr() { return lastCr_; }
    /// The last line handed out by next() had no '\n': it ends the stream (a file whose last
    /// line is still being written).
    bool lastUnended() const { return unended_; }
    /// Bytes consumed: the offset after the last line handed out.
    uint64_t consumed() const { return base_ + pos_; }
    /// Whether `s` lies in the buffer that the current line is in.
    bool inBuffer(std::string_view s) const {
        const char* b = bufs_[cur_].data();
        return s.data() >= b && s.data() + s.size() <= b + bufs_[cur_].size();
    }

  private:
    /// A read buffer whose new bytes are not zeroed (read(2) writes them).
    struct Buffer {
        std::unique_ptr<char[]> bytes;
        size_t n = 0;
        char* data() { return bytes.get(); }
        const char* data() const { return bytes.get(); }
        size_t size() const { return n; }
        /// Grows to `m` bytes, keeping the first size() bytes.
        void resize(size_t m);
    };
    db::Result<bool> fill();
    /// Continues in the other buffer, carrying the `keep` bytes from pos_.
    void switchBuffer(size_t keep);
    /// Whether bytes [a, b) of the current buffer hold a '\r' (a never decreases between
    /// calls within one buffer).
    bool hasCr(size_t a, size_t b);

    int fd_;
    int cancel_ = -1, cancel2_ = -1;  ///< setCancel()
    bool cancelled_ = false;          ///< a read ended by setCancel()'s descriptors
    size_t maxLine_;
    std::function<void()> reuse_;
    Buffer bufs_[2];
    int cur_ = 0;
    size_t pos_ = 0, end_ = 0;
    uint64_t base_ = 0;
    bool skipping_ = false;
    bool lastCr_ = true;
    bool unended_ = false;  ///< lastUnended()
    static constexpr size_t kNone = static_cast<size_t>(-1);
    /// Bytes hasCr() searches past the line it is asked about (at least).
    static constexpr size_t kCrAhead = 64 << 10;
    // The first '\r' at or after the line it was searched from (up to crTo_, where that search
    // stopped), kNone when there was none.
    size_t cr_ = kNone, crTo_ = 0;
    LongLine long_;  ///< the line being skipped, as the decoder sees it
    uint64_t longOffset_ = 0;
};

}  // namespace gpufault
