// Hostile review 3, MEDIUM 4: a folded runtime record (identical errors counted into one) held
// gpufaultd's checkpoint at its first line for the life of the file. Folds now close kFoldLines
// (32 768) after their first line, in gpufaultd as in `gpufault ingest`: the real daemon, killed
// with SIGKILL after it read the file and started again, stores the records and counts that one
// `gpufault ingest` of the same file stores.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <csignal>
#include <string>
#include <vector>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

/// 100 000 lines: a HIP API error at lines 1, 20 000, 50 000, 60 000 and 95 000, a PyTorch
/// `HIP error:` line at 10 000 and 45 000; the others are program output.
std::string foldLog() {
    std::string out;
    for (uint64_t n = 1; n <= 100000; ++n) {
        if (n == 1 || n == 20000 || n == 50000 || n == 60000 || n == 95000)
            out += fmt::format(
                ":3:hip_module.cpp           :85  : {:010} us: [pid:4242  tid:0x7f0a1b2c3d40]  "
                "hipModuleGetFunction: Returned hipErrorNotFound : \n",
                1000000000 + n);
        else if (n == 10000 || n == 45000)
            out += "RuntimeError: HIP error: an illegal memory access was encountered\n";
        else
            out += fmt::format("step {} loss {:.3f}\n", n, 1.0 / static_cast<double>(n));
    }
    return out;
}

/// "line|kind|count" of every record of the store, by line (at most 16).
std::vector<std::string> records(const std::string& store) {
    std::vector<std::string> out;
    for (int i = 0; i < 16; ++i) {
        const std::string nth =
            fmt::format(" FROM evidence ORDER BY line, kind LIMIT 1 OFFSET {}", i);
        int64_t line = storeCount(store, "SELECT line" + nth);
        if (line < 0) break;
        out.push_back(fmt::format("{}|{}|{}",
                                  line,
                                  storeCount(store, "SELECT kind = 'runtime_error'" + nth),
                                  storeCount(store, "SELECT count" + nth)));
    }
    return out;
}

}  // namespace

TEST(DaemonFold, AFoldAcrossAKill9StoresTheRecordsAndCountsOfOneIngest) {
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
    writeFile(log, foldLog());
    const std::string ref = dir.file("ref.db");
    auto ing = run({GPUFAULT_BIN, "--db", ref, "ingest", log});
    ASSERT_EQ(ing.status, 0) << ing.err;
    const std::vector<std::string> expected = records(ref);
    // 1 and 20 000 fold (count 2); that fold closes before line 32 769, so 50 000 starts
    // another, which 60 000 joins; 95 000 is 45 000 lines after 50 000: a third.
    ASSERT_EQ(
        expected,
        (std::vector<std::string>{"1|1|2", "10000|1|1", "45000|1|1", "50000|1|2", "95000|1|1"}));

    DaemonProcess d(GPUFAULTD_BIN, conf, dir.path());
    ASSERT_TRUE(d.start());
    ASSERT_TRUE(d.waitNotify("READY=1", 10s)) << d.stderrText();
    ASSERT_TRUE(eventually(
        [&] { return storeCount(store, "SELECT max_line FROM sources") == 100000; }, 30s))
        << d.stderrText();
    d.kill9();
    // Whatever the kill left (the last fold open or stored): no fold older than two spans
    // holds the checkpoint (the fold of line 1 held it at 0 before).
    EXPECT_GE(storeCount(store, "SELECT line FROM sources"), 100000 - 2 * 32768);

    DaemonProcess again(GPUFAULTD_BIN, conf, dir.path());
    ASSERT_TRUE(again.start());
    ASSERT_TRUE(again.waitNotify("READY=1", 10s)) << again.stderrText();
    ASSERT_TRUE(eventually([&] { return records(store).size() == expected.size(); }, 30s))
        << again.stderrText();
    EXPECT_EQ(records(store), expected);
    again.signal(SIGTERM);
    EXPECT_EQ(again.waitExit(10s), 0) << again.stderrText();
    EXPECT_EQ(records(store), expected);
}
