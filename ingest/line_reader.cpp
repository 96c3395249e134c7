#include "ingest/line_reader.h"

#include "collectors/common/simd.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

namespace gpufault {

namespace {

/// The first '\n' in [p, e), nullptr when none: 32 bytes a step (lines of log files are a
/// few hundred bytes, where a libc call costs more than the search).
const char* findNewline(const char* p, const char* e) {
    if constexpr (simd::kSimd) {
        for (; e - p >= 32; p += 32) {
            const uint32_t m = simd::eq(simd::load16(p), '\n') |
                               simd::eq(simd::load16(p + 16), '\n') << 16;
            if (m) return p + std::countr_zero(m);
        }
    }
    return static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(e - p)));
}

}  // namespace

LineReader::LineReader(int fd, size_t max_line, std::function<void()> reuse)
    : fd_(fd), maxLine_(max_line), reuse_(std::move(reuse)) {
    bufs_[0].resize(kChunk);
}

db::Result<std::string_view> LineReader::peek(size_t n) {
    while (end_ < n) {
        auto r = fill();
        if (!r) return std::unexpected(r.error());
        if (!*r) break;
    }
    return std::string_view(bufs_[cur_].data(), std::min(n, end_));
}

db::Result<std::optional<std::string_view>> LineReader::next(uint64_t& line_offset,
                                                             bool& truncated) {
    truncated = false;
    for (;;) {
        const char* s = bufs_[cur_].data() + pos_;
        if (auto* nl = findNewline(s, s + (end_ - pos_))) {
            line_offset = base_ + pos_;
            size_t len = static_cast<size_t>(nl - s);
            pos_ += len + 1;
            if (skipping_) {
                skipping_ = false;
                truncated = true;
                lastCr_ = true;
                return std::optional<std::string_view>(std::string_view(long_));
            }
            const size_t start = static_cast<size_t>(s - bufs_[cur_].data());
            lastCr_ = hasCr(start, start + len);
            if (len > maxLine_) {
                truncated = true;
                len = maxLine_;
            }
            return std::optional<std::string_view>(std::string_view(s, len));
        }
        // No newline in the buffer: keep the partial line, read more.
        if (end_ - pos_ >= maxLine_ || skipping_) {
            if (!skipping_) {
                long_.assign(s, maxLine_);
                longOffset_ = base_ + pos_;
                skipping_ = true;
            }
            const size_t adv = end_;
            switchBuffer(0);
            base_ += adv;
        } else if (pos_ > 0) {
            const size_t adv = pos_;
            switchBuffer(end_ - pos_);
            base_ += adv;
        }
        auto r = fill();
        if (!r) return std::unexpected(r.error());
        if (!*r) {
            if (skipping_) {
                skipping_ = false;
                truncated = true;
                lastCr_ = true;
                line_offset = longOffset_;
                return std::optional<std::string_view>(std::string_view(long_));
            }
            if (end_ > pos_) {  // last line without '\n'
                lastCr_ = true;
                line_offset = base_ + pos_;
                std::string_view v(bufs_[cur_].data() + pos_, end_ - pos_);
                pos_ = end_;
                return std::optional<std::string_view>(v);
            }
            return std::optional<std::string_view>();
        }
    }
}

bool LineReader::hasCr(size_t a, size_t b) {
    if (cr_ != kNone ? cr_ >= a : b <= crTo_) return cr_ < b;  // known: the first '\r' from a
    const size_t from = cr_ != kNone ? a : std::max(a, crTo_);
    const char* buf = bufs_[cur_].data();
    auto* p = static_cast<const char*>(std::memchr(buf + from, '\r', end_ - from));
    cr_ = p ? static_cast<size_t>(p - buf) : kNone;
    crTo_ = end_;
    return cr_ < b;
}

void LineReader::switchBuffer(size_t keep) {
    if (reuse_) reuse_();
    std::vector<char>& to = bufs_[1 - cur_];
    if (to.size() < bufs_[cur_].size()) to.resize(bufs_[cur_].size());
    if (keep) std::memcpy(to.data(), bufs_[cur_].data() + pos_, keep);
    cur_ = 1 - cur_;
    pos_ = 0;
    end_ = keep;
    cr_ = kNone;
    crTo_ = 0;
}

db::Result<bool> LineReader::fill() {
    std::vector<char>& buf = bufs_[cur_];
    if (end_ == buf.size()) buf.resize(buf.size() * 2);  // only peek() can get here
    for (;;) {
        ssize_t n = ::read(fd_, buf.data() + end_, buf.size() - end_);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::unexpected(db::Error{std::strerror(errno)});
        end_ += static_cast<size_t>(n);
        return n > 0;
    }
}

}  // namespace gpufault
