#include "ingest/line_reader.h"

#include <poll.h>
#include <unistd.h>

#include "collectors/common/simd.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

namespace gpufault {

#if defined(__x86_64__)
__attribute__((target("avx2"))) const char* findNewlineAvx2(const char* p, const char* e) {
    const __m256i nl = _mm256_set1_epi8('\n');
    for (; e - p >= 64; p += 64) {
        const __m256i a =
            _mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), nl);
        const __m256i b =
            _mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32)), nl);
        const __m256i any = _mm256_or_si256(a, b);
        if (!_mm256_testz_si256(any, any)) {
            const uint64_t m = static_cast<uint32_t>(_mm256_movemask_epi8(a)) |
                               uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(b))} << 32;
            return p + std::countr_zero(m);
        }
    }
    if (e - p >= 32) {
        const __m256i a =
            _mm256_cmpeq_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), nl);
        if (const auto m = static_cast<uint32_t>(_mm256_movemask_epi8(a)))
            return p + std::countr_zero(m);
        p += 32;
    }
    return static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(e - p)));
}

const char* (*const kFindNewline)(const char*, const char*) = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? findNewlineAvx2 : findNewlineSse2;
}();

__attribute__((target("avx2"))) size_t findLineEndsAvx2(const char* b,
                                                        const char* e,
                                                        size_t max,
                                                        uint32_t* out) {
    return findLineEndsWith(
        b, e, max, out, [](const char* p) __attribute__((target("avx2"))) {
            const __m256i nl = _mm256_set1_epi8('\n');
            const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
            const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
            return uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, nl)))} |
                   uint64_t{static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(y, nl)))}
                       << 32;
        });
}

size_t (*const kFindLineEnds)(const char*, const char*, size_t, uint32_t*) = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? findLineEndsAvx2 : findLineEndsSse2;
}();
#else
const char* findNewlineAvx2(const char* p, const char* e) {
    return findNewlineSse2(p, e);
}

const char* (*const kFindNewline)(const char*, const char*) = findNewlineSse2;

size_t findLineEndsAvx2(const char* b, const char* e, size_t max, uint32_t* out) {
    return findLineEndsSse2(b, e, max, out);
}

size_t (*const kFindLineEnds)(const char*, const char*, size_t, uint32_t*) = findLineEndsSse2;
#endif

void LineReader::Buffer::resize(size_t m) {
    if (m <= n) return;
    std::unique_ptr<char[]> grown(new char[m]);  // uninitialized: no 4 MiB memset per buffer
    if (n) std::memcpy(grown.get(), bytes.get(), n);
    bytes = std::move(grown);
    n = m;
}

LineReader::LineReader(int fd, size_t max_line, std::function<void()> reuse, size_t chunk)
    : fd_(fd), maxLine_(max_line), reuse_(std::move(reuse)), long_(max_line) {
    bufs_[0].resize(chunk ? chunk : kChunk);
}

db::Result<std::string_view> LineReader::peek(size_t n) {
    while (end_ < n) {
        auto r = fill();
        if (!r && cancelled_) break;  // what came before the cancel is the head
        if (!r) return std::unexpected(r.error());
        if (!*r) break;
    }
    return std::string_view(bufs_[cur_].data(), std::min(n, end_));
}

db::Result<std::optional<std::string_view>> LineReader::next(uint64_t& line_offset,
                                                             bool& truncated) {
    truncated = false;
    // After a last line without '\n' the stream has ended: the file may have grown since its
    // end was read, and the next read would hand out the rest of that line as a line of its
    // own, every later line numbered one too high (issue 3: `ingest` beside gpufaultd).
    if (unended_) return std::optional<std::string_view>();
    for (;;) {
        const char* s = bufs_[cur_].data() + pos_;
        if (auto* nl = findNewline(s, s + (end_ - pos_))) {
            line_offset = base_ + pos_;
            size_t len = static_cast<size_t>(nl - s);
            pos_ += len + 1;
            if (skipping_) {
                long_.add(std::string_view(s, len));
                skipping_ = false;
                truncated = true;
                lastCr_ = true;
                return std::optional<std::string_view>(long_.text());
            }
            const size_t start = static_cast<size_t>(s - bufs_[cur_].data());
            lastCr_ = hasCr(start, start + len);
            if (len > maxLine_) {  // as a long line in pieces (LongLine) and takeBuffered's
                truncated = true;
                return std::optional<std::string_view>(
                    cutLongLine(std::string_view(s, len), maxLine_));
            }
            return std::optional<std::string_view>(std::string_view(s, len));
        }
        // No newline in the buffer: keep the partial line, read more.
        if (end_ - pos_ >= maxLine_ || skipping_) {
            const std::string_view part(s, end_ - pos_);
            if (!skipping_) {
                long_.start(part);
                longOffset_ = base_ + pos_;
                skipping_ = true;
            } else {
                long_.add(part);
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
                unended_ = true;
                line_offset = longOffset_;
                return std::optional<std::string_view>(long_.text());
            }
            if (end_ > pos_) {  // last line without '\n'
                lastCr_ = true;
                unended_ = true;
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
    // Searched ahead by kCrAhead, not to the buffer's end: with takeBuffered() next() hands out
    // only the line that crosses into a new buffer, and a search of the whole 4 MiB for it read
    // the file once more (~12 instructions a line of a 2 GiB log).
    const size_t to = std::min(end_, std::max(b, from + kCrAhead));
    const char* buf = bufs_[cur_].data();
    auto* p = static_cast<const char*>(std::memchr(buf + from, '\r', to - from));
    cr_ = p ? static_cast<size_t>(p - buf) : kNone;
    crTo_ = to;
    return cr_ < b;
}

void LineReader::switchBuffer(size_t keep) {
    if (reuse_) reuse_();
    Buffer& to = bufs_[1 - cur_];
    if (to.size() < bufs_[cur_].size()) to.resize(bufs_[cur_].size());
    if (keep) std::memcpy(to.data(), bufs_[cur_].data() + pos_, keep);
    cur_ = 1 - cur_;
    pos_ = 0;
    end_ = keep;
    cr_ = kNone;
    crTo_ = 0;
}

db::Result<bool> LineReader::fill() {
    Buffer& buf = bufs_[cur_];
    if (end_ == buf.size()) buf.resize(buf.size() * 2);  // only peek() can get here
    for (;;) {
        if (cancel_ >= 0 || cancel2_ >= 0) {
            pollfd p[3] = {{fd_, POLLIN, 0}, {cancel_, POLLIN, 0}, {cancel2_, POLLIN, 0}};
            if (::poll(p, 3, -1) < 0) {
                if (errno == EINTR) continue;
                return std::unexpected(db::Error{std::strerror(errno)});
            }
            if (p[1].revents != 0 || p[2].revents != 0) {
                cancelled_ = true;
                return std::unexpected(db::Error{"cancelled"});
            }
        }
        ssize_t n = ::read(fd_, buf.data() + end_, buf.size() - end_);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::unexpected(db::Error{std::strerror(errno)});
        end_ += static_cast<size_t>(n);
        return n > 0;
    }
}

}  // namespace gpufault
