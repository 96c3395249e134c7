// Runs a real gpufaultd in tests, playing the service manager (NOTIFY_SOCKET, WATCHDOG_USEC).
// A followed log directory and the scenarios run over it (start and READY, a store count
// reached, a clean stop, a kill -9 and a restart): followed_log.h.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gpufault::testing {

/// A gpufaultd child process started with `--config PATH`. Its notifications arrive on a
/// datagram socket of our own (NOTIFY_SOCKET), its stderr goes to a file.
class DaemonProcess {
  public:
    /// `dir` holds the notify socket and the stderr file. `watchdog_usec` > 0 sets
    /// WATCHDOG_USEC (and WATCHDOG_PID) as systemd does.
    DaemonProcess(std::string binary, std::string config, std::string dir,
                  uint64_t watchdog_usec = 0);
    ~DaemonProcess();  ///< SIGKILLs a daemon still running

    bool start();
    /// Waits for a notification containing `what` (e.g. "READY=1"); false on timeout.
    bool waitNotify(const std::string& what, std::chrono::milliseconds timeout);
    /// All notifications received so far.
    const std::vector<std::string>& notifications() const { return notes_; }
    /// Sends `sig`; then waitExit().
    void signal(int sig);
    /// Waits for the exit; the status (128+N for signal N), nullopt on timeout.
    std::optional<int> waitExit(std::chrono::milliseconds timeout);
    void kill9();
    pid_t pid() const { return pid_; }
    std::string stderrText() const;

  private:
    void drainNotify(int timeout_ms);
    std::string bin_, config_, dir_, notifyPath_;
    uint64_t watchdogUsec_;
    int notifyFd_ = -1;
    pid_t pid_ = -1;
    std::vector<std::string> notes_;
};

/// One integer from the store at `store_path`, read beside a running daemon (WAL, read-only);
/// -1 when the store or the statement fails or gives no row.
int64_t storeCount(const std::string& store_path, const std::string& sql);

/// A tmpfs mounted at `path` (created) with mount(2) `options` ("size=16m,mode=0755") for a
/// test; unmounted (lazily) by the destructor. mounted() is false where mounting is refused
/// (not root, a container): the test skips, error() says why.
class ScratchTmpfs {
  public:
    ScratchTmpfs(std::string path, const std::string& options);
    ~ScratchTmpfs();
    ScratchTmpfs(const ScratchTmpfs&) = delete;
    ScratchTmpfs& operator=(const ScratchTmpfs&) = delete;
    bool mounted() const { return mounted_; }
    const std::string& error() const { return error_; }

  private:
    std::string path_, error_;
    bool mounted_ = false;
};

/// The rows of `sql` (its first `columns` columns, joined by '|', NULL as "NULL") from the
/// store at `store_path`, read beside a running daemon (WAL, read-only); empty when the store or
/// the statement fails.
std::vector<std::string> storeRows(const std::string& store_path, const std::string& sql,
                                   int columns);

/// Sends one request line to a Unix socket and returns everything read until the server
/// closes or `timeout` passes ("" when it cannot connect).
std::string controlRequest(const std::string& socket_path, const std::string& request,
                           std::chrono::milliseconds timeout = std::chrono::milliseconds(2000));

/// A `watch` client kept open: lines arrive as the daemon commits.
class Watcher {
  public:
    /// Connects to `path` and sends `request` ("watch"); ok() tells whether both worked.
    explicit Watcher(const std::string& path, const std::string& request = "watch");
    ~Watcher();
    Watcher(const Watcher&) = delete;
    Watcher& operator=(const Watcher&) = delete;
    bool ok() const { return ok_; }
    /// The next JSON line, or null after `timeout` or when the daemon closed the connection.
    nlohmann::json next(std::chrono::milliseconds timeout);
    /// True once the daemon has closed the connection (reads end), within `timeout`; lines
    /// still unread are discarded.
    bool closedByPeer(std::chrono::milliseconds timeout);

  private:
    int fd_ = -1;
    bool ok_ = false;
    std::string buf_;
};

/// One journal entry: field → value (systemd.journal-fields(7)).
using JournalFields = std::map<std::string, std::string>;

/// Writes journal entries (export format, systemd-journal-export-formats(7)) into a journal
/// file with systemd-journal-remote, as journald would have stored them; false on failure. A
/// value holding a newline (a stack trace in MESSAGE) is written as a binary field.
bool writeJournal(const std::string& file, const std::vector<JournalFields>& entries);

/// A `_TRANSPORT=kernel` entry of boot 5c040de4… at `mono_us` µs after boot.
JournalFields kernelEntry(uint64_t mono_us, const std::string& msg);

/// A line of `unit`'s standard output (`_TRANSPORT=stdout`, python3[4242]) at `mono_us`.
JournalFields unitEntry(const std::string& unit, uint64_t mono_us, const std::string& msg);

/// Polls `pred` every 10 ms until it holds or `timeout` passes.
template <typename F>
bool eventually(F pred, std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        if (pred()) return true;
        struct timespec ts{0, 10'000'000};
        nanosleep(&ts, nullptr);
    }
    return pred();
}

}  // namespace gpufault::testing
