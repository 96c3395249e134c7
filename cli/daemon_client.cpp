#include "cli/daemon_client.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gpufault::cli {

namespace {

using Clock = std::chrono::steady_clock;

/// Milliseconds left before `deadline` for poll(2): -1 without one, 0 once it has passed.
int msLeft(Deadline deadline) {
    if (!deadline) return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 1 << 30));
}

}  // namespace

std::expected<int, std::string> connectDaemon(const std::string& path,
                                              const std::string& request,
                                              Deadline deadline) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof a.sun_path)
        return std::unexpected(fmt::format(
            "{}: a socket path must be 1 to {} bytes long", path, sizeof a.sun_path - 1));
    std::memcpy(a.sun_path, path.data(), path.size());
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return std::unexpected(fmt::format("socket: {}", std::strerror(errno)));
    // A Unix socket's connect waits (up to SO_SNDTIMEO) while the listener's backlog is full.
    if (int ms = msLeft(deadline); ms >= 0) {
        ms = std::max(ms, 1);
        timeval tv{ms / 1000, (ms % 1000) * 1000};
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    int rc;
    do rc = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    while (rc != 0 && errno == EINTR && msLeft(deadline) != 0);
    if (rc != 0) {
        int e = errno;
        ::close(fd);
        if (e == EAGAIN || e == EINPROGRESS || e == EINTR)
            return std::unexpected(
                fmt::format("gpufaultd at {} accepted no connection in time", path));
        return std::unexpected(fmt::format(
            "cannot reach gpufaultd at {}: {} (is it running? systemctl status gpufaultd; or "
            "pass --socket)",
            path,
            std::strerror(e)));
    }
    std::string line = request + "\n";
    // MSG_NOSIGNAL: a daemon that refuses us closes at once; its reply says why.
    (void)!::send(fd, line.data(), line.size(), MSG_NOSIGNAL);
    return fd;
}

LineReader::Result LineReader::next(std::string& line, Deadline deadline) {
    for (;;) {
        if (auto nl = buf_.find('\n', scanned_); nl != std::string::npos) {
            if (nl > kMaxReplyLine) return Result::TooLong;
            line.assign(buf_, 0, nl);
            buf_.erase(0, nl + 1);
            scanned_ = 0;
            return Result::Line;
        }
        scanned_ = buf_.size();
        if (buf_.size() > kMaxReplyLine) return Result::TooLong;
        pollfd p{fd_, POLLIN, 0};
        int n = ::poll(&p, 1, msLeft(deadline));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return Result::Error;
        if (n == 0) return Result::Timeout;
        char b[65536];
        ssize_t r = ::read(fd_, b, sizeof b);
        if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (r < 0) return errno == ECONNRESET ? Result::End : Result::Error;
        if (r == 0) return Result::End;
        buf_.append(b, static_cast<size_t>(r));
    }
}

}  // namespace gpufault::cli
