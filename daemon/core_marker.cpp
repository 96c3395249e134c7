#include "daemon/core_marker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>

#include "daemon/daemon.h"

namespace gpufault::daemon {

namespace {

/// Parses one unsigned or signed decimal field of `s` at `at` (then past its space).
template <class T>
bool field(std::string_view s, size_t& at, T& out) {
    auto end = s.find(' ', at);
    if (end == std::string_view::npos) return false;
    auto r = std::from_chars(s.data() + at, s.data() + end, out);
    if (r.ec != std::errc() || r.ptr != s.data() + end) return false;
    at = end + 1;
    return true;
}

}  // namespace

// The marker's one line: `file ATTEMPT DEV INO SIZE MTIME_NS PATH` (PATH to the end of the
// file, so a name with spaces or newlines is kept whole) or `pending ATTEMPT ID`.
std::optional<MarkedCore> CoreReadMarker::takeLeftover() {
    std::ifstream in(file_, std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    ::unlink(file_.c_str());
    size_t at = 0;
    if (s.starts_with("file ")) {
        MarkedCoreFile f;
        at = 5;
        uint64_t dev = 0, ino = 0;
        if (field(s, at, f.attempt) && field(s, at, dev) && field(s, at, ino) &&
            field(s, at, f.size) && field(s, at, f.mtime_ns) && at < s.size()) {
            f.dev = static_cast<dev_t>(dev);
            f.ino = static_cast<ino_t>(ino);
            f.path = s.substr(at);
            return f;
        }
    } else if (s.starts_with("pending ")) {
        MarkedPendingCore p;
        at = 8;
        s += ' ';
        if (field(s, at, p.attempt) && field(s, at, p.id) && at == s.size()) return p;
    }
    logLine(4, fmt::format("{}: not a marker of a core being read (removed)", file_));
    return std::nullopt;
}

void CoreReadMarker::write(const std::string& line) {
    std::string tmp = file_ + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = fd >= 0 && ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    // fsync: the marker must be on disk before the read it guards can kill the process.
    ok = ok && ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    ok = ok && ::rename(tmp.c_str(), file_.c_str()) == 0;
    if (!ok) {
        logLine(4,
                fmt::format("{}: {} (a core that kills gpufaultd may be read again at its next "
                            "start)",
                            file_,
                            std::strerror(errno)));
        ::unlink(tmp.c_str());
    }
}

void CoreReadMarker::begin(const std::string& path, int attempt) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;  // gone: its reading says so
    write(fmt::format("file {} {} {} {} {} {}",
                      attempt,
                      static_cast<uint64_t>(st.st_dev),
                      static_cast<uint64_t>(st.st_ino),
                      static_cast<int64_t>(st.st_size),
                      int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                      path));
}

void CoreReadMarker::begin(const MarkedPendingCore& pending) {
    write(fmt::format("pending {} {}", pending.attempt, pending.id));
}

void CoreReadMarker::end() {
    if (::unlink(file_.c_str()) != 0 && errno != ENOENT)
        logLine(4, fmt::format("{}: {}", file_, std::strerror(errno)));
}

bool sameCoreFile(const MarkedCoreFile& m, const std::string& path) {
    struct stat st {};
    return m.path == path && ::lstat(path.c_str(), &st) == 0 && st.st_dev == m.dev &&
           st.st_ino == m.ino && st.st_size == m.size &&
           int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec == m.mtime_ns;
}

}  // namespace gpufault::daemon
