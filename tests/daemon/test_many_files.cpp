// gpufaultd when thousands of small files matching its patterns appear at once (hostile review,
// D2; docs/performance.md "Session 19: many new files at once"): each new file used to be
// compared with every followed file, each read again, all in one poll: 3 000 files held the loop
// for 17 s, nothing committed, `status` unanswered, SIGTERM waiting for the end of it. Hostile
// review 144: new files that never finish their first line took every poll's turns.
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

/// Raises this process's soft RLIMIT_NOFILE (the daemon inherits it) so that `files` followed
/// files fit twice over; "" when done, else why not (the hard limit is lower: skip).
std::string openFilesForUpTo(int files) {
    struct rlimit nofile {};
    if (::getrlimit(RLIMIT_NOFILE, &nofile) != 0) return "getrlimit failed";
    const rlim_t need = 2 * static_cast<rlim_t>(files) + 256;
    if (nofile.rlim_max != RLIM_INFINITY && nofile.rlim_max < need)
        return fmt::format("RLIMIT_NOFILE hard limit {} < {}", nofile.rlim_max, need);
    if (nofile.rlim_cur != RLIM_INFINITY && nofile.rlim_cur < need) {
        nofile.rlim_cur = need;
        if (::setrlimit(RLIMIT_NOFILE, &nofile) != 0) return "setrlimit failed";
    }
    return "";
}

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
    if (auto why = openFilesForUpTo(kFiles); !why.empty()) GTEST_SKIP() << why;
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

namespace {

/// The checkpoint offset (bytes) of the stream of the file at `path`; -1 when it has none.
int64_t storedOffset(const FollowedLog& f, const std::string& path) {
    return storeCount(
        f.store,
        fmt::format("SELECT ifnull(max(offset), -1) FROM sources WHERE path = '{}'", path));
}

/// Stops `d` (SIGSTOP) until resumed (SIGCONT): what is written meanwhile appears to it at once.
::testing::AssertionResult stopped(DaemonProcess& d) {
    int st = 0;
    if (::kill(d.pid(), SIGSTOP) != 0 || ::waitpid(d.pid(), &st, WUNTRACED) != d.pid() ||
        !WIFSTOPPED(st))
        return ::testing::AssertionFailure() << "SIGSTOP failed";
    return ::testing::AssertionSuccess();
}

}  // namespace

// Hostile review 144, MED 1: files whose first line never ends (no newline yet: not
// identified) took the kIdentifyMin turns of every poll while a backlog spent each poll's time
// budget, so a new job log waited for the whole backlog (10.7 s instead of 0.47 s). Turns go
// round: a file whose turn did not identify it waits until the others had theirs. The job
// log's record must be stored while the backlog (200 000 lines, seconds of reading) is still
// being read: within a few polls, not after it.
TEST(DaemonManyFiles, FilesWithAnUnfinishedFirstLineDoNotStarveANewLog) {
    FollowedLog f;
    f.writeConfig("*.log", 100);
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));

    constexpr int kBacklog = 200000, kUnfinished = 12;
    ASSERT_TRUE(stopped(d));
    std::string backlog = "backlog started\n";
    backlog.reserve(kBacklog * 140);
    for (int i = 0; i < kBacklog; ++i) backlog += rocrFaultText(i % 1000) + "\n";
    const std::string big = f.logs + "/big.log", job = f.logs + "/job.log";
    writeFile(big, backlog);
    for (int i = 0; i < kUnfinished; ++i)  // larger than the job log: the largest had turns first
        writeFile(fmt::format("{}/unfinished{:02}.log", f.logs, i), std::string(2000, 'x'));
    writeFile(job, fmt::format("job 7 started\n{}\n", rocrFaultText(4242)));
    ASSERT_EQ(::kill(d.pid(), SIGCONT), 0);
    auto t0 = std::chrono::steady_clock::now();

    const std::string jobRecords = fmt::format(
        "SELECT count(*) FROM evidence WHERE source_id IN (SELECT id FROM sources WHERE path = "
        "'{}')",
        job);
    ASSERT_TRUE(eventually([&] { return storeCount(f.store, jobRecords) >= 1; }, 60s))
        << d.stderrText();
    const int64_t read = storedOffset(f, big);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("job log's record stored after %.2f s, backlog read to %lld of %zu bytes\n",
                took,
                static_cast<long long>(read),
                backlog.size());
    EXPECT_LT(read, static_cast<int64_t>(backlog.size()))
        << "the job log waited for the whole backlog";
    // The backlog is stored whole, and the other files once their first line ends.
    ASSERT_TRUE(storeReaches(d,
                             f.store,
                             fmt::format("SELECT offset FROM sources WHERE path = '{}'", big),
                             static_cast<int64_t>(backlog.size()),
                             120s));
    for (int i = 0; i < kUnfinished; ++i) {
        std::FILE* u = std::fopen(fmt::format("{}/unfinished{:02}.log", f.logs, i).c_str(), "a");
        ASSERT_NE(u, nullptr);
        std::fputs(("\n" + rocrFaultText(i) + "\n").c_str(), u);
        std::fclose(u);
    }
    EXPECT_TRUE(storeReaches(
        d,
        f.store,
        "SELECT count(*) FROM evidence WHERE source_id IN (SELECT id FROM sources WHERE path "
        "LIKE '%/unfinished%')",
        kUnfinished,
        30s));
    EXPECT_TRUE(stoppedCleanly(d));
}

// Hostile review 144, MED 2: 8 000 new files of one first line took 37.7 s, each compared with
// every followed file of that first line. Now only those of the same first bytes are (up to a
// power of two of its size): 2 000 such files are stored once each, and a byte-for-byte copy of
// one of them (each shares its first line with 2 000 followed files; its first 128 bytes with
// one) still waits for its original instead of being read again.
TEST(DaemonManyFiles, ThousandsOfFilesOfOneFirstLineAreEachStoredOnceAndACopyWaits) {
    constexpr int kSame = 2000;
    if (auto why = openFilesForUpTo(kSame); !why.empty()) GTEST_SKIP() << why;
    FollowedLog f;
    f.writeConfig("*.log", 100, "max_open = 8192\n");
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    ASSERT_TRUE(stopped(d));
    auto text = [](int i) { return fmt::format("=== job started ===\n{}\n", rocrFaultText(i)); };
    for (int i = 0; i < kSame; ++i) writeFile(fmt::format("{}/same{:05}.log", f.logs, i), text(i));
    ASSERT_EQ(::kill(d.pid(), SIGCONT), 0);
    ASSERT_TRUE(storeReaches(d, f.store, "SELECT count(*) FROM evidence", kSame, 120s));
    EXPECT_EQ(storeCount(f.store, "SELECT count(*) FROM sources"), kSame);

    writeFile(f.logs + "/copy.log", text(kSame / 2));  // the same bytes as same01000.log
    ASSERT_TRUE(eventually(
        [&] {
            auto st = nlohmann::json::parse(controlRequest(f.sock, "status", 10s), nullptr, false);
            if (!st.is_object()) return false;
            for (const auto& s : st.value("streams", nlohmann::json::array()))
                if (s.value("name", "") == f.logs + "/copy.log")
                    return s.value("position", "").starts_with("waiting: a copy of");
            return false;
        },
        30s))
        << d.stderrText();
    EXPECT_EQ(storeCount(f.store, "SELECT count(*) FROM evidence"), kSame);
    EXPECT_TRUE(stoppedCleanly(d));
}

// Hostile review 144, MED 3: a file truncated between the scan that found it and its turn to be
// identified lost its bytes without counting them (98 of 3 000 files, lost_bytes 0): the size
// the scan saw was not recorded. 2 000 files of the same size appear at once; once the first
// record is committed (the scan found them all, a few are read) every file is truncated to 0.
// Each file is then either read (its record stored) or counted lost whole: records · size +
// lost bytes = 2 000 · size, never more (nothing counted twice). Allowed short of it: 1 % (a file
// truncated while its turn reads it, after its first line was read and before its lines were:
// its stream sees a size at its read offset, no truncation; 1 of 2 000 files in one run of 4;
// before: 1 856 of 1 862 unread files uncounted).
TEST(DaemonManyFiles, FilesTruncatedBeforeTheirTurnAreCountedLost) {
    constexpr int kTrunc = 2000;
    if (auto why = openFilesForUpTo(kTrunc); !why.empty()) GTEST_SKIP() << why;
    FollowedLog f;
    f.writeConfig("*.log", 100, "max_open = 8192\n");
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    ASSERT_TRUE(stopped(d));
    auto name = [&](int i) { return fmt::format("{}/t{:05}.log", f.logs, i); };
    const std::string text0 = fmt::format("job {:05} started\n{}\n", 0, rocrFaultText(0));
    for (int i = 0; i < kTrunc; ++i)
        writeFile(name(i), fmt::format("job {:05} started\n{}\n", i, rocrFaultText(i % 1000)));
    ASSERT_EQ(::kill(d.pid(), SIGCONT), 0);
    ASSERT_TRUE(eventually([&] { return records(f) > 0; }, 60s)) << d.stderrText();
    for (int i = 0; i < kTrunc; ++i) ASSERT_EQ(::truncate(name(i).c_str(), 0), 0);
    const auto size = static_cast<int64_t>(text0.size());
    const char* lost = "SELECT total(lost_bytes) FROM sources";
    const bool whole = eventually(
        [&] { return records(f) * size + storeCount(f.store, lost) >= kTrunc * size * 99 / 100; },
        60s);
    EXPECT_LE(records(f) * size + storeCount(f.store, lost), kTrunc * size);
    std::printf("%lld files read, %lld bytes counted lost (%lld files)\n",
                static_cast<long long>(records(f)),
                static_cast<long long>(storeCount(f.store, lost)),
                static_cast<long long>(storeCount(f.store, lost) / size));
    EXPECT_TRUE(whole) << "records " << records(f) << ", lost bytes " << storeCount(f.store, lost)
                       << ", each file " << size << " bytes";
    EXPECT_LT(records(f), kTrunc) << "every file was read before the truncation: nothing tested";
    EXPECT_TRUE(stoppedCleanly(d));
}
