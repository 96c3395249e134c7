// Opens made by libdw/libelf while a core is unwound: regular files only, never blocking.
#pragma once

namespace gpufault::coredump {

/// While on in the calling thread, every open(2) the process makes through libc's `open` in that
/// thread (libdwfl opens the paths a core names: its link map's `l_name`s and NT_FILE entries,
/// relative ones against the cwd) adds O_NONBLOCK and fails with ENXIO for anything but a
/// regular file, so a FIFO or device planted at a library's path cannot hold the unwind until
/// its time limit. Off (the default) `open` behaves as libc's.
void setRegularOpensOnly(bool on);

/// RAII form of setRegularOpensOnly(true) for the current scope.
struct RegularOpensOnly {
    RegularOpensOnly() { setRegularOpensOnly(true); }
    ~RegularOpensOnly() { setRegularOpensOnly(false); }
    RegularOpensOnly(const RegularOpensOnly&) = delete;
    RegularOpensOnly& operator=(const RegularOpensOnly&) = delete;
};

}  // namespace gpufault::coredump
