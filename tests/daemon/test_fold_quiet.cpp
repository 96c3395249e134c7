// Hostile review 9b: folds lost under SIGHUP. gpufaultd closed the folds of a quiet stream
// (200 ms without a line) and `gpufault ingest` never did, so a repeat after a quiet moment
// started a second record in the daemon only, and a reload or restart that read the lines
// again from before the quiet moment folded them differently (records lost: the re-read fold
// was taken for the stored one). Now a quiet stream only publishes its folds (count so far);
// they close at the same lines in every reader, and a later emission raises the stored count.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kError = "RuntimeError: HIP error: an illegal memory access was encountered";

/// "line|kind|count" of every record, by line.
std::vector<std::string> records(const std::string& store) {
    return storeRows(store, "SELECT line, kind, count FROM evidence ORDER BY line, kind", 3);
}

}  // namespace

TEST(DaemonFoldQuiet, AFoldStaysOneRecordAcrossQuietMomentsAReloadAndAKill9) {
    TempDir dir;
    const std::string conf = dir.file("gpufaultd.conf"), store = dir.file("store.db"),
                      logs = dir.file("logs"), log = logs + "/job.log";
    ::mkdir(logs.c_str(), 0755);
    writeFile(conf,
              fmt::format("[store]\npath = \"{}\"\n[kmsg]\nenabled = false\n[files]\nglobs = "
                          "[\"{}/*.log\"]\npoll_interval_ms = 100\n[control]\nsocket = \"{}\"\n"
                          "group = \"\"\n[allocations]\ndirectory = \"\"\n",
                          store,
                          logs,
                          dir.file("ctl.sock")));
    auto append = [&](const std::string& s) { std::ofstream(log, std::ios::app) << s << std::flush; };
    writeFile(log, fmt::format("step 1\n{}\nstep 2\n", kError));

    DaemonProcess d(GPUFAULTD_BIN, conf, dir.path());
    ASSERT_TRUE(d.start());
    ASSERT_TRUE(d.waitNotify("READY=1", 10s)) << d.stderrText();
    // Quiet: the fold is published with its count so far.
    using Rows = std::vector<std::string>;
    ASSERT_TRUE(eventually([&] { return records(store) == Rows{"2|runtime_error|1"}; }, 10s))
        << ::testing::PrintToString(records(store)) << d.stderrText();

    // A reload, then a repeat: it folds into the record (not a second one).
    ASSERT_EQ(::kill(d.pid(), SIGHUP), 0);
    ASSERT_TRUE(eventually(
        [&] { return d.stderrText().find("reload: " + conf) != std::string::npos; }, 10s))
        << d.stderrText();
    append(fmt::format("{}\nstep 3\n", kError));
    EXPECT_TRUE(eventually([&] { return records(store) == Rows{"2|runtime_error|2"}; }, 10s))
        << ::testing::PrintToString(records(store)) << d.stderrText();

    // Killed after that was committed; started again, a third repeat.
    d.kill9();
    DaemonProcess again(GPUFAULTD_BIN, conf, dir.path());
    ASSERT_TRUE(again.start());
    ASSERT_TRUE(again.waitNotify("READY=1", 10s)) << again.stderrText();
    append(fmt::format("{}\nstep 4\n", kError));
    EXPECT_TRUE(eventually([&] { return records(store) == Rows{"2|runtime_error|3"}; }, 10s))
        << ::testing::PrintToString(records(store)) << again.stderrText();
    again.signal(SIGTERM);
    EXPECT_EQ(again.waitExit(10s), std::optional<int>(0)) << again.stderrText();

    // What one `gpufault ingest` of the file stores.
    const std::string ref = dir.file("ref.db");
    auto ing = run({GPUFAULT_BIN, "--db", ref, "ingest", log});
    ASSERT_EQ(ing.status, 0) << ing.err;
    EXPECT_EQ(records(ref), Rows{"2|runtime_error|3"});
    EXPECT_EQ(records(store), records(ref));
}
