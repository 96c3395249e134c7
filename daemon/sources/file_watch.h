// inotify(7) for the followed files' directories: what a batch of events means for the
// patterns, and where inotify can stand in for polling.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gpufault::daemon {

/// What the events read from an inotify descriptor ask for.
struct WatchEvents {
    /// A name appeared or went (IN_CREATE, IN_MOVED_FROM/TO, IN_DELETE), a watch went, or the
    /// kernel's queue overflowed (IN_Q_OVERFLOW: events were dropped): expand the patterns
    /// again. (IN_ATTRIB is not asked for: a chmod or touch storm would expand them at every
    /// batch; files that might change so are looked at every tick: FileTail::tick().)
    bool names = false;
    /// A file was written (IN_MODIFY, IN_CLOSE_WRITE): read those followed files; files still
    /// being identified need a new look at their size.
    bool contents = false;
    /// The files written: (watch descriptor, name in its directory), each once, at most
    /// kWrittenMax; `manyWritten` when there were more (then read every followed file).
    std::vector<std::pair<int, std::string>> written;
    bool manyWritten = false;
    static constexpr size_t kWrittenMax = 256;
    /// A watched directory went (IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT, IN_IGNORED), or
    /// events were dropped (IN_Q_OVERFLOW) that may have said so: a directory made at its path
    /// is not watched; add the watches again. `lostWatches`: the watches that went (-1: the
    /// overflow), each once; one removed on purpose (inotify_rm_watch) is among them too.
    bool lost = false;
    std::vector<int> lostWatches;
};

/// Reads the pending events of the non-blocking inotify descriptor `fd` (until EAGAIN, at most
/// 64 reads of 16 KiB) and says what they ask for. Event records are parsed from their lengths
/// (struct inotify_event); a short or inconsistent record ends the batch with `names` set (look
/// again).
WatchEvents drainWatchEvents(int fd);

/// True when inotify reports every change to files in `dir` made on this machine: `dir` is on
/// ext2/3/4, XFS, Btrfs, tmpfs, F2FS or ZFS (statfs(2) f_type). False for NFS, CIFS, Lustre,
/// GPFS, CephFS, FUSE, overlayfs (writes to an underlying layer are not reported through the
/// overlay) and anything unknown or unreadable: gpufaultd then polls those patterns.
bool inotifySeesEveryChange(const std::string& dir);

}  // namespace gpufault::daemon
