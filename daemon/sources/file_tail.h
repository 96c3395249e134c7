// Follows runtime log files matching glob patterns: new files, growth, rotation by rename and
// by copytruncate, truncation and deletion; a partial last line is held until its newline (one
// over 1 MiB is read on, and fed at its newline as `gpufault ingest` takes it: LongLine).
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "daemon/source.h"
#include "ingest/stream.h"

namespace gpufault::daemon {

/// Tails the regular files matching `globs` (glob(7); symbolic links are not followed). A file
/// is one source, identified by device + inode + the fingerprint of its first line
/// (sourceFingerprint), so it is found again after a rename or a daemon restart as long as a
/// pattern still matches its new name: include rotated names (`job.log*`) in the patterns.
/// A file renamed or deleted while followed is read to its end through the open descriptor
/// and finished once idle; a file rotated away (renamed within the patterns, or a copy of a
/// stream of another path) while another file is at its stream's path gets its partial last
/// line stored as it is, with a warning, once idle. Truncation is seen by the size, or by the
/// first line or the last kTail bytes read when the file grew past the read offset again
/// between two looks; after one, each line read again under a stored line's number is checked
/// against that line's end (checkGeneration): the first that differs starts a new numbering
/// after the stored lines. Compressed files (gzip, zstd, xz, bzip2 magic) are skipped.
/// Limits: at most `max_open` files are followed at once (one descriptor each; compressed
/// files are skipped and hold none); a regular file with more than one hard link is not
/// followed unless `follow_hardlinks` (a user could link a file they may read into a followed
/// directory, and the daemon reads as root). A file not followed (open failed, over the cap,
/// hard links) shows in status() with the reason and is logged once, not at every scan. New
/// files are identified the largest first (of one size, the one changed first), kIdentifyMin a
/// poll and more while its time budget lasts: thousands appearing at once are taken over several
/// polls, with commits between.
/// Lost bytes (status `lost_bytes`): what the daemon saw (a size) and had not read when the
/// bytes disappeared: at a truncation, size at the last look − offset read; a deleted file
/// never identified (a partial first line), its size; after a restart, from the checkpoints:
/// a stream whose file is gone, or truncated below its offset, counts its recorded size − its
/// offset. A copy that continues the stream gives back what it holds of them. Each count is
/// added to the stream's `sources.lost_bytes` in the transaction that finishes (or resumes)
/// it: the store's sum is exact across kills. status shows the stored totals, committed: per
/// followed file (every stream its device + inode held), the rest as "(finished files)".
/// copytruncate: a new file with the first line of a followed stream, no larger than it and
/// the same as its start, is a copy: it waits until that stream is finished (truncated,
/// renamed away, deleted), then resumes where the stream ended when its bytes up to there are
/// the same (a hash of what each stream read, and of its last kMarks line ends, is kept for 60
/// s), in that stream's row unless a followed file still uses it. Each checkpoint also stores the
/// hash of the file's bytes before it (sources.prefix_hash): after a restart, or when a kill undid
/// the resume, a new file whose first line is a stored stream's and whose bytes before that
/// stream's checkpoint hash to the stored value continues that stream (the store moves it to the
/// copy; lines after the checkpoint are numbered as before, so none is stored twice), unless the
/// stream's own file is still there as large: followed and holding those bytes, the copy waits as
/// above; out of the patterns, the new file is another file of the same bytes. A file found again
/// by device + inode + first line whose bytes before the checkpoint differ (truncated and rewritten
/// while the daemon was down, or a reused inode) is read from its start. A copy smaller than the
/// checkpoint (its original was read past what was copied before the truncation, and a kill undid
/// the resume) matches one of the places before it (sources.earlier: the last four checkpoints, and
/// the line ends 1, 2, 4 … 512 lines before it). Not recognised: a copy smaller than all of those,
/// a copy compressed before the daemon saw it (compressed files are skipped), checkpoints beyond
/// kHashCap (64 MiB). Taken for the original: a byte copy of a file new to the daemon too (no
/// stream of it followed nor stored) whose change time is not later than the original's (made
/// in the same clock tick as its last write where file times are coarse, or the original
/// chmod-ed, renamed or linked since): the original waits as its copy and, written to, is read
/// from its start. Taken for a copy: a new file of the same bytes as a stream whose file is gone
/// (the same job output again).
class FileTail final : public Source {
  public:
    /// `window`: dispatches kept per runtime thread; `idle_close_ms`: how long a file that no
    /// longer matches (renamed, deleted) must stay unchanged before it is finished.
    FileTail(Store& store,
             std::vector<std::string> globs,
             int window,
             uint64_t idle_close_ms,
             size_t max_open = 512,
             bool follow_hardlinks = false);
    ~FileTail() override;

    /// The commit rule of gpufaultd (issue 3: `lines` pending or `ms` after the first
    /// uncommitted line): a poll stops at a line end once a stream holds `lines` uncommitted
    /// lines or has parsed for `ms` (at most file_tail::kPollBudget), so that the loop commits in
    /// between. Defaults: 10 000 lines, kPollBudget.
    void setCommitRule(uint64_t lines, uint64_t ms);

    /// Files the daemon writes itself, never followed even when a pattern matches them: each
    /// path, its SQLite companions (`-wal`, `-shm`, `-journal`) and the metrics file's
    /// temporaries (`.tmp`, `.XXXXXX`). Compared after resolving the directory (symbolic links,
    /// `..`); shown in status as not followed.
    void excludeOwn(std::vector<std::string> paths);

    /// Next poll() re-expands the patterns (inotify: a name changed in a watched directory).
    void rescanSoon() { scanDue_ = true; }
    /// The poll timer (files.poll_interval_ms): the patterns are expanded again at this tick,
    /// or, while setWatched(true) holds (inotify reports their directories' names), only every
    /// kWatchedRescan and while the last scan could not open a file or read a directory (that
    /// may change without an event). Every followed file is read at this tick's poll (a file
    /// written where no watched directory sees it: renamed out of them, another hard link, or
    /// deleted with a new file made at its name).
    void tick();
    /// inotify reported `path` written: while setWatched(true) holds, a poll reads only the
    /// followed files reported written, those with more to read, and all of them after a
    /// scan, at a tick and after writtenMany(); else every followed file at every poll. A file
    /// waiting to be identified gets its new size (it orders their turns), as a scan gives.
    void written(const std::string& path);
    /// More files were reported written than an event batch lists: the next poll reads all,
    /// after a scan while files wait to be identified.
    void writtenMany();
    /// `watched`: every pattern's directory is watched by inotify on a filesystem where it sees
    /// every change (inotifySeesEveryChange()); false: polled at every tick (the default).
    void setWatched(bool watched) { watched_ = watched; }
    /// The directories the patterns look into (for inotify watches).
    std::vector<std::string> watchDirs() const;
    /// True when watchDirs() holds every pattern's directory (none has a wildcard).
    bool watchDirsCoverEveryPattern() const;
    /// setWatched()'s value; whether the last scan could not open a file or found one with
    /// other links (then every tick expands the patterns); how often the patterns were
    /// expanded since the start or the last reload (all in status: "files").
    bool watched() const { return watched_; }
    bool retrying() const { return retryScan_; }
    uint64_t scans() const { return scans_; }
    /// How often the patterns are expanded while setWatched(true) holds (a safety net).
    static constexpr std::chrono::seconds kWatchedRescan{30};

    db::Result<bool> poll(Txn& txn) override;
    db::Result<void> flushIdle(Txn& txn) override;
    uint64_t uncommittedLines() const override;
    db::Result<void> checkpoint() override;
    void committed() override;
    void reset() override;
    std::vector<StreamStatus> status() const override;
    uint64_t evidenceStored() const override;
    std::vector<int64_t> sourceIds() const override;
    void carry(const CarriedCounters& before) override;

    /// A file held open, handed to the FileTail that replaces this one at a reload: its path,
    /// device + inode and a descriptor of its own.
    struct OpenFile {
        std::string path;
        dev_t dev = 0;
        ino_t ino = 0;
        int fd = -1;
    };
    /// Every file this FileTail holds open (compressed ones excepted), each with a new
    /// descriptor (dup; the caller hands them to carryOpen() or closes them): deleted or not at
    /// this instant, since one may be deleted or renamed away before the next FileTail's first
    /// scan (hostile review 9, HIGH 2).
    std::vector<OpenFile> openFiles() const;
    /// The files the FileTail before a reload held open: the first scan (or a stop before it)
    /// follows, through these descriptors (taken), those it does not find by their device +
    /// inode under the patterns (deleted, renamed away, or no longer matched by them), so they
    /// are read to their end and finished as that one would have, not given up as gone with
    /// what it had not read counted lost (hostile review 3, HIGH 2). The others are closed.
    void carryOpen(std::vector<OpenFile> files);
    /// At a stop: each deleted file held open (nothing can read it after this process),
    /// carried ones not yet taken by a scan included (hostile review 9, HIGH 1), is read into
    /// `txn` and finished, its held records and last dispatches stored, rather than left at a
    /// checkpoint no restart can read from. Reading stops at `deadline` (SIGTERM must end within
    /// 2 s): what a file still held then is counted in its lost bytes and logged (hostile review
    /// 144: 192 MB of faults took past the unit's 10 s and were lost uncounted). Store errors are
    /// returned.
    db::Result<void> finishDeleted(Txn& txn, std::chrono::steady_clock::time_point deadline);

  private:
    using Clock = std::chrono::steady_clock;
    struct Followed;
    using Key = std::pair<dev_t, ino_t>;
    /// A line end of a stream: its offset, the lines before it, FNV-1a of bytes [0, offset).
    struct Mark {
        int64_t offset = 0, line = 0;
        uint64_t hash = 0;
    };
    /// A stream finished (truncated, renamed away, deleted) lately: a copy of it resumes after
    /// what it read (copytruncate).
    struct Finished {
        std::string fingerprint;
        std::vector<Mark> marks;  ///< the last is where it ended
        std::chrono::steady_clock::time_point at;
        Key key{};          ///< its file
        uint64_t lost = 0;  ///< bytes its truncation counted lost, which a copy may hold
        int64_t row = 0;    ///< its source id (where `lost` was counted: sources.lost_bytes)
        std::string path;   ///< where it was written (its Followed::origin)
        /// what its row holds after its last checkpoint (StreamIngest::expectedPosition())
        std::optional<StoredPosition> stored;
    };
    void scan();
    /// After a restart: unfinished streams of the store whose file is gone from the patterns,
    /// or whose inode now holds another stream, are finished, and what they had seen and not
    /// read counted lost (once: they are marked complete in `txn`).
    db::Result<void> accountVanished(Txn& txn);
    /// A matching file is not followed: why (kept for status(), logged once).
    void problem(const std::string& path, std::string why);
    db::Result<bool> read(Txn& txn, Followed& f);
    db::Result<bool> identify(Txn& txn, Followed& f, int64_t size);
    db::Result<void> retire(Followed& f, bool feed_partial);
    /// The partial last line of `f` (no newline: [f.offset, f.size)) is fed as its last line,
    /// with a warning that it had none; false when there is none.
    bool feedLast(Followed& f);
    /// The over-long line being read (`f.skipping`) is fed as read so far (LongLine) and
    /// `f.skipping` ends; false when there is none.
    bool feedLong(Followed& f);
    /// `f` was rotated (renamed, or copied away: copytruncate) and another file is now at the
    /// path its stream was written under: no newline will end its partial last line.
    static bool rotatedAway(const Followed& f);
    /// Finishes the stream of a truncated file; it is read again from 0 as a new stream.
    db::Result<void> truncated(Txn& txn, Followed& f);
    /// `bytes` of `f` were removed unread: added to its stream's sources.lost_bytes in `txn`
    /// (a file never identified gets a complete row of its own for it) and to status once
    /// committed.
    db::Result<void> countLost(Txn& txn, Followed& f, uint64_t bytes);
    /// Adds `delta` to source `row`'s sources.lost_bytes in the open transaction (negative: a
    /// copy gave bytes back); status() reads the stored totals again once it is committed.
    db::Result<void> addLost(int64_t row, int64_t delta);
    /// status()'s lost bytes from the store (outside a transaction: committed counts only).
    void refreshLost();
    /// Before line [p, p + n) (through its newline, at `at`) is fed: in a file resumed after a
    /// truncation (`f.verify`), a line that is not the one its stream read under that number
    /// (its line end and the hash before it differ) finishes that numbering: the stream goes
    /// on from `at` numbered after the lines stored (its checkpoint in the open transaction).
    db::Result<void> checkGeneration(Followed& f, const char* p, size_t n, int64_t at);
    /// The file still starts with its stream's first line.
    static bool headIntact(const Followed& f);
    /// The file still holds the bytes last read before `f.offset` (true when not known).
    static bool tailIntact(const Followed& f);
    /// Bytes [f.offset - n, f.offset) at `p` were just read: the last kTail are kept.
    static void keepTail(Followed& f, const char* p, size_t n);
    /// Bytes [f.offset, f.offset + n) at `p` were read; `line_end`: they end a line.
    void consumed(Followed& f, const char* p, size_t n, bool line_end);
    /// Bytes [p, p + n) were read (f.offset already past them), all at once: added to `f.hash`
    /// in one piece up to the last kMarks line ends among them, which become marks (the last
    /// ending line `end_line`). The same hash and marks as consumed() of each line, without a
    /// mark and a hash finalisation per line (the cost of a fault flood: 7.7 % of the daemon).
    void consumedBatch(Followed& f, const char* p, size_t n, int64_t end_line);
    /// `f.marks` for a stream resumed at `len` (line `line`; `f.hash` holds bytes [0, len)):
    /// the line ends of its last kMarks lines before it, from the file (a copy made before the
    /// daemon read that far is placed by them), or only `len` when the file disagrees.
    void markPrefix(Followed& f, int64_t len, int64_t line);
    /// The hash of the file's bytes [0, len) (cached for a growing `len`); nullopt if shorter.
    std::optional<uint64_t> prefixHash(Followed& f, int64_t len);
    /// The file starts with a first line of this fingerprint.
    static bool sameHead(const Followed& f, const std::string& fingerprint);
    /// byPrefix_ anew from each followed stream's keys, when stale entries outnumber the live.
    void indexHeads();
    /// `f` (a stream, or a file being identified; first line `fingerprint`), `size` bytes long,
    /// is a candidate of copyWaits() for files whose bytes [0, 2^k) are its own, for each power
    /// of two up to `size` (at most kKeyedMax): the hashes not computed yet are (one read of its
    /// first bytes when it grew past a power of two).
    void indexPrefix(Followed& f, const std::string& fingerprint, int64_t size);
    /// byPrefix_'s key of a file of first line `fingerprint` whose bytes [0, `len`) hash to
    /// `hash`.
    static uint64_t prefixKey(const std::string& fingerprint, int64_t len, uint64_t hash);
    /// The files not identified yet (nor read in this poll) in rounds: those that had no turn
    /// in this round first, the largest first among them, each looked at in turn (pollFile)
    /// while the poll's time budget lasts (at least kIdentifyMin); a file its turn did not
    /// identify (its first line unfinished, a copy waiting) goes to the back, so that files
    /// that stay unfinished cannot take every poll's turns, until a scan sees it changed
    /// (Followed::scanned): an original must go before its copies, whose copyWaits() finds
    /// only identified files. True when there is more to read, or files left for the next
    /// poll.
    db::Result<bool> identifyNew(Txn& txn, Clock::time_point now);
    /// One file's turn in poll(): read, then finished when gone (renamed away, deleted) and
    /// idle, or its partial last line taken when rotated away; `it` is advanced (past an erased
    /// file too). True when it has more to read.
    db::Result<bool> pollFile(Txn& txn,
                              std::map<Key, std::unique_ptr<Followed>>::iterator& it,
                              Clock::time_point now);
    /// True while `c` (not identified yet) may be a copy of a stream still being read.
    db::Result<bool> copyWaits(Txn& txn, Followed& c, const std::string& fingerprint, int64_t size);
    /// Where a copy resumes the stream of source `row` (0: a row of its own), whose last line
    /// was `high`.
    struct Resume {
        Mark at;
        int64_t row = 0, high = 0;
        std::optional<StoredPosition> stored;  ///< what that row holds (`row` > 0)
    };
    /// Where `c`, a copy of a stream finished lately, resumes (nullopt: it is no such copy);
    /// what that stream's truncation counted lost and `c` holds is given back (in the open
    /// transaction). That stream's line ends after it go to `c.verify`: a copy smaller than
    /// where it ended (still being written) reads its lines again under their numbers.
    db::Result<std::optional<Resume>> copyResume(Followed& c,
                                                 const std::string& fingerprint,
                                                 int64_t size);
    /// `f`, truncated below its stream's checkpoint `st` (seen live, or found so after a
    /// restart) and maybe written again: the furthest line end past its first line, of those
    /// its stream read (its in-memory marks, if finished lately; the checkpoint and
    /// sources.earlier), before which the file still holds the bytes read (their hash);
    /// nullopt: none. Lines before it were stored: it resumes there.
    std::optional<Mark> keptPrefix(Followed& f,
                                   const std::string& fingerprint,
                                   const SourceState& st,
                                   int64_t size);
    /// What adoptCopy found: the checkpoint of the stream a copy continues, or that it waits.
    struct Adoption {
        std::optional<SourceState> state;
        bool wait = false;  ///< that stream's own file is still there and holds it
        std::string origin;  ///< the path that stream was written under (wait: the file's)
    };
    /// After a restart (or a kill that undid its in-memory resume): the stream of the store
    /// that `c`, never read before, is a copy of (its first line; its bytes before that
    /// stream's checkpoint hash to the stored prefix hash; the stream not followed now). That
    /// stream is moved to `c` (in the open transaction) and its checkpoint returned; `self`:
    /// the row `c`'s own identity found (skipped).
    db::Result<Adoption> adoptCopy(Followed& c,
                                   const SourceIdentity& id,
                                   int64_t size,
                                   int64_t self);
    /// The hash of bytes [0, offset) of what `f` read (nullopt: not known).
    static std::optional<uint64_t> hashAt(const Followed& f, int64_t offset);
    /// hashAt() of an offset behind the marks (a checkpoint held back by an open block or a
    /// held dispatch): the file's bytes [0, offset) hashed again (`f.prefix`, going forward:
    /// at most kHashCap bytes in all) through a buffer of its own (buf_ may hold the lines
    /// being read). nullopt past what `f` read or kHashCap, or when the file is shorter.
    std::optional<uint64_t> hashBehind(Followed& f, int64_t offset);
    /// `f`'s stream checkpoint with the hash of the bytes before it, into the open transaction.
    db::Result<void> writeCheckpoint(Followed& f, int64_t end, bool complete, int64_t size);
    /// The last of `marks` at or before `offset` (nullptr: none).
    template <typename Marks>
    static const Mark* lastMark(const Marks& marks, int64_t offset);

    /// True when `path` (a regular file a pattern matched) is one of excludeOwn()'s.
    bool isOwn(const std::string& path) const;
    /// A file waiting to be identified, seen at `st` (its lstat): its size and change time
    /// order the turns; changed since its turn, it has one again in this round.
    static void noteWaiting(Followed& f, const struct stat& st);

    Store& store_;
    std::vector<std::string> globs_;
    std::vector<std::string> own_;  ///< excludeOwn(), resolved
    int window_;
    uint64_t idleCloseMs_;
    bool scanDue_ = true;
    bool watched_ = false;    ///< setWatched()
    bool waiting_ = false;    ///< a followed file is not identified yet (at the last poll)
    bool retryScan_ = false;  ///< the last scan: a file not opened or linked, a directory unread
    bool pollAll_ = true;     ///< the next poll reads every followed file (watched mode)
    std::chrono::steady_clock::time_point scannedAt_{};  ///< the last scan()
    uint64_t scans_ = 0;                                 ///< scan()s so far
    std::map<Key, std::unique_ptr<Followed>> files_;
    /// Followed streams (and files being identified) by the hash of their first bytes up to
    /// each power of two (prefixKey(), indexPrefix()): copyWaits() compares a new file of `n`
    /// bytes with those of its bytes up to the largest power of two ≤ n only. Before: every
    /// followed file (3 000 files at once: 17 s in one poll; docs/performance.md, Session 19),
    /// then every one of its first line (8 000 files of one first line: 37.7 s; Session 20).
    /// Entries may be stale: checked where used, dropped by indexHeads().
    std::unordered_map<uint64_t, std::vector<Key>> byPrefix_;
    size_t indexed_ = 0;  ///< entries added to byPrefix_ (stale ones included)
    uint64_t polls_ = 0;                              ///< polls so far (Followed::polled)
    uint64_t round_ = 1;  ///< identification round (Followed::turn): all waiting files had one
    std::vector<std::unique_ptr<Followed>> retired_;  ///< finished, checkpoint not committed
    std::vector<Finished> finished_;                  ///< lately, newest last (copytruncate)
    std::vector<char> buf_;
    std::vector<const char*> ends_;  ///< consumedBatch()'s line ends (kept for its capacity)
    uint64_t retiredEvidence_ = 0;
    size_t maxOpen_;
    bool followHardlinks_;
    std::map<std::string, std::string> problems_;  ///< path → why not followed (last scan)
    size_t problemsUnkept_ = 0;  ///< problems beyond kProblemsKept (counted only)
    size_t unloggedBefore_ = 0;  ///< problems not logged one by one at the last scan
    std::map<std::string, std::string> logged_;    ///< what was logged (once per path)
    size_t overCap_ = 0;                           ///< files over max_open at the last scan
    std::set<Key> seen_;         ///< files the last scan matched (followed or not)
    bool seenComplete_ = false;  ///< the last scan read every directory
    bool checkVanished_ = true;  ///< accountVanished() still to run (after a start or reset)
    uint64_t vanishedStreams_ = 0;  ///< streams finished with a count, not committed yet
    // status()'s lost bytes: the store's sum of sources.lost_bytes, per file (device + inode)
    // and in all (read after a commit that changed them, and every kLostRefresh).
    std::map<Key, uint64_t> lostByFile_;
    /// The followed files' status rows as at the last reset() (a store error rolled back what
    /// they read): shown for the files not followed again yet, until the next commit
    /// (hostile review 17, i3 M1: status listed no file while the store failed).
    std::vector<StreamStatus> held_;
    uint64_t lostTotal_ = 0;
    bool lostStale_ = true;
    std::chrono::steady_clock::time_point lostAt_{};
    CarriedCounters carried_;                      ///< from before a reload, by key
    std::vector<OpenFile> carriedOpen_;            ///< from before a reload (carryOpen())
    /// carriedOpen_ not found under the patterns become followed files (`seen`: their keys
    /// are added); the rest are closed.
    void adoptCarried(std::set<Key>* seen);
    /// Device + inode of the excludeOwn() files (and companions) that exist now.
    std::set<Key> ownKeys() const;
    std::chrono::steady_clock::time_point pollUntil_{};  ///< the current poll's time budget
    uint64_t commitLines_ = 10000;                       ///< setCommitRule()
    /// A read stops at commitLines_ uncommitted lines only in poll()'s own loop, which the
    /// event loop commits after (finishDeleted() reads a file to its end in one go).
    bool commitBreak_ = false;
    std::chrono::milliseconds budget_{100};              ///< setCommitRule(), kPollBudget
};

}  // namespace gpufault::daemon
