// gpufaultd reads a growing allocation file from its checkpoint (issue 4): only the bytes after
// it, its frees paired with allocations stored by earlier reads (also across a restart); a file
// cut short is a new generation, one replaced (another inode) another source. And the end of a
// recording process: a later fault of its pid is not measured against its allocations. The
// real daemon, real files, a real job under the real shim.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/daemon/alloc_follow_fixture.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

std::string allocPosition(const std::string& sock) {
    auto s = nlohmann::json::parse(controlRequest(sock, "status"), nullptr, false);
    if (!s.is_object()) return "";
    for (const auto& x : s["streams"])
        if (x["source"] == "allocations") return x["position"];
    return "";
}

/// The "N bytes read" of the allocation directory's status line; -1 when absent.
int64_t bytesRead(const std::string& sock) {
    auto p = allocPosition(sock);
    auto end = p.rfind(" bytes read");
    if (end == std::string::npos) return -1;
    auto start = p.rfind(' ', end - 1);
    return std::stoll(p.substr(start + 1, end - start - 1));
}

int64_t fileSize(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

std::string allocLine(int pid, int i, uint64_t base = 0x7f0000000000) {
    return fmt::format(
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size=4096 mem=device device=0 rc=0 "
        "wall_us={} mono_us={} pid={} tid={} stack=libtorch.so+0x1234;libc10.so+0x5678\n",
        base + static_cast<uint64_t>(i) * 0x100000,
        1000 + i,
        1000 + i,
        pid,
        pid);
}

std::string freeLine(int pid, int i) {
    return fmt::format(
        "gpufault.alloc 1 free api=hipFree ptr=0x{:x} size=0 device=-1 rc=0 wall_us={} "
        "mono_us={} pid={} tid={} stack=-\n",
        0x7f0000000000 + static_cast<uint64_t>(i) * 0x100000,
        5000 + i,
        5000 + i,
        pid,
        pid);
}

std::string firstLine(const std::string& path) {
    std::ifstream in(path);
    std::string l;
    std::getline(in, l);
    return l;
}

/// Local wall time, as a kernel log line prints it (short-iso, the zone then dropped).
std::string isoLocal(std::time_t t) {
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return buf;
}

std::string segfaultAt(std::time_t t, pid_t pid, uint64_t address) {
    return fmt::format(
        "{}+0000 node7 kernel: preload_host[{}]: segfault at {:x} ip 00007f5eb547916e sp "
        "00007fff363a9000 error 4 in libfoo.so[116e,7f5eb5479000+1000]\n",
        isoLocal(t),
        pid,
        address);
}

}  // namespace

TEST(DaemonAllocIncremental, GrowingFileIsReadFromItsCheckpointCutShortAndReplaced) {
    Fixture f;
    auto d = startedDaemon(f);
    ASSERT_TRUE(d);
    int pid = static_cast<int>(::getpid());
    std::string file = f.alloc + fmt::format("/gpufault-alloc.{}.log", pid);
    std::string startRec = fmt::format(
        "gpufault.alloc 1 start pid={} ppid=1 wall_us=1 mono_us=1 exe=/usr/bin/python3\n", pid);
    std::string text = startRec;
    for (int i = 0; i < 1000; ++i) text += allocLine(pid, i);
    append(file, text);
    ASSERT_TRUE(
        eventually([&] { return f.count("SELECT count(*) FROM allocations") == 1000; }, 20s))
        << d->stderrText();
    ASSERT_TRUE(eventually([&] { return bytesRead(f.sock) == fileSize(file); }, 10s))
        << allocPosition(f.sock);

    // 500 frees of stored allocations and 500 new allocations, the last record written in two
    // pieces: only the new bytes are read, the frees update the stored rows.
    std::string more;
    for (int i = 0; i < 500; ++i) more += freeLine(pid, i);
    for (int i = 1000; i < 1499; ++i) more += allocLine(pid, i);
    append(file, more);
    auto last = allocLine(pid, 1499);
    append(file, last.substr(0, 40));
    ASSERT_TRUE(
        eventually([&] { return f.count("SELECT count(*) FROM allocations") == 1499; }, 20s))
        << d->stderrText();
    append(file, last.substr(40));
    ASSERT_TRUE(eventually(
        [&] {
            return f.count("SELECT count(*) FROM allocations") == 1500 &&
                   f.count("SELECT count(*) FROM allocations WHERE free_line IS NOT NULL") == 500;
        },
        20s))
        << d->stderrText();
    // Each byte read once, but for the piece of the last record read again when whole
    // (re-reading the file whole would have read it about 3 times over).
    EXPECT_TRUE(eventually([&] { return bytesRead(f.sock) >= fileSize(file); }, 10s))
        << allocPosition(f.sock) << " vs " << fileSize(file);
    EXPECT_LE(bytesRead(f.sock), fileSize(file) + 40) << allocPosition(f.sock);
    // Lines: the start record, allocations 0–999 (2–1001), 500 frees (1002–1501), allocations
    // 1000–1499 (1502–2001).
    EXPECT_EQ(
        f.count("SELECT count(*) FROM allocations WHERE line = 1502 AND free_line IS NULL AND "
                "ptr = 0x7f0000000000 + 1000 * 0x100000"),
        1);
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations WHERE line = 2 AND free_line = 1002 AND "
                      "free_api = 'hipFree' AND freed_wall_us = 5000"),
              1);
    EXPECT_EQ(f.count("SELECT count(*) FROM warnings"), 0);

    // Restarted, the daemon rebuilds its parser from the stored part (its checkpoint's hash
    // still matches): frees of allocations stored before the restart pair with them.
    ASSERT_TRUE(stoppedCleanly(*d));
    d = startedDaemon(f);
    ASSERT_TRUE(d);
    std::string frees;
    for (int i = 500; i < 600; ++i) frees += freeLine(pid, i);
    append(file, frees);
    ASSERT_TRUE(storeReaches(
        *d, f.store, "SELECT count(*) FROM allocations WHERE free_line IS NOT NULL", 600, 20s));
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations"), 1500);
    EXPECT_EQ(f.count("SELECT count(*) FROM warnings"), 0);
    EXPECT_EQ(f.count("SELECT count(*) FROM sources WHERE kind = 'alloc'"), 1);

    // Cut short in place (same inode, same start line): a new generation; the 1,500 rows stay,
    // the new generation's rows that the old one holds are not stored twice.
    std::string cut = startRec;
    for (int i = 0; i < 10; ++i) cut += allocLine(pid, i);
    for (int i = 0; i < 5; ++i) cut += allocLine(pid, i, 0x7e0000000000);
    {
        int fd = ::open(file.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::write(fd, cut.data(), cut.size()), static_cast<ssize_t>(cut.size()));
        ::close(fd);
    }
    ASSERT_TRUE(
        eventually([&] { return f.count("SELECT count(*) FROM allocations") == 1505; }, 20s))
        << d->stderrText();
    EXPECT_EQ(f.count("SELECT count(*) FROM sources WHERE kind = 'alloc'"), 2);
    EXPECT_TRUE(eventually(
        [&] {
            return d->stderrText().find("cut short since it was ingested") != std::string::npos;
        },
        5s))
        << d->stderrText();

    // Replaced (another file renamed over it: another inode, another start line): another
    // source, read from its first byte.
    std::string other = f.dir.file("replacement.log");
    std::string repl = fmt::format(
        "gpufault.alloc 1 start pid={} ppid=1 wall_us=99 mono_us=99 exe=/usr/bin/python3\n", pid);
    for (int i = 0; i < 3; ++i) repl += allocLine(pid, i, 0x7d0000000000);
    writeFile(other, repl);
    ASSERT_EQ(::rename(other.c_str(), file.c_str()), 0);
    ASSERT_TRUE(
        eventually([&] { return f.count("SELECT count(*) FROM allocations") == 1508; }, 20s))
        << d->stderrText();
    EXPECT_EQ(f.count("SELECT count(*) FROM sources WHERE kind = 'alloc'"), 3);
    EXPECT_EQ(f.count("SELECT count(*) FROM alloc_processes WHERE wall_us = 99"), 1);
    EXPECT_TRUE(stoppedCleanly(*d));
}

TEST(DaemonAllocIncremental, AJobsEndIsStoredAndALaterFaultOfItsPidMeetsNone) {
    Fixture f;
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    HeldJob job(f.alloc);
    ASSERT_GT(job.pid, 0);
    uint64_t ptr = job.ptr();
    ASSERT_NE(ptr, 0u) << job.line;
    std::string file = shimFile(f.alloc, job.pid);
    // The shim's start record names the process: its boot and /proc start time.
    std::string boot;
    std::getline(std::ifstream("/proc/sys/kernel/random/boot_id"), boot);
    std::string stat;
    std::getline(std::ifstream(fmt::format("/proc/{}/stat", job.pid)), stat);
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 22; ++i) fields >> field;  // field 22: starttime
    auto head = firstLine(file);
    EXPECT_NE(head.find(" boot=" + boot + " "), std::string::npos) << head;
    EXPECT_NE(head.find(" start_ticks=" + field + " "), std::string::npos) << head << " " << field;
    ASSERT_TRUE(storeReaches(
        d,
        f.store,
        fmt::format("SELECT count(*) FROM alloc_processes WHERE pid = {} AND boot_id = '{}' "
                    "AND start_ticks = {} AND ended_wall_us IS NULL",
                    job.pid,
                    boot,
                    field),
        1,
        10s));

    // A fault of its pid while it runs: measured against its allocation.
    std::time_t now = std::time(nullptr);
    append(f.logs + "/kern.log", segfaultAt(now, job.pid, ptr + (1 << 20) + 0x1000));
    ASSERT_TRUE(storeReaches(d,
                             f.store,
                             "SELECT count(*) FROM fault_allocation_distance WHERE distance = 4096 "
                             "AND how = 'wall time'",
                             1,
                             10s));

    // It ends: the daemon stores an upper bound of its end; a fault of the same pid two
    // minutes later is another process's (a reused pid): no allocation is joined to it.
    pid_t pid = job.pid;
    job.release();
    ASSERT_TRUE(storeReaches(d,
                             f.store,
                             fmt::format("SELECT count(*) FROM alloc_processes WHERE pid = {} AND "
                                         "ended_wall_us IS NOT NULL AND ended_mono_us IS NOT NULL",
                                         pid),
                             1,
                             10s));
    append(f.logs + "/kern.log", segfaultAt(now + 120, pid, ptr + 0x40000000));
    ASSERT_TRUE(storeReaches(d, f.store, "SELECT count(*) FROM evidence", 2, 10s));
    ASSERT_TRUE(eventually([&] { return f.count("SELECT count(*) FROM incidents") == 2; }, 10s));
    EXPECT_EQ(f.count("SELECT count(*) FROM fault_allocation_distance"), 1);
    auto show = run({GPUFAULT_BIN, "--db", f.store, "show", "2"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find(fmt::format("Allocations: pid {} has 1 allocation recording in the "
                                        "store, none of the process that faulted",
                                        pid)),
              std::string::npos)
        << show.out;
    EXPECT_TRUE(stoppedCleanly(d));
}
