// gpufaultd when thousands of small files matching its patterns appear at once (hostile review,
// D2; docs/performance.md "Session 19: many new files at once"): each new file used to be
// compared with every followed file, each read again, all in one poll: 3 000 files held the loop
// for 17 s, nothing committed, `status` unanswered, SIGTERM waiting for the end of it.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/followed_log.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

constexpr int kFiles = 3000;

/// Writes kFiles files of two lines (a first line of its own, a ROCr fault line) named
/// `prefix`NNNNN.log into `f.logs` while `d` is stopped (SIGSTOP), so that they appear to it
/// at once; it is continued after. Call under ASSERT_NO_FATAL_FAILURE.
void writeAtOnce(const FollowedLog& f, DaemonProcess& d, const std::string& prefix, int first) {
    ASSERT_EQ(::kill(d.pid(), SIGSTOP), 0);
    int st = 0;
    ASSERT_EQ(::waitpid(d.pid(), &st, WUNTRACED), d.pid());
    ASSERT_TRUE(WIFSTOPPED(st));
    for (int i = first; i < first + kFiles; ++i)
        writeFile(fmt::format("{}/{}{:05}.log", f.logs, prefix, i),
                  fmt::format("job {} started on node {}\n{}\n", i, i % 64, rocrFaultText(i)));
    ASSERT_EQ(::kill(d.pid(), SIGCONT), 0);
}

int64_t records(const FollowedLog& f) {
    return storeCount(f.store, "SELECT count(*) FROM evidence");
}

}  // namespace

// The first of 3 000 new files are committed before the last are read (several polls, the
// loop committing between them; before: one commit of all 3 000 after 17 s), `status` answers
// meanwhile, and a SIGTERM while 3 000 more are being read ends the daemon promptly with
// status 0 (before: 38 s); a restart stores the rest, every file once.
TEST(DaemonManyFiles, ThousandsOfNewFilesAreCommittedInTurnsAndAStopIsPrompt) {
    struct rlimit nofile {};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &nofile), 0);
    const rlim_t need = 2 * kFiles + 256;  // the daemon inherits it
    if (nofile.rlim_max != RLIM_INFINITY && nofile.rlim_max < need)
        GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << nofile.rlim_max << " < " << need;
    if (nofile.rlim_cur != RLIM_INFINITY && nofile.rlim_cur < need) {
        nofile.rlim_cur = need;
        ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &nofile), 0);
    }
    FollowedLog f;
    f.writeConfig("*.log", 100, "max_open = 8192\n");
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));

    ASSERT_NO_FATAL_FAILURE(writeAtOnce(f, d, "a", 0));
    int64_t first = 0;  // the records of the first commit that stored any
    ASSERT_TRUE(eventually([&] { return (first = records(f)) > 0; }, 60s)) << d.stderrText();
    auto st = nlohmann::json::parse(controlRequest(f.sock, "status", 30s), nullptr, false);
    ASSERT_TRUE(st.is_object()) << "no status answer within 30 s";
    EXPECT_GE(st.value("commits", 0), 1);
    ASSERT_TRUE(storeReaches(d, f.store, "SELECT count(*) FROM evidence", kFiles, 120s));
    std::printf("first commit: %lld of %d files' records\n", static_cast<long long>(first), kFiles);
    EXPECT_LT(first, kFiles) << "no commit before every new file was read";
    EXPECT_EQ(storeCount(f.store, "SELECT count(*) FROM sources"), kFiles);

    // SIGTERM while 3 000 more are being read: flushed, exit 0, well within 10 s.
    ASSERT_NO_FATAL_FAILURE(writeAtOnce(f, d, "b", kFiles));
    std::this_thread::sleep_for(300ms);  // into its first poll of them
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(stoppedCleanly(d, 10s));
    std::printf("SIGTERM -> exit %.2f s, %lld records stored by then\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                static_cast<long long>(records(f)));

    ASSERT_TRUE(startedReady(d));
    EXPECT_TRUE(storeReaches(d, f.store, "SELECT count(*) FROM evidence", 2 * kFiles, 120s));
    EXPECT_EQ(storeCount(f.store, "SELECT count(*) FROM sources"), 2 * kFiles);
    EXPECT_EQ(storeCount(f.store, "SELECT count(DISTINCT source_id) FROM evidence"), 2 * kFiles);
    EXPECT_TRUE(stoppedCleanly(d));
}
