// Whole-process benchmark of gpufaultd tailing a file (issue "gpufaultd", Speed):
//   1. throughput: a generated AMD_LOG_LEVEL=3 log is appended as fast as possible; the time
//      until the daemon has read every line gives lines per second sustained;
//   2. latency: the same log is appended at a fixed rate (lines per second) while a unique
//      ROCr fault line is written every 20 ms; a `watch` client timestamps each fault's record;
//      p50/p99/max of written → seen;
// the daemon's peak RSS (VmHWM) over both and its CPU time over the latency phase. IDLE_FILES
// > 0 adds that many followed files of one line each beside the log (logs/idle-N.log), which
// the daemon follows too (files.max_open raised to match). usage:
//   daemon_tail GPUFAULTD GEN_LOG WORKDIR [RATE_LINES_PER_S=500000] [LATENCY_SECONDS=10]
//               [IDLE_FILES=0]
// GEN_LOG comes from bench/gen_amdlog. Prints one line per figure (docs/performance.md).
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void appendAll(int fd, const char* p, size_t n) {
    while (n > 0) {
        ssize_t w = ::write(fd, p, n);
        if (w <= 0) {
            std::perror("write");
            std::exit(1);
        }
        p += w;
        n -= static_cast<size_t>(w);
    }
}

int connectTo(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

nlohmann::json status(const std::string& sock) {
    int fd = connectTo(sock);
    if (fd < 0) return nullptr;
    (void)!::send(fd, "status\n", 7, MSG_NOSIGNAL);
    std::string out;
    char b[65536];
    for (ssize_t n; (n = ::read(fd, b, sizeof b)) > 0;) out.append(b, static_cast<size_t>(n));
    ::close(fd);
    return nlohmann::json::parse(out, nullptr, false);
}

/// Lines read from files whose name ends with `suffix` ("": every stream).
uint64_t linesRead(const std::string& sock, const std::string& suffix = "") {
    auto s = status(sock);
    uint64_t n = 0;
    if (s.is_object())
        for (const auto& st : s["streams"])
            if (st.value("name", "").ends_with(suffix)) n += st.value("lines", uint64_t{0});
    return n;
}

long vmHwmKiB(pid_t pid) {
    std::ifstream in(fmt::format("/proc/{}/status", pid));
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}

/// utime + stime of `pid` in seconds (/proc/PID/stat fields 14 and 15), -1 when unreadable.
double cpuSeconds(pid_t pid) {
    std::ifstream in(fmt::format("/proc/{}/stat", pid));
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t close = stat.rfind(')');  // the command name may hold spaces
    if (close == std::string::npos) return -1;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14) utime = std::stoull(field);
        if (i == 15) stime = std::stoull(field);
    }
    return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr,
                     "usage: daemon_tail GPUFAULTD GEN_LOG WORKDIR [RATE=500000] [SECONDS=10]\n");
        return 2;
    }
    std::string bin = argv[1], gen = argv[2], dir = argv[3];
    double rate = argc > 4 ? std::stod(argv[4]) : 500000;
    double seconds = argc > 5 ? std::stod(argv[5]) : 10;
    uint64_t idle = argc > 6 ? std::stoull(argv[6]) : 0;
    std::string log = dir + "/logs/job.log", sock = dir + "/ctl.sock", conf = dir + "/d.conf";
    ::mkdir(dir.c_str(), 0755);
    ::mkdir((dir + "/logs").c_str(), 0755);
    ::unlink(log.c_str());
    for (auto f : {"/store.db", "/store.db-wal", "/store.db-shm"}) ::unlink((dir + f).c_str());
    for (uint64_t i = 0; i < idle; ++i)
        std::ofstream(fmt::format("{}/logs/idle-{}.log", dir, i)) << "=== job " << i << " ===\n";
    std::ofstream(conf) << fmt::format(
        "[store]\npath = \"{}/store.db\"\n[kmsg]\nenabled = false\n[files]\nglobs = [\"{}\"]\n"
        "max_open = {}\n[control]\nsocket = \"{}\"\ngroup = \"\"\n",
        dir,
        idle > 0 ? dir + "/logs/*.log" : log,
        idle + 512,
        sock);
    std::string data = slurp(gen);
    uint64_t total = static_cast<uint64_t>(std::count(data.begin(), data.end(), '\n'));
    std::fprintf(stderr, "%zu bytes, %lu lines\n", data.size(), static_cast<unsigned long>(total));

    pid_t pid = ::fork();
    if (pid == 0) {
        int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 2);
        ::execl(bin.c_str(), bin.c_str(), "--config", conf.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    for (int c; (c = connectTo(sock)) < 0 || (::close(c), false);)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    // The idle files read first; then status (a large reply with them) is asked less often.
    while (idle > 0 && linesRead(sock) < idle)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto every = std::chrono::milliseconds(idle > 0 ? 100 : 5);

    // 1. Throughput.
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    auto t0 = Clock::now();
    appendAll(fd, data.data(), data.size());
    while (linesRead(sock, "/job.log") < total) std::this_thread::sleep_for(every);
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    fmt::print("throughput: {} lines in {:.2f} s = {:.0f} lines/s ({:.0f} MiB/s)\n", total, secs,
               total / secs, data.size() / secs / (1 << 20));

    // 2. Latency under a fixed line rate.
    int w = connectTo(sock);
    (void)!::write(w, "watch\n", 6);
    {
        // Faults are written only once the daemon confirmed the watch ({"type":"watching"}).
        char c = 0;
        while (::read(w, &c, 1) == 1 && c != '\n') {
        }
    }
    std::mutex mu;
    std::map<uint64_t, Clock::time_point> written, seen;
    std::atomic<bool> done{false};
    std::thread reader([&] {
        std::string buf;
        char b[65536];
        for (ssize_t n; (n = ::read(w, b, sizeof b)) > 0;) {
            auto now = Clock::now();
            buf.append(b, static_cast<size_t>(n));
            for (size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1)) {
                auto j = nlohmann::json::parse(buf.substr(0, nl), nullptr, false);
                if (!j.is_object() || j.value("type", "") != "evidence" ||
                    j.value("kind", "") != "rocr_memory_fault")
                    continue;
                uint64_t a = std::stoull(j.value("address", "0x0"), nullptr, 16);
                std::lock_guard<std::mutex> g(mu);
                seen.emplace(a, now);
            }
        }
    });
    size_t pos = 0;
    uint64_t faults = 0;
    const double cpu0 = cpuSeconds(pid);
    auto start = Clock::now();
    auto nextFault = start;
    uint64_t linesOut = 0;
    while (Clock::now() - start < std::chrono::duration<double>(seconds)) {
        auto elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        uint64_t due = static_cast<uint64_t>(elapsed * rate);
        // Append whole lines of the generated log up to the line budget.
        size_t from = pos;
        while (linesOut < due) {
            size_t nl = data.find('\n', pos);
            if (nl == std::string::npos) {
                appendAll(fd, data.data() + from, pos - from);
                pos = from = 0;
                continue;
            }
            pos = nl + 1;
            ++linesOut;
        }
        appendAll(fd, data.data() + from, pos - from);
        if (Clock::now() >= nextFault) {
            uint64_t addr = 0x7e0000000000 + (++faults) * 0x200000;
            auto line = fmt::format(
                "Memory access fault by GPU node-1 (Agent handle: 0x55d4) on address 0x{:x}. "
                "Reason: Page not present or supervisor privilege.\n",
                addr);
            {
                std::lock_guard<std::mutex> g(mu);
                written.emplace(addr, Clock::now());
            }
            appendAll(fd, line.data(), line.size());
            nextFault += std::chrono::milliseconds(20);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const double cpu1 = cpuSeconds(pid);
    const double latencySecs = std::chrono::duration<double>(Clock::now() - start).count();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    long hwm = vmHwmKiB(pid);
    ::kill(pid, SIGTERM);
    int st = 0;
    ::waitpid(pid, &st, 0);
    ::shutdown(w, SHUT_RDWR);
    reader.join();
    ::close(w);
    std::vector<double> ms;
    uint64_t missing = 0;
    for (const auto& [a, t] : written) {
        auto it = seen.find(a);
        if (it == seen.end()) {
            ++missing;
            continue;
        }
        ms.push_back(std::chrono::duration<double, std::milli>(it->second - t).count());
    }
    std::sort(ms.begin(), ms.end());
    auto pct = [&](double p) { return ms.empty() ? 0.0 : ms[std::min(ms.size() - 1, size_t(p * ms.size()))]; };
    fmt::print("latency at {:.0f} lines/s ({} lines in {:.0f} s): {} faults, {} not seen, "
               "p50 {:.1f} ms, p99 {:.1f} ms, max {:.1f} ms\n",
               rate, linesOut, seconds, written.size(), missing, pct(0.5), pct(0.99),
               ms.empty() ? 0.0 : ms.back());
    fmt::print("peak RSS (VmHWM) of gpufaultd: {:.1f} MiB\n", hwm / 1024.0);
    fmt::print("gpufaultd CPU (utime + stime) over the latency phase: {:.2f} s in {:.1f} s = "
               "{:.2f} cores\n",
               cpu1 - cpu0, latencySecs, (cpu1 - cpu0) / latencySecs);
    return 0;
}
