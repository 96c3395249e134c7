// Opening and reading files whose names come from users, logs and cores (`--sysfs-root`,
// `--proc-root`, a configuration path, modules a core names, allocation record files): only
// regular files (opening a FIFO blocks and eats its writer's data, opening a device node runs its
// driver), and never more than a cap.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <string>

namespace gpufault {

/// Why a file was not opened or read.
struct FileError {
    enum class Why { System, NotRegular, TooLarge };
    Why why = Why::System;
    int err = 0;            ///< System: the errno of stat, open, fstat or read
    const char* kind = "";  ///< NotRegular: "a FIFO", "a directory", "a character device", …
    uint64_t size = 0;      ///< TooLarge: the file's size in bytes (or what was read, > cap)
    uint64_t cap = 0;       ///< TooLarge: the cap in bytes
    /// "No such file or directory" (strerror), "a FIFO, not read", "larger than CAP bytes, not
    /// read".
    std::string text() const;
};

/// A regular file open for reading (O_CLOEXEC); the descriptor is closed with it.
class RegularFile {
  public:
    /// Opens `path` (symlinks followed) when it is a regular file: stat(2) before opening, so a
    /// FIFO or device node is refused without being opened; the open is O_NONBLOCK and fstat(2)
    /// checks again what was opened.
    static std::expected<RegularFile, FileError> open(const std::string& path);
    RegularFile(RegularFile&& o) noexcept : fd_(o.fd_), st_(o.st_) { o.fd_ = -1; }
    RegularFile& operator=(RegularFile&&) = delete;
    RegularFile(const RegularFile&) = delete;
    ~RegularFile();

    int fd() const { return fd_; }
    /// fstat(2) of the open file (size, device and inode, times).
    const struct stat& st() const { return st_; }
    /// The whole file from its current offset, at most `max_bytes` bytes: TooLarge when fstat
    /// gave a larger size (nothing read) or when reading passed the cap (it stops one read past
    /// it: procfs files report size 0, and a file may grow while it is read).
    std::expected<std::string, FileError> read(size_t max_bytes);

  private:
    RegularFile(int fd, const struct stat& st) : fd_(fd), st_(st) {}
    int fd_;
    struct stat st_;
};

/// The contents of `path` when it is a regular file (symlinks followed) of at most `max_bytes`
/// bytes (RegularFile::open, then read). Errors (text, naming the path): "PATH: strerror",
/// "PATH: a FIFO, not read" (likewise a directory, a device), "PATH: larger than N bytes, not
/// read".
std::expected<std::string, std::string> readSmallFile(const std::string& path, size_t max_bytes);

}  // namespace gpufault
