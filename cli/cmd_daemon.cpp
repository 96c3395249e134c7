// `gpufault status` and `gpufault watch`: clients of gpufaultd's control socket. A reply is
// shown only when its shape is the daemon's (daemon/control.cpp); anything else exits 2.
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>

#include "cli/commands.h"
#include "cli/daemon_client.h"
#include "cli/output.h"

namespace gpufault::cli {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

/// What a reply field must be: (name, test, what the message says it should be, whether null
/// is allowed too).
struct Field {
    const char* key;
    bool (json::*is)() const noexcept;
    const char* what;
    bool nullable = false;
};

/// What is wrong with `o` (named `name` in messages): not an object ("NAME: expected an
/// object"), or its first field that is present with another type ("NAME.KEY: expected WHAT",
/// "… WHAT or null" for a nullable field). Absent fields are fine (the renderers print "-" or
/// "?"), and so is null where the field allows it.
std::optional<std::string> firstBadField(const json& o,
                                         std::span<const Field> fields,
                                         const std::string& name = "") {
    std::string prefix = name.empty() ? "" : name + ".";
    if (!o.is_object()) return (name.empty() ? "" : name + ": ") + "expected an object";
    for (const auto& f : fields)
        if (auto it = o.find(f.key);
            it != o.end() && !((*it).*f.is)() && !(f.nullable && it->is_null()))
            return fmt::format(
                "{}{}: expected {}{}", prefix, f.key, f.what, f.nullable ? " or null" : "");
    return std::nullopt;
}

/// firstBadField() of a list written in place.
std::optional<std::string> badField(const json& o,
                                    std::initializer_list<Field> fields,
                                    const std::string& name = "") {
    return firstBadField(o, std::span<const Field>(fields.begin(), fields.size()), name);
}

constexpr auto kStr = &json::is_string;
constexpr auto kNum = &json::is_number;
constexpr auto kBool = &json::is_boolean;
constexpr auto kObj = &json::is_object;

/// Why a status reply cannot be shown, or nullopt when its shape is the daemon's: a field of
/// another type, or one of version, pid and streams absent.
std::optional<std::string> statusShapeError(const json& j) {
    if (auto e = badField(j,
                          {{"version", kStr, "a string"},
                           {"pid", kNum, "a number"},
                           {"commits", kNum, "a number"},
                           {"uptime_s", kNum, "a number"},
                           {"config", kStr, "a string"},
                           {"store", &json::is_object, "an object"},
                           {"streams", &json::is_array, "an array"}}))
        return e;
    if (j.contains("store"))
        if (auto e = badField(j["store"],
                              {{"path", kStr, "a string"},
                               {"bytes", &json::is_number_unsigned, "a byte count"},
                               {"error", kStr, "a string"}},
                              "store"))
            return e;
    if (j.contains("worker"))
        if (auto e = badField(j["worker"],
                              {{"busy", &json::is_boolean, "true or false"},
                               {"queued", &json::is_boolean, "true or false"},
                               {"correlations", kNum, "a number"},
                               {"diagnosed", kNum, "a number"},
                               {"last_s", kNum, "a number"},
                               {"last_correlate_s", kNum, "a number"},
                               {"last_write_s", kNum, "a number"},
                               {"last_diagnose_s", kNum, "a number"},
                               {"last_records", kNum, "a number"},
                               {"last_incidents", kNum, "a number"},
                               {"last_rows", kNum, "a number"},
                               {"jobs_queued", kNum, "a number"},
                               {"error", kStr, "a string"}},
                              "worker"))
            return e;
    if (j.contains("files"))
        if (auto e = badField(j["files"],
                              {{"watched", kBool, "true or false"},
                               {"retrying", kBool, "true or false"},
                               {"scans", kNum, "a number"},
                               {"poll_interval_ms", kNum, "a number"}},
                              "files"))
            return e;
    if (j.contains("streams"))
        for (size_t i = 0; i < j["streams"].size(); ++i)
            if (auto e = badField(j["streams"][i],
                                  {{"source", kStr, "a string"},
                                   {"name", kStr, "a string"},
                                   {"position", kStr, "a string"},
                                   {"lines", kNum, "a number"},
                                   {"evidence", kNum, "a number"},
                                   {"lag", kNum, "a number"},
                                   {"lost_records", kNum, "a number"},
                                   {"lost_bytes", kNum, "a number"},
                                   {"active", &json::is_boolean, "true or false"}},
                                  fmt::format("streams[{}]", i)))
                return e;
    // Every status reply of gpufaultd states these (daemon/control.cpp statusJson): another
    // program's JSON object at the socket is not shown as a daemon with nothing to report.
    for (const char* key : {"version", "pid", "streams"})
        if (!j.contains(key)) return fmt::format("{}: missing (not a status reply)", key);
    return std::nullopt;
}

/// A watch `evidence` line: the record as docs/evidence.md's contract has it (null wherever the
/// contract allows null: a field the record does not state), with the daemon's id and source.
constexpr Field kEvidenceLine[] = {
    {"id", kNum, "a number"},
    {"kind", kStr, "a string"},
    {"vendor", kStr, "a string", true},
    {"source", kStr, "a string"},
    {"line", kNum, "a number"},
    {"time", kObj, "an object", true},
    {"address", kStr, "a string", true},
    {"address_exact", kBool, "true or false", true},
    {"align_2mib", kBool, "true or false", true},
    {"pci", kStr, "a string", true},
    {"gpu_node", kNum, "a number", true},
    {"pid", kNum, "a number", true},
    {"process", kStr, "a string", true},
    {"tid", kNum, "a number", true},
    {"thread", kStr, "a string", true},
    {"runtime_tid", kStr, "a string", true},
    {"vmid", kNum, "a number", true},
    {"pasid", kNum, "a number", true},
    {"hub", kStr, "a string", true},
    {"retry", kBool, "true or false", true},
    {"client", kStr, "a string", true},
    {"status", kNum, "a number", true},
    {"access", kStr, "a string", true},
    {"reason", kStr, "a string", true},
    {"xid", kNum, "a number", true},
    {"kernel", kStr, "a string", true},
    {"module", kStr, "a string", true},
    {"module_offset", kStr, "a string", true},
    {"rank", kNum, "a number", true},
    {"count", kNum, "a number"},
    {"attrs", kObj, "an object"},
    {"raw", kStr, "a string"},
};

/// A watch `incident` or `incident_update` line (daemon/control.cpp): the incident's address,
/// pid and kernel are left out (or null) when it has none.
constexpr Field kIncidentLine[] = {
    {"id", kNum, "a number"},
    {"kind", kStr, "a string"},
    {"signature", kStr, "a string"},
    {"members", kNum, "a number"},
    {"members_before", kNum, "a number"},
    {"kinds", kStr, "a string"},
    {"source", kStr, "a string"},
    {"line", kNum, "a number"},
    {"address", kStr, "a string", true},
    {"pid", kNum, "a number", true},
    {"kernel", kStr, "a string", true},
};

/// Why a watch line cannot be shown ("KEY: expected WHAT"), or nullopt. Lines of unknown types
/// are shown by --json only, and only their type is checked.
std::optional<std::string> watchShapeError(const json& j) {
    if (auto e = badField(j, {{"type", kStr, "a string"}})) return e;
    const std::string type = j.value("type", "");
    if (type == "evidence") return firstBadField(j, kEvidenceLine);
    if (type == "incident" || type == "incident_update") return firstBadField(j, kIncidentLine);
    if (type == "dropped") return badField(j, {{"lines", kNum, "a number"}});
    return std::nullopt;
}

/// j[key] as a string; `absent` when the key is missing or null (checked by watchShapeError).
std::string textOr(const json& j, const char* key, const char* absent) {
    auto it = j.find(key);
    return it == j.end() || it->is_null() ? absent : printable(it->get<std::string>());
}

/// Prints "gpufault: SOCKET: malformed gpufaultd reply (WHY): LINE…" and returns 2.
int malformed(const std::string& path, const std::string& why, const std::string& line) {
    printText(stderr,
              "gpufault: {}: malformed gpufaultd reply ({}): {}{}\n",
              path,
              why,
              printable(line.substr(0, 120)),
              line.size() > 120 ? "…" : "");
    return 2;
}

/// The next reply line (Result::Line); otherwise prints why there is none: the daemon closed,
/// did not answer before `deadline` (`timeout_s` is named), sent an endless line, or the read
/// failed.
ReplyReader::Result nextLine(ReplyReader& r,
                             std::string& line,
                             Deadline deadline,
                             double timeout_s,
                             const std::string& path) {
    auto res = r.next(line, deadline);
    switch (res) {
        case ReplyReader::Result::Line:
            break;
        case ReplyReader::Result::End:
            printText(stderr, "gpufault: {}: gpufaultd closed the connection\n", path);
            break;
        case ReplyReader::Result::Timeout:
            printText(stderr,
                      "gpufault: gpufaultd at {} did not answer within {:g} s (--timeout)\n",
                      path,
                      timeout_s);
            break;
        case ReplyReader::Result::TooLong:
            printText(stderr,
                      "gpufault: {}: malformed gpufaultd reply (a line longer than {} bytes)\n",
                      path,
                      kMaxReplyLine);
            break;
        case ReplyReader::Result::Error:
            printText(stderr, "gpufault: {}: {}\n", path, std::strerror(errno));
            break;
    }
    return res;
}

constexpr int kMaxDepth = 64;  ///< the daemon nests 3 deep; a deeper reply is not its

/// One reply line as a JSON object; otherwise `why` says what is wrong. Nesting is limited so
/// that printing it back cannot exhaust the stack.
std::optional<json> parseLine(const std::string& line, std::string& why) {
    bool deep = false;
    auto keep = [&](int depth, json::parse_event_t, json&) {
        deep |= depth > kMaxDepth;
        return !deep;
    };
    auto j = json::parse(line, keep, false);
    if (j.is_discarded())
        why = "not JSON";
    else if (deep)
        why = fmt::format("nested deeper than {}", kMaxDepth);
    else if (!j.is_object())
        why = "expected an object";
    else
        return j;
    return std::nullopt;
}

/// The daemon's first answer as a JSON object; prints why (returns null) on refusal or garbage.
json parseReply(const std::string& line, const std::string& path) {
    std::string why;
    auto j = parseLine(line, why);
    if (!j) return malformed(path, why, line), nullptr;
    if (auto e = badField(*j, {{"error", kStr, "a string"}}))
        return malformed(path, *e, line), nullptr;
    if (j->contains("error")) {
        std::string err = (*j)["error"];
        printText(stderr,
                  "gpufault: gpufaultd at {}: {}{}\n",
                  path,
                  printable(err),
                  err == "permission denied" ? " (join the gpufault group, or use sudo)" : "");
        return nullptr;
    }
    return *j;
}

/// j[key] as JSON text; "-" when the key is missing or null.
std::string u64(const json& j, const char* key) {
    auto it = j.find(key);
    return it != j.end() && !it->is_null()
               ? printable(it->dump(-1, ' ', false, json::error_handler_t::replace))
               : "-";
}

/// u64() with its noun: `1 incident`, `2 incidents` (`plural` when not noun + "s").
std::string u64Counted(const nlohmann::json& j,
                       const char* key,
                       const std::string& noun,
                       const std::string& plural = "") {
    std::string n = u64(j, key);
    return n + " " + (n == "1" ? noun : plural.empty() ? noun + "s" : plural);
}

/// `timeout_s` from now.
Deadline after(double timeout_s) {
    return Clock::now() +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
}

}  // namespace

std::string resolveSocketPath(const std::string& flag) {
    if (!flag.empty()) return flag;
    if (const char* e = std::getenv("GPUFAULT_SOCKET"); e && *e) return e;
    return "/run/gpufault/gpufaultd.sock";
}

int cmdStatus(const std::string& socket, bool json, double timeout_s) {
    auto deadline = after(timeout_s);
    auto fd = connectDaemon(socket, "status", deadline);
    if (!fd) {
        printText(stderr, "gpufault: {}\n", fd.error());
        return 2;
    }
    ReplyReader reader(*fd);
    std::string line;
    auto got = nextLine(reader, line, deadline, timeout_s, socket);
    ::close(*fd);
    if (got != ReplyReader::Result::Line) return 2;
    auto j = parseReply(line, socket);
    if (j.is_null()) return 2;
    if (auto e = statusShapeError(j)) return malformed(socket, *e, line);
    if (json) {
        printJsonLine(stdout, j);
        return 0;
    }
    const auto st = j.value("store", nlohmann::json::object());
    std::printf("gpufaultd %s, pid %s, up %.0f s, config %s\n",
                printable(j.value("version", "?")).c_str(),
                u64(j, "pid").c_str(),
                j.value("uptime_s", 0.0),
                printable(j.value("config", "(defaults)")).c_str());
    std::printf("store %s: %s, %s commits\n",
                printable(st.value("path", "?")).c_str(),
                sizeText(st.value("bytes", uint64_t{0})).c_str(),
                u64(j, "commits").c_str());
    if (!st.value("error", "").empty())
        std::printf("STORE ERROR: %s (retrying every second)\n",
                    printable(st.value("error", "")).c_str());
    if (j.contains("worker")) {
        const auto& w = j["worker"];
        std::printf(
            "worker %s%s: %s, the last %.2f s (correlate %.2f s, write %.2f s, "
            "diagnose %.2f s) over %s, %s, %s written; %s, %s queued\n",
            w.value("busy", false) ? "busy" : "idle",
            w.value("queued", false) ? ", another pass queued" : "",
            u64Counted(w, "correlations", "correlation").c_str(),
            w.value("last_s", 0.0),
            w.value("last_correlate_s", 0.0),
            w.value("last_write_s", 0.0),
            w.value("last_diagnose_s", 0.0),
            u64Counted(w, "last_records", "record").c_str(),
            u64Counted(w, "last_incidents", "incident").c_str(),
            u64Counted(w, "last_rows", "row").c_str(),
            u64Counted(w, "diagnosed", "diagnosis", "diagnoses").c_str(),
            u64Counted(w, "jobs_queued", "core file").c_str());
        if (!w.value("error", "").empty())
            std::printf("WORKER ERROR: %s (retrying every second)\n",
                        printable(w.value("error", "")).c_str());
    }
    if (j.contains("files")) {
        const auto& f = j["files"];
        const auto every = f.value("poll_interval_ms", uint64_t{0});
        const std::string how =
            !f.value("watched", false) ? fmt::format("patterns polled every {} ms", every)
            : f.value("retrying", false)
                ? fmt::format(
                      "inotify watches every pattern's directory; polled every {} ms "
                      "while a file cannot be opened or has other links",
                      every)
                : std::string("inotify watches every pattern's directory (a full look every 30 s)");
        std::printf(
            "files: %s; patterns expanded %s times\n", how.c_str(), u64(f, "scans").c_str());
    }
    TextTable t;
    t.header = {
        "SOURCE", "NAME", "POSITION", "LINES", "EVIDENCE", "LAG", "LOST_RECORDS", "LOST_BYTES"};
    for (const auto& s : j.value("streams", nlohmann::json::array()))
        t.rows.push_back({s.value("source", "?") + (s.value("active", true) ? "" : " (rotated)"),
                          s.value("name", "?"),
                          s.value("position", "?"),
                          u64(s, "lines"),
                          u64(s, "evidence"),
                          u64(s, "lag"),
                          u64(s, "lost_records"),
                          u64(s, "lost_bytes")});
    t.print(stdout);
    return 0;
}

int cmdWatch(const std::string& socket, bool json, double timeout_s) {
    auto deadline = after(timeout_s);
    auto fd = connectDaemon(socket, "watch", deadline);
    if (!fd) {
        printText(stderr, "gpufault: {}\n", fd.error());
        return 2;
    }
    ReplyReader reader(*fd);
    std::string line;
    if (nextLine(reader, line, deadline, timeout_s, socket) != ReplyReader::Result::Line ||
        parseReply(line, socket).is_null()) {
        ::close(*fd);
        return 2;
    }
    printText(stderr, "watching {} (Ctrl-C to stop)\n", socket);
    // Lines come when faults happen: no deadline from here on.
    for (;;) {
        auto got = nextLine(reader, line, std::nullopt, 0, socket);
        if (got != ReplyReader::Result::Line) {
            ::close(*fd);
            // The daemon stopped or dropped this client: watching ended, not by the user.
            return got == ReplyReader::Result::End ? 1 : 2;
        }
        std::string why;
        auto parsed = parseLine(line, why);
        if (parsed) why = watchShapeError(*parsed).value_or("");
        if (!why.empty()) {
            ::close(*fd);
            return malformed(socket, why, line);
        }
        const nlohmann::json& j = *parsed;
        if (json) {
            printJsonLine(stdout, j);
        } else if (j.value("type", "") == "evidence") {
            std::printf("record   #%s %-20s %-18s %s:%s\n",
                        u64(j, "id").c_str(),
                        textOr(j, "kind", "?").c_str(),
                        textOr(j, "address", "-").c_str(),
                        textOr(j, "source", "?").c_str(),
                        u64(j, "line").c_str());
        } else if (j.value("type", "") == "incident") {
            std::printf("INCIDENT #%s %-20s %-18s %s: %s\n",
                        u64(j, "id").c_str(),
                        textOr(j, "kind", "?").c_str(),
                        textOr(j, "address", "-").c_str(),
                        u64Counted(j, "members", "record").c_str(),
                        textOr(j, "kinds", "").c_str());
        } else if (j.value("type", "") == "incident_update") {
            std::printf("UPDATE   #%s %-20s %-18s %s, %s before: %s\n",
                        u64(j, "id").c_str(),
                        textOr(j, "kind", "?").c_str(),
                        textOr(j, "address", "-").c_str(),
                        u64Counted(j, "members", "record").c_str(),
                        u64(j, "members_before").c_str(),
                        textOr(j, "kinds", "").c_str());
        } else if (j.value("type", "") == "dropped") {
            std::printf("(%s lines dropped: this terminal read too slowly)\n",
                        u64(j, "lines").c_str());
        }
        std::fflush(stdout);
    }
}

}  // namespace gpufault::cli
