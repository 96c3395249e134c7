// inotify(7) events for the followed files' directories (file_watch.h).
#include "daemon/sources/file_watch.h"

#include <sys/inotify.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace gpufault::daemon {

WatchEvents drainWatchEvents(int fd) {
    WatchEvents w;
    alignas(struct inotify_event) char buf[16384];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (size_t at = 0; at < static_cast<size_t>(n);) {
            struct inotify_event ev {};
            if (static_cast<size_t>(n) - at < sizeof ev) {
                w.names = true;
                break;
            }
            std::memcpy(&ev, buf + at, sizeof ev);
            at += sizeof ev + ev.len;
            if (ev.mask & IN_Q_OVERFLOW) w.names = true;
            if (ev.mask & (IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE | IN_ATTRIB))
                w.names = true;
            if (ev.mask & (IN_MODIFY | IN_CLOSE_WRITE)) w.contents = true;
            if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT | IN_IGNORED)) {
                w.lost = true;
                w.names = true;
            }
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
