// Follows runtime log files matching glob patterns: new files, growth, rotation by rename and
// by copytruncate, truncation and deletion; a partial last line is held until its newline.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
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
/// and finished once idle. Compressed files (gzip, zstd, xz, bzip2 magic) are skipped.
class FileTail final : public Source {
  public:
    /// `window`: dispatches kept per runtime thread; `idle_close_ms`: how long a file that no
    /// longer matches (renamed, deleted) must stay unchanged before it is finished.
    FileTail(Store& store, std::vector<std::string> globs, int window, uint64_t idle_close_ms);
    ~FileTail() override;

    /// Next poll() re-expands the patterns (called on the poll timer and on inotify events).
    void rescanSoon() { scanDue_ = true; }
    /// The directories the patterns look into (for inotify watches).
    std::vector<std::string> watchDirs() const;

    db::Result<bool> poll(Txn& txn) override;
    uint64_t uncommittedLines() const override;
    db::Result<void> checkpoint() override;
    void committed() override;
    void reset() override;
    std::vector<StreamStatus> status() const override;
    uint64_t evidenceStored() const override;
    std::vector<int64_t> sourceIds() const override;

  private:
    struct Followed;
    using Key = std::pair<dev_t, ino_t>;
    void scan();
    db::Result<bool> read(Txn& txn, Followed& f);
    db::Result<bool> identify(Txn& txn, Followed& f, int64_t size);
    db::Result<void> retire(Followed& f, bool feed_partial);
    /// Finishes the stream of a truncated file; it is read again from 0 as a new stream.
    db::Result<void> truncated(Txn& txn, Followed& f);
    /// The file still starts with its stream's first line.
    static bool headIntact(const Followed& f);

    Store& store_;
    std::vector<std::string> globs_;
    int window_;
    uint64_t idleCloseMs_;
    bool scanDue_ = true;
    std::map<Key, std::unique_ptr<Followed>> files_;
    std::vector<std::unique_ptr<Followed>> retired_;  ///< finished, checkpoint not committed
    std::vector<char> buf_;
    uint64_t retiredEvidence_ = 0, retiredLost_ = 0;
};

}  // namespace gpufault::daemon
