#include "collectors/common/small_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
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

FileError systemError(int err) {
    FileError e;
    e.err = err;
    return e;
}

FileError notRegular(mode_t m) {
    FileError e;
    e.why = FileError::Why::NotRegular;
    e.kind = kindOf(m);
    return e;
}

FileError tooLarge(uint64_t size, uint64_t cap) {
    FileError e;
    e.why = FileError::Why::TooLarge;
    e.size = size;
    e.cap = cap;
    return e;
}

}  // namespace

std::string FileError::text() const {
    switch (why) {
        case Why::NotRegular:
            return fmt::format("{}, not read", kind);
        case Why::TooLarge:
            return fmt::format("larger than {} bytes, not read", cap);
        case Why::System:
            break;
    }
    return std::strerror(err);
}

std::expected<RegularFile, FileError> RegularFile::open(const std::string& path) {
    struct stat pre {};
    if (::stat(path.c_str(), &pre) != 0) return std::unexpected(systemError(errno));
    if (!S_ISREG(pre.st_mode)) return std::unexpected(notRegular(pre.st_mode));
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return std::unexpected(systemError(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        return std::unexpected(systemError(e));
    }
    if (!S_ISREG(st.st_mode)) {  // replaced between the two looks
        ::close(fd);
        return std::unexpected(notRegular(st.st_mode));
    }
    return RegularFile(fd, st);
}

RegularFile::~RegularFile() {
    if (fd_ >= 0) ::close(fd_);
}

std::expected<std::string, FileError> RegularFile::read(size_t max_bytes) {
    auto size = static_cast<uint64_t>(std::max<off_t>(st_.st_size, 0));
    if (size > max_bytes) return std::unexpected(tooLarge(size, max_bytes));
    // Sized for the whole file and one byte more (that read tells the end, or a file that grew);
    // doubled when a file (procfs: size 0) holds more.
    std::string out(std::min<uint64_t>(size > 0 ? size + 1 : 4096, uint64_t{max_bytes} + 1), '\0');
    size_t got = 0;
    for (;;) {
        if (got == out.size()) out.resize(std::min(out.size() * 2, max_bytes + 1));
        ssize_t n = ::read(fd_, out.data() + got, out.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return std::unexpected(systemError(errno));
        if (n == 0) break;
        got += static_cast<size_t>(n);
        if (got > max_bytes) return std::unexpected(tooLarge(got, max_bytes));
    }
    out.resize(got);
    return out;
}

std::expected<std::string, std::string> readSmallFile(const std::string& path, size_t max_bytes) {
    auto fail = [&](const FileError& e) {
        return std::unexpected(fmt::format("{}: {}", path, e.text()));
    };
    auto f = RegularFile::open(path);
    if (!f) return fail(f.error());
    auto text = f->read(max_bytes);
    if (!text) return fail(text.error());
    return std::move(*text);
}

}  // namespace gpufault
