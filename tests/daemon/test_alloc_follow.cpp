// The real gpufaultd following the preload shim's directory: a job running under the real shim
// (the stand-in runtime of tests/collectors/preload) writes its allocation file there, a ROCr
// fault line of that pid arrives in a followed log, and `gpufault show` measures the fault
// from the allocation the daemon stored. Who may write records for which process, and restarts.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <regex>

#include "tests/daemon/alloc_follow_fixture.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

/// Skips the test unless it runs as root (it writes files as uid 65534), printing so: ctest
/// shows a skipped test as passed.
#define SKIP_UNLESS_ROOT()                                                         \
    if (::geteuid() != 0) {                                                        \
        std::printf("[  SKIPPED ] 1 test: needs root to write as another user\n"); \
        GTEST_SKIP() << "needs root (files written as uid 65534)";                 \
    }

TEST(DaemonAllocations, ShimFileOfARunningJobMeetsItsFaultInShow) {
    Fixture f;
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));

    HeldJob job(f.alloc);
    ASSERT_GT(job.pid, 0);
    uint64_t ptr = job.ptr();
    ASSERT_NE(ptr, 0u) << job.line;
    // Stored while the job runs: one allocation of its pid, from its own file.
    ASSERT_TRUE(eventually(
        [&] {
            return f.count(fmt::format("SELECT count(*) FROM allocations WHERE pid={} AND "
                                       "api='hipMalloc' AND ptr={} AND end={} AND device=3 AND "
                                       "free_line IS NULL",
                                       job.pid,
                                       static_cast<int64_t>(ptr),
                                       static_cast<int64_t>(ptr + (1 << 20)))) == 1;
        },
        10s))
        << d.stderrText() << controlRequest(f.sock, "status");
    EXPECT_EQ(f.count(fmt::format("SELECT count(*) FROM sources WHERE kind='alloc' AND path='{}'",
                                  shimFile(f.alloc, job.pid))),
              1);

    // The fault, 4 KiB past the buffer's end: ROCr's line and the kernel's block naming the pid.
    append(f.logs + "/job.log", faultLog(job.pid, ptr + (1 << 20) + 0x1000));
    ASSERT_TRUE(eventually(
        [&] {
            return f.count(fmt::format(
                       "SELECT count(*) FROM fault_allocation_distance v JOIN evidence e ON "
                       "e.id=v.evidence_id WHERE e.kind='amdgpu_page_fault' AND e.pid={} AND "
                       "v.distance=4096 AND v.inside=0 AND v.same_2mib=1 AND v.freed=0",
                       job.pid)) == 1;
        },
        10s))
        << d.stderrText();
    ASSERT_TRUE(eventually([&] { return f.count("SELECT count(*) FROM incidents") == 1; }, 10s));
    auto show = run({GPUFAULT_BIN, "--db", f.store, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find(fmt::format("Allocations recorded by the preload shim, by |distance| "
                                        "from 0x{:016x} (1 of pid {})",
                                        ptr + (1 << 20) + 0x1000,
                                        job.pid)),
              std::string::npos)
        << show.out;
    EXPECT_NE(show.out.find("+4,096 B (+4.00 KiB) above end"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("libgpufault_standin_fw.so+0x"), std::string::npos) << show.out;
    auto st = nlohmann::json::parse(controlRequest(f.sock, "status"), nullptr, false);
    ASSERT_TRUE(st.is_object());
    bool listed = false;
    for (const auto& s : st["streams"])
        if (s["source"] == "allocations" && s["name"] == f.alloc) {
            listed = true;
            EXPECT_EQ(s["error"], "");
            EXPECT_EQ(s["evidence"], 1);  // allocations stored
        }
    EXPECT_TRUE(listed) << st.dump();

    // The job frees nothing and ends; the daemon restarts: nothing is stored twice.
    job.release();
    ASSERT_TRUE(stoppedCleanly(d));
    DaemonProcess again(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(again));
    // Let it scan the directory a few times (poll_interval_ms = 100).
    ASSERT_TRUE(eventually(
        [&] {
            auto s = nlohmann::json::parse(controlRequest(f.sock, "status"), nullptr, false);
            if (!s.is_object()) return false;
            for (const auto& x : s["streams"])
                if (x["source"] == "allocations")
                    return x["position"].get<std::string>().starts_with("1 file(s) followed");
            return false;
        },
        10s))
        << again.stderrText();
    append(f.logs + "/other.log", "quiet line\n");  // a commit goes by
    ASSERT_TRUE(eventually(
        [&] { return f.count("SELECT count(*) FROM sources WHERE path LIKE '%/other.log'") == 1; },
        10s));
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations"), 1);
    EXPECT_EQ(f.count("SELECT count(*) FROM sources WHERE kind='alloc'"), 1);
    EXPECT_TRUE(stoppedCleanly(again));
}

TEST(DaemonAllocations, GrowingFileIsStoredAsItGrowsWithItsFrees) {
    Fixture f;
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    // Written by root (as a root job's shim would): trusted without a live process.
    pid_t pid = ::getpid();
    std::string file = f.alloc + fmt::format("/gpufault-alloc.{}.log", pid);
    append(file,
           fmt::format("gpufault.alloc 1 start pid={} ppid=1 wall_us=1 mono_us=1 exe=/bin/job\n"
                       "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=4096 "
                       "mem=device device=0 rc=0 wall_us=2 mono_us=2 pid={} tid={} stack=-\n",
                       pid,
                       pid,
                       pid));
    ASSERT_TRUE(storeReaches(d, f.store, "SELECT count(*) FROM allocations", 1, 10s));
    // A record being written (no newline yet) is not read; once whole, the free pairs.
    append(file,
           fmt::format("gpufault.alloc 1 free api=hipFree ptr=0x7f0000000000 size=0 "
                       "device=-1 rc=0 wall_us=3 mono_us=3 pid={} tid={}",
                       pid,
                       pid));
    append(file, " stack=-\n");
    ASSERT_TRUE(storeReaches(d,
                             f.store,
                             "SELECT count(*) FROM allocations WHERE free_api='hipFree' AND "
                             "free_line=3",
                             1,
                             10s));
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations"), 1);
    EXPECT_EQ(f.count("SELECT count(*) FROM warnings"), 0);
    EXPECT_TRUE(stoppedCleanly(d));
}

TEST(DaemonAllocations, AUserCannotRecordAllocationsForAnotherUsersProcess) {
    SKIP_UNLESS_ROOT();
    Fixture f;
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    pid_t victim = ::getpid();  // a root process
    // A process of uid 65534 writes (1) a file named for the root process and (2) its own
    // file, holding a record of its own pid and one claiming the root process, then waits.
    int gate[2];
    ASSERT_EQ(::pipe2(gate, O_CLOEXEC), 0);
    int ready[2];
    ASSERT_EQ(::pipe2(ready, O_CLOEXEC), 0);
    pid_t child = ::fork();
    if (child == 0) {
        ::close(gate[1]);
        if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
            ::_exit(3);
        ::prctl(PR_SET_DUMPABLE, 1);  // as after an exec: /proc/PID is the user's
        pid_t me = ::getpid();
        auto rec = [](pid_t p, const char* ptr) {
            return fmt::format(
                "gpufault.alloc 1 alloc api=hipMalloc ptr={} size=4096 "
                "mem=device device=0 rc=0 wall_us=2 mono_us=2 pid={} tid={} "
                "stack=-\n",
                ptr,
                p,
                p);
        };
        std::string forged =
            fmt::format("gpufault.alloc 1 start pid={} ppid=1 wall_us=1 mono_us=1 exe=/x\n",
                        victim) +
            rec(victim, "0x7f1000000000");
        std::string own =
            fmt::format("gpufault.alloc 1 start pid={} ppid=1 wall_us=1 mono_us=1 exe=/x\n", me) +
            rec(me, "0x7f2000000000") + rec(victim, "0x7f3000000000");
        for (const auto& [name, text] :
             {std::pair{fmt::format("{}/gpufault-alloc.{}.log", f.alloc, victim), forged},
              std::pair{fmt::format("{}/gpufault-alloc.{}.log", f.alloc, me), own}}) {
            int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
            if (fd < 0 ||
                ::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
                ::_exit(4);
            ::close(fd);
        }
        char c = 1;
        (void)!::write(ready[1], &c, 1);
        (void)!::read(gate[0], &c, 1);  // alive until the parent closes the gate
        ::_exit(0);
    }
    ::close(gate[0]);
    ::close(ready[1]);
    char c = 0;
    ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the uid 65534 child could not write its files";
    ::close(ready[0]);
    ASSERT_TRUE(eventually(
        [&] {
            return f.count(fmt::format("SELECT count(*) FROM allocations WHERE pid={}", child)) ==
                   1;
        },
        10s))
        << d.stderrText() << controlRequest(f.sock, "status");
    // Only its own record: the forged file is refused whole, the foreign record in its own file
    // becomes a warning.
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations"), 1);
    EXPECT_EQ(f.count(fmt::format("SELECT count(*) FROM allocations WHERE pid={}", victim)), 0);
    EXPECT_EQ(f.count(fmt::format("SELECT count(*) FROM warnings WHERE message = 'record of pid "
                                  "{} in the file of pid {}: refused'",
                                  victim,
                                  child)),
              1);
    EXPECT_NE(d.stderrText().find(fmt::format("gpufault-alloc.{}.log refused: owned by uid 65534, "
                                              "but pid {} runs as uid 0",
                                              victim,
                                              victim)),
              std::string::npos)
        << d.stderrText();
    ::close(gate[1]);
    ::waitpid(child, nullptr, 0);
    EXPECT_TRUE(stoppedCleanly(d));
    // Restarted after the child ended: its file, stored before (same device, inode and start
    // line), is still followed; the forged one is still refused; nothing is stored twice.
    DaemonProcess again(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(again));
    std::string position;
    EXPECT_TRUE(eventually(
        [&] {
            auto s = nlohmann::json::parse(controlRequest(f.sock, "status"), nullptr, false);
            if (!s.is_object()) return false;
            for (const auto& x : s["streams"])
                if (x["source"] == "allocations") position = x["position"];
            return position.starts_with("1 file(s) followed, 1 refused");
        },
        10s))
        << position << "\n"
        << again.stderrText();
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations"), 1);
    EXPECT_TRUE(stoppedCleanly(again));
}

TEST(DaemonAllocations, ADirectoryOthersMayWriteWithoutTheStickyBitIsRefused) {
    Fixture f;
    ::chmod(f.alloc.c_str(), 0777);
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    pid_t pid = ::getpid();
    append(f.alloc + fmt::format("/gpufault-alloc.{}.log", pid),
           fmt::format("gpufault.alloc 1 start pid={} ppid=1 wall_us=1 mono_us=1 exe=/x\n", pid));
    ASSERT_TRUE(eventually(
        [&] {
            auto s = nlohmann::json::parse(controlRequest(f.sock, "status"), nullptr, false);
            if (!s.is_object()) return false;
            for (const auto& x : s["streams"])
                if (x["source"] == "allocations")
                    return x["error"] ==
                           "mode 777: writable by others without the sticky bit: "
                           "refused";
            return false;
        },
        10s))
        << controlRequest(f.sock, "status");
    EXPECT_EQ(f.count("SELECT count(*) FROM sources WHERE kind='alloc'"), 0);
    EXPECT_TRUE(stoppedCleanly(d));
}

TEST(DaemonAllocations, RunRecordAllocationsWritesIntoTheFollowedDirectory) {
    // `gpufault run --record-allocations` records into a run directory of gpufaultd's
    // directory: its own store gets the run's allocations, the daemon's store gets them too.
    Fixture f;
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    std::string db = f.dir.file("run.db");
    auto r = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "run",
                  "--spool",
                  f.dir.file("spool"),
                  "--record-allocations",
                  "--preload",
                  PRELOAD_SHIM,
                  "--alloc-dir",
                  f.alloc,
                  "--",
                  PRELOAD_HOST,
                  STANDIN_FW,
                  STANDIN_RT,
                  "fault"});
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    std::smatch m;
    std::string err = r.err;
    ASSERT_TRUE(std::regex_search(err,
                                  m,
                                  std::regex("1 allocation recorded by 1 process in (" + f.alloc +
                                             "/run-[0-9T]+Z-[0-9]+)\n")))
        << r.err;
    std::string runDir = m[1];
    struct stat st {};
    ASSERT_EQ(::stat(runDir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    EXPECT_EQ(storeCount(db,
                         "SELECT count(*) FROM allocations WHERE run_id=1 AND "
                         "api='hipMalloc' AND end-ptr=1048576"),
              1);
    ASSERT_TRUE(eventually(
        [&] {
            return f.count(fmt::format("SELECT count(*) FROM allocations a JOIN sources s ON "
                                       "s.id=a.source_id WHERE s.path LIKE '{}/gpufault-alloc.%' "
                                       "AND a.api='hipMalloc' AND a.end-a.ptr=1048576",
                                       runDir)) == 1;
        },
        10s))
        << d.stderrText();
    EXPECT_TRUE(stoppedCleanly(d));
}


namespace {

/// A process of uid 65534 with its own allocation file, doing what it is told over a pipe:
/// 'a' appends a record of its pid (next ptr) through the descriptor it opened as uid 65534,
/// 'r' makes it root again (its saved uid: /proc/PID becomes root's, as when the pid is reused by
/// a root process), 'x' ends it. One byte back per command.
struct UserJob {
    pid_t pid = -1;
    int cmd = -1, ack = -1;
    std::string file;

    explicit UserJob(const std::string& alloc_dir) {
        int c[2], a[2];
        if (::pipe2(c, O_CLOEXEC) != 0 || ::pipe2(a, O_CLOEXEC) != 0) return;
        pid = ::fork();
        if (pid == 0) {
            ::close(c[1]);  // its commands end when the parent closes its end
            ::close(a[0]);
            if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 0) != 0)
                ::_exit(3);
            ::prctl(PR_SET_DUMPABLE, 1);  // as after an exec: /proc/PID is the user's
            pid_t me = ::getpid();
            auto name = fmt::format("{}/gpufault-alloc.{}.log", alloc_dir, me);
            int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0600);
            if (fd < 0) ::_exit(4);
            auto put = [&](const std::string& s) {
                if (::write(fd, s.data(), s.size()) != static_cast<ssize_t>(s.size())) ::_exit(5);
            };
            put(fmt::format("gpufault.alloc 1 start pid={} ppid=1 wall_us=1 mono_us=1 exe=/x\n",
                            me));
            uint64_t ptr = 0x7f1000000000;
            for (char k = 0; ::read(c[0], &k, 1) == 1;) {
                if (k == 'a') {
                    put(
                        fmt::format("gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size=4096 "
                                    "mem=device device=0 rc=0 wall_us=2 mono_us=2 pid={} tid={} "
                                    "stack=-\n",
                                    ptr,
                                    me,
                                    me));
                    ptr += 0x100000;
                } else if (k == 'r') {
                    if (::setresuid(0, 0, 0) != 0) ::_exit(6);
                } else {
                    ::_exit(0);
                }
                (void)!::write(a[1], &k, 1);
            }
            ::_exit(0);
        }
        ::close(c[0]);
        ::close(a[1]);
        cmd = c[1];
        ack = a[0];
        file = fmt::format("{}/gpufault-alloc.{}.log", alloc_dir, pid);
    }
    bool tell(char k) {
        char back = 0;
        return ::write(cmd, &k, 1) == 1 && ::read(ack, &back, 1) == 1 && back == k;
    }
    void end() {
        if (cmd >= 0) ::close(cmd);
        cmd = -1;
        if (pid > 0) ::waitpid(pid, nullptr, 0);
        pid = -1;
    }
    ~UserJob() {
        end();
        if (ack >= 0) ::close(ack);
    }
};

std::string allocPosition(const std::string& sock) {
    auto s = nlohmann::json::parse(controlRequest(sock, "status"), nullptr, false);
    if (!s.is_object()) return "";
    for (const auto& x : s["streams"])
        if (x["source"] == "allocations") return x["position"];
    return "";
}

}  // namespace

TEST(DaemonAllocations, AFileIsRefusedOnceItsPidRunsAsAnotherUser) {
    SKIP_UNLESS_ROOT();
    Fixture f;
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    UserJob job(f.alloc);
    ASSERT_GT(job.pid, 0);
    ASSERT_TRUE(job.tell('a'));
    auto ofJob = fmt::format("SELECT count(*) FROM allocations WHERE pid={}", job.pid);
    ASSERT_TRUE(storeReaches(d, f.store, ofJob, 1, 10s));
    // The pid now belongs to root (a reused pid looks the same): what the user appends from
    // now on must not count as that process's allocations.
    ASSERT_TRUE(job.tell('r'));
    ASSERT_TRUE(job.tell('a'));
    std::string position;
    EXPECT_TRUE(eventually(
        [&] {
            position = allocPosition(f.sock);
            return position.starts_with("0 file(s) followed, 1 refused");
        },
        10s))
        << position << "\n"
        << d.stderrText();
    EXPECT_EQ(f.count(ofJob), 1);
    EXPECT_NE(d.stderrText().find(
                  fmt::format("refused from now on: pid {} now runs as uid 0, not 65534", job.pid)),
              std::string::npos)
        << d.stderrText();
    job.end();
    EXPECT_TRUE(stoppedCleanly(d));
}

TEST(DaemonAllocations, AFileIsReadOnceMoreAfterItsProcessEndedThenClosed) {
    SKIP_UNLESS_ROOT();
    Fixture f;
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    UserJob job(f.alloc);
    ASSERT_GT(job.pid, 0);
    pid_t pid = job.pid;
    ASSERT_TRUE(job.tell('a'));
    auto ofJob = fmt::format("SELECT count(*) FROM allocations WHERE pid={}", pid);
    ASSERT_TRUE(storeReaches(d, f.store, ofJob, 1, 10s));
    // Its last record, written just before it ended, is stored.
    ASSERT_TRUE(job.tell('a'));
    std::string file = job.file;
    job.end();
    std::string position;
    EXPECT_TRUE(eventually(
        [&] {
            position = allocPosition(f.sock);
            return f.count(ofJob) == 2 &&
                   position.find("1 closed (process ended)") != std::string::npos;
        },
        10s))
        << position << "\n"
        << d.stderrText();
    // A record added after that (anyone holding the file open, once the pid may be reused) is
    // not: a root file written after it is stored first, in the same scan or a later one.
    {
        // Without O_CREAT: root may not O_CREAT another user's file in a sticky directory.
        auto late = fmt::format(
            "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f9000000000 "
            "size=4096 mem=device device=0 rc=0 wall_us=3 mono_us=3 pid={} "
            "tid={} stack=-\n",
            pid,
            pid);
        int fd = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
        ASSERT_GE(fd, 0) << file << ": " << std::strerror(errno);
        ASSERT_EQ(::write(fd, late.data(), late.size()), static_cast<ssize_t>(late.size()));
        ::close(fd);
    }
    pid_t me = ::getpid();
    append(fmt::format("{}/gpufault-alloc.{}.log", f.alloc, me),
           fmt::format("gpufault.alloc 1 start pid={} ppid=1 wall_us=1 mono_us=1 exe=/x\n"
                       "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f8000000000 size=4096 "
                       "mem=device device=0 rc=0 wall_us=2 mono_us=2 pid={} tid={} stack=-\n",
                       me,
                       me,
                       me));
    ASSERT_TRUE(storeReaches(
        d, f.store, fmt::format("SELECT count(*) FROM allocations WHERE pid={}", me), 1, 10s));
    EXPECT_EQ(f.count(ofJob), 2);
    EXPECT_TRUE(stoppedCleanly(d));
}

TEST(DaemonAllocations, AUserFillingTheDirectoryDoesNotStopOtherUsersFiles) {
    SKIP_UNLESS_ROOT();
    Fixture f;
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    // uid 65534 makes 65,600 empty files named for pids that are not its own (more than the
    // daemon remembers at once, 65,536): each is refused.
    constexpr int kJunk = 65600;
    pid_t child = ::fork();
    if (child == 0) {
        if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0)
            ::_exit(3);
        for (int i = 0; i < kJunk; ++i) {
            auto name = fmt::format("{}/gpufault-alloc.{}.log", f.alloc, 3000000 + i);
            int fd = ::open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (fd < 0) ::_exit(4);
            ::close(fd);
        }
        ::_exit(0);
    }
    int status = -1;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    std::string position;
    ASSERT_TRUE(eventually(
        [&] {
            position = allocPosition(f.sock);
            std::smatch m;
            static const std::regex re(R"(followed, (\d+) refused)");
            return std::regex_search(position, m, re) && std::stoull(m[1]) >= 4096;
        },
        30s))
        << position << "\n"
        << d.stderrText();
    // Root's file for a running process (this one) is still followed.
    pid_t me = ::getpid();
    append(fmt::format("{}/gpufault-alloc.{}.log", f.alloc, me),
           fmt::format("gpufault.alloc 1 start pid={} ppid=1 wall_us=1 mono_us=1 exe=/x\n"
                       "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f8000000000 size=4096 "
                       "mem=device device=0 rc=0 wall_us=2 mono_us=2 pid={} tid={} stack=-\n",
                       me,
                       me,
                       me));
    EXPECT_TRUE(eventually(
        [&] {
            return f.count(fmt::format("SELECT count(*) FROM allocations WHERE pid={}", me)) == 1;
        },
        10s))
        << allocPosition(f.sock);
    // The refusals are counted, ten of them logged, and the user's quota said once.
    auto err = d.stderrText();
    size_t logged = 0;
    for (size_t at = err.find(" refused: "); at != std::string::npos;
         at = err.find(" refused: ", at + 1))
        ++logged;
    EXPECT_EQ(logged, 10u);
    EXPECT_NE(err.find("uid 65534 has more than 4096 files in " + f.alloc +
                       ": its further files are not followed"),
              std::string::npos)
        << err.substr(0, 2000);
    EXPECT_NE(allocPosition(f.sock).find("followed, 4096 refused"), std::string::npos)
        << allocPosition(f.sock);
    EXPECT_TRUE(stoppedCleanly(d));
}
