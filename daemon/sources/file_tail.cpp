#include "daemon/sources/file_tail.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <set>

#include "daemon/daemon.h"
#include "daemon/sources/file_tail_parts.h"

namespace gpufault::daemon {

using namespace file_tail;

FileTail::FileTail(Store& store,
                   std::vector<std::string> globs,
                   int window,
                   uint64_t idle_close_ms,
                   size_t max_open,
                   bool follow_hardlinks)
    : store_(store),
      globs_(std::move(globs)),
      window_(window),
      idleCloseMs_(idle_close_ms),
      buf_(kChunk),
      maxOpen_(max_open),
      followHardlinks_(follow_hardlinks) {}

void FileTail::setCommitRule(uint64_t lines, uint64_t ms) {
    commitLines_ = std::max<uint64_t>(lines, 1);
    budget_ = std::min(kPollBudget, std::chrono::milliseconds(std::max<uint64_t>(ms, 1)));
}

FileTail::~FileTail() {
    for (const auto& d : carriedOpen_) ::close(d.fd);
}

std::vector<std::string> FileTail::watchDirs() const {
    std::set<std::string> dirs;
    for (const auto& g : globs_) {
        auto slash = g.rfind('/');
        std::string dir = slash == 0 ? "/" : g.substr(0, slash);
        if (dir.find_first_of("*?[") == std::string::npos) dirs.insert(dir);
    }
    return {dirs.begin(), dirs.end()};
}

bool FileTail::watchDirsCoverEveryPattern() const {
    return std::none_of(globs_.begin(), globs_.end(), [](const std::string& g) {
        return g.substr(0, g.rfind('/')).find_first_of("*?[") != std::string::npos;
    });
}

void FileTail::tick() {
    if (!watched_ || retryScan_ || Clock::now() - scannedAt_ >= kWatchedRescan) scanDue_ = true;
    pollAll_ = true;
}

void FileTail::written(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0)
        if (auto it = files_.find({st.st_dev, st.st_ino}); it != files_.end()) {
            Followed& f = *it->second;
            f.written = true;
            if (!f.stream && !f.ignored) noteWaiting(f, st);  // as a scan would (one lstat)
            return;
        }
    // No followed file at that name now: a deleted one still written through a descriptor
    // (inotify names it by its last name; hostile review 161, LOW C) is known by its path.
    for (auto& [k, f] : files_)
        if (f->path == path) f->written = true;
}

void FileTail::writtenMany() {
    pollAll_ = true;
    if (waiting_) scanDue_ = true;  // the waiting files' sizes: from a scan
}

void FileTail::noteWaiting(Followed& f, const struct stat& st) {
    f.scanned = st.st_size;
    f.scannedCtime = st.st_ctim;
    if (f.turn > 0 && st.st_size != f.size) f.turn = 0;
}

namespace {
constexpr size_t kProblemsLogged = 20;  ///< problems logged per scan (then a count)
constexpr size_t kProblemsShown = 100;  ///< problem rows in status()
constexpr size_t kProblemsKept = 1000;  ///< problems remembered (a directory may hold millions)

/// Why a matched name that is no regular file (nor a directory) is not followed.
std::string notRegular(mode_t mode) {
    if (S_ISLNK(mode))
        return "not followed: a symbolic link (links are not followed: name the file it points "
               "to in a pattern)";
    const char* what = S_ISFIFO(mode)  ? "a FIFO"
                       : S_ISSOCK(mode) ? "a socket"
                                        : "a device";
    return fmt::format("not followed: {} (gpufaultd follows regular files)", what);
}

std::string keyText(dev_t dev, ino_t ino) {
    return fmt::format("file {}:{}", static_cast<uint64_t>(dev), static_cast<uint64_t>(ino));
}
}  // namespace

void FileTail::problem(const std::string& path, std::string why) {
    if (problems_.size() >= kProblemsKept && !problems_.count(path)) {
        ++problemsUnkept_;
        return;
    }
    problems_[path] = std::move(why);
}

namespace {
/// The first error glob(3) met reading a directory (its errfunc has no user data; the daemon
/// scans on one thread).
int globErrno = 0;
int onGlobError(const char*, int err) {
    if (globErrno == 0) globErrno = err;
    return 0;  // go on with the other directories
}
}  // namespace

namespace {
/// `path` with its directory resolved (the file itself need not exist).
std::string resolvedPath(const std::string& path) {
    std::error_code ec;
    std::filesystem::path p(path);
    auto dir = std::filesystem::weakly_canonical(std::filesystem::absolute(p, ec).parent_path(), ec);
    if (ec) return std::filesystem::absolute(p).lexically_normal().string();
    return (dir / p.filename()).string();
}
}  // namespace

void FileTail::excludeOwn(std::vector<std::string> paths) {
    own_.clear();
    for (const auto& p : paths)
        if (!p.empty()) own_.push_back(resolvedPath(p));
    scanDue_ = true;
}

bool FileTail::isOwn(const std::string& path) const {
    if (own_.empty()) return false;
    // Only a file named like one of them may be one: resolving the path (a readlink and an
    // lstat per directory) for every file a scan sees took half of an idle daemon's CPU with
    // 20 000 files matched (hostile review 144, LOW 5).
    auto name = std::string_view(path).substr(path.rfind('/') + 1);
    if (std::none_of(own_.begin(), own_.end(), [&](const std::string& o) {
            return name.starts_with(std::string_view(o).substr(o.rfind('/') + 1));
        }))
        return false;
    std::string r = resolvedPath(path);
    for (const auto& o : own_) {
        if (!r.starts_with(o)) continue;
        std::string_view rest = std::string_view(r).substr(o.size());
        // SQLite's companions, writeMetrics()'s temporary (mkostemp: six characters).
        if (rest.empty() || rest == "-wal" || rest == "-shm" || rest == "-journal" ||
            rest == ".tmp" || (rest.size() == 7 && rest[0] == '.'))
            return true;
    }
    return false;
}

std::set<FileTail::Key> FileTail::ownKeys() const {
    std::set<Key> keys;
    for (const auto& o : own_)
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
            struct stat st {};
            if (::stat((o + suffix).c_str(), &st) == 0) keys.insert({st.st_dev, st.st_ino});
        }
    return keys;
}

void FileTail::scan() {
    scanDue_ = false;
    scannedAt_ = Clock::now();
    ++scans_;
    std::set<Key> seen;
    // The own files by device + inode too: a hard link to the store's WAL under a followed
    // name is the WAL (hostile review 9, LOW 4).
    const std::set<Key> own = ownKeys();
    problems_.clear();
    problemsUnkept_ = 0;
    bool complete = true;  // false: a directory could not be read, files may be missing
    bool retry = false;    // a file could not be opened, or has other links
    size_t open = 0, over = 0;
    for (const auto& [k, f] : files_) open += f->fd >= 0 ? 1 : 0;
    auto linked = [&](nlink_t n) {
        return fmt::format("not followed: {} hard links (files.follow_hardlinks = false)", n);
    };
    for (const auto& pattern : globs_) {
        glob_t g{};
        globErrno = 0;
        int rc = ::glob(pattern.c_str(), GLOB_NOSORT, onGlobError, &g);
        if (globErrno != 0 && globErrno != ENOENT && globErrno != ENOTDIR) {
            // Out of descriptors or memory, or a directory we may not read: what it holds is
            // unknown, not gone.
            complete = false;
            problem(pattern, fmt::format("cannot scan: {}", std::strerror(globErrno)));
        } else if (rc == GLOB_NOSPACE) {
            complete = false;
            problem(pattern, "cannot scan: out of memory");
        }
        if (rc == 0) {
            for (size_t i = 0; i < g.gl_pathc; ++i) {
                std::string path = g.gl_pathv[i];
                struct stat st {};
                if (::lstat(path.c_str(), &st) != 0 || S_ISDIR(st.st_mode)) continue;
                if (!S_ISREG(st.st_mode)) {  // said in status and the log, never silent
                    problem(path, notRegular(st.st_mode));
                    continue;
                }
                Key key{st.st_dev, st.st_ino};
                seen.insert(key);
                if (auto it = files_.find(key); it != files_.end()) {
                    Followed& f = *it->second;
                    if (f.path != path) {  // renamed within the patterns (rotation)
                        f.path = path;
                        f.renamed = true;
                    }
                    if (!f.stream && !f.ignored) {
                        // Not identified yet: its size now orders it among the files to
                        // identify (the largest first: an original before its copies), and
                        // changed since its last turn (empty or its first line unfinished
                        // then), it has a turn in this round again. Else a copy of it that
                        // this scan found went first: no followed file held its bytes, it was
                        // read from its start, and the original then waited as its copy.
                        noteWaiting(f, st);
                    }
                    continue;
                }
                if (own.count(key) || isOwn(path)) {
                    problem(path, "not followed: gpufaultd's own store or metrics file");
                    continue;
                }
                if (st.st_nlink > 1 && !followHardlinks_) {
                    problem(path, linked(st.st_nlink));
                    retry = true;  // its other link may go where no watch sees it
                    continue;
                }
                if (open >= maxOpen_) {
                    ++over;
                    problem(
                        path,
                        fmt::format("not followed: files.max_open = {} files are open", maxOpen_));
                    continue;
                }
                int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
                if (fd < 0) {
                    problem(path, fmt::format("cannot open: {}", std::strerror(errno)));
                    retry = true;  // out of descriptors, or denied: may change without a name
                    continue;
                }
                struct stat fst {};
                if (::fstat(fd, &fst) != 0 || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
                    ::close(fd);
                    continue;
                }
                if (fst.st_nlink > 1 && !followHardlinks_) {  // linked since the lstat
                    ::close(fd);
                    problem(path, linked(fst.st_nlink));
                    retry = true;
                    continue;
                }
                auto f = std::make_unique<Followed>();
                f->path = path;
                f->key = key;
                f->fd = fd;
                f->found = fst.st_size;
                f->scanned = fst.st_size;
                f->scannedCtime = fst.st_ctim;
                if (auto c = carried_.find(keyText(key.first, key.second)); c != carried_.end()) {
                    // Followed before a reload: its counters go on.
                    f->carriedLines = c->second.lines;
                    f->carriedEvidence = c->second.evidence;  // lost bytes: from the store
                    carried_.erase(c);
                }
                files_.emplace(key, std::move(f));
                ++open;
            }
        }
        ::globfree(&g);
    }
    carried_.clear();  // streams not found again did not stay
    for (auto& [key, f] : files_)
        if (complete || seen.count(key)) f->matched = seen.count(key) > 0;
    // Files the FileTail before a reload held open and this scan did not find: read to their
    // end, as it would have (seen: not taken for vanished streams while they are identified).
    adoptCarried(&seen);
    seenComplete_ = complete;
    retryScan_ = retry || !complete;
    if (checkVanished_)
        seen_ = std::move(seen);
    else
        seen_.clear();
    // Each problem is logged once (again only when it changes), the cap once per episode.
    if (over > 0 && overCap_ == 0)
        logLine(4,
                fmt::format("files.max_open = {} reached: {} matching file(s) not followed "
                            "(gpufault status lists them)",
                            maxOpen_,
                            over));
    if (complete || over > 0) overCap_ = over;
    size_t logged = 0, unlogged = 0;
    for (const auto& [path, why] : problems_) {
        if (why.rfind("not followed: files.max_open", 0) == 0) continue;
        auto it = logged_.find(path);
        if (it != logged_.end() && it->second == why) continue;
        if (logged++ < kProblemsLogged)
            logLine(4, fmt::format("{}: {}", path, why));
        else
            ++unlogged;
        logged_[path] = why;
    }
    // Beyond those, only their number, when it changes.
    unlogged += problemsUnkept_;
    if (unlogged > 0 && unlogged != unloggedBefore_)
        logLine(4, fmt::format("… and {} more file(s) not followed", unlogged));
    unloggedBefore_ = unlogged;
    std::erase_if(logged_, [&](const auto& e) { return problems_.count(e.first) == 0; });
}

db::Result<void> FileTail::retire(Followed& f, bool feed_partial) {
    if (!f.stream) return {};
    if (feed_partial)
        feedLast(f);  // the last line of a finished file has no newline
    else
        feedLong(f);  // a truncated file's long line: as far as it was read
    f.stream->finish();
    if (f.stream->error()) return std::unexpected(*f.stream->error());
    auto r = writeCheckpoint(f, f.offset, true, f.size);
    if (!r) return r;
    if (f.hashed) {
        Finished e{f.fingerprint,
                   {f.marks.begin(), f.marks.end()},
                   Clock::now(),
                   f.key,
                   0,
                   f.stream->state().id,
                   f.origin.empty() ? f.path : f.origin,
                   f.stream->expectedPosition()};
        if (e.marks.empty() || e.marks.back().offset != f.offset)
            e.marks.push_back({f.offset, static_cast<int64_t>(f.stream->lineNo()), f.hash.value()});
        finished_.push_back(std::move(e));
        if (finished_.size() > kFinished) finished_.erase(finished_.begin());
    }
    auto done = std::make_unique<Followed>();
    done->path = f.path;
    done->sum = f.sum;
    done->stream = std::move(f.stream);
    retired_.push_back(std::move(done));
    f.sum = IngestSummary{};
    f.carriedLines = f.carriedEvidence = 0;
    return {};
}

db::Result<void> FileTail::truncated(Txn& txn, Followed& f) {
    // What was written after our last look is gone unseen: only what we saw (f.size) and had
    // not read is counted (none for a waiting copy: its bytes are its original's).
    // Nor for a file whose stored stream it had not taken up yet (cut short while being
    // identified): that stream's copy continues it, or the next reader counts what it had not
    // read (hostile review 17, i3 H2: a copytruncate then counted the whole file lost).
    uint64_t lost = f.copyWait || (!f.stream && f.storedStream)
                        ? 0
                        : static_cast<uint64_t>(std::max<int64_t>(f.size - f.offset, 0));
    if (lost > 0 && !f.stream && f.fingerprint.empty()) {
        // Never identified in this run: when an earlier run read part of it (a stream of its
        // device + inode not finished), that stream counts what it had not read (accountVanished,
        // identify): not counted twice here.
        auto held = store_.hasUnfinishedFile(static_cast<int64_t>(f.key.first),
                                             static_cast<int64_t>(f.key.second));
        if (!held) return std::unexpected(held.error());
        if (*held) lost = 0;
    }
    f.storedStream = false;
    if (auto r = countLost(txn, f, lost); !r) return r;
    if (auto r = txn.ensure(); !r) return r;
    size_t finished = finished_.size();
    int64_t row = f.stream ? f.stream->state().id : 0;
    if (auto r = retire(f, false); !r) return r;
    if (finished_.size() > finished) {  // a copy may have them
        finished_.back().lost = lost;
        finished_.back().row = row;
    }
    f.offset = 0;
    f.skipping = false;
    f.verify.clear();
    f.tail.clear();
    f.tailAt = -1;
    f.head.clear();
    f.hashed = false;
    f.marks.clear();
    f.prefixLen = 0;
    f.prefix = PrefixHasher{};
    f.keys.clear();  // its entries in byPrefix_ are stale
    f.keyed = 0;
    return {};
}

db::Result<void> FileTail::countLost(Txn& txn, Followed& f, uint64_t bytes) {
    if (bytes == 0) return {};
    if (auto r = txn.ensure(); !r) return r;
    int64_t row = 0;
    if (f.stream) {
        row = f.stream->state().id;
    } else {
        // Never identified (its first line incomplete): a row of its own keeps the count.
        SourceIdentity id;
        id.path = f.path;
        id.device = static_cast<int64_t>(f.key.first);
        id.inode = static_cast<int64_t>(f.key.second);
        id.fingerprint = "(removed before its first line)";
        auto st = store_.source(id);
        if (!st) return std::unexpected(st.error());
        if (auto r = store_.finishSource(st->id); !r) return r;
        row = st->id;
    }
    if (auto r = addLost(row, static_cast<int64_t>(bytes)); !r) return r;
    f.lostPending += bytes;
    return {};
}

db::Result<void> FileTail::addLost(int64_t row, int64_t delta) {
    if (delta == 0) return {};
    lostStale_ = true;
    return store_.addLostBytes(row, delta);
}

void FileTail::refreshLost() {
    auto rows = store_.fileLosses();
    if (!rows) return;  // stays stale: read again at the next poll
    lostByFile_.clear();
    lostTotal_ = 0;
    for (const auto& r : *rows) {
        auto n = static_cast<uint64_t>(std::max<int64_t>(r.bytes, 0));
        lostByFile_[Key{static_cast<dev_t>(r.device), static_cast<ino_t>(r.inode)}] += n;
        lostTotal_ += n;
    }
    lostStale_ = false;
    lostAt_ = Clock::now();
}

db::Result<bool> FileTail::poll(Txn& txn) {
    // Watched: only the files inotify reported written and those with more to read, unless
    // a scan, a tick or too many events ask for all (a pump per event batch; with 5 000
    // followed files, one fstat() each made a pump cost milliseconds under a busy writer).
    const bool all = !watched_ || pollAll_ || scanDue_;
    pollAll_ = false;
    if (scanDue_) scan();
    bool more = false;
    auto now = Clock::now();
    // Retention may drop counted sources, `gpufault ingest` count: read again now and then.
    constexpr auto kLostRefresh = std::chrono::seconds(10);
    if (!txn.open() && (lostStale_ || now - lostAt_ >= kLostRefresh)) refreshLost();
    pollUntil_ = now + budget_;
    ++polls_;
    indexHeads();
    // The followed streams first (a truncation since the last look finishes a stream, which
    // a copy found below then continues), then the files to identify.
    for (auto it = files_.begin(); it != files_.end();) {
        Followed* f = it->second.get();
        if (!f->stream || !(all || f->written || f->more)) {
            ++it;
            continue;
        }
        f->written = f->more = false;
        auto r = pollFile(txn, it, now);
        if (!r) return r;
        if (*r) f->more = true;  // not finished (pollFile erases only files read to the end)
        more = more || *r;
    }
    auto r = identifyNew(txn, now);
    if (!r) return r;
    more = more || *r;
    if (checkVanished_ && seenComplete_)
        if (auto r = accountVanished(txn); !r) return std::unexpected(r.error());
    return more;
}

db::Result<bool> FileTail::identifyNew(Txn& txn, Clock::time_point now) {
    struct Waiting {
        bool had = false;  // had its turn in this round
        int64_t size = 0;
        struct timespec ctime {};
        Key key{};
    };
    std::vector<Waiting> fresh;
    bool due = false;  // a file had no turn in this round yet
    waiting_ = false;
    for (const auto& [k, f] : files_) {
        if (f->stream) continue;
        waiting_ = waiting_ || !f->ignored;
        if (f->polled == polls_) continue;
        // Its size at the last scan, else at its last look (or when found): not looked at
        // again for the order, only at its turn (8 000 files waiting: 8 000 fstat() a poll).
        const bool scanned = f->scanned >= 0;
        fresh.push_back({f->turn >= round_,
                         scanned ? f->scanned : std::max(f->size, f->found),
                         scanned ? f->scannedCtime : f->ctime,
                         k});
        due = due || (f->turn < round_ && !f->ignored);
    }
    if (!due && !fresh.empty()) {  // every file had its turn: a new round
        ++round_;
        for (auto& w : fresh) w.had = false;
    }
    // Those without a turn in this round first (round-robin: files whose first line stays
    // unfinished cannot take the turns of every poll; hostile review 144, MED 1), the largest
    // first among them: a file no larger than another of the same bytes is its copy, and waits
    // for it (copyWaits). Of one size, the one changed first: a byte copy is written after its
    // original (by the inode, a copy of a reused lower inode went first, was read from its
    // start, and the original waited as its copy; hostile review 144, MED 4).
    std::stable_sort(fresh.begin(), fresh.end(), [](const Waiting& a, const Waiting& b) {
        if (a.had != b.had) return !a.had;
        if (a.size != b.size) return a.size > b.size;
        if (a.ctime.tv_sec != b.ctime.tv_sec) return a.ctime.tv_sec < b.ctime.tv_sec;
        return a.ctime.tv_nsec < b.ctime.tv_nsec;
    });
    // At least kIdentifyMin, then for what is left of the poll's budget, or half a budget when
    // the followed streams spent it: thousands of streams read first would otherwise leave
    // kIdentifyMin turns a poll (8 000 new files: 1 000 polls).
    const auto until = std::max(pollUntil_, Clock::now() + budget_ / 2);
    bool more = false;
    size_t looked = 0;
    for (const auto& w : fresh) {
        auto it = files_.find(w.key);
        if (it == files_.end() || it->second->stream || it->second->polled == polls_) continue;
        if (!it->second->ignored) {
            if (looked >= kIdentifyMin && Clock::now() >= until) {
                more = true;  // the rest next poll, after the loop committed and answered
                break;
            }
            ++looked;
        }
        it->second->turn = round_;
        it->second->scanned = -1;  // its turn looks: `size` is newer
        Followed* f = it->second.get();
        auto r = pollFile(txn, it, now);
        if (!r) return r;
        if (*r) f->more = true;  // identified with more to read: the next poll goes on
        more = more || *r;
    }
    return more;
}

db::Result<bool> FileTail::pollFile(Txn& txn,
                                    std::map<Key, std::unique_ptr<Followed>>::iterator& it,
                                    Clock::time_point now) {
    Followed& f = *it->second;
    f.polled = polls_;
    commitBreak_ = true;  // the loop commits after this poll; elsewhere a read goes on
    auto r = read(txn, f);
    commitBreak_ = false;
    if (!r) return r;
    if (f.stream) indexPrefix(f, f.fingerprint, f.size);  // grown: a copy of it may come
    if (f.renamed && f.stream)  // its new name is stored with the next checkpoint
        if (auto e = txn.ensure(); !e) return std::unexpected(e.error());
    bool gone = f.links == 0;  // read() looked (one fstat() a file a poll)
    auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - f.changed);
    if ((!f.matched || gone) && !*r && static_cast<uint64_t>(idle.count()) >= idleCloseMs_) {
        // Renamed out of the patterns or deleted, read to its end and idle: finished. A
        // deleted file never identified (its first line incomplete) takes its bytes along.
        if (gone && !f.stream && !f.copyWait && !f.ignored)
            if (auto e = countLost(txn, f, static_cast<uint64_t>(f.size)); !e)
                return std::unexpected(e.error());
        if (f.stream)
            if (auto e = txn.ensure(); !e) return std::unexpected(e.error());
        if (auto e = retire(f, true); !e) return std::unexpected(e.error());
        if (f.lostPending > 0) ++vanishedStreams_;  // its count, to commit
        it = files_.erase(it);
        if (overCap_ > 0) scanDue_ = true;  // a slot for a file over files.max_open
        return false;
    }
    if (f.stream && f.matched && !gone && !*r && (f.size > f.offset || f.skipping) &&
        static_cast<uint64_t>(idle.count()) >= idleCloseMs_ && rotatedAway(f)) {
        // Rotated (renamed within the patterns, or a copytruncate copy) and another file
        // now at its stream's path: its job writes there, the partial last line of this
        // one never gets its newline. Taken as it is (LAG reaches 0), the file followed on.
        if (auto e = txn.ensure(); !e) return std::unexpected(e.error());
        if (feedLast(f))
            logLine(
                5,
                fmt::format("{}: rotated, its last line has no newline: stored as it is", f.path));
        if (f.stream->error()) return std::unexpected(*f.stream->error());
    }
    ++it;
    return *r;
}

db::Result<void> FileTail::accountVanished(Txn& txn) {
    constexpr int64_t kRows = 4096;  // per pass; the rest at the next poll
    auto rows = store_.unfinishedFiles(kRows);
    if (!rows) return std::unexpected(rows.error());
    std::set<int64_t> followed;
    std::set<std::string> heads;  // first lines of followed streams (their copies)
    for (const auto& [k, f] : files_)
        if (f->stream) {
            followed.insert(f->stream->state().id);
            heads.insert(f->fingerprint);
        }
    for (const auto& f : retired_) followed.insert(f->stream->state().id);
    bool undecided = static_cast<int64_t>(rows->size()) == kRows;
    for (const auto& r : *rows) {
        const auto& id = r.identity;
        bool ours = false;
        for (const auto& g : globs_)
            ours = ours || ::fnmatch(g.c_str(), id.path.c_str(), FNM_PATHNAME | FNM_PERIOD) == 0;
        if (!ours || followed.count(r.state.id) || !id.device || !id.inode) continue;
        Key key{static_cast<dev_t>(*id.device), static_cast<ino_t>(*id.inode)};
        if (seen_.count(key)) {
            auto it = files_.find(key);
            if (it == files_.end()) continue;  // there, not followed (cap, hard links, open)
            if (!it->second->stream) {
                undecided = true;  // not identified yet: it may still be this stream
                continue;
            }
            // The inode holds another stream now: this one was truncated (or deleted and its
            // inode reused) while the daemon was down.
        }
        if (heads.count(id.fingerprint)) continue;  // a copy of it may hold its bytes
        if (auto e = txn.ensure(); !e) return e;
        // Only marked complete: its prefix hash and earlier checkpoints stay, for a copy of it
        // that is not identified yet (written while the daemon started, its first line
        // incomplete at this scan) to continue it. (Written back from this row, which does not
        // load them, they were erased, and such a copy was read from its start.)
        const SourceState& done = r.state;
        if (auto e = store_.finishSource(done.id); !e) return e;
        if (auto e = addLost(done.id, std::max<int64_t>(done.size - done.offset, 0)); !e)
            return e;
        ++vanishedStreams_;
    }
    checkVanished_ = undecided;
    return {};
}

db::Result<void> FileTail::flushIdle(Txn& txn) {
    for (auto& [k, f] : files_) {
        if (!f->stream) continue;
        if (auto r = txn.ensure(); !r) return r;
        f->stream->flushIdle();
        if (f->stream->error()) return std::unexpected(*f->stream->error());
    }
    return {};
}

uint64_t FileTail::uncommittedLines() const {
    // A size not recorded yet counts as a line: the checkpoint keeps what was seen (a partial
    // last line), which a restart counts lost if the file is gone by then.
    uint64_t n = retired_.size() + vanishedStreams_;
    for (const auto& [k, f] : files_)
        if (f->stream)
            n += f->stream->uncommittedLines() + (f->resumed || f->renamed ? 1 : 0) +
                 (f->size != f->checkpointedSize || f->lostPending > 0 ? 1 : 0);
        else if (f->lostPending > 0)
            ++n;  // a count of a file not identified (again) yet
    return n;
}

db::Result<void> FileTail::checkpoint() {
    for (auto& [k, f] : files_)
        if (f->stream && (f->stream->uncommittedLines() > 0 || f->size != f->checkpointedSize ||
                          f->lostPending > 0 || f->renamed)) {
            if (f->renamed)
                if (auto r = store_.setSourcePath(f->stream->state().id, f->path); !r) return r;
            // While a long line is read (fed at its newline), a restart reads it again whole.
            int64_t end = f->skipping ? f->longAt : f->offset;
            if (auto r = writeCheckpoint(*f, end, false, f->size); !r) {
                // A `gpufault ingest` of this file committed since: the loop rolls back and
                // starts again from the store's checkpoint (its lines are not counted twice).
                if (f->stream->conflicted())
                    return std::unexpected(db::Error{fmt::format(
                        "another ingest or gpufaultd is writing source {}; nothing of this "
                        "batch was stored",
                        f->path)});
                return r;
            }
            f->checkpointedSize = f->size;
        }
    return {};
}

void FileTail::committed() {
    for (auto& [k, f] : files_) {
        if (f->stream) f->stream->committed();
        f->resumed = false;
        f->renamed = false;
        f->lostPending = 0;
    }
    vanishedStreams_ = 0;
    held_.clear();  // the store takes writes again: the files' own rows from now on
    if (lostStale_) refreshLost();  // counts changed in what was just committed
    for (auto& f : retired_) retiredEvidence_ += f->sum.evidenceTotal();
    retired_.clear();
}

void FileTail::reset() {
    auto rows = status();  // this run's rows, and the rows held from an earlier reset
    held_.clear();
    for (auto& s : rows) {
        const bool held = s.error.starts_with("store error");
        const bool followed = !s.key.empty() && s.error.empty() && s.not_followed == 0 &&
                              s.key != "file (finished files)";
        if (!held && !followed) continue;
        if (followed)
            s.error = "store error: as at the failure; read again once the store takes writes";
        held_.push_back(std::move(s));
    }
    files_.clear();
    retired_.clear();
    finished_.clear();  // what they read was rolled back
    scanDue_ = true;
    checkVanished_ = true;
    vanishedStreams_ = 0;
    lostStale_ = true;  // counts rolled back: read again outside the transaction
}

std::vector<StreamStatus> FileTail::status() const {
    std::vector<StreamStatus> out;
    uint64_t shownLost = 0;
    for (const auto& [k, f] : files_) {
        StreamStatus s;
        s.source = "file";
        s.name = f->path;
        s.position = f->stream ? fmt::format("offset {}", f->stream->state().offset)
                   : f->ignored  ? "skipped (compressed)"
                   : f->copyWait ? fmt::format("waiting: a copy of {} (its bytes are read there; "
                                               "this file only if that one is truncated, "
                                               "renamed or deleted)",
                                               f->copyOf.empty() ? "a followed file" : f->copyOf)
                                 : "waiting for a first line";
        s.lines = f->carriedLines + f->sum.lines;
        s.evidence = f->carriedEvidence + f->sum.evidenceTotal();
        s.lag = static_cast<uint64_t>(std::max<int64_t>(f->size - f->offset, 0));
        if (auto l = lostByFile_.find(k); l != lostByFile_.end()) s.lost_bytes = l->second;
        shownLost += s.lost_bytes;
        s.active = f->matched;
        s.key = keyText(k.first, k.second);
        out.push_back(std::move(s));
    }
    if (!held_.empty()) {  // files not followed again since a store error
        std::set<std::string> followed;
        for (const auto& [k, f] : files_) followed.insert(keyText(k.first, k.second));
        for (const auto& h : held_)
            if (!followed.contains(h.key)) out.push_back(h);
    }
    size_t shown = 0;
    for (const auto& [path, why] : problems_) {
        if (shown++ == kProblemsShown) {
            StreamStatus s;
            s.source = "file";
            s.name = fmt::format("({} more files not followed)",
                                 problems_.size() - kProblemsShown + problemsUnkept_);
            s.position = s.error = "not followed";
            s.not_followed = problems_.size() - kProblemsShown + problemsUnkept_;
            out.push_back(std::move(s));
            break;
        }
        StreamStatus s;
        s.source = "file";
        s.name = path;
        s.position = s.error = why;
        s.not_followed = 1;
        out.push_back(std::move(s));
    }
    if (lostTotal_ > shownLost) {
        // Files not followed now (finished: renamed away, deleted) keep counting: the store's
        // totals.
        StreamStatus s;
        s.source = "file";
        s.name = "(finished files)";
        s.position = "-";
        s.lost_bytes = lostTotal_ - shownLost;
        s.active = false;
        s.key = "file (finished files)";
        out.push_back(std::move(s));
    }
    return out;
}

void FileTail::carry(const CarriedCounters& before) {
    carried_ = before;  // applied to the files the first scan finds again (lost: stored)
}

std::vector<FileTail::OpenFile> FileTail::openFiles() const {
    std::vector<OpenFile> out;
    for (const auto& d : carriedOpen_) {  // a reload again before the first scan
        int fd = ::fcntl(d.fd, F_DUPFD_CLOEXEC, 0);
        if (fd >= 0) out.push_back({d.path, d.dev, d.ino, fd});
    }
    for (const auto& [k, f] : files_) {
        if (f->fd < 0 || f->ignored) continue;
        int fd = ::fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
        if (fd >= 0) out.push_back({f->path, k.first, k.second, fd});
    }
    return out;
}

void FileTail::adoptCarried(std::set<Key>* seen) {
    size_t open = 0;
    for (const auto& [k, f] : files_) open += f->fd >= 0 ? 1 : 0;
    for (const auto& d : carriedOpen_) {
        Key key{d.dev, d.ino};
        // Found again by the scan, over the cap, or still at its path (out of the patterns
        // now: left at its checkpoint, as before the reload).
        struct stat fst {}, pst {};
        bool there = ::fstat(d.fd, &fst) == 0 && fst.st_nlink > 0 &&
                     ::lstat(d.path.c_str(), &pst) == 0 && pst.st_dev == d.dev &&
                     pst.st_ino == d.ino;
        if (files_.count(key) || open >= maxOpen_ || there) {
            ::close(d.fd);
            continue;
        }
        auto f = std::make_unique<Followed>();
        f->path = d.path;
        f->key = key;
        f->fd = d.fd;
        f->matched = false;  // deleted or out of the patterns: finished once read and idle
        if (auto c = carried_.find(keyText(key.first, key.second)); c != carried_.end()) {
            f->carriedLines = c->second.lines;
            f->carriedEvidence = c->second.evidence;
            carried_.erase(c);
        }
        files_.emplace(key, std::move(f));
        if (seen) seen->insert(key);
        ++open;
    }
    carriedOpen_.clear();
}

db::Result<void> FileTail::finishDeleted(Txn& txn, Clock::time_point deadline) {
    // Carried across a reload and no scan since: a stop right after a SIGHUP (hostile review
    // 9, HIGH 1). Those still linked stay at their checkpoints, for a restart to find.
    adoptCarried(nullptr);
    for (auto it = files_.begin(); it != files_.end();) {
        Followed& f = *it->second;
        struct stat st {};
        if (f.fd < 0 || f.ignored || f.copyWait || ::fstat(f.fd, &st) != 0 || st.st_nlink != 0) {
            ++it;
            continue;
        }
        bool more = true;
        while (more && Clock::now() < deadline) {
            pollUntil_ = std::min(Clock::now() + budget_, deadline);
            auto r = read(txn, f);
            if (!r) return std::unexpected(r.error());
            more = *r;
        }
        const bool cut = more && ::fstat(f.fd, &st) == 0 && st.st_size > f.offset;
        if (cut) {
            // Out of time: nothing can read the rest after this process, so it is lost (from
            // the last whole line read: the rest is no last line to store as it is).
            auto unread = static_cast<uint64_t>(st.st_size - f.offset);
            logLine(4,
                    fmt::format("stop: {} was deleted with {} bytes not read yet: counted lost",
                                f.path,
                                unread));
            if (auto e = countLost(txn, f, unread); !e) return e;
        }
        if (!f.stream) {  // never identified (its first line incomplete): as at any stop
            ++it;
            continue;
        }
        if (auto e = txn.ensure(); !e) return e;
        if (auto e = retire(f, !cut); !e) return e;
        if (f.lostPending > 0) ++vanishedStreams_;
        it = files_.erase(it);
    }
    return {};
}

void FileTail::carryOpen(std::vector<OpenFile> files) {
    for (const auto& d : carriedOpen_) ::close(d.fd);
    carriedOpen_ = std::move(files);
    scanDue_ = true;
}

std::vector<int64_t> FileTail::sourceIds() const {
    std::vector<int64_t> ids;
    for (const auto& [k, f] : files_)
        if (f->stream) ids.push_back(f->stream->state().id);
    for (const auto& f : retired_) ids.push_back(f->stream->state().id);
    return ids;
}

uint64_t FileTail::evidenceStored() const {
    uint64_t n = retiredEvidence_;
    for (const auto& [k, f] : files_) n += f->sum.evidenceTotal();
    return n;
}

}  // namespace gpufault::daemon
