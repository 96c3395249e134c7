#include "cli/run_job.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>

#include "cli/proc_forks.h"
#include "collectors/common/text.h"

namespace gpufault::cli {

namespace {

int sigPipe[2] = {-1, -1};  ///< self-pipe: signal handlers write the signal number

void onSignal(int sig) {
    int saved = errno;
    unsigned char b = static_cast<unsigned char>(sig);
    (void)!::write(sigPipe[1], &b, 1);
    errno = saved;
}

bool writeAll(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<size_t>(w);
    }
    return true;
}

/// Adds every descendant of `pid` (from /proc/PID/task/TID/children) to `out`.
void addDescendants(pid_t pid, std::set<pid_t>& out, int depth = 0) {
    if (depth > 64) return;
    std::string dir = fmt::format("/proc/{}/task", pid);
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    while (auto* e = ::readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream in(dir + "/" + e->d_name + "/children");
        for (pid_t c; in >> c;)
            if (out.insert(c).second) addDescendants(c, out, depth + 1);
    }
    ::closedir(d);
}

/// Puts a terminal in raw mode and restores it on destruction.
struct RawTerminal {
    int fd = -1;
    termios saved{};
    explicit RawTerminal(int f) {
        if (::tcgetattr(f, &saved) != 0) return;
        termios raw = saved;
        ::cfmakeraw(&raw);
        if (::tcsetattr(f, TCSANOW, &raw) == 0) fd = f;
    }
    ~RawTerminal() {
        if (fd >= 0) ::tcsetattr(fd, TCSANOW, &saved);
    }
};

}  // namespace

std::expected<JobResult, std::string> runJob(const JobSpec& spec) {
    if (spec.argv.empty()) return std::unexpected("no command");
    int spool = ::open(spec.spool.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (spool < 0) return std::unexpected(fmt::format("{}: {}", spec.spool, std::strerror(errno)));
    bool ttyIn = ::isatty(0);
    winsize ws{};
    bool haveWs = ::ioctl(ttyIn ? 0 : 1, TIOCGWINSZ, &ws) == 0;
    // The job's terminal behaves like ours; when our output is a file or a pipe, its bytes pass
    // unchanged (no "\n" → "\r\n").
    termios tio{};
    bool haveTio = ::tcgetattr(1, &tio) == 0 || ::tcgetattr(0, &tio) == 0;
    if (!::isatty(1)) {
        if (!haveTio) {
            int m = -1, s = -1;
            if (::openpty(&m, &s, nullptr, nullptr, nullptr) == 0)
                haveTio = ::tcgetattr(s, &tio) == 0;
            if (m >= 0) ::close(m);
            if (s >= 0) ::close(s);
        }
        tio.c_oflag &= ~static_cast<tcflag_t>(ONLCR);
    }
    int master = -1, slave = -1;
    if (::openpty(&master, &slave, nullptr, haveTio ? &tio : nullptr, haveWs ? &ws : nullptr) !=
        0) {
        ::close(spool);
        return std::unexpected(fmt::format("no pseudo-terminal: {}", std::strerror(errno)));
    }
    ::fcntl(master, F_SETFD, FD_CLOEXEC);
    if (::pipe2(sigPipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        ::close(spool);
        return std::unexpected(fmt::format("pipe: {}", std::strerror(errno)));
    }
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    ::sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGCHLD})
        ::sigaction(sig, &sa, nullptr);
    // A reader of our stdout that goes away (`gpufault run -- CMD | head -1`) must not end
    // us: the pass-through stops, spooling goes on, the job finishes and the run is recorded.
    // Left ignored for the caller, whose messages must not die on a closed stderr either.
    ::signal(SIGPIPE, SIG_IGN);

    JobResult res;
    res.started = text::utcNowIso();
    // Subscribed before the job exists: no fork of it is missed (root only; else sampled).
    auto forks = ForkEvents::open();
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(spool);
        return std::unexpected(fmt::format("fork: {}", std::strerror(errno)));
    }
    if (pid == 0) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGCHLD, SIGPIPE})
            ::sigaction(sig, &dfl, nullptr);
        ::setsid();
        ::ioctl(slave, TIOCSCTTY, 0);
        if (ttyIn) ::dup2(slave, 0);
        ::dup2(slave, 1);
        ::dup2(slave, 2);
        if (slave > 2) ::close(slave);
        for (const auto& [k, v] : spec.env) ::setenv(k.c_str(), v.c_str(), 1);
        std::vector<char*> argv;
        for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execvp(argv[0], argv.data());
        std::string msg = fmt::format("gpufault run: {}: {}\n", spec.argv[0], std::strerror(errno));
        (void)!::write(2, msg.data(), msg.size());
        ::_exit(127);
    }
    ::close(slave);
    res.pid = pid;
    res.pids.insert(pid);
    std::optional<RawTerminal> raw;
    if (ttyIn) raw.emplace(0);

    char buf[65536];
    bool exited = false, inOpen = ttyIn, outOpen = true;
    auto lastScan = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    auto exitedAt = std::chrono::steady_clock::now();
    for (;;) {
        auto now = std::chrono::steady_clock::now();
        if (!exited && now - lastScan > std::chrono::milliseconds(200)) {
            addDescendants(pid, res.pids);
            lastScan = now;
        }
        pollfd fds[4] = {{master, POLLIN, 0},
                         {sigPipe[0], POLLIN, 0},
                         {forks ? forks->fd() : -1, POLLIN, 0},
                         {0, POLLIN, 0}};
        int n = ::poll(fds, inOpen ? 4 : 3, 200);
        if (n < 0 && errno != EINTR) break;
        if (n == 0 && exited) break;  // the job is gone and its output has gone quiet
        if (fds[2].revents & POLLIN) forks->drain(res.pids);
        if (fds[1].revents & POLLIN) {
            unsigned char sig;
            while (::read(sigPipe[0], &sig, 1) == 1) {
                if (sig == SIGWINCH) {
                    if (::ioctl(ttyIn ? 0 : 1, TIOCGWINSZ, &ws) == 0)
                        ::ioctl(master, TIOCSWINSZ, &ws);
                } else if (sig == SIGCHLD) {
                    int st = 0;
                    if (!exited && ::waitpid(pid, &st, WNOHANG) == pid) {
                        exited = true;
                        exitedAt = std::chrono::steady_clock::now();
                        res.ended = text::utcNowIso();
                        if (WIFEXITED(st)) res.exit_status = WEXITSTATUS(st);
                        if (WIFSIGNALED(st)) res.signal = WTERMSIG(st);
                    }
                } else if (!exited) {
                    ::kill(pid, sig);
                }
            }
        }
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = ::read(master, buf, sizeof buf);
            if (r > 0) {
                if (outOpen && !writeAll(1, buf, static_cast<size_t>(r))) {
                    outOpen = false;  // EPIPE (or a full disk): the spool keeps everything
                    res.output_lost = errno;
                }
                writeAll(spool, buf, static_cast<size_t>(r));
                res.bytes += static_cast<uint64_t>(r);
            } else if (r < 0 && errno == EINTR) {
                continue;
            } else if (exited) {
                break;  // EIO: every writer of the terminal is gone
            } else {
                // EIO before the exit: the job closed its terminal; wait for SIGCHLD.
                fds[0].fd = -1;
                struct timespec ts {
                    0, 20'000'000
                };
                nanosleep(&ts, nullptr);
            }
        }
        if (inOpen && (fds[3].revents & (POLLIN | POLLHUP))) {
            ssize_t r = ::read(0, buf, sizeof buf);
            if (r > 0)
                writeAll(master, buf, static_cast<size_t>(r));
            else
                inOpen = false;
        }
        if (exited && std::chrono::steady_clock::now() - exitedAt > std::chrono::seconds(2))
            break;  // a daemonized descendant keeps the terminal open: stop capturing
    }
    if (!exited) {
        int st = 0;
        ::waitpid(pid, &st, 0);
        res.ended = text::utcNowIso();
        if (WIFEXITED(st)) res.exit_status = WEXITSTATUS(st);
        if (WIFSIGNALED(st)) res.signal = WTERMSIG(st);
    }
    if (forks) forks->drain(res.pids);  // forks told before the job's end was seen
    raw.reset();
    ::close(master);
    ::fsync(spool);
    ::close(spool);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGCHLD})
        ::sigaction(sig, &dfl, nullptr);
    ::close(sigPipe[0]);
    ::close(sigPipe[1]);
    return res;
}

}  // namespace gpufault::cli
