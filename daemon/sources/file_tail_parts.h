// FileTail's internals shared by file_tail.cpp (following, reading, rotation) and
// file_copy.cpp (identifying a file's stream, copytruncate): limits, the prefix hash, and what
// is kept per followed file. Not a public interface.
#pragma once

#include <ctime>

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "collectors/prefix/line_decoder.h"
#include "daemon/sources/file_tail.h"
#include "ingest/long_line.h"
#include "ingest/prefix_hash.h"

namespace gpufault::daemon::file_tail {

inline constexpr size_t kChunk = 4u << 20;  ///< bytes read per file per poll, at most
/// Lines are parsed for this long per poll, then the poll ends at a line end and says there
/// is more: the loop's other handlers (a SIGTERM, `status`) wait for one budget, not for 4 MiB
/// of fault lines (each a record: seconds on a loaded machine).
inline constexpr auto kPollBudget = std::chrono::milliseconds(100);
/// New files looked at (identified: a store lookup, maybe a checkpoint, then their lines) per
/// poll at least; more only within the poll's time budget (or half a budget when the followed
/// streams spent it). Thousands of files that appear at once are taken over several polls, the
/// loop committing and answering between them.
inline constexpr size_t kIdentifyMin = 8;
inline constexpr size_t kMaxLine = LineDecoder::kMaxLine;
inline constexpr size_t kMarks = 1024;   ///< line ends remembered per stream (copytruncate)
/// Bytes kept of what was read last (before the read offset): a file truncated and written
/// past the offset again between two looks under the same first line is seen by them.
inline constexpr size_t kTail = 128;
inline constexpr size_t kFinished = 32;  ///< finished streams remembered (copytruncate)
/// copyWaits()'s index keys a file by the hash of its bytes [0, 2^k) for each power of two up to
/// its size and at most this many bytes (the first line's fingerprint is taken over as many).
inline constexpr int64_t kKeyedMax = 4096;
inline constexpr auto kFinishedFor = std::chrono::seconds(60);
/// A resumed stream's prefix is hashed up to this many bytes (and checkpoints beyond it have no
/// prefix hash): the same cap as `gpufault ingest`'s (ingest/prefix_hash.h).
inline constexpr int64_t kHashCap = kPrefixHashCap;

/// The prefix hash both readers store with a file's checkpoint (ingest/prefix_hash.h).
using gpufault::PrefixHasher;

using Clock = std::chrono::steady_clock;

}  // namespace gpufault::daemon::file_tail

namespace gpufault::daemon {

/// One followed file (an open descriptor; its stream once the first line identified it).
struct FileTail::Followed {
    std::string path;
    Key key{};
    int fd = -1;
    bool matched = true;   ///< a pattern still names it
    bool ignored = false;  ///< compressed: never parsed
    IngestSummary sum;
    std::unique_ptr<StreamIngest> stream;
    std::string head;    ///< the stream's first line (as fingerprinted), to see truncation
    std::string fingerprint;  ///< the stream's
    /// The path its stream was written under (the original's, for a copy): a file at another
    /// path while another file holds this one has been rotated (renamed, or copied away).
    std::string origin;
    int64_t offset = 0;  ///< next byte to read: the start of a held partial line
    int64_t size = 0;    ///< size at the last poll
    nlink_t links = 1;   ///< its hard links at the last read (0: deleted)
    struct timespec ctime {};  ///< status change time at the last poll (any write moves it)
    /// A line over kMaxLine is being read (its bytes up to `offset`), fed at its newline as
    /// `gpufault ingest` takes it (LongLine: after a '\r', the text after the last one).
    bool skipping = false;
    LongLine longLine;
    int64_t longAt = 0;  ///< where that line starts (checkpoints stop there while it is read)
    std::string tail;     ///< the last (up to kTail) bytes read, ending at `tailAt`
    int64_t tailAt = -1;  ///< where `tail` ends (-1: not known)
    file_tail::Clock::time_point changed = file_tail::Clock::now();
    // copytruncate (see copyWaits, copyResume):
    bool hashed = false;       ///< `hash` has bytes [0, offset) (false: not known)
    file_tail::PrefixHasher hash;
    std::deque<Mark> marks;    ///< after each of the last kMarks lines read
    int64_t prefixLen = 0;     ///< prefixHash()'s cache: `prefix` has bytes [0, prefixLen)
    file_tail::PrefixHasher prefix;
    bool copyWait = false;     ///< a copy of a file still being read: waits for its end
    std::string copyOf;        ///< while copyWait: the path of that file (for status)
    /// Its first line named a stream the store holds, but it was cut short while being
    /// identified (no stream yet): a truncation now loses nothing of it that is counted here;
    /// what that stream had not read is counted (or continued by a copy) by whoever reads the
    /// stored stream next.
    bool storedStream = false;
    /// Truncated and resumed at a line end its stream had read (keptPrefix): that stream's
    /// later line ends (ascending), each line read again checked against them; at the first
    /// that differs the lines are numbered after `high` (a new generation).
    std::vector<Mark> verify;
    int64_t high = 0;          ///< the last line number the stream used before
    bool busy = false;         ///< being identified (copyWaits does not recurse into it)
    /// copyWaits()'s index (FileTail::byPrefix_): the hash of its bytes [0, 2^k) at [k], each
    /// power of two up to `keyed` bytes (indexPrefix()).
    std::vector<uint64_t> keys;
    int64_t keyed = 0;
    int64_t found = 0;         ///< its size (bytes) when a scan found it (identifyNew's order)
    uint64_t polled = 0;       ///< the poll (FileTail::polls_) that read it last
    /// The identification round (FileTail::round_) of its last turn while not identified: a
    /// file whose turn did not identify it waits until every other has had one (identifyNew).
    uint64_t turn = 0;
    /// Its size at a scan since its last turn (-1: none), while not identified: identifyNew's
    /// order. A scan that sees it changed since that turn gives it a turn in this round again
    /// (`turn` 0): an original that was empty at its turn goes before a copy of it found since.
    int64_t scanned = -1;
    /// Its status change time at that scan: of files of one size, the one changed last goes
    /// last (a byte copy is written after its original's last write; before, their inodes
    /// decided, and a copy of the lower inode was taken for the original: hostile review 144,
    /// MED 4).
    struct timespec scannedCtime {};
    bool resumed = false;      ///< resumed after an original's lines: checkpoint to commit
    uint64_t carriedLines = 0, carriedEvidence = 0;  ///< counted before a reload
    int64_t checkpointedSize = -1;  ///< `size` at the last checkpoint written
    uint64_t lostPending = 0;       ///< lost bytes counted, not committed yet
    bool renamed = false;  ///< found under a new name: sources.path written with the checkpoint
    bool written = false;  ///< inotify reported it written since its last poll (watched mode)
    bool more = false;     ///< its last poll stopped before its end (a budget, a commit)
    ~Followed() {
        if (fd >= 0) ::close(fd);
    }
};

}  // namespace gpufault::daemon
