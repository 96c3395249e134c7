// Hostile review 9 (HIGH): a fold of identical runtime errors spanned a ROCr fault (the end of
// a process: a log appended to by a second run). A record that ends a process now closes the
// folds of its process at its line, a fixed input position: the real daemon, killed with
// SIGKILL after it read the file and started again, stores the records and counts that one
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

/// 100 000 lines: PyTorch `HIP error:` lines at 10 and 5 000 (one run), a ROCr fault at 6 000,
/// errors at 6 010 and 9 000 (the next run), one at 19 999 right before a ROCr fault in another
/// region at 20 000, errors at 20 005 and 21 000; the others are program output.
std::string foldLog() {
    std::string out;
    for (uint64_t n = 1; n <= 100000; ++n) {
        if (n == 10 || n == 5000 || n == 6010 || n == 9000 || n == 19999 || n == 20005 ||
            n == 21000)
            out += "RuntimeError: HIP error: an illegal memory access was encountered\n";
        else if (n == 6000 || n == 20000)
            out += fmt::format(
                "Memory access fault by GPU node-2 (Agent handle: 0x55d5b2d4a780) on address "
                "0x7f{:02x}59a01000. Reason: Page not present or supervisor privilege.\n",
                n / 1000);
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

TEST(DaemonFaultFold, FoldsClosedByAFaultAcrossAKill9StoreTheRowsOfOneIngest) {
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
    // No fold spans a fault: 10 and 5 000 fold; 6 010, 9 000 and 19 999 (the line before the
    // second fault, held back for its next line); 20 005 and 21 000.
    ASSERT_EQ(
        expected,
        (std::vector<std::string>{"10|1|2", "6000|0|1", "6010|1|3", "20000|0|1", "20005|1|2"}));

    DaemonProcess d(GPUFAULTD_BIN, conf, dir.path());
    ASSERT_TRUE(d.start());
    ASSERT_TRUE(d.waitNotify("READY=1", 10s)) << d.stderrText();
    ASSERT_TRUE(eventually(
        [&] { return storeCount(store, "SELECT max_line FROM sources") == 100000; }, 30s))
        << d.stderrText();
    d.kill9();
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
