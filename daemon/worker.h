// gpufaultd's worker thread: re-correlation and diagnoses off the event loop. It has its own
// connection to the store (WAL: its reads never block the loop's commits, and it writes in
// transactions of at most 2 000 rows or 20 ms), and runs a pass when the loop says records
// were committed; requests that arrive while it works are coalesced into one more pass.
#pragma once

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <expected>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ingest/recorrelate.h"
#include "schema/store.h"

namespace gpufault::daemon {

struct WorkerOptions {
    std::string store_path;
    bool diagnose = true;  ///< run the diagnoses (analysis/diagnose.h) after each correlation
    /// This machine's GPUs for diagnoses when the store has no recorded devices (as `gpufault
    /// diagnose` finds them).
    std::string sysfs_root = "/sys", proc_root = "/proc";
    size_t max_rows = 2000;                 ///< rows per write transaction at most ...
    std::chrono::milliseconds max_txn{20};  ///< ... and a write transaction open this long
};

/// What `status` shows of the worker (a snapshot).
struct WorkerStatus {
    uint64_t correlations = 0;  ///< passes completed
    uint64_t interrupted = 0;   ///< passes cut by the exit
    uint64_t failed = 0;        ///< passes that ended in a store error (retried on the next)
    uint64_t diagnosed = 0;     ///< diagnoses (re)computed since the start
    bool busy = false;          ///< a pass is running
    bool queued = false;        ///< a pass is requested (runs when the current one ends)
    double last_s = 0;          ///< seconds of the last completed pass, all phases
    double last_correlate_s = 0, last_write_s = 0, last_diagnose_s = 0;
    size_t last_records = 0, last_incidents = 0, last_rows = 0, last_transactions = 0;
    std::string error;       ///< the last failure ("" = none since the last completed pass)
    size_t jobs_queued = 0;  ///< core files waiting to be read
    uint64_t jobs_done = 0;  ///< core files read (stored, unchanged or refused)
};

/// Slow input the loop hands over (a core file to unwind and store): run on the worker's
/// thread with its store connection, in transactions of its own. `stop` says the daemon is
/// exiting. Returns true when it stored records (a correlation pass follows).
using WorkerJob = std::function<bool(Store& store, const std::function<bool()>& stop)>;

/// The result of one completed pass, handed to the `done` callback (on the worker thread).
struct WorkerPass {
    bool incidents_changed = false;  ///< rows were written
    int diagnosed = 0;
};

class Worker {
  public:
    /// Opens the store (read-write, an own connection) and starts the thread. `done` runs on
    /// the worker thread after each completed pass (gpufaultd posts it to its loop). Errors
    /// are the store's, naming its path.
    static std::expected<std::unique_ptr<Worker>, std::string> start(
        WorkerOptions opt, std::function<void(const WorkerPass&)> done);
    /// Stops at once (stop(now)).
    ~Worker();

    /// Records were committed: a pass runs as soon as the worker is free (coalesced).
    void request();
    /// Queues a job; jobs run in order, before a requested pass. Jobs still queued at exit are
    /// dropped (a core directory finds their files again on the next start).
    void submit(WorkerJob job);
    /// Lets a running or requested pass go on until `deadline`, then interrupts it (what was
    /// committed stays; the next start completes it) and joins the thread.
    void stop(std::chrono::steady_clock::time_point deadline);
    WorkerStatus status() const;

  private:
    Worker(WorkerOptions opt, Store store, std::function<void(const WorkerPass&)> done);
    void run();
    bool pass();  ///< false after a store error
    bool stopNow() const;

    WorkerOptions opt_;
    Store store_;
    std::function<void(const WorkerPass&)> done_;
    mutable std::mutex mu_;
    std::condition_variable cv_;
    bool pending_ = false, exiting_ = false;
    std::atomic<int64_t> deadline_{INT64_MAX};  ///< steady_clock ns; meaningful when exiting
    std::atomic<bool> exitingFlag_{false};
    WorkerStatus status_;         ///< under mu_
    std::deque<WorkerJob> jobs_;  ///< under mu_
    std::thread thread_;
};

}  // namespace gpufault::daemon
