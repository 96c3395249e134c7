// Ctrl-C (SIGINT) or SIGTERM during `gpufault ingest`: what was read is committed with its
// checkpoint and correlated, so the faults stored have their incidents (hostile review 154,
// LOW 2: a killed or interrupted ingest left fault records in no incident until it was run
// again). The ingest reads a pipe the test writes and keeps open: the signal ends its wait.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

/// `gpufault --db DB ingest -` with its stdin a pipe this test writes.
class PipedIngest {
  public:
    PipedIngest(const std::string& db, const std::string& out, const std::string& err) {
        int p[2];
        if (::pipe(p) != 0) return;
        pid_ = ::fork();
        if (pid_ == 0) {
            ::dup2(p[0], 0);
            ::close(p[0]);
            ::close(p[1]);
            int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
            ::dup2(o, 1);
            ::dup2(e, 2);
            ::execl(GPUFAULT_BIN, GPUFAULT_BIN, "--db", db.c_str(), "ingest", "-", nullptr);
            ::_exit(127);
        }
        ::close(p[0]);
        in_ = p[1];
    }
    ~PipedIngest() {
        if (in_ >= 0) ::close(in_);
        if (pid_ > 0 && !status_) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
        }
    }
    PipedIngest(const PipedIngest&) = delete;
    PipedIngest& operator=(const PipedIngest&) = delete;

    bool write(const std::string& s) {
        return in_ >= 0 && ::write(in_, s.data(), s.size()) == static_cast<ssize_t>(s.size());
    }
    void signal(int sig) { ::kill(pid_, sig); }
    /// Whether the ingest read everything written (the pipe empty) within `seconds`.
    bool drained(int seconds) {
        for (int i = 0; i < seconds * 100; ++i) {
            int n = -1;
            if (::ioctl(in_, FIONREAD, &n) == 0 && n == 0) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }
    /// The exit status (128+N for signal N), waiting up to `seconds`; nullopt on a timeout.
    std::optional<int> wait(int seconds) {
        for (int i = 0; i < seconds * 100 && !status_; ++i) {
            int st = 0;
            if (::waitpid(pid_, &st, WNOHANG) == pid_)
                status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            else
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return status_;
    }

  private:
    pid_t pid_ = -1;
    int in_ = -1;
    std::optional<int> status_;
};

std::string faultBlock(int i) {
    const std::string base = fmt::format("0x7f{:02x}00000000", 0x10 + i);
    return fmt::format(
        "[probe{}] name=buf{} ptr={} size=4096\n"
        "Memory access fault by GPU node-1 (Agent handle: 0x55d0c0a0b0c0) on address {}. "
        "Reason: Page not present or supervisor privilege.\n",
        i,
        i,
        base,
        base);
}

/// The value of a one-row, one-column query, with its newline.
std::string scalar(const std::string& db, const std::string& sql) {
    auto r = run({GPUFAULT_BIN, "--db", db, "query", sql});
    return r.out.substr(r.out.find('\n') + 1);
}

TEST(IngestInterrupt, SigintStoresWhatWasReadAndCorrelatesIt) {
    ::signal(SIGPIPE, SIG_IGN);  // a write to an ingest that ended fails, not kills the test
    for (int sig : {SIGINT, SIGTERM}) {
        TempDir t;
        const std::string db = t.file("db");
        PipedIngest ingest(db, t.file("out"), t.file("err"));
        std::string first;
        // Over the 4 KiB the source's fingerprint waits for.
        for (int i = 0; i < 3; ++i) first += faultBlock(i) + std::string(2000, 'x') + "\n";
        ASSERT_TRUE(ingest.write(first));
        // Read from the pipe (nothing left in it), then matched: the ingest waits for more.
        ASSERT_TRUE(ingest.drained(10)) << readFile(t.file("err"));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        ingest.signal(sig);
        // The reading thread waits in read() on the open pipe: the signal ends that wait.
        auto status = ingest.wait(20);
        ASSERT_TRUE(status) << "no exit after the signal";
        EXPECT_EQ(*status, 128 + sig);
        const std::string err = readFile(t.file("err"));
        EXPECT_NE(err.find("gpufault: interrupted: storing what was read"), std::string::npos)
            << err;
        EXPECT_NE(err.find("interrupted after 9 lines"), std::string::npos) << err;
        EXPECT_NE(err.find(" lines; the lines read are stored (a stream is not read again)"),
                  std::string::npos)
            << err;
        // Every fault stored is in an incident, with its operand at distance 0.
        const std::string faults =
            scalar(db, "SELECT count(*) FROM evidence WHERE kind = 'rocr_memory_fault'");
        EXPECT_EQ(faults, "3\n");
        EXPECT_EQ(scalar(db,
                         "SELECT count(*) FROM evidence e WHERE kind = 'rocr_memory_fault' AND "
                         "NOT EXISTS (SELECT 1 FROM incident_evidence i WHERE i.evidence_id = "
                         "e.id)"),
                  "0\n");
        EXPECT_EQ(scalar(db, "SELECT count(*) FROM fault_operand_distance WHERE distance = 0"),
                  faults);
        EXPECT_NE(readFile(t.file("out")).find(faults.substr(0, 1) + " incidents in " + db),
                  std::string::npos)
            << readFile(t.file("out"));
    }
}

// Hostile review 157, F1: a quiet pipe (`journalctl -f | gpufault ingest -` on a calm host) kept
// the interrupted ingest waiting for the writer; its one line, less than the 4 KiB the
// stream's fingerprint waits for, is stored and the ingest ends at once.
TEST(IngestInterrupt, AQuietPipeEndsAtTheSignalWithWhatItRead) {
    ::signal(SIGPIPE, SIG_IGN);
    TempDir t;
    const std::string db = t.file("db");
    PipedIngest ingest(db, t.file("out"), t.file("err"));
    ASSERT_TRUE(ingest.write(faultBlock(0)));
    ASSERT_TRUE(ingest.drained(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ingest.signal(SIGINT);
    auto status = ingest.wait(10);  // the pipe stays open and quiet
    ASSERT_TRUE(status) << "still waiting for the writer";
    EXPECT_EQ(*status, 130);
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM evidence WHERE kind = 'rocr_memory_fault'"), "1\n");
    EXPECT_EQ(scalar(db, "SELECT count(*) FROM operands"), "1\n");
    EXPECT_NE(readFile(t.file("out")).find("1 incident in " + db), std::string::npos)
        << readFile(t.file("out")) << readFile(t.file("err"));
}

// Hostile review 158, N1: a named FIFO without a writer kept `gpufault ingest FIFO` in open()
// after the first Ctrl-C (no stop reaches it there). With a FIFO among the inputs the first
// signal ends the ingest at once, as before the stop existed.
TEST(IngestInterrupt, ANamedFifoWithoutAWriterEndsAtTheFirstSignal) {
    TempDir t;
    const std::string fifo = t.file("ff");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execl(GPUFAULT_BIN,
                GPUFAULT_BIN,
                "--db",
                t.file("db").c_str(),
                "ingest",
                fifo.c_str(),
                nullptr);
        ::_exit(127);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // in open(), waiting
    ::kill(pid, SIGINT);
    int st = 0;
    bool ended = false;
    for (int i = 0; i < 500 && !ended; ++i) {
        ended = ::waitpid(pid, &st, WNOHANG) == pid;
        if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!ended) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &st, 0);
    }
    ASSERT_TRUE(ended) << "still waiting 5 s after SIGINT";
    EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGINT);
}

}  // namespace
}  // namespace gpufault::testing
