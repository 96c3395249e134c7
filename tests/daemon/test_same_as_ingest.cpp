// Issue "gpufaultd": the daemon following a file as it grows and `gpufault ingest` of the whole
// file store the same rows: a fault after a carriage-return progress bar over LineDecoder's
// 1 MiB (the text after the last '\r', in the daemon also when the bar was read before its
// newline came), and the dispatch window of a runtime_error (a record its matcher holds and
// emits late: at the end in `ingest`, when the stream goes quiet in the daemon).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "tests/daemon/followed_log.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

/// A daemon following `<dir>/logs/*.log` into `<dir>/store.db`.
struct Followed : FollowedLog {
    /// `gpufault ingest` of `files` into a store of its own; its path.
    std::string ingest(const std::vector<std::string>& files) {
        std::string other = dir.file("ingest.db");
        std::vector<std::string> argv{GPUFAULT_BIN, "--db", other, "ingest", "-q"};
        argv.insert(argv.end(), files.begin(), files.end());
        auto r = run(argv, 120);
        EXPECT_EQ(r.status, 0) << r.err;
        return other;
    }
};

void append(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::app) << text << std::flush;
}

/// tqdm's default bar redrawn after '\r' `n` times (no newline).
std::string progressBar(int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
        s += fmt::format("\r 50%|#####     | {}/100000 [00:01<00:01, 3.2it/s]", i);
    return s;
}

/// The evidence rows of a store, by file name and line (what identifies them in both stores).
std::vector<std::string> evidenceRows(const std::string& store) {
    return storeRows(store,
                     "SELECT replace(s.path, rtrim(s.path, replace(s.path, '/', '')), ''), e.line, "
                     "e.kind, e.address, e.gpu_node, e.reason, e.count, e.attrs, e.raw "
                     "FROM evidence e JOIN sources s ON s.id = e.source_id ORDER BY 1, 2, 3",
                     9);
}

std::string dispatchRange(int from, int to) {
    std::string s;
    for (int i = from; i <= to; ++i) s += hipDispatchLines(i);
    return s;
}

}  // namespace

// The bar (2.6 MiB, no newline yet) is read before the fault text and its newline arrive: the
// daemon holds it (its checkpoint stays before it) and feeds the line at its newline as ingest
// does. A second file written at once takes the other path (the line within one read).
TEST(DaemonSameAsIngest, AFaultAfterACrProgressBarOverAMiB) {
    Followed s;
    const std::string log = s.logs + "/bar.log", whole = s.logs + "/whole.log";
    const std::string bar = progressBar(48000);
    ASSERT_GT(bar.size(), 2u << 20);
    writeFile(log, "before\n" + bar);
    DaemonProcess d(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(startedReady(d));
    const auto size = static_cast<int64_t>(7 + bar.size());
    ASSERT_TRUE(storeReaches(d, s.store, "SELECT size FROM sources", size, 20s));
    // Read to its end, not fed: a restart would read the bar again from its start.
    EXPECT_EQ(storeCount(s.store, "SELECT offset FROM sources"), 7);
    EXPECT_EQ(storeCount(s.store, "SELECT line FROM sources"), 1);
    append(log, rocrFaultText(1));
    append(log, "\nafter\n");
    writeFile(whole, "x\n" + progressBar(30000) + rocrFaultText(2) + "\n");
    ASSERT_TRUE(storeReaches(
        d, s.store, "SELECT count(*) FROM evidence WHERE kind = 'rocr_memory_fault'", 2, 20s));
    ASSERT_TRUE(stoppedCleanly(d));

    auto daemon = evidenceRows(s.store);
    ASSERT_EQ(daemon.size(), 2u);
    // The text after the bar's last '\r', on line 2 of each file, marked truncated.
    EXPECT_EQ(daemon[0].substr(0, daemon[0].find("|\r")),
              "bar.log|2|rocr_memory_fault|140067475554304|1|Page not present or supervisor "
              "privilege|1|{\"agent_handle\":\"0x55d5b2d4a780\",\"truncated\":\"1\"}");
    EXPECT_NE(daemon[0].find("\r 50%|#####     | 47999/100000 [00:01<00:01, 3.2it/s]Memory access "
                             "fault by GPU node-1"),
              std::string::npos)
        << daemon[0].substr(0, 300);
    EXPECT_NE(daemon[1].find("whole.log|2|rocr_memory_fault|140067477651456|"), std::string::npos)
        << daemon[1].substr(0, 300);
    EXPECT_EQ(evidenceRows(s.ingest({log, whole})), daemon);
}

// Dispatches 1..80 of one thread, a runtime_error (no pid: every window), dispatches 81..400 in
// three appends, a memory fault. The runtime_error's window is the 64 dispatches before it
// (17..80) in both: in ingest its record is emitted at the end, when 320 later dispatches have
// gone through the window's ring (64 + 64 slots) since; in the daemon when the file went quiet.
TEST(DaemonSameAsIngest, ALateRecordsDispatchWindowIsTheSame) {
    Followed s;
    const std::string log = s.logs + "/job.log";
    writeFile(log,
              dispatchRange(1, 80) + "RuntimeError: HIP error: an illegal memory access was "
                                     "encountered\n" + dispatchRange(81, 100));
    DaemonProcess d(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(startedReady(d));
    // Line 241: the runtime error; emitted once the file went quiet.
    ASSERT_TRUE(
        storeReaches(d,
                     s.store,
                     "SELECT count(*) FROM evidence WHERE kind = 'runtime_error' AND line = 241",
                     1,
                     20s));
    int lines = 301;
    for (auto [from, to] : {std::pair{101, 250}, std::pair{251, 400}}) {
        append(log, dispatchRange(from, to));
        lines += 3 * (to - from + 1);
        ASSERT_TRUE(storeReaches(d, s.store, "SELECT max_line FROM sources", lines, 20s));
    }
    append(log, rocrFaultText(1) + "\n");
    ASSERT_TRUE(storeReaches(
        d, s.store, "SELECT count(*) FROM evidence WHERE kind = 'rocr_memory_fault'", 1, 20s));
    ASSERT_TRUE(stoppedCleanly(d));

    const std::string other = s.ingest({log});
    const std::string dispatches =
        "SELECT d.line, d.pid, d.runtime_tid, k.name FROM dispatches d JOIN kernels k ON "
        "k.id = d.kernel_id ORDER BY d.line";
    const std::string operands =
        "SELECT line, pid, name, ptr, end, arg_ptr, origin FROM operands ORDER BY line, name";
    for (const std::string& store : {s.store, other}) {
        // 17..80 before the runtime error, 337..400 before the fault.
        EXPECT_EQ(storeCount(store, "SELECT count(*) FROM dispatches WHERE line < 241"), 64)
            << store;
        EXPECT_EQ(storeCount(store, "SELECT min(line) FROM dispatches"), 3 * 17) << store;
        EXPECT_EQ(storeCount(store, "SELECT count(*) FROM dispatches WHERE line > 241"), 64)
            << store;
        EXPECT_EQ(storeCount(store, "SELECT count(*) FROM operands"), 128) << store;
    }
    EXPECT_EQ(storeRows(s.store, dispatches, 4), storeRows(other, dispatches, 4));
    EXPECT_EQ(storeRows(s.store, operands, 7), storeRows(other, operands, 7));
    EXPECT_EQ(evidenceRows(s.store), evidenceRows(other));
}
