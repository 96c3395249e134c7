// FileTail: which stream a file continues. A file is identified by its first line; a copy of
// a stream (logrotate's copytruncate) is recognised by the hash of its bytes before where that
// stream was read to: in memory while the daemon runs (copyWaits, copyResume), from the
// checkpoints' prefix hashes after a restart (adoptCopy).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include "daemon/sources/file_tail.h"
#include "daemon/sources/file_tail_parts.h"
#include "daemon/test_pause.h"
#include "ingest/source_identity.h"

namespace gpufault::daemon {

using namespace file_tail;

namespace {

/// Compressed rotations (`job.log.2.gz`) matched by a pattern are not text.
bool compressed(std::string_view head) {
    auto starts = [&](std::string_view m) { return head.substr(0, m.size()) == m; };
    return starts("\x1f\x8b") || starts("\x28\xb5\x2f\xfd") || starts("\xfd" "7zXZ") ||
           starts("BZh");
}

}  // namespace

db::Result<bool> FileTail::identify(Txn& txn, Followed& f, int64_t size) {
    size_t want = static_cast<size_t>(std::min<int64_t>(size, 4096));
    ssize_t n = ::pread(f.fd, buf_.data(), want, 0);
    if (n <= 0) return false;
    std::string_view head(buf_.data(), static_cast<size_t>(n));
    // Compressed: known from its magic, newline or not (a small .gz may hold none).
    if (compressed(head)) {
        f.ignored = true;
        ::close(f.fd);  // never read: its descriptor is not kept (files.max_open)
        f.fd = -1;
        if (overCap_ > 0) scanDue_ = true;  // a slot for a file over files.max_open
        return false;
    }
    if (head.find('\n') == std::string_view::npos && head.size() < 4096) return false;
    if (auto r = txn.ensure(); !r) return std::unexpected(r.error());
    SourceIdentity id;
    id.path = f.path;
    id.device = static_cast<int64_t>(f.key.first);
    id.inode = static_cast<int64_t>(f.key.second);
    id.fingerprint = sourceFingerprint(head);
    indexPrefix(f, id.fingerprint, size);
    if (auto nl = head.find('\n'); nl != std::string_view::npos) head = head.substr(0, nl + 1);
    f.head.assign(head);  // `head` is in buf_, which what follows reuses
    f.busy = true;
    auto wait = copyWaits(txn, f, id.fingerprint, size);
    f.busy = false;
    if (!wait) return std::unexpected(wait.error());
    f.copyWait = *wait;
    if (f.copyWait) return false;
    // The others were brought up to date meanwhile: it may have grown (a copy being written).
    if (struct stat now {}; ::fstat(f.fd, &now) == 0) size = std::max<int64_t>(size, now.st_size);
    auto src = store_.source(id);
    if (!src) return std::unexpected(src.error());
    SourceState st = *src;
    if (st.max_line > 0) testPause("file-identify");  // tests: truncate it right here
    // The file holds what its checkpoint was written after: the bytes before it hash to the
    // stored value. Not so when it was truncated (and maybe written again under the same first
    // line) while the daemon was down, or when its inode was reused by a file of that first
    // line.
    // (The check `gpufault ingest` makes too: checkPrefix, ingest/source_identity.h.)
    auto check = checkPrefix(st, size, [&](int64_t n) { return prefixHash(f, n); });
    // Shorter than a moment ago: truncated while it was being identified (its first line
    // was still the stream's). Not "rewritten under the same first line": the next poll
    // sees the truncation and the new first line, and the stream stays in the store for a
    // copy to continue (a copy cannot continue a stream finished here at offset 0).
    if (check == PrefixCheck::Unreadable) {
        f.storedStream = st.max_line > 0 || st.offset > 0;
        return false;
    }
    f.storedStream = false;
    bool same = check == PrefixCheck::Same;
    std::optional<Resume> resume;
    bool adopted = false;
    f.origin = f.path;
    if (st.offset == 0 && st.line == 0 && st.max_line == 0 && !st.complete) {
        auto r = copyResume(f, id.fingerprint, size);  // nothing read from it yet
        if (!r) return std::unexpected(r.error());
        resume = *r;
    }
    if (!resume && (!same || (st.offset == 0 && st.max_line == 0))) {
        // Not read before: it may be the copy of a stream the store knows (copytruncate while
        // the daemon was down, or undone by a kill): it continues that stream.
        auto a = adoptCopy(f, id, size, st.id);
        if (!a) return std::unexpected(a.error());
        if (a->wait) {
            f.copyWait = true;
            f.copyOf = a->origin;
            return false;
        }
        if (a->state) {
            st = *a->state;
            adopted = same = true;
            f.origin = a->origin;
        }
    }
    if (!same) {
        // Truncated while the daemon was down: what its checkpoint had seen and not read is
        // gone (a stream finished here is complete, its loss counted at the truncation).
        // Rows stored past its checkpoint from bytes now gone (an ingest's unended end) are
        // kept, not replaced by what it holds there now: lines read again are checked and
        // numbered after them (verify).
        st.unended = false;
        if (!st.complete) {
            int64_t lost = std::max<int64_t>(st.size - st.offset, 0);
            if (auto r = addLost(st.id, lost); !r) return std::unexpected(r.error());
            f.lostPending += static_cast<uint64_t>(lost);
        }
        // Truncated in place (`truncate -s`, `dmesg > file` again): where its bytes are still
        // those the stream read, up to one of its line ends, it resumes there, and lines after
        // it keep their numbers (read again, as the same bytes written again are, they are
        // stored once). Else written again under the same first line: new lines are numbered
        // after the stored ones so that none is taken for a duplicate.
        if (auto kept = keptPrefix(f, id.fingerprint, st, size)) {
            st.offset = kept->offset;
            st.line = kept->line;
        } else {
            st.offset = 0;
            st.line = st.max_line;
        }
    }
    if (resume && resume->row > 0) {
        // It continues that stream's row, as after a restart (adoptCopy): lines it holds
        // again after where it resumed (written after the daemon looked) keep their numbers
        // and are stored once; another line there is checked and numbered after (verify).
        if (auto r = store_.adoptSource(resume->row, id); !r) return std::unexpected(r.error());
        lostStale_ = true;
        st.id = resume->row;
        st.complete = false;
        st.max_line = resume->high;
        st.line = resume->at.line;
    } else if (resume) {
        st.line = st.max_line = resume->at.line;
        f.verify.clear();
    }
    if (resume) st.offset = resume->at.offset;
    // What it read is hashed from its start (its checkpoint's prefix first) for its copies.
    f.hashed = st.offset <= kHashCap && prefixHash(f, st.offset).has_value();
    f.hash = f.prefix;
    f.marks.clear();
    if (f.hashed) markPrefix(f, st.offset, st.line);
    f.fingerprint = id.fingerprint;
    f.offset = st.offset;
    f.tailAt = -1;  // the first read keeps its bytes
    // A copy continuing a finished stream's row expects what that stream wrote last (its
    // completing checkpoint); a row written in the open transaction is compared with what this
    // process wrote there (Store::movePosition).
    if (resume && resume->row > 0) st.stored = resume->stored;
    f.stream = std::make_unique<StreamIngest>(store_, st, window_, f.sum);
    if (resume || adopted) {
        // Its checkpoint now, committed with the original's last lines (or with the move of
        // the stream it continues): a restart must not read the copy from its start.
        if (auto r = writeCheckpoint(f, f.offset, false, size); !r)
            return std::unexpected(r.error());
        f.resumed = true;
    }
    return true;
}

std::optional<FileTail::Mark> FileTail::keptPrefix(Followed& f,
                                                   const std::string& fingerprint,
                                                   const SourceState& st,
                                                   int64_t size) {
    std::vector<Mark> marks;
    for (const auto& e : finished_)  // its truncation seen live: each of its last line ends
        if (e.key == f.key && e.fingerprint == fingerprint)
            marks.insert(marks.end(), e.marks.begin(), e.marks.end());
    if (st.prefix_hash) marks.push_back({st.offset, st.line, *st.prefix_hash});
    for (const auto& e : st.earlier) marks.push_back({e.offset, e.line, e.hash});
    // Past the first line only: that one is the fingerprint, the same in a new run's log.
    int64_t within = std::min(size, kHashCap);
    auto first = static_cast<int64_t>(f.head.size());
    std::erase_if(marks, [&](const Mark& m) { return m.offset <= first || m.offset > within; });
    // By offset, so that the prefix is hashed once, growing; at one offset the newest last
    // (the stored checkpoints: the numbering the stream goes on with).
    std::stable_sort(marks.begin(), marks.end(), [](const Mark& a, const Mark& b) {
        return a.offset < b.offset;
    });
    std::optional<Mark> kept;
    for (const auto& m : marks) {
        auto h = prefixHash(f, m.offset);
        if (!h) break;
        if (*h == m.hash) kept = m;
    }
    // The line ends after it that its stream had (all, past kHashCap too), by line, the newest
    // at a line: each line read again is checked against them (checkGeneration).
    f.verify.clear();
    f.high = st.max_line;
    for (const auto& e : finished_)
        if (e.key == f.key && e.fingerprint == fingerprint)
            for (const auto& m : e.marks) f.high = std::max(f.high, m.line);
    if (!kept) return kept;
    std::vector<Mark> after;
    for (const auto& e : finished_)
        if (e.key == f.key && e.fingerprint == fingerprint)
            after.insert(after.end(), e.marks.begin(), e.marks.end());
    if (st.prefix_hash) after.push_back({st.offset, st.line, *st.prefix_hash});
    for (const auto& e : st.earlier) after.push_back({e.offset, e.line, e.hash});
    std::erase_if(after, [&](const Mark& m) { return m.line <= kept->line; });
    std::stable_sort(after.begin(), after.end(), [](const Mark& a, const Mark& b) {
        return a.line < b.line;
    });
    for (const auto& m : after) {
        if (!f.verify.empty() && f.verify.back().line == m.line) f.verify.pop_back();
        if (f.verify.empty() || m.offset > f.verify.back().offset) f.verify.push_back(m);
    }
    return kept;
}

std::optional<uint64_t> FileTail::prefixHash(Followed& f, int64_t len) {
    if (len < f.prefixLen) {
        f.prefixLen = 0;
        f.prefix = PrefixHasher{};
    }
    while (f.prefixLen < len) {
        size_t want = static_cast<size_t>(std::min<int64_t>(len - f.prefixLen, kChunk));
        ssize_t n = ::pread(f.fd, buf_.data(), want, f.prefixLen);
        if (n <= 0) return std::nullopt;
        f.prefix.add(buf_.data(), static_cast<size_t>(n));
        f.prefixLen += n;
    }
    return f.prefix.value();
}

void FileTail::markPrefix(Followed& f, int64_t len, int64_t line) {
    // Resumed after a restart: a copy made before the daemon read this far (and committed past
    // it before a kill) ends at one of these line ends; copyResume finds it there.
    std::deque<Mark> marks;
    PrefixHasher h;
    int64_t at = 0, ends = 0;
    while (at < len) {
        size_t want = static_cast<size_t>(std::min<int64_t>(len - at, kChunk));
        ssize_t n = ::pread(f.fd, buf_.data(), want, at);
        if (n <= 0) break;
        const char* p = buf_.data();
        const char* end = p + n;
        while (const char* nl = static_cast<const char*>(std::memchr(p, '\n', end - p))) {
            h.add(p, static_cast<size_t>(nl + 1 - p));
            marks.push_back({at + (nl + 1 - buf_.data()), ++ends, h.value()});
            if (marks.size() > kMarks) marks.pop_front();
            p = nl + 1;
        }
        h.add(p, static_cast<size_t>(end - p));
        at += n;
    }
    // Line numbers: the checkpoint's line is that of its offset (lines are counted by their
    // ends, from the stream's first; a stream written again after a truncation starts later).
    int64_t base = line - ends;
    if (at != len || base < 0 || h.value() != f.hash.value()) {
        f.marks.assign(1, Mark{len, line, f.hash.value()});
        return;
    }
    for (auto& m : marks) m.line += base;
    if (marks.empty() || marks.back().offset != len) marks.push_back({len, line, f.hash.value()});
    f.marks = std::move(marks);
}

template <typename Marks>
const FileTail::Mark* FileTail::lastMark(const Marks& marks, int64_t offset) {
    const Mark* m = nullptr;
    for (const auto& k : marks)
        if (k.offset <= offset) m = &k;
    return m;
}

bool FileTail::sameHead(const Followed& f, const std::string& fingerprint) {
    char b[4096];
    ssize_t n = ::pread(f.fd, b, sizeof b, 0);
    if (n <= 0) return false;
    std::string_view head(b, static_cast<size_t>(n));
    return (head.find('\n') != std::string_view::npos || head.size() == sizeof b) &&
           sourceFingerprint(head) == fingerprint;
}

uint64_t FileTail::prefixKey(const std::string& fingerprint, int64_t len, uint64_t hash) {
    PrefixHasher h;
    h.add(fingerprint.data(), fingerprint.size());
    h.add(reinterpret_cast<const char*>(&len), sizeof len);
    h.add(reinterpret_cast<const char*>(&hash), sizeof hash);
    return h.value();
}

namespace {
/// The largest power of two ≤ min(`size`, kKeyedMax); 0 for an empty file.
int64_t keyLength(int64_t size) {
    if (size <= 0) return 0;
    return static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(std::min(size, kKeyedMax))));
}
}  // namespace

void FileTail::indexPrefix(Followed& f, const std::string& fingerprint, int64_t size) {
    const int64_t want = keyLength(size);
    if (want <= f.keyed || f.fd < 0) return;
    char b[kKeyedMax];  // not buf_: identify() holds the first line there
    ssize_t n = ::pread(f.fd, b, static_cast<size_t>(want), 0);
    if (n <= 0) return;
    const int64_t len = keyLength(n);
    PrefixHasher h;
    f.keys.clear();
    for (int64_t at = 0, next = 1; next <= len; at = next, next *= 2) {
        h.add(b + at, static_cast<size_t>(next - at));
        f.keys.push_back(h.value());
        if (next > f.keyed) {
            auto& keys = byPrefix_[prefixKey(fingerprint, next, h.value())];
            if (keys.empty() || keys.back() != f.key) {
                keys.push_back(f.key);
                ++indexed_;
            }
        }
    }
    f.keyed = len;
}

void FileTail::indexHeads() {
    // Stale entries (files gone, truncated, identified anew) are dropped when they outnumber
    // the live ones: the index is built again from the keys each stream kept.
    size_t live = 0;
    for (const auto& [k, f] : files_)
        if (f->stream) live += f->keys.size();
    if (indexed_ <= 2 * live + 1024) return;
    byPrefix_.clear();
    indexed_ = 0;
    for (const auto& [k, f] : files_) {
        if (!f->stream) {
            f->keys.clear();
            f->keyed = 0;
            continue;
        }
        for (size_t i = 0; i < f->keys.size(); ++i) {
            byPrefix_[prefixKey(f->fingerprint, int64_t{1} << i, f->keys[i])].push_back(k);
            ++indexed_;
        }
    }
}

db::Result<bool> FileTail::copyWaits(Txn& txn,
                                     Followed& c,
                                     const std::string& fingerprint,
                                     int64_t size) {
    // A copy made before the truncation (copytruncate; also a copy still being written)
    // holds bytes the original also holds: they are read from the original only. The copy
    // waits while it is no larger than the original and the same as its start. Only a stream
    // of its first line, or a file of it being identified, can be that original (byPrefix_).
    // New files are identified the largest first (identifyNew, by their size at the last
    // scan; one that had its turn empty or with its first line unfinished and was written to
    // since has one again: scan()): an original new to the daemon too is a stream by now
    // (before, every file not identified was read here first, each new file reading every
    // other: quadratic). Of those, only the files whose bytes up to the largest power of two
    // within `size` are its own (byPrefix_; before, each new file was compared with every one
    // of its first line: quadratic again).
    const int64_t len = keyLength(size);
    auto first = prefixHash(c, len);
    if (!first) return false;
    auto at = byPrefix_.find(prefixKey(fingerprint, len, *first));
    if (at == byPrefix_.end()) return false;
    const std::vector<Key>& keys = at->second;  // may grow below (files identified)
    for (size_t i = 0; i < keys.size(); ++i) {
        auto it = files_.find(keys[i]);
        if (it == files_.end()) continue;
        Followed* o = it->second.get();
        if (o == &c || o->ignored) continue;
        if (o->busy) {
            // Being identified, and looking at `c` meanwhile (both new to the daemon: the
            // copy was made before it read the original): the larger one holding the other's
            // bytes is the original, `c` waits for it. (Before, both were read from 0.)
            if (!o->stream && size <= o->size && sameHead(*o, fingerprint)) {
                auto hc = prefixHash(c, size);
                auto ho = prefixHash(*o, size);
                if (hc && ho && *hc == *ho) {
                    c.copyOf = o->path;
                    return true;
                }
            }
            continue;
        }
        if (!o->stream || o->fingerprint != fingerprint) continue;
        // Up to date first, unless read in this poll already (the followed streams are read
        // before new files are identified): an original truncated since our last look is
        // finished (copyResume then finds it).
        if (o->polled != polls_) {
            o->polled = polls_;
            if (auto r = read(txn, *o); !r) return std::unexpected(r.error());
            if (o->stream) indexPrefix(*o, o->fingerprint, o->size);
        }
        if (!o->stream || o->fingerprint != fingerprint || size > o->size) continue;
        auto hc = prefixHash(c, size);
        // What it read, when that ends at a line end at `size` (no read of its file); else its
        // file's bytes.
        auto ho = size <= o->offset ? hashAt(*o, size) : std::nullopt;
        const bool known = ho.has_value();
        if (!ho) ho = prefixHash(*o, size);
        if (hc && ho && *hc == *ho) {
            c.copyOf = o->path;
            return true;
        }
        // Unless the original was truncated just now (its file then differs): then it is
        // finished by this read.
        if (!known && !headIntact(*o))
            if (auto r = read(txn, *o); !r) return std::unexpected(r.error());
    }
    return false;
}

db::Result<std::optional<FileTail::Resume>> FileTail::copyResume(Followed& c,
                                                                 const std::string& fingerprint,
                                                                 int64_t size) {
    auto now = Clock::now();
    std::erase_if(finished_, [&](const Finished& e) { return now - e.at > kFinishedFor; });
    for (auto e = finished_.rbegin(); e != finished_.rend(); ++e) {
        if (e->fingerprint != fingerprint || e->marks.empty()) continue;
        // Where it ended when the copy is as large, else its last line end within the copy.
        const Mark& end = e->marks.back();
        const Mark* m = size >= end.offset ? &end : lastMark(e->marks, size);
        if (!m || m->offset == 0) continue;
        auto h = prefixHash(c, m->offset);
        if (!h || *h != m->hash) continue;
        c.origin = e->path;
        if (m == &end && e->lost > 0) {
            // What its truncation counted lost and the copy holds is not lost after all.
            uint64_t back = std::min<uint64_t>(e->lost, static_cast<uint64_t>(size - end.offset));
            e->lost -= back;
            if (auto r = addLost(e->row, -static_cast<int64_t>(back)); !r)
                return std::unexpected(r.error());
        }
        // One copy continues its row; another copy of it gets a row of its own, and so does a
        // copy of a stream whose row a followed file still uses (its file truncated and
        // written again under the same first line: found again by device, inode, first line).
        bool used = false;
        for (const auto& [k, o] : files_)
            used = used || (o.get() != &c && o->stream && o->stream->state().id == e->row);
        Resume at{*m, used ? 0 : e->row, end.line, e->stored};
        if (!used) e->row = 0;
        c.verify.clear();
        c.high = end.line;
        for (const auto& k : e->marks)
            if (k.line > m->line) c.verify.push_back(k);
        return std::optional<Resume>(at);
    }
    return std::optional<Resume>();
}
db::Result<FileTail::Adoption> FileTail::adoptCopy(Followed& c,
                                                   const SourceIdentity& id,
                                                   int64_t size,
                                                   int64_t self) {
    constexpr int64_t kCandidates = 16;  // the streams of this first line written to last
    auto rows = store_.copyCandidates(id.fingerprint, kCandidates);
    if (!rows) return std::unexpected(rows.error());
    if (rows->empty()) return Adoption{};
    // A stream followed now is its file's: copyWaits and copyResume decide for its copies. One
    // finished in the open transaction (its file truncated just now) is a candidate like one
    // finished before: when this daemon started reading it after where the copy ends (a kill
    // after it committed past the copy), its marks in memory cannot place the copy, and the
    // checkpoints committed before its last one (sources.earlier) can.
    std::set<int64_t> held;  // (a followed stream's row names its file: device + inode)
    for (const auto& r : *rows) {
        if (!r.identity.device || !r.identity.inode) continue;
        auto o = files_.find(
            Key{static_cast<dev_t>(*r.identity.device), static_cast<ino_t>(*r.identity.inode)});
        if (o != files_.end() && o->second->stream && o->second->stream->state().id == r.state.id)
            held.insert(r.state.id);
    }
    // Each candidate's checkpoint and the ones committed before it (a copy made before its
    // original was read further is smaller than the last), by offset so that the copy's prefix
    // is hashed once; the match read furthest wins (a stream continued in a copy before
    // reaches further than the stream it continued).
    struct Place {
        const UnfinishedFile* row;
        PrefixMark at;
    };
    std::vector<Place> places;
    int64_t within = std::min(size, kHashCap);
    for (const auto& r : *rows) {
        if (r.state.id == self || held.count(r.state.id) || r.state.max_line == 0) continue;
        // At 0 too: a checkpoint held at the start by a block still open (the copy then reads
        // the stream's lines again under their numbers, stored once).
        if (r.state.offset <= within)
            places.push_back({&r, {r.state.offset, r.state.line, *r.state.prefix_hash}});
        for (const auto& e : r.state.earlier)
            if (e.offset > 0 && e.offset < r.state.offset && e.offset <= within)
                places.push_back({&r, e});
    }
    std::sort(places.begin(), places.end(), [](const Place& a, const Place& b) {
        return a.at.offset < b.at.offset;
    });
    std::vector<const Place*> matches;  // nearest first
    for (const auto& p : places) {
        auto h = prefixHash(c, p.at.offset);
        if (!h) break;
        if (*h == p.at.hash) matches.push_back(&p);
    }
    // Its file still followed and holding those bytes (a copy made before the truncation, seen
    // first after a restart): `c` waits for it as for a copy of a followed file. Still at its
    // path but no longer matched by the patterns, as large: `c` is another file of the same
    // bytes. Else (truncated, as copytruncate leaves it, or gone) `c` continues the stream.
    const Place* best = nullptr;
    for (auto m = matches.rbegin(); m != matches.rend() && !best; ++m) {
        const SourceIdentity& own = (*m)->row->identity;
        if (!own.device || !own.inode) continue;
        Key key{static_cast<dev_t>(*own.device), static_cast<ino_t>(*own.inode)};
        if (auto o = files_.find(key); o != files_.end() && o->second.get() != &c) {
            if (o->second->fd < 0) continue;
            if (sameHead(*o->second, id.fingerprint) &&
                prefixHash(*o->second, (*m)->at.offset) == (*m)->at.hash)
                return Adoption{std::nullopt, true, o->second->path};
            best = *m;
            continue;
        }
        struct stat st {};
        if (::lstat(own.path.c_str(), &st) == 0 && st.st_dev == key.first &&
            st.st_ino == key.second && st.st_size >= std::max<int64_t>((*m)->at.offset, 1))
            continue;
        best = *m;
    }
    if (!best) return Adoption{};
    if (auto r = store_.adoptSource(best->row->state.id, id); !r)
        return std::unexpected(r.error());
    lostStale_ = lostStale_ || best->row->lost != 0;  // its count moves to the copy's file
    if (best->at.offset == best->row->state.offset && best->row->lost > 0) {
        // Its stream was finished there (truncated, or gone at a restart) and what it had seen
        // beyond was counted lost: what the copy holds of that is not lost after all.
        uint64_t back = std::min<uint64_t>(static_cast<uint64_t>(best->row->lost),
                                           static_cast<uint64_t>(size - best->at.offset));
        if (auto r = addLost(best->row->state.id, -static_cast<int64_t>(back)); !r)
            return std::unexpected(r.error());
    }
    std::string origin = best->row->identity.path;  // before the move (its last path)
    SourceState st = best->row->state;
    st.complete = false;
    st.offset = best->at.offset;  // lines after it are numbered as in the original
    st.line = best->at.line;
    st.prefix_hash = best->at.hash;
    return Adoption{st, false, origin};
}

std::optional<uint64_t> FileTail::hashAt(const Followed& f, int64_t offset) {
    if (offset == 0) return PrefixHasher{}.value();
    if (!f.hashed) return std::nullopt;
    if (offset == f.offset) return f.hash.value();
    for (auto m = f.marks.rbegin(); m != f.marks.rend(); ++m)
        if (m->offset == offset) return m->hash;
    return std::nullopt;
}

std::optional<uint64_t> FileTail::hashBehind(Followed& f, int64_t offset) {
    if (!f.hashed || offset <= 0 || offset > f.offset || offset > kHashCap) return std::nullopt;
    if (offset < f.prefixLen) {
        f.prefixLen = 0;
        f.prefix = PrefixHasher{};
    }
    std::vector<char> b(static_cast<size_t>(std::min<int64_t>(offset - f.prefixLen, kChunk)));
    while (f.prefixLen < offset) {
        size_t want = std::min(static_cast<size_t>(offset - f.prefixLen), b.size());
        ssize_t n = ::pread(f.fd, b.data(), want, f.prefixLen);
        if (n <= 0) return std::nullopt;
        f.prefix.add(b.data(), static_cast<size_t>(n));
        f.prefixLen += n;
    }
    return f.prefix.value();
}

db::Result<void> FileTail::writeCheckpoint(Followed& f, int64_t end, bool complete, int64_t size) {
    constexpr size_t kEarlier = 4;  // checkpoints kept before the last (sources.earlier)
    return f.stream->checkpoint(end, complete, size, [&](SourceState& cp) {
        cp.cursor.reset();  // `gpufault ingest`'s hash of a big file's head (hashCheckpoint)
        cp.prefix_hash = hashAt(f, cp.offset);
        // Without it the row is no copy's candidate after a restart: a copytruncate while the
        // daemon was down (or killed, or reloading) made the copy a new stream read from its
        // start, every record stored twice (hostile review 3, HIGH 1).
        if (!cp.prefix_hash) cp.prefix_hash = hashBehind(f, cp.offset);
        const SourceState& last = f.stream->state();  // committed
        std::vector<PrefixMark> earlier;
        if (last.prefix_hash && last.offset > 0 && last.offset < cp.offset)
            earlier.push_back({last.offset, last.line, *last.prefix_hash});
        for (const auto& e : last.earlier)
            if (earlier.size() < kEarlier && e.offset < cp.offset &&
                (earlier.empty() || e.offset < earlier.back().offset))
                earlier.push_back(e);
        // And the line ends 1, 2, 4 … 512 lines before it: a copy made a few lines before a
        // checkpoint, with none committed at or below its end (the daemon read past it at once),
        // is placed by the nearest one below its end after a restart, also when its original
        // was truncated while the daemon was down (its lines after that are read again under
        // their numbers, stored once).
        for (size_t back = 1; back <= f.marks.size(); back *= 2) {
            const Mark& m = f.marks[f.marks.size() - back];
            if (m.offset > 0 && m.offset < cp.offset) earlier.push_back({m.offset, m.line, m.hash});
        }
        std::sort(earlier.begin(), earlier.end(), [](const PrefixMark& a, const PrefixMark& b) {
            return a.offset > b.offset;
        });
        earlier.erase(std::unique(earlier.begin(),
                                  earlier.end(),
                                  [](const PrefixMark& a, const PrefixMark& b) {
                                      return a.offset == b.offset;
                                  }),
                      earlier.end());
        cp.earlier = std::move(earlier);
    });
}

}  // namespace gpufault::daemon
