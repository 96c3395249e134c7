// gpufaultd and a rotated file whose last line never gets its newline (issue 3, hostile review
// finding 1): logrotate copied (copytruncate) or renamed the log while the job was writing a
// line; the job writes on in the file now at the log's path. The rotated file's partial last
// line is stored as it is, with a warning, once the rotation is settled (another file at the
// path, the rotated one idle): nothing is lost, nothing counted lost, and no LAG stays.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "tests/daemon/kill9_harness.h"
#include "tests/support/process.h"

using namespace gpufault::testing::kill9;

namespace {

/// Ledger line `n` without its newline.
std::string unended(uint64_t n) {
    std::string l = ledgerLine(n, 8);
    l.pop_back();
    return l;
}

/// Warnings in the store saying a last line had no newline.
int64_t noNewlineWarnings(const std::string& store) {
    return gpufault::testing::storeCount(
        store, "SELECT count(*) FROM warnings WHERE message LIKE '%has no newline%'");
}

}  // namespace

// L10 is written without its newline and seen; copytruncate copies it into app.log.1 and
// truncates app.log, where the job goes on with L11-12. Before, L10 was never stored, nothing
// was counted lost, and app.log.1 lagged by L10's bytes for ever.
TEST(DaemonKill9, CopyTruncatedWithAnUnendedLastLineStoresItOnce) {
    Quiet q;
    ASSERT_TRUE(q.startWith(10));  // L0-9
    std::string l10 = unended(10);
    ASSERT_TRUE(writeAll(q.fd, l10));
    ASSERT_TRUE(q.lagShows(q.s.app, l10.size()));
    gpufault::testing::writeFile(q.s.app + ".1", gpufault::testing::readFile(q.s.app));
    ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    q.next = 11;
    q.lines(q.fd, 2);  // L11-12
    ASSERT_TRUE(q.caughtUp());
    EXPECT_EQ(noNewlineWarnings(q.s.store), 1);
    EXPECT_EQ(storedNames(q.stop()), every(0, 13));
    EXPECT_EQ(q.lostInStore(), 0u);
}

// The same with a rotation by rename: app.log renamed to app.log.1 while L10 has no newline,
// a new app.log created for L11-12. Once app.log is another file and app.log.1 is idle, L10
// is stored. A restart after that does not store it again.
TEST(DaemonKill9, RenamedAwayWithAnUnendedLastLineStoresItOnce) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 10);  // L0-9
    std::string l10 = unended(10);
    ASSERT_TRUE(writeAll(q.fd, l10));
    ASSERT_TRUE(q.lagShows(q.s.app, l10.size()));
    ASSERT_EQ(std::rename(q.s.app.c_str(), (q.s.app + ".1").c_str()), 0);
    // Not settled while nothing is at app.log: the line is held (the job may write on).
    ASSERT_TRUE(q.lagShows(q.s.app + ".1", l10.size()));
    ::close(q.fd);
    q.fd = ::open(q.s.app.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(q.fd, 0);
    q.next = 11;
    q.lines(q.fd, 2);  // L11-12
    ASSERT_TRUE(q.caughtUp());
    EXPECT_EQ(noNewlineWarnings(q.s.store), 1);
    EXPECT_EQ(storedNames(q.stop()), every(0, 13));
    ASSERT_TRUE(q.startAndCatchUp());
    EXPECT_EQ(storedNames(q.stop()), every(0, 13));
    EXPECT_EQ(q.lostInStore(), 0u);
}

// A live log whose partial line waits (the file at its own path) keeps holding it: the rule
// above is for rotated files only.
TEST(DaemonKill9, AnUnendedLineOfTheLiveLogIsHeld) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 3);  // L0-2
    std::string l3 = unended(3);
    ASSERT_TRUE(writeAll(q.fd, l3));
    ASSERT_TRUE(q.lagShows(q.s.app, l3.size()));
    sleepFor(3s);  // beyond the idle time (2 s) after which a rotated file's line is taken
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lag, l3.size());
    ASSERT_TRUE(writeAll(q.fd, "\n"));
    ASSERT_TRUE(q.caughtUp());
    EXPECT_EQ(noNewlineWarnings(q.s.store), 0);
    EXPECT_EQ(storedNames(q.stop()), every(0, 4));
}
