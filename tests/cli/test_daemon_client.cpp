// `gpufault status` and `gpufault watch` against a fake gpufaultd: a real Unix socket in the
// test that answers with hostile replies (wrong JSON shapes, endless lines, silence). The
// built binary must exit 2 with a message naming what is wrong, never abort or hang.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

/// A control socket that plays gpufaultd badly, served by a thread of the test.
class FakeDaemon {
  public:
    enum class Mode {
        Reply,     ///< reads the request line, sends `reply`, closes
        Silent,    ///< reads the request line, never answers
        NoAccept,  ///< its backlog is full: a connect waits
    };
    explicit FakeDaemon(Mode mode, std::string reply = "") : reply_(std::move(reply)) {
        path_ = dir_.file("ctl.sock");
        listen_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un a = address();
        EXPECT_EQ(::bind(listen_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        EXPECT_EQ(::listen(listen_, mode == Mode::NoAccept ? 0 : 4), 0);
        EXPECT_EQ(::pipe(stop_), 0);
        if (mode == Mode::NoAccept) {
            filler_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);  // fills the backlog
            EXPECT_EQ(::connect(filler_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
        } else {
            thread_ = std::thread([this, mode] { serve(mode); });
        }
    }
    ~FakeDaemon() {
        (void)!::write(stop_[1], "x", 1);
        if (thread_.joinable()) thread_.join();
        for (int fd : {listen_, filler_, stop_[0], stop_[1]})
            if (fd >= 0) ::close(fd);
    }
    const std::string& path() const { return path_; }
    /// The request line the client sent ("" until one came).
    std::string request() {
        if (thread_.joinable()) {
            (void)!::write(stop_[1], "x", 1);
            thread_.join();
        }
        return request_;
    }

  private:
    sockaddr_un address() const {
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, path_.c_str(), sizeof a.sun_path - 1);
        return a;
    }
    /// Waits for `fd` to be readable; false when told to stop.
    bool wait(int fd) {
        pollfd p[2] = {{fd, POLLIN, 0}, {stop_[0], POLLIN, 0}};
        return ::poll(p, 2, 60000) > 0 && !(p[1].revents & POLLIN);
    }
    void serve(Mode mode) {
        if (!wait(listen_)) return;
        int c = ::accept4(listen_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) return;
        char ch;
        while (wait(c) && ::read(c, &ch, 1) == 1 && ch != '\n') request_ += ch;
        if (mode == Mode::Reply) {
            for (size_t at = 0; at < reply_.size();) {
                ssize_t n = ::send(c, reply_.data() + at, reply_.size() - at, MSG_NOSIGNAL);
                if (n <= 0) break;  // the client hung up: fine
                at += static_cast<size_t>(n);
            }
        } else {
            wait(stop_[0]);
        }
        ::close(c);
    }

    TempDir dir_;
    std::string path_, reply_, request_;
    int listen_ = -1, filler_ = -1, stop_[2] = {-1, -1};
    std::thread thread_;
};

const std::string kGood =
    R"({"version":"0.9","pid":41,"uptime_s":12.5,"config":"/etc/g.conf","store":{"path":"/s.db",)"
    R"("bytes":4096,"error":""},"commits":3,"streams":[{"source":"files","name":"/l/job.log",)"
    R"("position":"1200","lines":20,"evidence":2,"lag":0,"lost_records":0,"lost_bytes":0,)"
    R"("active":true}]})"
    "\n";

/// `gpufault status` (a 30 s guard: only a hang reaches it, then status 137).
ProcessResult status(const std::string& socket, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {GPUFAULT_BIN, "status", "--socket", socket};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run(argv, 30);
}

TEST(DaemonClient, AWellFormedStatusIsShown) {
    FakeDaemon d(FakeDaemon::Mode::Reply, kGood);
    auto r = status(d.path());
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(d.request(), "status");
    EXPECT_NE(r.out.find("gpufaultd 0.9, pid 41, up 12 s, config /etc/g.conf\n"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("files\t/l/job.log\t1200\t20\t2\t0\t0\t0\n"), std::string::npos) << r.out;
}

TEST(DaemonClient, TheWorkerIsShown) {
    std::string reply = kGood.substr(0, kGood.size() - 2) +
                        R"(,"worker":{"busy":true,"queued":true,"correlations":12,"diagnosed":1,)"
                        R"("last_s":2.314,"last_correlate_s":1.9,"last_write_s":0.2,)"
                        R"("last_diagnose_s":0.011,"last_records":395001,"last_incidents":1,)"
                        R"("last_rows":2,"jobs_queued":0,"error":""}})"
                        "\n";
    FakeDaemon d(FakeDaemon::Mode::Reply, reply);
    auto r = status(d.path());
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("worker busy, another pass queued: 12 correlations, the last 2.31 s "
                         "(correlate 1.90 s, write 0.20 s, diagnose 0.01 s) over 395001 records, "
                         "1 incident, 2 rows written; 1 diagnosis, 0 core files queued\n"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("WORKER ERROR"), std::string::npos) << r.out;
}

TEST(DaemonClient, MalformedStatusRepliesExit2NamingTheFault) {
    std::string deep = R"({"streams":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
    struct Row {
        std::string reply, why;
    };
    const Row rows[] = {
        {"42\n", "expected an object"},
        {"[1,2]\n", "expected an object"},
        {"null\n", "expected an object"},
        {"not json at all\n", "not JSON"},
        {R"({"error":7})"
         "\n",
         "error: expected a string"},
        {R"({"store":5})"
         "\n",
         "store: expected an object"},
        {R"({"worker":{"busy":1}})"
         "\n",
         "worker.busy: expected true or false"},
        {R"({"store":{"bytes":"many"}})"
         "\n",
         "store.bytes: expected a byte count"},
        {R"({"store":{"bytes":-1}})"
         "\n",
         "store.bytes: expected a byte count"},
        {R"({"store":{"path":null}})"
         "\n",
         "store.path: expected a string"},
        {R"({"version":{"major":1}})"
         "\n",
         "version: expected a string"},
        {R"({"uptime_s":"long"})"
         "\n",
         "uptime_s: expected a number"},
        {R"({"streams":3})"
         "\n",
         "streams: expected an array"},
        {R"({"streams":[7]})"
         "\n",
         "streams[0]: expected an object"},
        {R"({"streams":[{"source":"kmsg"},{"source":1}]})"
         "\n",
         "streams[1].source: expected a string"},
        {R"({"streams":[{"lines":{"n":1}}]})"
         "\n",
         "streams[0].lines: expected a number"},
        {R"({"pid":"41"})"
         "\n",
         "pid: expected a number"},
        {R"({"streams":[{"active":"yes"}]})"
         "\n",
         "streams[0].active: expected true or false"},
        {R"({"ok":true,"id":3})"
         "\n",
         "version: missing (not a status reply)"},
        {R"({"version":"1","pid":2})"
         "\n",
         "streams: missing (not a status reply)"},
        {deep + "\n", "nested deeper than 64"},
        {std::string(17 << 20, 'x'), "a line longer than 16777216 bytes"},
    };
    for (const auto& row : rows) {
        for (bool json : {false, true}) {
            FakeDaemon d(FakeDaemon::Mode::Reply, row.reply);
            auto r = status(d.path(),
                            json ? std::vector<std::string>{"--json"} : std::vector<std::string>{});
            std::string shown = row.reply.substr(0, 40);
            EXPECT_EQ(r.status, 2) << shown << r.err;
            EXPECT_NE(r.err.find(fmt::format(
                          "gpufault: {}: malformed gpufaultd reply ({})", d.path(), row.why)),
                      std::string::npos)
                << shown << "\n"
                << r.err;
            EXPECT_EQ(r.out, "") << shown;
        }
    }
}

TEST(DaemonClient, ARefusalIsShownAndAClosedConnectionIsAnError) {
    FakeDaemon refused(FakeDaemon::Mode::Reply,
                       R"({"error":"permission denied"})"
                       "\n");
    auto r = status(refused.path());
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("permission denied (join the gpufault group, or use sudo)"),
              std::string::npos)
        << r.err;
    FakeDaemon closes(FakeDaemon::Mode::Reply, R"({"half":)");  // no newline, then closed
    auto c = status(closes.path());
    EXPECT_EQ(c.status, 2);
    EXPECT_NE(c.err.find(closes.path() + ": gpufaultd closed the connection"), std::string::npos)
        << c.err;
}

TEST(DaemonClient, StatusGivesUpOnADaemonThatNeverAnswers) {
    FakeDaemon silent(FakeDaemon::Mode::Silent);
    auto r = status(silent.path(), {"--timeout", "0.3"});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(
        r.err.find("gpufaultd at " + silent.path() + " did not answer within 0.3 s (--timeout)"),
        std::string::npos)
        << r.err;
    EXPECT_EQ(silent.request(), "status");

    FakeDaemon full(FakeDaemon::Mode::NoAccept);  // connect itself would wait forever
    auto f = status(full.path(), {"--timeout", "0.3"});
    EXPECT_EQ(f.status, 2) << f.err;
    EXPECT_NE(f.err.find("gpufaultd at " + full.path() + " accepted no connection in time"),
              std::string::npos)
        << f.err;

    auto bad = status(full.path(), {"--timeout", "0"});
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("--timeout"), std::string::npos) << bad.err;
    auto longPath = status("/tmp/" + std::string(110, 'p'));
    EXPECT_EQ(longPath.status, 2);
    EXPECT_NE(longPath.err.find("a socket path must be 1 to 107 bytes long"), std::string::npos)
        << longPath.err;
}

TEST(DaemonClient, WatchShowsRecordsAndStopsAtAMalformedLine) {
    const std::string watching = R"({"type":"watching"})"
                                 "\n";
    const std::string record =
        R"({"type":"evidence","id":7,"kind":"nvidia_xid","address":"0x7f4dc1f00000","source":"kmsg","line":3})"
        "\n";
    // Null where docs/evidence.md allows it (the record does not state the field).
    const std::string nulls =
        R"({"type":"evidence","id":8,"kind":"runtime_error","vendor":null,"source":"kmsg","line":4,"time":null,"address":null,"address_exact":null,"align_2mib":null,"pci":null,"gpu_node":null,"pid":null,"process":null,"tid":null,"thread":null,"runtime_tid":null,"vmid":null,"pasid":null,"hub":null,"retry":null,"client":null,"status":null,"access":null,"reason":null,"xid":null,"kernel":null,"module":null,"module_offset":null,"rank":null,"count":1,"attrs":{},"raw":"x"})"
        "\n";
    FakeDaemon ok(FakeDaemon::Mode::Reply,
                  watching + record + nulls +
                      R"({"type":"future-kind","address":5})"
                      "\n");
    auto r = run({GPUFAULT_BIN, "watch", "--socket", ok.path()}, 30);
    EXPECT_EQ(r.status, 1) << r.err;  // the daemon closed: watching ended, not by the user
    EXPECT_NE(r.err.find(ok.path() + ": gpufaultd closed the connection"), std::string::npos)
        << r.err;
    EXPECT_EQ(ok.request(), "watch");
    EXPECT_EQ(r.out,
              "record   #7 nvidia_xid           0x7f4dc1f00000     kmsg:3\n"
              "record   #8 runtime_error        -                  kmsg:4\n");

    struct Row {
        std::string after, why;
    };
    const Row rows[] = {
        {"17\n", "expected an object"},
        {R"({"type":"evidence","kind":5})"
         "\n",
         "kind: expected a string"},
        {R"({"type":["incident"]})"
         "\n",
         "type: expected a string"},
        {R"({"type":"incident","kinds":{}})"
         "\n",
         "kinds: expected a string"},
        {R"({"type":"evidence","address":5})"
         "\n",
         "address: expected a string or null"},
        {R"({"type":"evidence","source":null})"
         "\n",
         "source: expected a string"},
        {R"({"type":"evidence","kind":null})"
         "\n",
         "kind: expected a string"},
        {R"({"type":"incident","members":"2"})"
         "\n",
         "members: expected a number"},
        {"{\"type\":\n", "not JSON"},
        {std::string(17 << 20, '{'), "a line longer than 16777216 bytes"},
    };
    for (const auto& row : rows)
        for (bool json : {false, true}) {
            FakeDaemon d(FakeDaemon::Mode::Reply, watching + record + row.after + record);
            std::vector<std::string> argv = {GPUFAULT_BIN, "watch", "--socket", d.path()};
            if (json) argv.push_back("--json");
            auto w = run(argv, 30);
            std::string shown = row.after.substr(0, 40);
            EXPECT_EQ(w.status, 2) << shown << w.err;
            EXPECT_NE(w.err.find(fmt::format(
                          "gpufault: {}: malformed gpufaultd reply ({})", d.path(), row.why)),
                      std::string::npos)
                << shown << "\n"
                << w.err;
            // The record before the bad line was shown, the one after it was not.
            EXPECT_EQ(std::count(w.out.begin(), w.out.end(), '\n'), 1) << shown << w.out;
        }

    FakeDaemon first(FakeDaemon::Mode::Reply, "[]\n");
    auto f = run({GPUFAULT_BIN, "watch", "--socket", first.path()}, 30);
    EXPECT_EQ(f.status, 2);
    EXPECT_NE(f.err.find("malformed gpufaultd reply (expected an object): []"), std::string::npos)
        << f.err;
    FakeDaemon silent(FakeDaemon::Mode::Silent);
    auto s = run({GPUFAULT_BIN, "watch", "--socket", silent.path(), "--timeout", "0.3"}, 30);
    EXPECT_EQ(s.status, 2);
    EXPECT_NE(s.err.find("did not answer within 0.3 s (--timeout)"), std::string::npos) << s.err;
}

}  // namespace
}  // namespace gpufault::testing
