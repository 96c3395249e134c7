// inotify(7) events for the followed files' directories (file_watch.h).
#include "daemon/sources/file_watch.h"

#include <sys/inotify.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpufault::daemon {

WatchEvents drainWatchEvents(int fd) {
    WatchEvents w;
    alignas(struct inotify_event) char buf[16384];
    // At most 64 reads: a writer faster than this loop cannot keep it here (the descriptor
    // stays readable; the event loop comes back after its pump).
    for (int reads = 0; reads < 64; ++reads) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        const auto got = static_cast<size_t>(n);
        for (size_t at = 0; at < got;) {
            struct inotify_event ev {};
            if (got - at < sizeof ev) {
                w.names = true;
                break;
            }
            std::memcpy(&ev, buf + at, sizeof ev);
            if (got - at - sizeof ev < ev.len) {
                w.names = true;
                break;
            }
            const char* p = buf + at + sizeof ev;  // the name: ev.len bytes, NUL-padded
            at += sizeof ev + ev.len;
            if (ev.mask & (IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE)) w.names = true;
            // Dropped events may have held a directory's own move or deletion.
            if (ev.mask &
                (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED | IN_Q_OVERFLOW)) {
                w.lost = true;
                w.names = true;
                const int wd = (ev.mask & IN_Q_OVERFLOW) ? -1 : ev.wd;
                if (std::find(w.lostWatches.begin(), w.lostWatches.end(), wd) ==
                    w.lostWatches.end())
                    w.lostWatches.push_back(wd);
            }
            if (!(ev.mask & (IN_MODIFY | IN_CLOSE_WRITE))) continue;
            w.contents = true;
            std::pair<int, std::string> f{ev.wd, std::string(p, ::strnlen(p, ev.len))};
            if (std::find(w.written.begin(), w.written.end(), f) != w.written.end()) continue;
            if (w.written.size() < WatchEvents::kWrittenMax)
                w.written.push_back(std::move(f));
            else
                w.manyWritten = true;
        }
    }
    return w;
}

bool inotifySeesEveryChange(const std::string& dir) {
    struct statfs s {};
    if (::statfs(dir.c_str(), &s) != 0) return false;
    // linux/magic.h's values (ZFS's from OpenZFS's zfs_vfsops.h).
    switch (static_cast<uint32_t>(s.f_type)) {
        case 0xEF53u:      // ext2, ext3, ext4
        case 0x58465342u:  // XFS
        case 0x9123683Eu:  // Btrfs
        case 0x01021994u:  // tmpfs
        case 0xF2F52010u:  // F2FS
        case 0x2FC12FC1u:  // ZFS
            return true;
        default:
            return false;
    }
}

}  // namespace gpufault::daemon
