// Reads a stream in chunks and hands out lines (views into its buffers) with byte offsets.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/store.h"

namespace gpufault {

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
    db::Result<bool> fill();
    /// Continues in the other buffer, carrying the `keep` bytes from pos_.
    void switchBuffer(size_t keep);
    /// Whether bytes [a, b) of the current buffer hold a '\r' (a never decreases between
    /// calls within one buffer).
    bool hasCr(size_t a, size_t b);

    int fd_;
    size_t maxLine_;
    std::function<void()> reuse_;
    std::vector<char> bufs_[2];
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
