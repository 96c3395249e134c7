// The flood rule (a fault less than 65 536 lines after the previous fault of its stream stores
// the last 8 dispatches of each window, not 64) across a SIGKILL of the real gpufaultd: after
// the restart the previous fault lies before the line the daemon reads again from, so only the
// store knows it, and the fault written after the restart must still store the short window.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/daemon/followed_log.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

TEST(DaemonFlood, AFaultAfterAKill9IsStillAFloodsFault) {
    FollowedLog f;
    const std::string &conf = f.conf, &store = f.store, &log = f.log;
    // Lines 1..150: dispatches 1..50; 151: the first fault; 152..901: dispatches 51..300.
    std::string part1;
    for (int i = 1; i <= 50; ++i) part1 += hipDispatchLines(i);
    part1 += rocrFaultText(1) + "\n";
    for (int i = 51; i <= 300; ++i) part1 += hipDispatchLines(i);
    writeFile(log, part1);

    DaemonProcess d(GPUFAULTD_BIN, conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    ASSERT_TRUE(storeReaches(d, store, "SELECT max_line FROM sources", 901, 10s));
    // The first fault's window: dispatches 1..50 (fewer than 64), rows at their ShaderName lines.
    EXPECT_EQ(storeCount(store, "SELECT count(*) FROM dispatches WHERE line < 151"), 50);
    d.kill9();
    // The checkpoint resumes at the oldest dispatch held (64 + 64 slack back from 300): after
    // the first fault, which is not read again.
    EXPECT_GT(storeCount(store, "SELECT line FROM sources"), 151);

    // Lines 902..961: dispatches 301..320; 962: the second fault, 811 lines after the first.
    std::string part2;
    for (int i = 301; i <= 320; ++i) part2 += hipDispatchLines(i);
    part2 += rocrFaultText(2) + "\n";
    std::ofstream(log, std::ios::app) << part2 << std::flush;

    DaemonProcess again(GPUFAULTD_BIN, conf, f.dir.path());
    ASSERT_TRUE(startedReady(again));
    ASSERT_TRUE(storeReaches(
        again, store, "SELECT count(*) FROM evidence WHERE kind = 'rocr_memory_fault'", 2, 10s));
    // A flood's fault: the last 8 dispatches (313..320, ShaderName lines 940..961), committed
    // with its record; 64 (257..320) had the restart forgotten the first fault.
    EXPECT_EQ(storeCount(store, "SELECT count(*) FROM dispatches WHERE line > 151"), 8);
    EXPECT_EQ(storeCount(store, "SELECT min(line) FROM dispatches WHERE line > 151"), 940);
    EXPECT_EQ(storeCount(store, "SELECT count(*) FROM dispatches WHERE line < 151"), 50);
    EXPECT_EQ(storeCount(store, "SELECT count(*) FROM operands WHERE line > 151"), 8);
}

TEST(DaemonHeld, AnIdleThreadsLastDispatchesSurviveAKill9) {
    // Issue 3 "no loss, no duplicates": thread B goes idle while thread A dispatches 75 000
    // lines, past the 65 536 line positions a checkpoint can resume at; B's held dispatches
    // (its last kernel among them) are kept in the store, not read again, after a SIGKILL.
    FollowedLog f;
    const std::string &conf = f.conf, &store = f.store, &log = f.log;
    constexpr std::string_view kB = "0x7f0a1b2c4640";
    // Lines 1..1200: A and B in turn, 200 dispatches each (B's last, kernel 400, at line 1200);
    // 1201..76200: A alone.
    std::string part1;
    for (int i = 1; i <= 400; ++i) part1 += i % 2 ? hipDispatchLines(i) : hipDispatchLines(i, kB);
    for (int i = 401; i <= 25400; ++i) part1 += hipDispatchLines(i);
    writeFile(log, part1);

    DaemonProcess d(GPUFAULTD_BIN, conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    ASSERT_TRUE(storeReaches(d, store, "SELECT max_line FROM sources", 76200, 20s));
    d.kill9();
    // The checkpoint resumes past B's dispatches; the store holds B's 128 slots instead.
    EXPECT_GT(storeCount(store, "SELECT line FROM sources"), 1200);
    EXPECT_EQ(storeCount(store,
                         fmt::format("SELECT count(*) FROM held_dispatches WHERE runtime_tid = "
                                     "'{}' AND stored = 0",
                                     kB)),
              128);
    EXPECT_EQ(storeCount(store, "SELECT count(*) FROM dispatches"), 0);

    // A fault naming no pid: the last 64 of each thread.
    std::ofstream(log, std::ios::app) << rocrFaultText(1) + "\n" << std::flush;
    DaemonProcess again(GPUFAULTD_BIN, conf, f.dir.path());
    ASSERT_TRUE(startedReady(again));
    ASSERT_TRUE(storeReaches(
        again, store, "SELECT count(*) FROM evidence WHERE kind = 'rocr_memory_fault'", 1, 10s));
    const std::string ofB = fmt::format(" WHERE runtime_tid = '{}'", kB);
    EXPECT_EQ(storeCount(store, "SELECT count(*) FROM dispatches" + ofB), 64);
    EXPECT_EQ(storeCount(store, "SELECT max(line) FROM dispatches" + ofB), 1200);
    EXPECT_EQ(storeCount(store, "SELECT min(line) FROM dispatches" + ofB), 1200 - 63 * 6);
    EXPECT_EQ(storeCount(store,
                         "SELECT count(*) FROM operands o JOIN dispatches d ON d.id = "
                         "o.dispatch_id" +
                             fmt::format(" WHERE d.runtime_tid = '{}'", kB)),
              64);
    EXPECT_EQ(storeCount(
                  store,
                  "SELECT count(*) FROM dispatches WHERE runtime_tid <> '" + std::string(kB) + "'"),
              64);
}
