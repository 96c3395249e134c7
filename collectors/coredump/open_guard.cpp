// libdwfl (elfutils 0.188) opens the file names a core records with a plain blocking
// `open(name, O_RDONLY)` (link_map.c report_r_debug, dwfl_segment_report_module.c), out of reach
// of the find_elf callback. This file defines `open` in the executable, which the dynamic linker
// binds libdw's and libelf's calls to; it forwards to the openat system call, and changes the
// flags only in a thread that asked for it (the unwinding child).
#include "collectors/coredump/open_guard.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>

namespace gpufault::coredump {
namespace {
thread_local bool t_regular_only = false;
}  // namespace

void setRegularOpensOnly(bool on) {
    t_regular_only = on;
}

}  // namespace gpufault::coredump

extern "C" int open(const char* path, int flags, ...) {
    mode_t mode = 0;
    if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
        va_list ap;
        va_start(ap, flags);
        mode = static_cast<mode_t>(va_arg(ap, unsigned int));
        va_end(ap);
    }
    if (!gpufault::coredump::t_regular_only)
        return static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path, flags, mode));
    int fd = static_cast<int>(::syscall(SYS_openat, AT_FDCWD, path, flags | O_NONBLOCK, mode));
    if (fd < 0) return fd;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        errno = ENXIO;
        return -1;
    }
    if ((flags & O_NONBLOCK) == 0) {  // as asked, for whoever reads the descriptor
        int fl = ::fcntl(fd, F_GETFL);
        if (fl >= 0) (void)::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    }
    return fd;
}
