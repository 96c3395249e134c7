// Follows core directories: systemd-coredump's files (`core.COMM.UID.BOOTID.PID.USEC.zst`),
// apport's `*.crash` reports, plain `core`/`core.PID` files and GPU cores (CUDA's
// `core_*.nvcudmp`, ROCr's `gpucore.PID`). Each new file is read (unwound
// in the limited child) and stored with its crash's source, in the daemon's transaction.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/source.h"
#include "ingest/ingest_crash.h"

namespace gpufault::daemon {

/// A directory scanner (readdir on each poll, at most once per `interval`). A file is taken
/// once its size and mtime stayed the same for one scan and it is older than 2 s (systemd
/// renames a finished core into place; apport writes its report in place). A file that
/// cannot be read is logged and skipped until it changes.
class CoreDirSource final : public Source {
  public:
    CoreDirSource(Store& store,
                  std::vector<std::string> dirs,
                  CrashOptions opt,
                  std::chrono::milliseconds interval);

    db::Result<bool> poll(Txn& txn) override;
    db::Result<void> flushIdle(Txn&) override { return {}; }
    uint64_t uncommittedLines() const override { return uncommitted_; }
    db::Result<void> checkpoint() override { return {}; }
    void committed() override;
    void reset() override;
    std::vector<StreamStatus> status() const override;
    std::vector<int64_t> sourceIds() const override { return {}; }
    uint64_t evidenceStored() const override { return stored_; }

  private:
    /// (device, inode, size, mtime ns): a file's state when it was last looked at.
    using FileState = std::tuple<dev_t, ino_t, off_t, int64_t>;
    void scan();

    Store& store_;
    std::vector<std::string> dirs_;
    CrashOptions opt_;
    std::chrono::milliseconds interval_;
    std::chrono::steady_clock::time_point lastScan_{};
    std::set<std::string> queue_;  ///< ready to read, path order
    std::set<std::pair<std::string, FileState>> seen_, pending_, uncommittedSeen_;
    uint64_t uncommitted_ = 0, stored_ = 0, errors_ = 0;
    std::vector<uint64_t> perDir_;  ///< cores stored per directory
};

}  // namespace gpufault::daemon
