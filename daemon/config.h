// gpufaultd's configuration: /etc/gpufault/gpufaultd.conf (TOML, read with toml++).
// packaging/gpufaultd.conf is the documented default; every key is optional.
#pragma once

#include <cstdint>
#include <expected>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace gpufault::daemon {

/// The daemon's settings, with the defaults of packaging/gpufaultd.conf.
struct Config {
    std::string path;  ///< the file it was read from ("" = built-in defaults)

    std::string store_path = "/var/lib/gpufault/gpufault.db";
    uint64_t max_store_mib = 0;  ///< above this, the least recently written sources are dropped
    uint64_t max_age_days = 0;   ///< sources last written longer ago are dropped (0 = keep)

    uint64_t batch_lines = 10000;  ///< commit after this many lines ...
    uint64_t batch_ms = 50;        ///< ... or this long after the first uncommitted line
    int dispatch_window = 64;      ///< dispatches kept per (process, runtime thread)
    uint64_t correlate_ms = 1000;  ///< incidents recomputed at most this often

    bool kmsg = true;
    std::string kmsg_path = "/dev/kmsg";

    bool journal = false;              ///< the systemd journal instead of /dev/kmsg
    std::string journal_dir;           ///< a journal directory ("" = the local system journal)
    std::vector<std::string> journal_units;  ///< units whose output is read besides the kernel's

    /// Core directories followed (systemd-coredump's /var/lib/systemd/coredump, apport's
    /// /var/crash, a core_pattern directory): new `core.*` files, `.zst` cores, `.crash` reports.
    std::vector<std::string> core_dirs;
    uint64_t core_max_mib = 16384;  ///< a compressed core decompresses into at most this much
    std::string core_tmp_dir;       ///< where ("" = $TMPDIR, else /var/tmp)
    /// Seconds a core's unwinding child may run before it is killed; the child stops itself a
    /// margin before (coredump::childDeadline) and keeps the threads it has (crashing first).
    uint64_t core_unwind_seconds = 60;

    /// The preload shim's directory (libgpufault-preload.so, GPUFAULT_ALLOC_DIR): its
    /// gpufault-alloc.<pid>[.<pidns>.<ticks>].log files are stored as allocations ("" = off). Followed when it
    /// exists at start or reload (the package's tmpfiles.d creates it, mode 1733).
    std::string alloc_dir = "/run/gpufault-alloc";

    std::vector<std::string> file_globs;  ///< runtime logs to tail (glob(7) patterns)
    uint64_t poll_ms = 1000;              ///< stat polling (NFS/Lustre/GPFS: no inotify)
    bool inotify = true;
    uint64_t files_max_open = 512;  ///< files followed at once (one descriptor each)
    bool follow_hardlinks = false;  ///< follow regular files with more than one link

    std::string socket_path = "/run/gpufault/gpufaultd.sock";
    std::string socket_group = "gpufault";  ///< may connect besides root ("" = root only)
    uint64_t max_clients = 64;              ///< control connections at once (watchers included)
    uint64_t idle_timeout_ms = 10000;       ///< a client that has not sent its request by then goes
    uint64_t max_watchers = 16;             ///< `watch` clients at once
    uint64_t watch_queue_kib = 4096;        ///< bytes queued per watcher before lines are dropped

    bool diagnose = true;  ///< the worker diagnoses missing code objects after correlating
    std::string sysfs_root = "/sys";  ///< this machine's GPUs for diagnoses (no recorded devices)
    std::string proc_root = "/proc";

    std::string metrics_path;  ///< Prometheus textfile ("" = none)
    uint64_t metrics_ms = 10000;
    /// The line of each key the file sets ("control.group" → 93): where checkHost() points.
    std::map<std::string, int> lines;
};

/// A configuration error: file, 1-based line (0 when unknown), key and what is wrong.
struct ConfigError {
    ConfigError() = default;
    ConfigError(std::string f, int l, std::string k, std::string m)
        : file(std::move(f)), line(l), key(std::move(k)), message(std::move(m)) {}
    std::string file;
    int line = 0;
    std::string key;
    std::string message;
    /// Further errors of the same file, each as its text() (every error is reported at once).
    std::vector<std::string> more;
    /// "FILE:LINE: KEY: MESSAGE" (parts that are unknown are left out), then one line per
    /// further error.
    std::string text() const;
};

/// What the file asks of this host and the host lacks, each an error naming file, line and
/// key: control.group set to a group that does not exist (only root could connect: a config
/// error, not a warning the daemon prints and goes on), metrics.path in a directory that does
/// not exist (the daemon creates no directory for it), a store.path that exists and is no
/// regular file (a directory). Checked by --check-config, at start-up
/// and at reload, not by parseConfig() (the packaged file names the package's group).
std::vector<ConfigError> checkHost(const Config& c);

/// Parses TOML text (`name` is used in errors). Unknown keys, wrong types and out-of-range
/// values are errors: a typo must not silently switch a source off. Every error of the file is
/// reported: the first in the fields, the others in `more`. A string holding a NUL byte
/// (a `\u0000` escape) is an error ("contains a NUL byte"), and so is a control.socket longer
/// than 107 bytes (sockaddr_un's sun_path less its terminating NUL).
std::expected<Config, ConfigError> parseConfig(std::string_view text, const std::string& name);

/// The largest configuration file read (bytes); packaging/gpufaultd.conf is under 3 KiB.
inline constexpr size_t kMaxConfigBytes = size_t{1} << 20;

/// Reads and parses a configuration file. Errors (file name, no line): missing or unreadable,
/// not a regular file (a FIFO, a directory, a device such as /dev/zero: refused without
/// waiting or reading on), larger than kMaxConfigBytes. String values holding a NUL byte and a
/// too long control.socket are errors of parseConfig().
std::expected<Config, ConfigError> loadConfig(const std::string& path);

}  // namespace gpufault::daemon
