// `gpufault status` and `gpufault watch`: clients of gpufaultd's control socket.
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cli/commands.h"
#include "cli/output.h"

namespace gpufault::cli {

namespace {

/// Connects to the control socket; -1 (message printed) when the daemon is not reachable.
int connectDaemon(const std::string& path) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (fd < 0 || path.size() >= sizeof a.sun_path) {
        std::fprintf(stderr, "gpufault: %s: invalid socket path\n", path.c_str());
        if (fd >= 0) ::close(fd);
        return -1;
    }
    std::memcpy(a.sun_path, path.data(), path.size());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        std::fprintf(stderr,
                     "gpufault: cannot reach gpufaultd at %s: %s (is it running? systemctl "
                     "status gpufaultd; or pass --socket)\n",
                     path.c_str(), std::strerror(errno));
        ::close(fd);
        return -1;
    }
    return fd;
}

/// Reads one '\n'-terminated line into `line`; false at end of stream.
bool readLine(int fd, std::string& buf, std::string& line) {
    for (;;) {
        if (auto nl = buf.find('\n'); nl != std::string::npos) {
            line = buf.substr(0, nl);
            buf.erase(0, nl + 1);
            return true;
        }
        char b[65536];
        ssize_t n = ::read(fd, b, sizeof b);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        buf.append(b, static_cast<size_t>(n));
    }
}

/// The daemon's answer as JSON; prints its error and returns null on refusal or garbage.
nlohmann::json parseReply(const std::string& line, const std::string& path) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        std::fprintf(stderr, "gpufault: %s: not a gpufaultd reply\n", path.c_str());
        return nullptr;
    }
    if (j.contains("error")) {
        std::fprintf(stderr, "gpufault: gpufaultd at %s: %s%s\n", path.c_str(),
                     j["error"].get<std::string>().c_str(),
                     j["error"] == "permission denied" ? " (join the gpufault group, or use sudo)"
                                                       : "");
        return nullptr;
    }
    return j;
}

std::string u64(const nlohmann::json& j, const char* key) {
    return j.contains(key) ? j[key].dump() : "-";
}

}  // namespace

std::string resolveSocketPath(const std::string& flag) {
    if (!flag.empty()) return flag;
    if (const char* e = std::getenv("GPUFAULT_SOCKET"); e && *e) return e;
    return "/run/gpufault/gpufaultd.sock";
}

int cmdStatus(const std::string& socket, bool json) {
    int fd = connectDaemon(socket);
    if (fd < 0) return 2;
    // MSG_NOSIGNAL: a daemon that refuses us closes at once; its reply says why.
    (void)!::send(fd, "status\n", 7, MSG_NOSIGNAL);
    std::string buf, line;
    bool got = readLine(fd, buf, line);
    ::close(fd);
    if (!got) {
        std::fprintf(stderr, "gpufault: %s: gpufaultd closed the connection\n", socket.c_str());
        return 2;
    }
    auto j = parseReply(line, socket);
    if (j.is_null()) return 2;
    if (json) {
        printJsonLine(stdout, j);
        return 0;
    }
    const auto& st = j["store"];
    std::printf("gpufaultd %s, pid %s, up %.0f s, config %s\n",
                printable(j.value("version", "?")).c_str(), u64(j, "pid").c_str(),
                j.value("uptime_s", 0.0), printable(j.value("config", "(defaults)")).c_str());
    std::printf("store %s: %s, %s commits\n", printable(st.value("path", "?")).c_str(),
                sizeText(st.value("bytes", uint64_t{0})).c_str(), u64(j, "commits").c_str());
    if (!st.value("error", "").empty())
        std::printf("STORE ERROR: %s (retrying every second)\n",
                    printable(st.value("error", "")).c_str());
    TextTable t;
    t.header = {"SOURCE", "NAME", "POSITION", "LINES", "EVIDENCE", "LAG", "LOST_RECORDS",
                "LOST_BYTES"};
    for (const auto& s : j["streams"])
        t.rows.push_back({s.value("source", "?") + (s.value("active", true) ? "" : " (rotated)"),
                          s.value("name", "?"), s.value("position", "?"), u64(s, "lines"),
                          u64(s, "evidence"), u64(s, "lag"), u64(s, "lost_records"),
                          u64(s, "lost_bytes")});
    t.print(stdout);
    return 0;
}

int cmdWatch(const std::string& socket, bool json) {
    int fd = connectDaemon(socket);
    if (fd < 0) return 2;
    (void)!::send(fd, "watch\n", 6, MSG_NOSIGNAL);
    std::string buf, line;
    if (!readLine(fd, buf, line) || parseReply(line, socket).is_null()) {
        ::close(fd);
        return 2;
    }
    std::fprintf(stderr, "watching %s (Ctrl-C to stop)\n", socket.c_str());
    while (readLine(fd, buf, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded()) continue;
        if (json) {
            printJsonLine(stdout, j);
        } else if (j.value("type", "") == "evidence") {
            std::printf("record   #%s %-20s %-18s %s:%s\n", u64(j, "id").c_str(),
                        printable(j.value("kind", "?")).c_str(),
                        printable(j.value("address", "-")).c_str(),
                        printable(j.value("source", "?")).c_str(), u64(j, "line").c_str());
        } else if (j.value("type", "") == "incident") {
            std::printf("INCIDENT #%s %-20s %-18s %s record(s): %s\n", u64(j, "id").c_str(),
                        printable(j.value("kind", "?")).c_str(),
                        printable(j.value("address", "-")).c_str(), u64(j, "members").c_str(),
                        printable(j.value("kinds", "")).c_str());
        } else if (j.value("type", "") == "dropped") {
            std::printf("(%s lines dropped: this terminal read too slowly)\n",
                        u64(j, "lines").c_str());
        }
        std::fflush(stdout);
    }
    ::close(fd);
    std::fprintf(stderr, "gpufaultd closed the connection\n");
    return 0;
}

}  // namespace gpufault::cli
