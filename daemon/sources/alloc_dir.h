// Follows the preload shim's allocation directory (config `allocations.directory`, by default
// /run/gpufault-alloc, mode 1733): `gpufault-alloc.<pid>.<pidns>.<ticks>.log` (older shims:
// `gpufault-alloc.<pid>.log`) files in it and in its direct
// subdirectories (`gpufault run`'s per-run directories) are stored as allocations while they
// grow, with the rules `gpufault ingest` uses (ingest/ingest_alloc.h), in the daemon's
// transaction. docs/preload.md "Followed by gpufaultd".
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "daemon/source.h"
#include "ingest/ingest_alloc.h"

namespace gpufault::daemon {

/// Any user may create files in the directory, so a file is trusted only when its owner may
/// speak for the pid its name gives: root's files, or files whose owner is the owner of
/// /proc/PID when the daemon first sees them (a process that is gone by then cannot be checked:
/// its file is refused, unless the store already holds that very file — device, inode, `start`
/// line — as after a restart). Only records of that pid are stored. Before each read of a user's
/// file the pid is looked at again: run by another process (another start time) or another uid
/// (the pid was reused), the file is refused from then on; gone, the file is read once more (its
/// last records) and then closed. The end of a recording process is stored (/proc looked at
/// before the read); records of its recording read afterwards are refused (root's files stay
/// followed for a later process of the pid). Symbolic links, files with more than one link and a
/// directory that others may write without the sticky bit are refused.
class AllocDirSource final : public Source {
  public:
    /// What /proc/PID says now: its owner and start time; nullopt when gone.
    struct ProcNow {
        uid_t uid = 0;
        std::optional<uint64_t> start;
    };
    /// `interval`: how often the directory is read again (and a growing file re-read) at most.
    AllocDirSource(Store& store, std::string dir, std::chrono::milliseconds interval);

    /// An inotify event in the directory: read it on the next poll.
    void rescanSoon() { scanDue_ = true; }
    const std::string& dir() const { return dir_; }

    db::Result<bool> poll(Txn& txn) override;
    db::Result<void> flushIdle(Txn&) override { return {}; }
    uint64_t uncommittedLines() const override { return uncommitted_; }
    db::Result<void> checkpoint() override { return {}; }  ///< written with each file's rows
    void committed() override;
    void reset() override;
    std::vector<StreamStatus> status() const override;
    std::vector<int64_t> sourceIds() const override;
    uint64_t evidenceStored() const override { return 0; }  ///< allocations are not records

  private:
    using Key = std::pair<dev_t, ino_t>;
    struct File {
        std::string path;
        int64_t pid = 0;  ///< the pid its name gives (a container's pid: in its namespace)
        /// The pid to look at in gpufaultd's /proc: `pid`, or for a file named for another pid
        /// namespace the pid that process has here (0: not found, /proc cannot tell).
        int64_t proc_pid = 0;
        uid_t uid = 0;
        bool trusted = false;
        off_t size = -1;     ///< as last stored (-1: not yet)
        int64_t mtime = -1;  ///< ns, as last stored
        int64_t source_id = 0;
        /// /proc/PID's start time (clock ticks after boot) when the file was trusted; nullopt
        /// for root's files and files trusted after their process ended.
        std::optional<uint64_t> start;
        bool closed = false;  ///< its process ended and its last records were read
        /// its recording process was found gone (or another process) and its end stored
        bool ended = false;
        uint64_t allocations = 0;  ///< as last stored
        /// Not read again before this: 10 × the time its last read took (a large file that
        /// keeps growing costs the daemon at most ~10 % of a core).
        std::chrono::steady_clock::time_point not_before{};
        bool seen = false;  ///< found by the current scan
    };
    void scan();
    void scanDir(const std::string& dir, int depth);
    /// `pidns`: the pid namespace inode the file's name gives (nullopt: none, an older shim).
    void consider(const std::string& path, int64_t pid, std::optional<uint64_t> pidns);
    /// False (and the file refused from now on) when its pid now runs as another process.
    bool stillItsProcess(File& f);
    /// True when the process that wrote the file's last `start` record surely no longer runs:
    /// it recorded in another boot; or, of our pid namespace, `now` (/proc/PID as looked at)
    /// is gone or runs a process started at another time. A recorder of another pid namespace
    /// (a container's pid: its `start` record names the namespace) is never found gone here
    /// (our /proc does not know its pid); one of a shim that did not name its namespace is
    /// gone when /proc/PID is, or runs a process started after it (a process started before
    /// it cannot have taken its pid: not its pid, unknown).
    bool recorderGone(const File& f, const Key& key, const std::optional<ProcNow>& now) const;
    /// True when the file's last `start` record names a pid namespace other than ours.
    bool otherPidNamespace(const Key& key) const;

    Store& store_;
    std::string bootId_;                ///< this boot's id ("" unknown)
    std::optional<uint64_t> ownPidns_;  ///< the daemon's pid namespace inode
    std::string dir_;
    std::chrono::milliseconds interval_;
    std::chrono::steady_clock::time_point lastScan_{};
    bool scanDue_ = true;
    std::string error_;  ///< why the directory is not followed ("" = followed)
    std::map<Key, File> files_;
    std::set<Key> queue_;                  ///< trusted files that changed since last stored
    std::map<Key, File> uncommittedPrev_;  ///< state before an uncommitted store (reset)
    /// each followed file's parser and checkpoint (dropped on an error or a rollback: rebuilt
    /// from the stored part of the file on its next read)
    std::map<Key, AllocFollowState> follow_;
    std::map<uid_t, size_t> perUser_;  ///< files remembered per owner (root aside)
    std::set<uid_t> overQuota_;        ///< owners told of kMaxFilesPerUser
    std::map<uid_t, uint64_t> refusalsLogged_;
    uint64_t uncommitted_ = 0, stored_ = 0, allocations_ = 0, refused_ = 0, errors_ = 0;
    uint64_t bytesRead_ = 0;  ///< of the followed files, since start (status)
};

}  // namespace gpufault::daemon
