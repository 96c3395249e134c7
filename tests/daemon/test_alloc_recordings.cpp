// One recording, many files (hostile review 4: F, G, H, J, N, P): gpufaultd stores the records of
// one process (boot id, pid, start ticks) once whatever file they came through, applies a free
// written into a later generation of the file to the row an earlier one holds, refuses records
// appended after the process's end, keeps two processes of one pid apart, and loses nothing
// when killed at any moment. The real daemon, real files, real processes.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "tests/daemon/alloc_follow_fixture.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

std::string bootId() {
    std::string b;
    std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), b);
    return b;
}

/// /proc/PID/stat's starttime (clock ticks after boot).
std::string startTicks(pid_t pid) {
    std::string stat;
    std::getline(std::ifstream(fmt::format("/proc/{}/stat", pid)), stat);
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22; ++i) fields >> field;
    return field;
}

std::string startRec(pid_t pid, const std::string& ticks) {
    return fmt::format(
        "gpufault.alloc 1 start pid={} ppid=1 wall_us=1796032800000000 mono_us=1000000 boot={} "
        "start_ticks={} exe=/usr/bin/x\n",
        pid,
        bootId(),
        ticks);
}

uint64_t ptrOf(int i) {
    return 0x7f0000000000 + static_cast<uint64_t>(i) * 0x100000;
}

std::string allocRec(pid_t pid, int i) {
    return fmt::format(
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size=1048576 mem=device device=0 rc=0 "
        "wall_us={} mono_us={} pid={} tid={} stack=-\n",
        ptrOf(i),
        1796032801000000 + i,
        2000000 + i,
        pid,
        pid);
}

std::string freeRec(pid_t pid, int i) {
    return fmt::format(
        "gpufault.alloc 1 free api=hipFree ptr=0x{:x} size=0 device=-1 rc=0 wall_us={} "
        "mono_us={} pid={} tid={} stack=-\n",
        ptrOf(i),
        1796033300000000 + i,
        501000000 + i,
        pid,
        pid);
}

/// A process that only sleeps (its pid and start ticks name a recording); killed at the end.
struct Sleeper {
    pid_t pid = -1;
    Sleeper() {
        pid = ::fork();
        if (pid == 0) {
            ::execl("/bin/sleep", "sleep", "1000", static_cast<char*>(nullptr));
            ::_exit(127);
        }
    }
    void stop() {
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
        pid = -1;
    }
    ~Sleeper() { stop(); }
};

void rewrite(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    ASSERT_GE(fd, 0) << path;
    if (!text.empty()) {
        ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    }
    ::close(fd);
}

}  // namespace

TEST(DaemonAllocRecordings, AFreeAfterTheFileWasCutShortFreesTheRowOfTheEarlierGeneration) {
    Fixture f;
    auto d = startedDaemon(f);
    ASSERT_TRUE(d);
    Sleeper job;
    std::string file = f.alloc + fmt::format("/gpufault-alloc.{}.log", job.pid);
    append(file,
           startRec(job.pid, startTicks(job.pid)) + allocRec(job.pid, 0) + allocRec(job.pid, 1));
    ASSERT_TRUE(storeReaches(*d, f.store, "SELECT count(*) FROM allocations", 2, 20s));
    // Truncated while the process goes on appending (O_APPEND: at the new end): the free of
    // allocation 0 and one more allocation, with no start record before them.
    rewrite(file, "");
    append(file, freeRec(job.pid, 0) + allocRec(job.pid, 2));
    ASSERT_TRUE(storeReaches(*d, f.store, "SELECT count(*) FROM allocations", 3, 20s));
    EXPECT_TRUE(
        storeReaches(*d,
                     f.store,
                     fmt::format("SELECT count(*) FROM allocations WHERE ptr = {} AND "
                                 "free_line = 1 AND free_api = 'hipFree' AND "
                                 "free_source_id IS NOT NULL AND free_source_id <> source_id",
                                 ptrOf(0)),
                     1,
                     10s));
    EXPECT_EQ(f.count("SELECT count(*) FROM warnings"), 0);
    // The records after the cut continue the same recording (its identity, one key).
    EXPECT_EQ(f.count("SELECT count(DISTINCT recording) FROM alloc_processes"), 1);
    EXPECT_EQ(f.count("SELECT count(*) FROM alloc_processes"), 2);
    EXPECT_TRUE(stoppedCleanly(*d));
}

TEST(DaemonAllocRecordings, AFileDeletedAndRecreatedWithTheSameRecordingIsStoredOnce) {
    Fixture f;
    auto d = startedDaemon(f);
    ASSERT_TRUE(d);
    Sleeper job;
    std::string file = f.alloc + fmt::format("/gpufault-alloc.{}.log", job.pid);
    std::string text = startRec(job.pid, startTicks(job.pid));
    for (int i = 0; i < 3; ++i) text += allocRec(job.pid, i);
    append(file, text);
    ASSERT_TRUE(storeReaches(*d, f.store, "SELECT count(*) FROM allocations", 3, 20s));
    // Deleted, and created again (written beside it first, so that it surely gets another
    // inode: another source) with the same start record, one more allocation and a free.
    std::string again = f.alloc + "/recreated.tmp";
    append(again, text + allocRec(job.pid, 10) + freeRec(job.pid, 1));
    ASSERT_EQ(::unlink(file.c_str()), 0);
    std::this_thread::sleep_for(500ms);  // a poll or two without the file: it is forgotten
    ASSERT_EQ(::rename(again.c_str(), file.c_str()), 0);
    ASSERT_TRUE(
        storeReaches(*d, f.store, "SELECT count(*) FROM sources WHERE kind = 'alloc'", 2, 20s));
    ASSERT_TRUE(storeReaches(*d, f.store, "SELECT count(*) FROM allocations", 4, 20s));
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations"), 4);
    EXPECT_EQ(f.count("SELECT count(DISTINCT ptr) FROM allocations"), 4);
    EXPECT_EQ(f.count(fmt::format(
                  "SELECT count(*) FROM allocations WHERE ptr = {} AND free_line = 6", ptrOf(1))),
              1);
    // A fault of the pid: each allocation listed once.
    append(f.logs + "/kern.log",
           fmt::format("2026-11-30T23:59:00+0000 host kernel: x[{}]: segfault at {:x} ip "
                       "00007f1234567890 sp 00007ffd12345678 error 4 in libfoo.so[7f1234500000+"
                       "100000]\n",
                       job.pid,
                       ptrOf(0) + 0x10));
    ASSERT_TRUE(eventually([&] { return f.count("SELECT count(*) FROM incidents") == 1; }, 10s));
    auto show = run({GPUFAULT_BIN, "--db", f.store, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    size_t rows = 0;
    for (size_t at = show.out.find("\nhipMalloc"); at != std::string::npos;  // a row each
         at = show.out.find("\nhipMalloc", at + 1))
        ++rows;
    EXPECT_EQ(rows, 4u) << show.out;
    EXPECT_TRUE(stoppedCleanly(*d));
}

TEST(DaemonAllocRecordings, RecordsAppendedAfterTheProcessEndedAreRefused) {
    Fixture f;
    auto d = startedDaemon(f);
    ASSERT_TRUE(d);
    Sleeper job;
    pid_t pid = job.pid;
    std::string file = f.alloc + fmt::format("/gpufault-alloc.{}.log", pid);
    append(file, startRec(pid, startTicks(pid)) + allocRec(pid, 0));
    ASSERT_TRUE(storeReaches(*d, f.store, "SELECT count(*) FROM allocations", 1, 20s));
    job.stop();
    ASSERT_TRUE(storeReaches(*d,
                             f.store,
                             "SELECT count(*) FROM alloc_processes WHERE ended_wall_us IS NOT NULL",
                             1,
                             10s));
    // Appended by anyone afterwards (the file is root's: still followed): not the process's.
    append(file, allocRec(pid, 1) + freeRec(pid, 0));
    ASSERT_TRUE(storeReaches(*d, f.store, "SELECT count(*) FROM warnings", 2, 10s));
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations"), 1);
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations WHERE free_line IS NOT NULL"), 0);
    EXPECT_EQ(f.count("SELECT count(*) FROM warnings WHERE line IN (3, 4) AND message LIKE "
                      "'record of pid % after the end of its process (gone by wall_us %): not "
                      "stored'"),
              2);
    EXPECT_TRUE(eventually(
        [&] {
            return d->stderrText().find("2 record(s) after the end of their process: not stored") !=
                   std::string::npos;
        },
        5s))
        << d->stderrText();
    EXPECT_TRUE(stoppedCleanly(*d));
}

TEST(DaemonAllocRecordings, AnEarlierProcessesFileThenTheLiveProcessesStartAreTwoRecordings) {
    Fixture f;
    auto d = startedDaemon(f);
    ASSERT_TRUE(d);
    Sleeper job;
    pid_t pid = job.pid;
    std::string file = f.alloc + fmt::format("/gpufault-alloc.{}.log", pid);
    // Left by an earlier process of the pid (start ticks 1), its allocation at 0x7d0000000000.
    append(file,
           fmt::format("gpufault.alloc 1 start pid={} ppid=1 wall_us=1796032000000000 mono_us=100 "
                       "boot={} start_ticks=1 exe=/old\n"
                       "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7d0000000000 size=4096 "
                       "mem=device device=0 rc=0 wall_us=1796032000000001 mono_us=101 pid={} "
                       "tid={} stack=-\n",
                       pid,
                       bootId(),
                       pid,
                       pid));
    ASSERT_TRUE(storeReaches(*d,
                             f.store,
                             "SELECT count(*) FROM alloc_processes WHERE start_ticks = 1 AND "
                             "ended_wall_us IS NOT NULL",
                             1,
                             20s));
    // The live process appends its own start record and two allocations: a second recording,
    // not ended, with its own records.
    append(file, startRec(pid, startTicks(pid)) + allocRec(pid, 0) + allocRec(pid, 1));
    ASSERT_TRUE(storeReaches(*d, f.store, "SELECT count(*) FROM allocations", 3, 20s));
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(f.count(fmt::format("SELECT count(*) FROM alloc_processes WHERE start_ticks = {} "
                                  "AND line = 3 AND ended_wall_us IS NULL",
                                  startTicks(pid))),
              1);
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations WHERE start_line = 3"), 2);
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations WHERE start_line = 1"), 1);
    EXPECT_EQ(f.count("SELECT count(*) FROM warnings"), 0);
    // Both written before the daemon looks (one read): the earlier process is ended all the
    // same (a pid holds one process at a time), the live one not.
    Sleeper job2;
    std::string file2 = f.alloc + fmt::format("/gpufault-alloc.{}.log", job2.pid);
    append(file2,
           fmt::format("gpufault.alloc 1 start pid={} ppid=1 wall_us=1796032000000000 mono_us=100 "
                       "boot={} start_ticks=1 exe=/old\n",
                       job2.pid,
                       bootId()) +
               startRec(job2.pid, startTicks(job2.pid)) + allocRec(job2.pid, 5));
    ASSERT_TRUE(storeReaches(*d,
                             f.store,
                             fmt::format("SELECT count(*) FROM alloc_processes WHERE pid = {} AND "
                                         "start_ticks = 1 AND ended_wall_us IS NOT NULL",
                                         job2.pid),
                             1,
                             20s));
    EXPECT_EQ(f.count(fmt::format("SELECT count(*) FROM alloc_processes WHERE pid = {} AND "
                                  "start_ticks = {} AND ended_wall_us IS NULL",
                                  job2.pid,
                                  startTicks(job2.pid))),
              1);
    job2.stop();
    // It ends: its end is stored too.
    job.stop();
    EXPECT_TRUE(storeReaches(*d,
                             f.store,
                             "SELECT count(*) FROM alloc_processes WHERE ended_wall_us IS NOT NULL",
                             2,
                             10s));
    EXPECT_TRUE(stoppedCleanly(*d));
}

TEST(DaemonAllocRecordings, KilledAtAnyMomentWhileRecordsAreAppendedNothingIsLostOrDoubled) {
    Fixture f;
    auto d = startedDaemon(f);
    ASSERT_TRUE(d);
    Sleeper job;
    pid_t pid = job.pid;
    std::string file = f.alloc + fmt::format("/gpufault-alloc.{}.log", pid);
    append(file, startRec(pid, startTicks(pid)));
    // 12 batches of 200 allocations and the frees of half the previous batch; the daemon is
    // killed (SIGKILL) after every third batch, at whatever it was doing, and started again.
    constexpr int kBatches = 12, kPer = 200;
    for (int b = 0; b < kBatches; ++b) {
        std::string text;
        for (int i = b * kPer; i < (b + 1) * kPer; ++i) text += allocRec(pid, i);
        if (b > 0)
            for (int i = (b - 1) * kPer; i < (b - 1) * kPer + kPer / 2; ++i)
                text += freeRec(pid, i);
        append(file, text);
        if (b % 3 == 2) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20 * b));
            d->kill9();
            d = startedDaemon(f);
            ASSERT_TRUE(d);
        }
    }
    const int64_t freed = (kBatches - 1) * kPer / 2;
    ASSERT_TRUE(eventually(
        [&] {
            return f.count("SELECT count(*) FROM allocations") == kBatches * kPer &&
                   f.count("SELECT count(*) FROM allocations WHERE free_line IS NOT NULL") == freed;
        },
        30s))
        << d->stderrText() << f.count("SELECT count(*) FROM allocations") << " "
        << f.count("SELECT count(*) FROM allocations WHERE free_line IS NOT NULL");
    EXPECT_EQ(f.count("SELECT count(DISTINCT ptr) FROM allocations"), kBatches * kPer);
    EXPECT_EQ(f.count("SELECT count(*) FROM warnings"), 0);
    EXPECT_TRUE(stoppedCleanly(*d));
}

// Hostile review of issue 4, finding 2: a job in a container (its own pid namespace) records
// pid 1 into a directory mounted from the host. The host's /proc/1 is another process (started
// before the job): gpufaultd must not take it for the job's end and refuse the job's later
// records. With the namespace in the `start` record (this shim) the host's /proc is not asked;
// without it (an older shim) a process started before the recorder is not its successor.
TEST(DaemonAllocRecordings, AContainersPidOneIsNotEndedByTheHostsProcOne) {
    Fixture f;
    auto d = startedDaemon(f);
    ASSERT_TRUE(d);
    ASSERT_LT(std::stoll(startTicks(1)), std::stoll(startTicks(::getpid())));
    // Two jobs (two containers) started after the host's init.
    int64_t ticks = std::stoll(startTicks(::getpid()));
    auto start = [&](const char* pidns, int mono_s) {
        return fmt::format(
            "gpufault.alloc 1 start pid=1 ppid=0 wall_us={} mono_us={} boot={} start_ticks={}{} "
            "exe=/usr/bin/python3\n",
            1796032800000000 + mono_s,
            mono_s * 1000000,
            bootId(),
            ticks + mono_s,
            pidns);
    };
    auto alloc = [](int i) { return allocRec(1, i); };
    ::mkdir((f.alloc + "/run-old").c_str(), 0700);
    std::string withNs = f.alloc + "/gpufault-alloc.1.log";  // pidns of no process here
    std::string older = f.alloc + "/run-old/gpufault-alloc.1.log";
    append(withNs, start(" pidns=4026599999", 1) + alloc(0));
    append(older, start("", 2) + alloc(10));
    auto read = [&](int n) {
        return eventually(
            [&] {
                return f.count("SELECT count(*) FROM allocations") +
                           f.count("SELECT count(*) FROM warnings") ==
                       n;
            },
            20s);
    };
    ASSERT_TRUE(read(2)) << d->stderrText();
    append(withNs, alloc(1));
    append(older, alloc(11));
    ASSERT_TRUE(read(4)) << d->stderrText();
    append(withNs, alloc(2) + alloc(3));
    append(older, alloc(12) + alloc(13));
    ASSERT_TRUE(read(8)) << d->stderrText();
    EXPECT_EQ(f.count("SELECT count(*) FROM warnings"), 0) << d->stderrText();
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations a JOIN sources s ON s.id = a.source_id "
                      "WHERE s.path LIKE '%/alloc/gpufault-alloc.1.log'"),
              4);
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations a JOIN sources s ON s.id = a.source_id "
                      "WHERE s.path LIKE '%/run-old/gpufault-alloc.1.log'"),
              4);
    EXPECT_EQ(f.count("SELECT count(*) FROM alloc_processes WHERE ended_wall_us IS NULL"), 2);
    EXPECT_EQ(f.count("SELECT count(*) FROM alloc_processes WHERE pidns = 4026599999"), 1);
    EXPECT_TRUE(stoppedCleanly(*d));
}
