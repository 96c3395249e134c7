// gpufaultd under SIGKILL: random kills while a writer rotates, truncates and deletes its log
// (the harness and what is asserted: kill9_harness.h), and deterministic truncation and
// deletion cases. copytruncate cases: test_kill9_copytruncate.cpp.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "tests/daemon/kill9_harness.h"

using namespace gpufault::testing::kill9;
using gpufault::testing::eventually;

TEST(DaemonKill9, RenameRotationTruncationDeletionUnderRandomKills) {
    Figures fig;
    runScenario(Rotation::Rename, killsFromEnv(50, 200), true, &fig);
}

// copytruncate while the daemon runs (frozen at times, never killed): a copy resumes where
// the original was read, whether it appears before or after the truncation.
TEST(DaemonKill9, CopyTruncateRotationWithoutKills) {
    Figures fig;
    runScenario(Rotation::CopyTruncate, killsFromEnv(20, 100), false, &fig);
}

// copytruncate under kills: a copy made while the daemon was dead, or whose in-memory resume
// a kill undid, is recognised from the checkpoint's prefix hash in the store (adoptCopy in
// daemon/sources/file_copy.cpp) and continues its original's stream: no line twice. The
// interleavings the random runs found are deterministic tests in test_kill9_copytruncate.cpp
// (docs/hardening.md, "copytruncate, restarts and kills", lists the seeds run).
TEST(DaemonKill9, CopyTruncateRotationUnderRandomKills) {
    Figures fig;
    runScenario(Rotation::CopyTruncate, killsFromEnv(50, 200), true, &fig);
}


// ---------------------------------------------------------------------------------------------
// Deterministic cases (the daemon is frozen with SIGSTOP while the files change).

// Truncated, then written past the old read offset before the daemon looked again: the size
// alone does not show the truncation; the changed first line does. Every line is read once.
TEST(DaemonKill9, TruncatedAndRegrownBetweenTwoLooksIsReadFromTheStart) {
    Quiet q;
    ASSERT_TRUE(q.startWith(10));
    ASSERT_TRUE(freeze(q.d.pid()));
    ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    q.lines(q.fd, 30);  // three times the old offset
    thaw(q.d.pid());
    ASSERT_TRUE(q.caughtUp());
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lost, 0u);  // it had read everything it saw before the truncation
    auto stored = q.stop();
    std::string want;
    for (uint64_t n = 0; n < 40; ++n) want += fmt::format(" L{}x1", n);
    EXPECT_EQ(storedNames(stored), want);
}

// Truncated and written again to exactly the length read (`dmesg | tail -1 > last.log` of the
// same width) while the daemon was frozen: neither the size nor the offset changed, the bytes
// before the offset did; the new lines are read once, nothing is lost (hostile review 16, i3 H1).
TEST(DaemonKill9, RewrittenInPlaceToTheSameLengthIsReadAgain) {
    Quiet q;
    ASSERT_TRUE(q.startWith(10));
    ASSERT_TRUE(q.caughtUp());
    std::string old, fresh;
    for (uint64_t n = 0; n < 10; ++n) old += ledgerLine(n, 8);
    for (uint64_t n = 10; n < 20; ++n) fresh += ledgerLine(n, 7);  // one more digit, one less pad
    ASSERT_EQ(fresh.size(), old.size());
    ASSERT_TRUE(freeze(q.d.pid()));
    ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    ASSERT_TRUE(writeAll(q.fd, fresh));
    thaw(q.d.pid());
    std::string want;
    for (uint64_t n = 0; n < 20; ++n) want += fmt::format(" L{}x1", n);
    std::string err;  // read beside the running daemon (WAL): what it has committed so far
    ASSERT_TRUE(eventually([&] { return storedNames(storedLedger(q.s.store, &err)) == want; }, 30s))
        << storedNames(storedLedger(q.s.store, &err)) << err;
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lost, 0u);
    EXPECT_EQ(storedNames(q.stop()), want);
}

// The daemon sees a partial line (it holds it until its newline), then the file is truncated
// while it is frozen, after the writer completed that line and wrote another. It can know the
// partial line's bytes only: lost_bytes equals them exactly; the rest is unknowable to it.
TEST(DaemonKill9, PartialLineSeenThenTruncatedIsReportedLostExactly) {
    Quiet q;
    ASSERT_TRUE(q.startWith(10));
    std::string l10 = ledgerLine(10, 8), l11 = ledgerLine(11, 8);
    const size_t part = 20;
    ASSERT_TRUE(writeAll(q.fd, l10.substr(0, part)));
    ASSERT_TRUE(q.lagShows(q.s.app, part));
    ASSERT_TRUE(freeze(q.d.pid()));
    ASSERT_TRUE(writeAll(q.fd, l10.substr(part) + l11));
    ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    q.next = 12;
    q.lines(q.fd, 2);
    thaw(q.d.pid());
    ASSERT_TRUE(q.caughtUp());
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lost, part);  // removed unread: l10 + l11 bytes; knowable: the part it saw
    auto stored = q.stop();
    EXPECT_EQ(q.lostInStore(), part);
    std::string want;
    for (uint64_t n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13}) want += fmt::format(" L{}x1", n);
    EXPECT_EQ(storedNames(stored), want);
}

// Files the daemon holds open stay readable after a rename and after deletion: lines written
// to them while it was frozen are read to the end, and nothing is reported lost.
TEST(DaemonKill9, DeletedFilesHeldOpenAreReadToTheEnd) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 10);  // L0-9
    std::string rotated = q.s.app + ".1";
    ASSERT_EQ(::rename(q.s.app.c_str(), rotated.c_str()), 0);
    int fd2 = ::open(q.s.app.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd2, 0);
    q.lines(fd2, 10);  // L10-19
    ASSERT_TRUE(q.caughtUp());
    ASSERT_TRUE(freeze(q.d.pid()));
    q.lines(q.fd, 10);  // L20-29 into the rotated file, which is then deleted
    ASSERT_EQ(::unlink(rotated.c_str()), 0);
    q.lines(fd2, 10);  // L30-39 into app.log, which is then deleted and recreated
    ASSERT_EQ(::unlink(q.s.app.c_str()), 0);
    ::close(fd2);
    int fd3 = ::open(q.s.app.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd3, 0);
    q.lines(fd3, 10);  // L40-49
    ::close(fd3);
    thaw(q.d.pid());
    // The deleted files are finished once idle: then only the new app.log is followed.
    std::string why;
    ASSERT_TRUE(eventually(
        [&] {
            auto st = status(q.s.sock);
            return st && st->size() == 1 && caughtUp(q.s.sock, q.s.logs, &why);
        },
        30s))
        << why;
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lost, 0u);
    auto stored = q.stop();
    std::string want;
    for (uint64_t n = 0; n < 50; ++n) want += fmt::format(" L{}x1", n);
    EXPECT_EQ(storedNames(stored), want);
}

