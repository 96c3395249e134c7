#include "tests/daemon/daemon_harness.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "schema/sqlite.h"
#include "tests/support/crash_files.h"
#include "tests/support/process.h"

namespace gpufault::testing {

DaemonProcess::DaemonProcess(std::string binary, std::string config, std::string dir,
                             uint64_t watchdog_usec)
    : bin_(std::move(binary)),
      config_(std::move(config)),
      dir_(std::move(dir)),
      notifyPath_(dir_ + "/notify.sock"),
      watchdogUsec_(watchdog_usec) {}

DaemonProcess::~DaemonProcess() {
    if (pid_ > 0) kill9();
    if (notifyFd_ >= 0) ::close(notifyFd_);
    ::unlink(notifyPath_.c_str());
}

bool DaemonProcess::start() {
    if (notifyFd_ < 0) {
        notifyFd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, notifyPath_.c_str(), sizeof a.sun_path - 1);
        ::unlink(notifyPath_.c_str());
        if (::bind(notifyFd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return false;
    }
    notes_.clear();
    std::string errPath = dir_ + "/gpufaultd.stderr";
    pid_ = ::fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
        int err = ::open(errPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(err, 2);
        ::setenv("NOTIFY_SOCKET", notifyPath_.c_str(), 1);
        if (watchdogUsec_ > 0) {
            ::setenv("WATCHDOG_USEC", std::to_string(watchdogUsec_).c_str(), 1);
            ::setenv("WATCHDOG_PID", std::to_string(::getpid()).c_str(), 1);
        }
        ::execl(bin_.c_str(), bin_.c_str(), "--config", config_.c_str(),
                static_cast<char*>(nullptr));
        ::_exit(127);
    }
    return true;
}

void DaemonProcess::drainNotify(int timeout_ms) {
    pollfd p{notifyFd_, POLLIN, 0};
    while (::poll(&p, 1, timeout_ms) > 0) {
        char buf[4096];
        ssize_t n = ::recv(notifyFd_, buf, sizeof buf, 0);
        if (n <= 0) break;
        notes_.emplace_back(buf, static_cast<size_t>(n));
        timeout_ms = 0;
    }
}

bool DaemonProcess::waitNotify(const std::string& what, std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        for (const auto& n : notes_)
            if (n.find(what) != std::string::npos) return true;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        drainNotify(static_cast<int>(std::min<int64_t>(left.count(), 50)));
    }
}

void DaemonProcess::signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
}

std::optional<int> DaemonProcess::waitExit(std::chrono::milliseconds timeout) {
    if (pid_ <= 0) return std::nullopt;
    auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int st = 0;
        pid_t r = ::waitpid(pid_, &st, WNOHANG);
        if (r == pid_) {
            pid_ = -1;
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        if (std::chrono::steady_clock::now() >= end) return std::nullopt;
        struct timespec ts{0, 5'000'000};
        nanosleep(&ts, nullptr);
    }
}

void DaemonProcess::kill9() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int st = 0;
    ::waitpid(pid_, &st, 0);
    pid_ = -1;
}

std::string DaemonProcess::stderrText() const {
    std::ifstream in(dir_ + "/gpufaultd.stderr");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

Watcher::Watcher(const std::string& path, const std::string& request) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    std::string req = request.empty() ? "" : request + "\n";
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
          ::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size());
}

Watcher::~Watcher() {
    ::close(fd_);
}

nlohmann::json Watcher::next(std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (auto nl = buf_.find('\n'); nl != std::string::npos) {
            auto line = buf_.substr(0, nl);
            buf_.erase(0, nl + 1);
            return nlohmann::json::parse(line, nullptr, false);
        }
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        pollfd p{fd_, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return nullptr;
        char b[65536];
        ssize_t n = ::read(fd_, b, sizeof b);
        if (n <= 0) return nullptr;
        buf_.append(b, static_cast<size_t>(n));
    }
}

bool Watcher::closedByPeer(std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        pollfd p{fd_, POLLIN, 0};
        if (left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
        char b[65536];
        ssize_t n = ::read(fd_, b, sizeof b);
        if (n <= 0) return true;
    }
}

bool writeJournal(const std::string& file, const std::vector<JournalFields>& entries) {
    std::string exp;
    for (const auto& e : entries) {
        for (const auto& [k, v] : e)
            if (v.find('\n') == std::string::npos)
                exp += k + "=" + v + "\n";
            else  // a multi-line value is a binary field, as journalctl exports it
                exp += k + "\n" + le64(v.size()) + v + "\n";
        exp += "\n";
    }
    TempDir t;
    writeFile(t.file("in.export"), exp);
    auto r = run({"/lib/systemd/systemd-journal-remote", "--output=" + file, t.file("in.export")});
    return r.status == 0;
}

JournalFields kernelEntry(uint64_t mono_us, const std::string& msg) {
    return {{"__REALTIME_TIMESTAMP", std::to_string(1764480000000000 + mono_us)},
            {"__MONOTONIC_TIMESTAMP", std::to_string(mono_us)},
            {"_BOOT_ID", "5c040de43e9d429a9ca3d2c93965225b"},
            {"_TRANSPORT", "kernel"},
            {"PRIORITY", "3"},
            {"SYSLOG_IDENTIFIER", "kernel"},
            {"_HOSTNAME", "node7"},
            {"MESSAGE", msg}};
}

JournalFields unitEntry(const std::string& unit, uint64_t mono_us, const std::string& msg) {
    return {{"__REALTIME_TIMESTAMP", std::to_string(1764480000000000 + mono_us)},
            {"__MONOTONIC_TIMESTAMP", std::to_string(mono_us)},
            {"_BOOT_ID", "5c040de43e9d429a9ca3d2c93965225b"},
            {"_TRANSPORT", "stdout"},
            {"_SYSTEMD_UNIT", unit},
            {"SYSLOG_IDENTIFIER", "python3"},
            {"_PID", "4242"},
            {"_HOSTNAME", "node7"},
            {"MESSAGE", msg}};
}

std::string controlRequest(const std::string& socket_path, const std::string& request,
                           std::chrono::milliseconds timeout) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket_path.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return "";
    }
    std::string req = request + "\n";
    // MSG_NOSIGNAL: a daemon that refuses the peer may close before the request is written.
    (void)!::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    std::string out;
    auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
        char buf[65536];
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
}

int64_t storeCount(const std::string& store_path, const std::string& sql) {
    auto d = db::Db::open(store_path, true, false);
    if (!d) return -1;
    auto s = d->prepare(sql);
    if (!s) return -1;
    auto r = s->step();
    return r && *r ? s->i64(0) : -1;
}

std::vector<std::string> storeRows(const std::string& store_path, const std::string& sql,
                                   int columns) {
    std::vector<std::string> rows;
    auto d = db::Db::open(store_path, true, false);
    if (!d) return rows;
    auto s = d->prepare(sql);
    if (!s) return rows;
    for (auto r = s->step(); r && *r; r = s->step()) {
        std::string row;
        for (int c = 0; c < columns; ++c)
            row += (c ? "|" : "") + (s->isNull(c) ? std::string("NULL") : s->str(c));
        rows.push_back(std::move(row));
    }
    return rows;
}

ScratchTmpfs::ScratchTmpfs(std::string path, const std::string& options) : path_(std::move(path)) {
    if (::mkdir(path_.c_str(), 0755) != 0 && errno != EEXIST) {
        error_ = std::strerror(errno);
        return;
    }
    mounted_ = ::mount("tmpfs", path_.c_str(), "tmpfs", 0, options.c_str()) == 0;
    if (!mounted_) error_ = std::strerror(errno);
}

ScratchTmpfs::~ScratchTmpfs() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
}

}  // namespace gpufault::testing
