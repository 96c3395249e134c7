#include "daemon/core_marker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "daemon/daemon.h"

namespace gpufault::daemon {

namespace {

constexpr size_t kMaxRead = 1u << 20;  ///< bytes read of either file
constexpr size_t kMaxKillers = 256;    ///< cores the list keeps (the last ones)

/// Parses one decimal field of `s` at `at` up to the next space (then past it).
template <class T>
bool field(std::string_view s, size_t& at, T& out) {
    auto end = s.find(' ', at);
    if (end == std::string_view::npos) return false;
    auto r = std::from_chars(s.data() + at, s.data() + end, out);
    if (r.ec != std::errc() || r.ptr != s.data() + end) return false;
    at = end + 1;
    return true;
}

// A record: `file DEATHS DEV INO SIZE MTIME_NS PATH` (PATH to the record's end: spaces and
// newlines kept) or `pending DEATHS ID`. The list separates records with NUL, which no path
// holds.
std::optional<MarkedCore> parseRecord(std::string_view s) {
    size_t at = 0;
    if (s.starts_with("file ")) {
        MarkedCoreFile f;
        at = 5;
        uint64_t dev = 0, ino = 0;
        if (field(s, at, f.deaths) && field(s, at, dev) && field(s, at, ino) &&
            field(s, at, f.size) && field(s, at, f.mtime_ns) && at < s.size()) {
            f.dev = static_cast<dev_t>(dev);
            f.ino = static_cast<ino_t>(ino);
            f.path = std::string(s.substr(at));
            return f;
        }
    } else if (s.starts_with("pending ")) {
        MarkedPendingCore p;
        at = 8;
        std::string t(s);
        t += ' ';
        if (field(t, at, p.deaths) && field(t, at, p.id) && at == t.size()) return p;
    }
    return std::nullopt;
}

std::string record(const MarkedCore& c) {
    if (const auto* f = std::get_if<MarkedCoreFile>(&c))
        return fmt::format("file {} {} {} {} {} {}",
                           f->deaths,
                           static_cast<uint64_t>(f->dev),
                           static_cast<uint64_t>(f->ino),
                           static_cast<int64_t>(f->size),
                           f->mtime_ns,
                           f->path);
    const auto& p = std::get<MarkedPendingCore>(c);
    return fmt::format("pending {} {}", p.deaths, p.id);
}

bool sameCore(const MarkedCore& a, const MarkedCore& b) {
    const auto* x = std::get_if<MarkedCoreFile>(&a);
    const auto* y = std::get_if<MarkedCoreFile>(&b);
    if (x && y)
        return x->path == y->path && x->dev == y->dev && x->ino == y->ino && x->size == y->size &&
               x->mtime_ns == y->mtime_ns;
    const auto* p = std::get_if<MarkedPendingCore>(&a);
    const auto* q = std::get_if<MarkedPendingCore>(&b);
    return p && q && p->id == q->id;
}

/// The content of the regular file at `path` (at most kMaxRead bytes), opened without
/// following a link or blocking on a FIFO; nullopt when there is none. Anything but a regular
/// file is logged and ignored.
std::optional<std::string> readSmall(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        if (errno != ENOENT)
            logLine(4, fmt::format("{}: {} (ignored)", path, std::strerror(errno)));
        return std::nullopt;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        logLine(4, fmt::format("{}: not a regular file (ignored)", path));
        return std::nullopt;
    }
    std::string s(kMaxRead, '\0');
    size_t got = 0;
    while (got < s.size()) {
        ssize_t n = ::read(fd, s.data() + got, s.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    ::close(fd);
    s.resize(got);
    return s;
}

/// Writes `content` to `path` through a temporary file, fsync'd, renamed over it.
bool writeAtomic(const std::string& path, const std::string& content) {
    std::string tmp = path + ".tmp";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool ok = fd >= 0 &&
              ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
    // fsync: the marker must be on disk before the read it guards can kill the process.
    ok = ok && ::fsync(fd) == 0;
    if (fd >= 0) ::close(fd);
    ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
    if (!ok) {
        logLine(4,
                fmt::format("{}: {} (a core that kills gpufaultd may be read again at its next "
                            "start)",
                            path,
                            std::strerror(errno)));
        ::unlink(tmp.c_str());
    }
    return ok;
}

}  // namespace

std::string CoreReadMarker::listFile() const {
    std::string f = file_;
    if (f.ends_with("reading-core")) f.resize(f.size() - 12);
    return f + "cores-that-killed";
}

std::vector<MarkedCore> CoreReadMarker::takeKillers() {
    std::vector<MarkedCore> killers;
    if (auto list = readSmall(listFile())) {
        std::string_view rest(*list);
        while (!rest.empty()) {
            auto end = rest.find('\0');
            if (auto c = parseRecord(rest.substr(0, end))) killers.push_back(std::move(*c));
            if (end == std::string_view::npos) break;
            rest.remove_prefix(end + 1);
        }
    }
    auto marker = readSmall(file_);
    ::unlink(file_.c_str());
    if (!marker) return killers;
    auto died = parseRecord(*marker);
    if (!died) {
        logLine(4, fmt::format("{}: not a marker of a core being read (removed)", file_));
        return killers;
    }
    auto it = std::find_if(
        killers.begin(), killers.end(), [&](const auto& k) { return sameCore(k, *died); });
    if (it == killers.end()) {
        if (killers.size() >= kMaxKillers) killers.erase(killers.begin());
        killers.push_back(*died);
        it = killers.end() - 1;
    }
    std::visit([](auto& c) { ++c.deaths; }, *it);
    died_ = *it;
    std::string out;
    for (const auto& k : killers) out += record(k) + '\0';
    writeAtomic(listFile(), out);
    return killers;
}

void CoreReadMarker::begin(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;  // gone: its reading says so
    MarkedCoreFile f{path,
                     st.st_dev,
                     st.st_ino,
                     st.st_size,
                     int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                     0};
    writeAtomic(file_, record(f));
}

void CoreReadMarker::begin(const MarkedPendingCore& pending) {
    writeAtomic(file_, record(MarkedPendingCore{pending.id, 0}));
}

void CoreReadMarker::end() {
    if (::unlink(file_.c_str()) != 0 && errno != ENOENT)
        logLine(4, fmt::format("{}: {}", file_, std::strerror(errno)));
}

int deathsOf(const std::vector<MarkedCore>& killers, const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return 0;
    MarkedCoreFile now{path,
                       st.st_dev,
                       st.st_ino,
                       st.st_size,
                       int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec,
                       0};
    for (const auto& k : killers)
        if (sameCore(k, now)) return std::get<MarkedCoreFile>(k).deaths;
    return 0;
}

int deathsOfPending(const std::vector<MarkedCore>& killers, int64_t id) {
    for (const auto& k : killers)
        if (const auto* p = std::get_if<MarkedPendingCore>(&k); p && p->id == id) return p->deaths;
    return 0;
}

}  // namespace gpufault::daemon
