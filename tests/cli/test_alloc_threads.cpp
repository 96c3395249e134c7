// A fault that names a thread id (the kernel's `segfault at` line prints the faulting task, a
// thread of the process) joins the allocations of the process that thread belongs to: the shim's
// records carry their thread (`tid=`). A real recording (the shim preloaded into the stand-in
// host, one allocation from the main thread and one from another), real kernel lines, a real
// store, through the built binary (migration 020, docs/preload.md "Reused pids").
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>

#include "tests/cli/alloc_cli.h"
#include "tests/support/process.h"

using namespace gpufault::testing;

namespace {

struct Printed {
    long pid = 0, tid = 0;
    unsigned long long ptr = 0;
};

/// The `KIND pid=P tid=T ptr=0x… size=N` line the host printed for `kind` (main, thread).
Printed printed(const std::string& out, const std::string& kind) {
    Printed p;
    auto at = out.find(kind + " pid=");
    if (at == std::string::npos) return p;
    int size = 0;
    std::sscanf(out.c_str() + at + kind.size(),
                " pid=%ld tid=%ld ptr=%llx size=%d",
                &p.pid,
                &p.tid,
                &p.ptr,
                &size);
    return p;
}

/// A kernel segfault line (RFC 3339, UTC) of task `tid` at `address`, `at` seconds since the epoch.
std::string segfault(std::time_t at, long tid, unsigned long long address) {
    std::tm tm{};
    gmtime_r(&at, &tm);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
    return fmt::format(
        "{} node7 kernel: gpufault_preloa[{}]: segfault at {:x} ip 00007f5eb547916e sp "
        "00007fff363a9000 error 4 in libfoo.so[116e,7f5eb5479000+1000]\n",
        stamp,
        tid,
        address);
}

/// The signed distance of `address` from [ptr, end): below ptr negative, inside 0, at or above
/// end `address - end` (docs/preload.md).
long long distance(unsigned long long address, unsigned long long ptr, unsigned long long end) {
    if (address < ptr) return -static_cast<long long>(ptr - address);
    if (address >= end) return static_cast<long long>(address - end);
    return 0;
}

}  // namespace

TEST(AllocThreads, AFaultOfAThreadIdJoinsItsProcesssAllocations) {
    TempDir dir;
    std::string alloc = dir.file("alloc");
    std::filesystem::create_directory(alloc);
    std::time_t before = std::time(nullptr) - 3600;
    auto r = run({"/usr/bin/env",
                  std::string("LD_PRELOAD=") + PRELOAD_SHIM,
                  "GPUFAULT_ALLOC_DIR=" + alloc,
                  PRELOAD_HOST,
                  STANDIN_FW,
                  STANDIN_RT,
                  "thread"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    std::time_t after = std::time(nullptr);
    auto main = printed(r.out, "main"), thread = printed(r.out, "thread");
    ASSERT_NE(main.ptr, 0u) << r.out;
    ASSERT_NE(thread.ptr, 0u) << r.out;
    ASSERT_EQ(main.pid, thread.pid);
    ASSERT_EQ(main.tid, main.pid);
    ASSERT_NE(thread.tid, thread.pid);  // a thread: its id is not the process's
    std::string recording;
    for (const auto& f : std::filesystem::directory_iterator(alloc)) recording = f.path();
    ASSERT_NE(recording.find("gpufault-alloc." + std::to_string(main.pid) + "."), std::string::npos)
        << recording;

    // The thread's fault, 16 bytes past its 2 MiB buffer, after the job; the same task's fault
    // an hour before the recording started (not this process's), and a task no recording knows.
    std::string db = dir.file("g.db"), log = dir.file("kern.log");
    writeFile(log,
              segfault(after, thread.tid, thread.ptr + (2 << 20) + 16) +
                  segfault(before, thread.tid, thread.ptr) +
                  segfault(after, thread.tid + 100000, thread.ptr));
    auto in = run({GPUFAULT_BIN, "--db", db, "ingest", "-q", recording, log});
    ASSERT_EQ(in.status, 0) << in.err;

    EXPECT_EQ(query(db,
                    "SELECT e.line, e.pid = " + std::to_string(thread.tid) +
                        " AS by_tid, f.how, f.thread, p.pid = " + std::to_string(main.pid) +
                        " AS of_process FROM evidence e JOIN fault_alloc_process f ON "
                        "f.evidence_id = e.id JOIN alloc_processes p ON p.id = "
                        "f.alloc_process_id ORDER BY e.line"),
              "line\tby_tid\thow\tthread\tof_process\n1\t1\twall time\t1\t1\n");
    // Both of the process's allocations are measured, the thread's buffer nearest (+16 B).
    EXPECT_EQ(query(db,
                    fmt::format("SELECT e.line, v.ptr = {} AS thread_buffer, v.distance, v.how "
                                "FROM fault_allocation_distance v JOIN evidence e ON e.id = "
                                "v.evidence_id ORDER BY e.line, abs(v.distance)",
                                static_cast<long long>(thread.ptr))),
              fmt::format("line\tthread_buffer\tdistance\thow\n1\t1\t16\twall time\n1\t0\t{}\twall "
                          "time\n",
                          distance(thread.ptr + (2 << 20) + 16, main.ptr, main.ptr + (1 << 20))));
    // The tid is in the recording's rows: the mapping the join used.
    EXPECT_EQ(
        query(db,
              "SELECT count(*) AS n FROM alloc_thread WHERE tid = " + std::to_string(thread.tid)),
        "n\n1\n");
}

// A recording of the number as a pid that holds it at the fault comes first: the thread mapping
// is only for a fault whose pid no recording joins.
TEST(AllocThreads, ARecordingOfThePidItselfComesFirst) {
    TempDir dir;
    std::string db = dir.file("g.db");
    // pid 4600's recording with a thread 4601; a recording of pid 4601 itself, started later.
    writeFile(dir.file("gpufault-alloc.4600.log"),
              "gpufault.alloc 1 start pid=4600 ppid=1 wall_us=1796032800000000 mono_us=5 "
              "exe=/usr/bin/python3\n"
              "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=1048576 mem=device "
              "device=0 rc=0 wall_us=1796032801000000 mono_us=6 pid=4600 tid=4601 stack=-\n");
    writeFile(dir.file("gpufault-alloc.4601.log"),
              "gpufault.alloc 1 start pid=4601 ppid=1 wall_us=1796034600000000 mono_us=5 "
              "exe=/usr/bin/python3\n"
              "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f1000000000 size=1048576 mem=device "
              "device=0 rc=0 wall_us=1796034601000000 mono_us=6 pid=4601 tid=4601 stack=-\n");
    // 10:05Z: only the thread of 4600 can be 4601 then; 10:35Z: the process 4601 holds it.
    writeFile(dir.file("kern.log"),
              "2026-11-30T10:05:00+00:00 node7 kernel: python3[4601]: segfault at 7f0000100010 "
              "ip 00007f5eb547916e sp 00007fff363a9000 error 4 in libfoo.so[7f5eb5479000+1000]\n"
              "2026-11-30T10:35:00+00:00 node7 kernel: python3[4601]: segfault at 7f1000100010 "
              "ip 00007f5eb547916e sp 00007fff363a9000 error 4 in libfoo.so[7f5eb5479000+1000]\n");
    auto in = run({GPUFAULT_BIN,
                   "--db",
                   db,
                   "ingest",
                   "-q",
                   dir.file("gpufault-alloc.4600.log"),
                   dir.file("gpufault-alloc.4601.log"),
                   dir.file("kern.log")});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_EQ(query(db,
                    "SELECT e.line, p.pid, f.how, f.thread FROM evidence e JOIN "
                    "fault_alloc_process f ON f.evidence_id = e.id JOIN alloc_processes p ON "
                    "p.id = f.alloc_process_id ORDER BY e.line, p.pid"),
              "line\tpid\thow\tthread\n1\t4600\twall time\t1\n2\t4601\twall time\t0\n");
}

// Hostile review of 020, finding 2: a recording of another pid namespace (a container's pid 1,
// its thread 57) joins no kernel record by thread id or pid: the kernel's `cron[57]` is the
// host's task 57 (migration 021). The same recording in the initial namespace joins.
TEST(AllocThreads, AContainersThreadIdJoinsNoKernelRecord) {
    auto recording = [](const std::string& pidns) {
        return "gpufault.alloc 1 start pid=1 ppid=0 wall_us=1796032800000000 mono_us=5000000 "
               "boot=5c040de4-3e9d-429a-9ca3-d2c93965225b pidns=" +
               pidns +
               " start_ticks=100 exe=/usr/bin/python3\n"
               "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=1048576 mem=device "
               "device=0 rc=0 wall_us=1796032801000000 mono_us=6000000 pid=1 tid=57 pidns=" +
               pidns + " start_ticks=100 stack=-\n";
    };
    const std::string kern =
        "2026-12-01T00:00:00+00:00 node7 kernel: cron[57]: segfault at 7f0000100010 ip "
        "00007f5eb547916e sp 00007fff363a9000 error 4 in libfoo.so[116e,7f5eb5479000+1000]\n";
    for (const std::string pidns : {"4026532999", "4026531836"}) {
        TempDir dir;
        std::string rec = dir.file("gpufault-alloc.1." + pidns + ".100.log");
        std::string log = dir.file("kern.log"), db = dir.file("t.db");
        writeFile(rec, recording(pidns));
        writeFile(log, kern);
        auto in = run({GPUFAULT_BIN, "--db", db, "ingest", "-q", rec, log});
        ASSERT_EQ(in.status, 0) << in.err;
        EXPECT_EQ(query(db,
                        "SELECT count(*) AS n, ifnull(max(thread), '-') AS thread FROM "
                        "fault_alloc_process"),
                  pidns == "4026532999" ? "n\tthread\n0\t-\n" : "n\tthread\n1\t1\n")
            << pidns;
        auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
        ASSERT_EQ(show.status, 0) << show.err;
        EXPECT_EQ(show.out.find("hipMalloc") != std::string::npos, pidns == "4026531836")
            << show.out;
    }
}
