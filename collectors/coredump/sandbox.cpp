#include "collectors/coredump/sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace gpufault::coredump {

namespace {

constexpr int kExitException = 3, kExitNoMemory = 5;

/// Writes all of `s`; false on error. The length goes first so a cut result is detected.
bool writeAll(int fd, std::string_view s) {
    while (!s.empty()) {
        ssize_t n = ::write(fd, s.data(), s.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

/// Closes the sockets the child inherited (gpufaultd's listening control socket above all:
/// held by a child that outlives a killed daemon, it made the next start find "another gpufaultd
/// listening", hostile review 155, LOW 7). The unwinding reads files only.
void closeSockets() {
    DIR* d = ::opendir("/proc/self/fd");
    if (!d) return;
    const int own = ::dirfd(d);
    while (auto* e = ::readdir(d)) {
        char* end = nullptr;
        long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || fd == own) continue;
        struct stat st {};
        if (::fstat(static_cast<int>(fd), &st) == 0 && S_ISSOCK(st.st_mode))
            ::close(static_cast<int>(fd));
    }
    ::closedir(d);
}

[[noreturn]] void child(int fd,
                        pid_t parent,
                        const std::function<std::string()>& fn,
                        const ChildLimits& l) {
    ::prctl(PR_SET_DUMPABLE, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);  // the parent died before PDEATHSIG was set
    closeSockets();
    struct rlimit core {
        0, 0
    }, as{l.address_space, l.address_space};
    ::setrlimit(RLIMIT_CORE, &core);
    ::setrlimit(RLIMIT_AS, &as);
    std::string out;
    try {
        out = fn();
    } catch (const std::bad_alloc&) {
        ::_exit(kExitNoMemory);
    } catch (const std::exception&) {
        ::_exit(kExitException);
    }
    uint64_t n = out.size();
    bool ok = writeAll(fd, std::string_view(reinterpret_cast<const char*>(&n), sizeof n)) &&
              writeAll(fd, out);
    ::_exit(ok ? 0 : 4);
}

}  // namespace

Result<std::string> runInChild(const std::function<std::string()>& fn, const ChildLimits& limits) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0)
        return std::unexpected(Error{fmt::format("pipe: {}", std::strerror(errno))});
    const pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(p[0]);
        ::close(p[1]);
        return std::unexpected(Error{fmt::format("fork: {}", std::strerror(errno))});
    }
    if (pid == 0) {
        ::close(p[0]);
        child(p[1], parent, fn, limits);
    }
    ::close(p[1]);
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(limits.seconds * 1000));
    std::string buf;
    bool timedOut = false, tooBig = false;
    char chunk[65536];
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now())
                        .count();
        if (left <= 0) {
            timedOut = true;
            break;
        }
        struct pollfd pfd {
            p[0], POLLIN, 0
        };
        int r = ::poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        ssize_t n = ::read(p[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        buf.append(chunk, static_cast<size_t>(n));
        if (buf.size() > limits.max_output + sizeof(uint64_t)) {
            tooBig = true;
            break;
        }
    }
    ::close(p[0]);
    if (timedOut || tooBig) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timedOut)
        return std::unexpected(
            Error{fmt::format("gave up after {:g} s (time limit)", limits.seconds)});
    if (tooBig)
        return std::unexpected(
            Error{fmt::format("result larger than {} bytes", limits.max_output)});
    if (WIFSIGNALED(status))
        return std::unexpected(Error{fmt::format("the reader died of {} (memory limit {} MiB)",
                                                 strsignal(WTERMSIG(status)),
                                                 limits.address_space >> 20)});
    if (WIFEXITED(status) && WEXITSTATUS(status) == kExitNoMemory)
        return std::unexpected(Error{fmt::format("the reader ran out of memory (limit {} MiB)",
                                                 limits.address_space >> 20)});
    uint64_t n = 0;
    if (buf.size() < sizeof n ||
        (std::memcpy(&n, buf.data(), sizeof n), buf.size() - sizeof n != n))
        return std::unexpected(
            Error{fmt::format("the reader exited (status {}) without a complete result",
                              WIFEXITED(status) ? WEXITSTATUS(status) : -1)});
    return buf.substr(sizeof n);
}

}  // namespace gpufault::coredump
