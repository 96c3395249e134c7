// The core gpufaultd's worker is reading, named in a file beside the store, so that a core whose
// reading kills the daemon (an abort in a parser, the OOM killer) is not read again at every
// restart: one hostile file in a directory anyone may write to (/var/crash) must not crash-loop
// the service until systemd gives up on it. Each core that killed a run is counted in a second
// file, kept across restarts: one that killed kMaxCoreReadAttempts runs is not read again while
// it is unchanged (one kill -9 of the daemon does not lose a core).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gpufault::daemon {

/// Runs that may die reading one core before it is skipped.
inline constexpr int kMaxCoreReadAttempts = 2;

/// A core file as it was when its reading began: path, device, inode, size (bytes) and
/// modification time (nanoseconds since the epoch). Changed since, it is another file.
struct MarkedCoreFile {
    std::string path;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    int deaths = 0;  ///< runs that died while reading it
};

/// A queued systemd-coredump entry (Store's pending core id) whose core was being read.
struct MarkedPendingCore {
    int64_t id = 0;
    int deaths = 0;  ///< runs that died while reading it
};

using MarkedCore = std::variant<MarkedCoreFile, MarkedPendingCore>;

/// The marker file `STORE.reading-core` (one record, written and fsync'd by begin() before a
/// core is read, removed by end() after it and at a clean stop) and the list
/// `STORE.cores-that-killed` (the cores that were being read when a run died, each with its
/// count of such runs).
class CoreReadMarker {
  public:
    explicit CoreReadMarker(std::string file) : file_(std::move(file)) {}
    /// At start: the cores that killed earlier runs, the one the marker names (the previous run
    /// died reading it) counted once more; the list is written back and the marker removed.
    /// Both files are read without following links or blocking (a FIFO or a link there is
    /// ignored with a log line), at most 1 MiB; the list keeps the last 256 cores.
    std::vector<MarkedCore> takeKillers();
    /// The core the marker named at takeKillers() (the previous run died reading it), with its
    /// deaths counted; nullopt when that run did not die reading one.
    const std::optional<MarkedCore>& diedReading() const { return died_; }
    /// Names the core file at `path` (lstat now) as being read. A failure to write is logged
    /// and reading goes on (the guard is lost, not the core).
    void begin(const std::string& path);
    /// Names the queued entry `id` as being read.
    void begin(const MarkedPendingCore& pending);
    /// Nothing is being read: the marker is removed.
    void end();
    const std::string& file() const { return file_; }
    /// The list's path: the marker's with `reading-core` replaced by `cores-that-killed`.
    std::string listFile() const;

  private:
    std::optional<MarkedCore> died_;  ///< diedReading()
    std::string file_;
};

/// How many runs died reading the core file now at `path` (0: none, or it changed since).
int deathsOf(const std::vector<MarkedCore>& killers, const std::string& path);
/// How many runs died reading queued core `id`.
int deathsOfPending(const std::vector<MarkedCore>& killers, int64_t id);

}  // namespace gpufault::daemon
