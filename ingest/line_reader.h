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

/// Lines of a file descriptor, read(2) in 4 MiB chunks into two buffers used in turn: a line
/// handed out stays valid until the reader has moved on to the other buffer and back, and the
/// `reuse` hook runs before a buffer is written again (a consumer on another thread waits there
/// until it is done with the lines in it). Lines over kMaxLine are cut (a copy, `truncated`).
class LineReader {
  public:
    static constexpr size_t kChunk = 1 << 22;
    LineReader(int fd, size_t max_line, std::function<void()> reuse = {});
    /// Fills the buffer's first bytes without consuming them (for the fingerprint).
    db::Result<std::string_view> peek(size_t n);
    /// Sets the hook that runs before a buffer is written again.
    void setReuse(std::function<void()> reuse) { reuse_ = std::move(reuse); }
    /// Tells the reader that its fd was positioned at `offset` (resume), so offsets stay absolute.
    void setBase(uint64_t offset) { base_ = offset; }
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
        const char* s = b;
        size_t n = 0;
        while (n < max) {
            const char* nl = findNewline(s, e);
            if (!nl) break;
            ends.push_back(static_cast<uint32_t>(nl - b));
            s = nl + 1;
            ++n;
        }
        base = b;
        base_offset = base_ + pos_;
        pos_ += static_cast<size_t>(s - b);
        lastCr_ = true;
        return n;
    }
    /// Whether the last line handed out may contain a '\r' (false: it certainly does not). A
    /// file without carriage returns is searched for them once per buffer, not once per line.
    bool lastLineMayHaveCr() { return lastCr_; }
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
    size_t maxLine_;
    std::function<void()> reuse_;
    Buffer bufs_[2];
    int cur_ = 0;
    size_t pos_ = 0, end_ = 0;
    uint64_t base_ = 0;
    bool skipping_ = false;
    bool lastCr_ = true;
    static constexpr size_t kNone = static_cast<size_t>(-1);
    // The first '\r' at or after the line it was searched from (up to crTo_, the buffer's end
    // then), kNone when there was none.
    size_t cr_ = kNone, crTo_ = 0;
    std::string long_;
    uint64_t longOffset_ = 0;
};

}  // namespace gpufault
