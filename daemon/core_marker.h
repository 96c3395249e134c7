// The core gpufaultd's worker is reading, named in a file beside the store, so that a core whose
// reading kills the daemon (an abort in a parser, the OOM killer) is not read again at every
// restart: one hostile file in a directory anyone may write to (/var/crash) must not crash-loop
// the service until systemd gives up on it. A core is read at most kMaxCoreReadAttempts times
// by runs that die reading it (one kill -9 of the daemon does not lose a core).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

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
    int attempt = 1;  ///< how many runs began reading it (this one included)
};

/// A queued systemd-coredump entry (Store's pending core id) whose core was being read.
struct MarkedPendingCore {
    int64_t id = 0;
    int attempt = 1;  ///< how many runs began reading it (this one included)
};

using MarkedCore = std::variant<MarkedCoreFile, MarkedPendingCore>;

/// The marker file `STORE.reading-core`: one line, written (and fsync'd) by begin() before a
/// core is read and removed by end() after it, and at a clean stop (the teardown). What a
/// start finds there was being read when the previous run died: read once more (attempt + 1),
/// or skipped once kMaxCoreReadAttempts runs died on it.
class CoreReadMarker {
  public:
    explicit CoreReadMarker(std::string file) : file_(std::move(file)) {}
    /// What the previous run left (read once, at start, then removed); nullopt when there is
    /// none or it cannot be parsed (logged).
    std::optional<MarkedCore> takeLeftover();
    /// Names the core file at `path` (lstat now) as being read by the `attempt`th run. A
    /// failure to write is logged and reading goes on (the guard is lost, not the core).
    void begin(const std::string& path, int attempt);
    /// Names the queued entry `id` as being read.
    void begin(const MarkedPendingCore& pending);
    /// Nothing is being read: the marker is removed.
    void end();
    const std::string& file() const { return file_; }

  private:
    void write(const std::string& line);
    std::string file_;
};

/// True when the file at `path` is still the one `m` names (same device, inode, size, mtime).
bool sameCoreFile(const MarkedCoreFile& m, const std::string& path);

}  // namespace gpufault::daemon
