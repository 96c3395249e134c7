// FileTail: reading a followed file. Lines are fed in order, what was read is hashed (for
// copytruncate copies and truncations: the running hash and the marks at the last kMarks line
// ends), a truncation under the same first line is seen by the bytes read last, lines read
// again after a truncation are checked against their stream's, and a rotated file's last line
// without a newline is taken as it is.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "daemon/daemon.h"
#include "daemon/sources/file_tail.h"
#include "daemon/sources/file_tail_parts.h"

namespace gpufault::daemon {

using namespace file_tail;

bool FileTail::feedLong(Followed& f) {
    if (!f.stream || !f.skipping) return false;
    f.skipping = false;
    f.verify.clear();  // numbering kept: not checked against an earlier generation
    f.stream->feed(f.longLine.text(), f.longAt, true);
    f.longLine = LongLine{};  // its copy of up to 2 MiB is not kept
    return true;
}

bool FileTail::feedLast(Followed& f) {
    if (f.skipping && f.size > f.offset) {
        // The rest of a long line without a newline: read through, then fed as it is.
        for (int64_t at = f.offset; at < f.size;) {
            auto want = static_cast<size_t>(std::min<int64_t>(f.size - at, kChunk));
            ssize_t got = ::pread(f.fd, buf_.data(), want, at);
            if (got <= 0) break;
            f.longLine.add(std::string_view(buf_.data(), static_cast<size_t>(got)));
            at += got;
        }
        f.hashed = false;  // not hashed: no copy resumes after it
        f.tailAt = -1;
        f.offset = f.size;
    }
    if (f.skipping && f.stream) {
        feedLong(f);
        f.stream->warnLast(fmt::format("last line of {} has no newline: stored as it is", f.path));
        return true;
    }
    if (!f.stream || f.size <= f.offset) return false;
    size_t n = static_cast<size_t>(std::min<int64_t>(f.size - f.offset, kMaxLine));
    ssize_t got = ::pread(f.fd, buf_.data(), n, f.offset);
    if (got <= 0) return false;
    f.stream->feed(std::string_view(buf_.data(), static_cast<size_t>(got)),
                   f.offset,
                   f.size - f.offset > static_cast<int64_t>(kMaxLine));
    f.stream->warnLast(fmt::format(
        "last line of {} has no newline ({} bytes): stored as it is", f.path, f.size - f.offset));
    if (got == f.size - f.offset) {
        consumed(f, buf_.data(), static_cast<size_t>(got), true);
        keepTail(f, buf_.data(), static_cast<size_t>(got));
    } else {
        f.hashed = false;
        f.tailAt = -1;
    }
    f.offset = f.size;
    return true;
}

bool FileTail::rotatedAway(const Followed& f) {
    if (f.origin.empty() || f.origin == f.path) return false;
    struct stat st {};
    return ::lstat(f.origin.c_str(), &st) == 0 &&
           (st.st_dev != f.key.first || st.st_ino != f.key.second);
}

bool FileTail::headIntact(const Followed& f) {
    if (f.head.empty()) return true;
    char b[4096];
    ssize_t n = ::pread(f.fd, b, f.head.size(), 0);
    return n == static_cast<ssize_t>(f.head.size()) &&
           std::memcmp(b, f.head.data(), f.head.size()) == 0;
}

db::Result<void> FileTail::checkGeneration(Followed& f, const char* p, size_t n, int64_t at) {
    if (!f.hashed) {
        f.verify.clear();
        return {};
    }
    const Mark& next = f.verify.front();
    auto line = static_cast<int64_t>(f.stream->lineNo()) + 1;
    int64_t end = at + static_cast<int64_t>(n);
    if (line < next.line && end < next.offset) return {};  // no line end of it known here
    if (line == next.line && end == next.offset) {
        PrefixHasher h = f.hash;
        h.add(p, n);
        if (h.value() == next.hash) {  // the same bytes as the line stored under this number
            f.verify.erase(f.verify.begin());
            return {};
        }
    }
    // Another line than the one stored under this number (or past a line end it had without
    // ending there): from here the file holds new lines. Numbered after the stored ones, so
    // that none is taken for a stored record of the same identity (hostile review 2a).
    f.verify.clear();
    f.stream->finish();
    if (f.stream->error()) return std::unexpected(*f.stream->error());
    if (auto r = writeCheckpoint(f, at, false, f.size); !r) return r;
    SourceState st = f.stream->state();
    st.offset = at;
    st.line = st.max_line = std::max<int64_t>(f.high, static_cast<int64_t>(f.stream->lineNo()));
    st.complete = false;
    st.prefix_hash = f.hash.value();
    // The row holds the checkpoint just written: the new stream expects it (not the committed
    // one that state() holds).
    st.stored = f.stream->expectedPosition();
    f.stream = std::make_unique<StreamIngest>(store_, st, window_, f.sum);
    f.resumed = true;  // its checkpoint is written with the next commit
    return {};
}

bool FileTail::tailIntact(const Followed& f) {
    if (f.tailAt != f.offset || f.tail.empty()) return true;
    char b[kTail];
    auto n = static_cast<ssize_t>(f.tail.size());
    return ::pread(f.fd, b, f.tail.size(), f.offset - n) == n &&
           std::memcmp(b, f.tail.data(), f.tail.size()) == 0;
}

void FileTail::keepTail(Followed& f, const char* p, size_t n) {
    if (f.tailAt != f.offset - static_cast<int64_t>(n)) f.tail.clear();  // not known before
    if (n >= kTail) {
        f.tail.assign(p + n - kTail, kTail);
    } else {
        f.tail.append(p, n);
        if (f.tail.size() > kTail) f.tail.erase(0, f.tail.size() - kTail);
    }
    f.tailAt = f.offset;
}

void FileTail::consumed(Followed& f, const char* p, size_t n, bool line_end) {
    f.offset += static_cast<int64_t>(n);
    if (!f.hashed) return;
    f.hash.add(p, n);
    if (!line_end) return;
    f.marks.push_back({f.offset, static_cast<int64_t>(f.stream->lineNo()), f.hash.value()});
    if (f.marks.size() > kMarks) f.marks.pop_front();
}

void FileTail::consumedBatch(Followed& f, const char* p, size_t n, int64_t end_line) {
    if (!f.hashed || n == 0) return;
    // The last kMarks line ends, from the end backwards (a 4 MiB batch of short lines has
    // ~30 000: only these are kept).
    ends_.clear();
    for (const char* e = p + n; ends_.size() < kMarks;) {
        const void* nl = ::memrchr(p, '\n', static_cast<size_t>(e - p));
        if (!nl) break;
        e = static_cast<const char*>(nl);
        ends_.push_back(e);
    }
    const int64_t base = f.offset - static_cast<int64_t>(n);  // the offset of p
    const char* at = p;
    auto line = end_line - static_cast<int64_t>(ends_.size());
    for (auto e = ends_.rbegin(); e != ends_.rend(); ++e) {
        f.hash.add(at, static_cast<size_t>(*e + 1 - at));
        at = *e + 1;
        f.marks.push_back({base + (at - p), ++line, f.hash.value()});
    }
    f.hash.add(at, static_cast<size_t>(p + n - at));
    while (f.marks.size() > kMarks) f.marks.pop_front();
}

db::Result<bool> FileTail::read(Txn& txn, Followed& f) {
    struct stat st {};
    f.links = 1;  // not known: not taken for deleted
    if (::fstat(f.fd, &st) != 0) return false;
    f.links = st.st_nlink;
    int64_t size = st.st_size;
    if (f.found > 0) {
        // Its first look: the size a scan found it at was seen; bytes removed since (a truncation
        // before its turn) are lost unread (hostile review 144, MED 3: 98 of 3 000 files).
        if (!f.stream) f.size = std::max(f.size, f.found);
        f.found = 0;
    }
    if (size < f.offset || (size < f.size && !f.stream)) {
        // Truncated (copytruncate, `> file`).
        if (auto r = truncated(txn, f); !r) return std::unexpected(r.error());
    }
    int64_t seen = f.size;  // the size at our last look
    if (size != f.size) f.changed = Clock::now();
    f.size = size;
    // The change time, not the modification time: `touch -r` can put an old mtime back.
    const bool modified =
        st.st_ctim.tv_sec != f.ctime.tv_sec || st.st_ctim.tv_nsec != f.ctime.tv_nsec;
    f.ctime = st.st_ctim;
    if (f.ignored) return false;
    if (!f.stream) {
        auto ok = identify(txn, f, size);
        if (!ok || !*ok) return ok;
    }
    if (size <= f.offset) {
        // Written in place to no more than what was read (`dmesg | tail -1 > last.log` of
        // the same length): the size cannot tell, the bytes before the offset can.
        if (modified && f.offset > 0 && (!headIntact(f) || !tailIntact(f))) {
            f.size = seen;
            if (auto r = truncated(txn, f); !r) return std::unexpected(r.error());
            f.size = 0;
            return true;
        }
        return false;
    }
    size_t want = static_cast<size_t>(std::min<int64_t>(size - f.offset, kChunk));
    ssize_t n = ::pread(f.fd, buf_.data(), want, f.offset);
    if (n <= 0) return false;
    if (!headIntact(f) || !tailIntact(f)) {
        // Truncated and written past our offset again since our last look: the size cannot
        // tell, the first line can, or (the same first line written again) the bytes read
        // last before the offset. Checked after the read, so that what we read is known to
        // be the old content only if those are still there; otherwise it may be new content
        // from the middle of a line: dropped, and the file is read again from 0 (where the
        // new bytes are those read before, up to a line end, it resumes there: keptPrefix).
        f.size = seen;
        if (auto r = truncated(txn, f); !r) return std::unexpected(r.error());
        f.size = 0;  // `size` may be the old content's: nothing is known of the new one yet
        return true;
    }
    // Only a partial line held (no newline, not over-long) whose size is recorded: nothing to
    // store, no transaction (one opened at each poll while a line waits for its end held
    // SQLite's write lock with nothing to commit: hostile review 9, MEDIUM 3). A size not
    // recorded yet is stored (the checkpoint keeps what was seen).
    if (!f.skipping && static_cast<size_t>(n) <= kMaxLine && size == f.checkpointedSize &&
        !std::memchr(buf_.data(), '\n', static_cast<size_t>(n)))
        return false;
    if (auto r = txn.ensure(); !r) return std::unexpected(r.error());
    const char* p = buf_.data();
    const char* end = p + n;
    const int64_t from = f.offset;
    // Bytes read from `lazy` on are hashed at the end, at once (consumedBatch); while lines
    // are checked against an earlier generation (f.verify: f.hash is needed at each line),
    // each line is hashed as it is read.
    const char* lazy = p;
    int64_t endLine = 0;  // the number of the last line ended since `lazy`
    bool spent = false;   // stopped at a line end for the poll's time budget: the rest next poll
    // Rows an ingest stored past its checkpoint (SourceState::unended) are replaced as their
    // lines are read again: those of the lines this read ends at once (one pass, not one per
    // line), and all of those lines are fed before the next commit (no stop for the budget).
    if (f.stream->replacing() && f.verify.empty())
        f.stream->replaceThrough(f.stream->lineNo() +
                                 static_cast<uint64_t>(std::count(p, end, '\n')));
    for (unsigned lines = 0; p < end; ++lines) {
        if ((lines & 255) == 255 && !f.skipping && !f.stream->replacedAhead() &&
            (Clock::now() >= pollUntil_ ||
             (commitBreak_ && f.stream->uncommittedLines() >= commitLines_))) {
            spent = true;
            break;
        }
        const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p));
        int64_t at = f.offset;
        if (!nl) {
            size_t held = static_cast<size_t>(end - p);
            if (f.skipping) {
                f.longLine.add(std::string_view(p, held));  // more of an over-long line
                f.offset += static_cast<int64_t>(held);
            } else if (held > kMaxLine) {
                // Fed at its newline (what follows its last '\r' may come later).
                f.longLine.start(std::string_view(p, held));
                f.longAt = at;
                f.skipping = true;
                f.offset += static_cast<int64_t>(held);
            }
            break;  // else: a partial line, held until its newline
        }
        size_t len = static_cast<size_t>(nl - p);
        if (!f.verify.empty() && !f.skipping) {
            consumedBatch(f, lazy, static_cast<size_t>(p - lazy), endLine);  // f.hash to `at`
            if (auto r = checkGeneration(f, p, len + 1, at); !r) return std::unexpected(r.error());
            lazy = nl + 1;  // this line is hashed by consumed() below
        }
        if (f.skipping) {
            f.longLine.add(std::string_view(p, len));  // the end of an over-long line
            feedLong(f);
        } else {
            // As `gpufault ingest` cuts it (cutLongLine: after a '\r', the text after the last).
            std::string_view line(p, len);
            f.stream->feed(cutLongLine(line), at, len > kMaxLine);
        }
        if (lazy == nl + 1) {
            consumed(f, p, len + 1, true);
        } else {
            f.offset += static_cast<int64_t>(len + 1);
            endLine = static_cast<int64_t>(f.stream->lineNo());
        }
        p = nl + 1;
    }
    consumedBatch(f, lazy, static_cast<size_t>(buf_.data() + (f.offset - from) - lazy), endLine);
    keepTail(f, buf_.data(), static_cast<size_t>(f.offset - from));
    if (f.stream->error()) return std::unexpected(*f.stream->error());
    return spent || (size > f.offset && static_cast<size_t>(n) == want && want == kChunk);
}

}  // namespace gpufault::daemon
