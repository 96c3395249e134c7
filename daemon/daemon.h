// gpufaultd: the state shared by the start-up steps, the event loop and the teardown.
#pragma once

// clang-format off
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
// clang-format on
#include <boost/asio.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "daemon/control.h"
#include "daemon/core_marker.h"
#include "daemon/source.h"
#include "daemon/worker.h"
#include "schema/store.h"

namespace gpufault::daemon {

class FileTail;
class KmsgSource;
class JournalSource;
class AllocDirSource;

/// Writes one log line to stderr with its sd-daemon priority prefix (journald reads it).
/// `prio` is a syslog level: 3 error, 4 warning, 5 notice, 6 info, 7 debug.
void logLine(int prio, const std::string& msg);

/// Bytes the store occupies: the database file plus its write-ahead log.
uint64_t storeFileBytes(const std::string& path);

/// Everything the daemon holds. Steps fill it in order; teardown empties it in reverse.
struct State {
    std::string config_path;
    Config cfg;
    boost::asio::io_context io;
    std::optional<Store> store;
    std::unique_ptr<Txn> txn;
    std::vector<std::unique_ptr<Source>> sources;
    FileTail* files = nullptr;  ///< owned by `sources`
    KmsgSource* kmsg = nullptr;
    JournalSource* journal = nullptr;
    AllocDirSource* allocs = nullptr;
    std::unique_ptr<ControlServer> control;
    /// Re-correlation and diagnoses, on its own thread and store connection (daemon/worker.h).
    std::unique_ptr<Worker> worker;
    /// The core the worker is reading, named beside the store (daemon/core_marker.h), and the
    /// cores that killed earlier runs (read at start): not read again once they killed two.
    std::shared_ptr<CoreReadMarker> core_marker;
    std::vector<MarkedCore> core_killers;
    /// Control servers replaced by a reload: kept (closed) until exit, because handlers of
    /// their connections may still be queued and refer to them.
    std::vector<std::unique_ptr<ControlServer>> retired_control;
    std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
    std::string store_error;  ///< the last store failure while it lasts ("" = healthy)
    uint64_t commits = 0;
    int exit_code = 0;
    /// When SIGTERM or SIGINT was taken (the teardown's budget counts from there).
    std::optional<std::chrono::steady_clock::time_point> stop_asked;
};

/// The outcome of one start-up step (after Falco's run_result): `proceed` false stops the
/// start-up; the teardown runs in any case; `exit_code` is the process's status then.
struct StepResult {
    bool proceed = true;
    int exit_code = 0;
    std::string error;
    static StepResult ok() { return {}; }
    static StepResult fatal(int code, std::string msg) { return {false, code, std::move(msg)}; }
};

/// Start-up steps, in order (daemon/steps.cpp).
StepResult loadConfigStep(State& s);
StepResult openStoreStep(State& s);
StepResult openSourcesStep(State& s);
StepResult openControlStep(State& s);
/// Starts the worker thread on the store of `s.cfg` (after openStoreStep: the store exists and
/// is migrated). Its completed passes are posted to the loop (watchers hear of new incidents).
StepResult startWorkerStep(State& s);
/// Teardown steps, run in order whatever happened: commit what is pending, let the worker
/// finish a pass until `kFinalCorrelation` after the signal and join it, close sources, the
/// socket and the store (its write-ahead log left to the next writer after a signal: a
/// checkpoint there took 0.6 s of the 2 s a stop may take).
void flushStep(State& s);
void stopWorkerStep(State& s);
void closeStep(State& s);

/// How long after SIGTERM the exit lets the worker recompute incidents (a larger store is left
/// to the next start). Counted from the signal, not from the end of the final commit: the stop
/// takes at most about this long, as the 2 s rule of issue 3 asks.
inline constexpr std::chrono::milliseconds kFinalCorrelation{1000};

/// How long after SIGTERM the stop reads deleted files held open (FileTail::finishDeleted);
/// the rest of them is counted lost. Leaves the final commit and kFinalCorrelation their time.
inline constexpr std::chrono::milliseconds kDeletedReadBudget{600};

/// Runs the event loop until SIGTERM/SIGINT (daemon/loop.cpp): reads sources, commits in
/// batches, re-correlates, reloads on SIGHUP, pings the watchdog, writes metrics.
void runLoop(State& s);

}  // namespace gpufault::daemon
