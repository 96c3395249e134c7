// Follows core directories: systemd-coredump's files (`core.COMM.UID.BOOTID.PID.USEC.zst`),
// apport's `*.crash` reports, plain `core`/`core.PID` files and GPU cores (CUDA's
// `core_*.nvcudmp`, ROCr's `gpucore.PID`). The loop only scans; each new file is handed to the
// worker thread (daemon/worker.h), which reads it (unwound in the limited child) and stores it
// with its crash's source in a transaction of its own, then re-correlates.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "daemon/core_marker.h"
#include "daemon/source.h"
#include "daemon/worker.h"
#include "ingest/ingest_crash.h"

namespace gpufault::daemon {

/// A directory scanner (readdir on each poll, at most once per `interval`). A file is taken
/// once its size and mtime stayed the same for one scan and it is older than 2 s (systemd
/// renames a finished core into place; apport writes its report in place), and handed to
/// `submit` (the worker's queue). A symbolic link is never followed: skipped with a warning and
/// counted in status(); files are opened with O_NOFOLLOW. A file that cannot be read is logged and
/// skipped until it changes; one still queued when the daemon exits is found again by the next
/// start.
class CoreDirSource final : public Source {
  public:
    CoreDirSource(std::vector<std::string> dirs,
                  CrashOptions opt,
                  std::chrono::milliseconds interval,
                  std::function<void(WorkerJob)> submit);

    /// Each core is named in `marker` while it is read (nullptr: not). `killers`: the cores
    /// that killed earlier runs; one that killed kMaxCoreReadAttempts runs is skipped while
    /// unchanged (logged, counted in status).
    void guardReads(std::shared_ptr<CoreReadMarker> marker, std::vector<MarkedCore> killers) {
        marker_ = std::move(marker);
        killers_ = std::move(killers);
    }

    db::Result<bool> poll(Txn& txn) override;
    db::Result<void> flushIdle(Txn&) override { return {}; }
    uint64_t uncommittedLines() const override { return 0; }
    db::Result<void> checkpoint() override { return {}; }
    void committed() override {}
    void reset() override;
    std::vector<StreamStatus> status() const override;
    std::vector<int64_t> sourceIds() const override { return {}; }
    /// Cores stored (the worker re-correlates after each by itself).
    uint64_t evidenceStored() const override;

  private:
    /// (device, inode, size, mtime ns): a file's state when it was last looked at.
    using FileState = std::tuple<dev_t, ino_t, off_t, int64_t>;
    /// Shared with the jobs, which may outlive the source (a reload replaces it).
    struct Counters {
        mutable std::mutex mu;
        std::vector<uint64_t> perDir;  ///< cores stored per directory
        uint64_t errors = 0, queued = 0;
        uint64_t symlinks = 0;  ///< symbolic links skipped (never followed)
        uint64_t killed = 0;    ///< cores not read again: the previous run died reading them
        /// Cores the store could not take (full, locked, an I/O error: SQLite's code says so),
        /// read again by a later scan (the worker adds, scan() takes them).
        std::vector<std::string> retry;
    };
    /// A core to read again after a store error: its attempts so far, and the scan from which.
    struct Retry {
        int attempts = 0;
        uint64_t from_scan = 0;
    };
    void scan();

    std::vector<std::string> dirs_;
    CrashOptions opt_;
    std::chrono::milliseconds interval_;
    std::function<void(WorkerJob)> submit_;
    std::chrono::steady_clock::time_point lastScan_{};
    std::set<std::pair<std::string, FileState>> seen_, pending_;
    std::map<std::string, Retry> retries_;  ///< by path
    uint64_t scans_ = 0;
    std::shared_ptr<Counters> counters_;
    std::shared_ptr<CoreReadMarker> marker_;
    std::vector<MarkedCore> killers_;
};

}  // namespace gpufault::daemon
