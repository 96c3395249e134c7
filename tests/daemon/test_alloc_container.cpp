// A user's allocation file named for a container's pid (`gpufault-alloc.1.<pidns>.<ticks>.log`):
// gpufaultd checks its owner against the process that has that pid in that pid namespace, found
// in its own /proc (ns/pid and NSpid), not against the host's process of the same number (pid 1
// is init here). A real job in a real pid namespace (unshare), run as uid 65534 under the real
// shim, and a real gpufaultd.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "tests/daemon/alloc_follow_fixture.h"

using namespace std::chrono_literals;
using namespace gpufault::testing;

namespace {

/// The pid namespace inode of /proc/PID ("pid:[N]" → N), 0 when unreadable.
uint64_t pidNamespaceOf(const std::string& pid) {
    char buf[64];
    ssize_t n = ::readlink(("/proc/" + pid + "/ns/pid").c_str(), buf, sizeof buf - 1);
    if (n <= 6) return 0;
    return std::stoull(std::string(buf + 5, static_cast<size_t>(n) - 6));
}

}  // namespace

TEST(DaemonAllocContainer, AUsersFileOfAContainersPidIsCheckedAgainstThatProcess) {
    if (::geteuid() != 0 || ::access("/usr/bin/unshare", X_OK) != 0 ||
        ::access("/usr/bin/setpriv", X_OK) != 0) {
        std::printf("[  SKIPPED ] 1 test: needs root, unshare and setpriv\n");
        GTEST_SKIP() << "needs root (a pid namespace, a job of uid 65534)";
    }
    Fixture f;
    // A file of uid 65534 named for pid 1 of a namespace no process here has.
    const uint64_t kGoneNs = 4026599999;
    std::string gone = fmt::format("{}/gpufault-alloc.1.{}.777.log", f.alloc, kGoneNs);
    append(gone,
           fmt::format("gpufault.alloc 1 start pid=1 ppid=0 wall_us=1 mono_us=1 pidns={} "
                       "start_ticks=777 exe=/x\n"
                       "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f3000000000 size=4096 "
                       "mem=device device=0 rc=0 wall_us=2 mono_us=2 pid=1 tid=1 pidns={} "
                       "start_ticks=777 stack=-\n",
                       kGoneNs,
                       kGoneNs));
    ASSERT_EQ(::chown(gone.c_str(), 65534, 65534), 0);
    auto d = startedDaemon(f);
    ASSERT_TRUE(d);
    // The job: pid 1 of a new pid namespace, uid 65534 (its file is the user's, and /proc says
    // the process runs as 65534; the host's pid 1 runs as root).
    HeldJob job(f.alloc,
                {"/usr/bin/unshare",
                 "--pid",
                 "--fork",
                 "/usr/bin/setpriv",
                 "--reuid=65534",
                 "--regid=65534",
                 "--clear-groups"});
    ASSERT_EQ(job.line.rfind("pid=1 hipMalloc ptr=", 0), 0u) << job.line;
    ASSERT_NE(job.ptr(), 0u) << job.line;
    std::string file;  // the job's: pid 1 of its namespace (not the file of kGoneNs)
    for (const auto& e : std::filesystem::directory_iterator(f.alloc))
        if (e.path() != gone && e.path().filename().string().starts_with("gpufault-alloc.1."))
            file = e.path();
    ASSERT_FALSE(file.empty());
    ASSERT_TRUE(eventually(
        [&] {
            return f.count(fmt::format("SELECT count(*) FROM allocations WHERE pid = 1 AND ptr = "
                                       "{}",
                                       static_cast<int64_t>(job.ptr()))) == 1;
        },
        20s))
        << d->stderrText() << controlRequest(f.sock, "status");
    // Its recording names its namespace, not ours.
    uint64_t ours = pidNamespaceOf("self");
    ASSERT_NE(ours, 0u);
    EXPECT_EQ(f.count(fmt::format("SELECT count(*) FROM alloc_processes WHERE pid = 1 AND pidns "
                                  "IS NOT NULL AND pidns <> {}",
                                  static_cast<int64_t>(ours))),
              1);
    EXPECT_EQ(d->stderrText().find(std::filesystem::path(file).filename().string() + " refused"),
              std::string::npos)
        << d->stderrText();
    // The file of a namespace no process has is refused: its owner cannot be checked.
    EXPECT_NE(d->stderrText().find(fmt::format("gpufault-alloc.1.{}.777.log refused: pid 1 of "
                                               "pid namespace {}: no process here has it",
                                               kGoneNs,
                                               kGoneNs)),
              std::string::npos)
        << d->stderrText();
    EXPECT_EQ(f.count("SELECT count(*) FROM allocations WHERE ptr = 139844135157760"), 0);
    job.release();
    EXPECT_TRUE(stoppedCleanly(*d));
}
