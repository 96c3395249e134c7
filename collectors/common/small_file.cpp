#include "ingest/small_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpufault {

namespace {

const char* kindOf(mode_t m) {
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

}  // namespace

std::expected<std::string, std::string> readSmallFile(const std::string& path, size_t max_bytes) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return std::unexpected(fmt::format("{}: {}", path, std::strerror(errno)));
    struct Close {
        int fd;
        ~Close() { ::close(fd); }
    } close{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return std::unexpected(fmt::format("{}: {}", path, std::strerror(errno)));
    if (!S_ISREG(st.st_mode))
        return std::unexpected(fmt::format("{}: {}, not read", path, kindOf(st.st_mode)));
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::unexpected(fmt::format("{}: {}", path, std::strerror(errno)));
        if (n == 0) return out;
        out.append(buf, static_cast<size_t>(n));
        if (out.size() > max_bytes)
            return std::unexpected(fmt::format("{}: larger than {} bytes, not read", path, max_bytes));
    }
}

}  // namespace gpufault
