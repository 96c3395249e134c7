// Issue 3, hostile review 9b (HIGH): `gpufault ingest` of a file whose last line has no newline
// yet, beside gpufaultd. The CLI stores that line's records but checkpoints at the line's start
// (sources.unended); the next reader of the whole line (the daemon, or the CLI again) replaces
// its rows: the line is stored once, whole, and later lines keep their numbers.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kFault =
    "Memory access fault by GPU node-1 (Agent handle: 0x55d4c0a1b2c0) on address 0x7f6459a00000. "
    "Reason: Page not present or supervisor privilege.";
/// Where kFault is cut: in the middle of its address (0x7f6459 is what the cut line names).
constexpr size_t kCut = 84;

/// An AMD_LOG_LEVEL=3 dispatch line of pid 4242 (kernel `kernel`).
std::string shader(const std::string& kernel, int i) {
    return fmt::format(
        ":3:rocvirtual.cpp           :3016: {:010} us: [pid:4242  tid:0x7f0a1b2c3d40] "
        "ShaderName : {}",
        1000000000 + i * 37,
        kernel);
}

/// A daemon following `logs/*.log` (kmsg off), store and socket in a temporary directory.
struct Job {
    TempDir dir;
    std::string conf = dir.file("gpufaultd.conf");
    std::string store = dir.file("store.db");
    std::string logs = dir.file("logs");
    std::string log = logs + "/job.log";
    Job() {
        ::mkdir(logs.c_str(), 0755);
        writeFile(conf,
                  fmt::format("[store]\npath = \"{}\"\n[kmsg]\nenabled = false\n[files]\n"
                              "globs = [\"{}/*.log\"]\npoll_interval_ms = 100\n"
                              "[control]\nsocket = \"{}\"\ngroup = \"\"\n",
                              store,
                              logs,
                              dir.file("ctl.sock")));
    }
    void append(const std::string& text) const {
        std::ofstream(log, std::ios::app) << text << std::flush;
    }
    ProcessResult ingest() const { return run({GPUFAULT_BIN, "--db", store, "ingest", log}, 60); }
    /// The memory faults stored: "line|address" in line order.
    std::vector<std::string> faults() const {
        return storeRows(store,
                         "SELECT line, printf('0x%x', address) FROM evidence WHERE kind = "
                         "'rocr_memory_fault' ORDER BY line",
                         2);
    }
    /// "kernel|n" per kernel counted.
    std::vector<std::string> counts() const {
        return storeRows(store,
                         "SELECT k.name, sum(c.n) FROM dispatch_counts c JOIN kernels k ON "
                         "k.id = c.kernel_id GROUP BY k.name ORDER BY k.name",
                         2);
    }
    /// offset|line|max_line|complete|unended of the one file source.
    std::string position() const {
        auto r = storeRows(
            store, "SELECT offset, line, max_line, complete, unended FROM sources", 5);
        return r.size() == 1 ? r[0] : fmt::format("{} rows", r.size());
    }
};

void stop(DaemonProcess& d) {
    d.signal(SIGTERM);
    EXPECT_EQ(d.waitExit(10s), std::optional<int>(0)) << d.stderrText();
}

}  // namespace

// The repro of the review (w5.sh): the job's log ends in the middle of a fault line; the daemon
// is stopped; `gpufault ingest` stores it; the daemon starts again and the job writes the rest.
// Before: the daemon resumed inside the line (the CLI's checkpoint was the file's end), the
// rest became a line of its own, later lines were numbered one too far and the fault was lost.
TEST(DaemonUnendedLine, TheCliStoresAnUnendedFaultLineAndTheDaemonReplacesItWhole) {
    Job s;
    const std::string fault(kFault);
    const std::string head = "starting\n" + shader("K_a", 0) + "\n";
    writeFile(s.log, head + fault.substr(0, kCut));

    auto cli = s.ingest();
    ASSERT_EQ(cli.status, 0) << cli.err;
    // The user asked for the finished job's log: its last line is there, as it was.
    EXPECT_EQ(s.faults(), std::vector<std::string>{"3|0x7f6459"});
    // Checkpointed where the file's unfinished part starts (the dispatch of line 2, held for
    // the window of a fault still to come; the unended line after it), its rows replaceable.
    EXPECT_EQ(s.position(), "9|1|2|1|1");
    // Again on the unchanged file: nothing read, nothing added.
    cli = s.ingest();
    ASSERT_EQ(cli.status, 0) << cli.err;
    EXPECT_NE(cli.out.find("unchanged"), std::string::npos) << cli.out;
    EXPECT_EQ(s.faults(), std::vector<std::string>{"3|0x7f6459"});

    DaemonProcess d(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(d.start());
    ASSERT_TRUE(d.waitNotify("READY=1", 10s)) << d.stderrText();
    // The rest of the line, a dispatch and a second fault.
    s.append(fault.substr(kCut) + "\n" + shader("K_b", 1) + "\n" + fault + "\n");
    const std::vector<std::string> want{"3|0x7f6459a00000", "5|0x7f6459a00000"};
    EXPECT_TRUE(eventually([&] { return s.faults() == want; }, 10s))
        << ::testing::PrintToString(s.faults()) << "\n"
        << d.stderrText();
    stop(d);
    EXPECT_EQ(s.faults(), want);
    EXPECT_EQ(s.counts(), (std::vector<std::string>{"K_a|1", "K_b|1"}));
    EXPECT_EQ(storeCount(s.store, "SELECT count(*) FROM sources"), 1);
    EXPECT_EQ(storeCount(s.store, "SELECT max_line FROM sources"), 5);
    EXPECT_EQ(storeCount(s.store, "SELECT unended FROM sources"), 0);
}

// A dispatch line cut by the end of the file: the CLI keeps no count under the cut kernel
// name; the daemon, reading the line whole, counts it once under its name.
TEST(DaemonUnendedLine, AnUnendedDispatchLineIsCountedOnceWhole) {
    Job s;
    const std::string full = shader("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32", 1);
    const size_t cut = full.size() - 10;
    writeFile(s.log, shader("K_a", 0) + "\n" + full.substr(0, cut));
    auto cli = s.ingest();
    ASSERT_EQ(cli.status, 0) << cli.err;
    EXPECT_EQ(s.counts(), std::vector<std::string>{"K_a|1"});

    DaemonProcess d(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(d.start());
    ASSERT_TRUE(d.waitNotify("READY=1", 10s)) << d.stderrText();
    s.append(full.substr(cut) + "\n" + shader("K_a", 2) + "\n");
    const std::vector<std::string> want{"Cijk_Ailk_Bljk_HHS_BH_MT128x128x32|1", "K_a|2"};
    EXPECT_TRUE(eventually([&] { return s.counts() == want; }, 10s))
        << ::testing::PrintToString(s.counts()) << "\n"
        << d.stderrText();
    stop(d);
    EXPECT_EQ(s.counts(), want);
    EXPECT_EQ(storeCount(s.store, "SELECT max_line FROM sources"), 3);
}

// Without a daemon: the CLI again, once the line has grown (still without a newline, then
// with it): each time the line's rows are those of the line as it is now, stored once.
TEST(DaemonUnendedLine, TheCliAgainReplacesTheLineItStoredUnended) {
    Job s;
    const std::string fault(kFault);
    writeFile(s.log, "starting\n" + fault.substr(0, kCut));
    ASSERT_EQ(s.ingest().status, 0);
    EXPECT_EQ(s.faults(), std::vector<std::string>{"2|0x7f6459"});
    s.append(fault.substr(kCut, 4));  // 0x7f6459a000: still no newline
    ASSERT_EQ(s.ingest().status, 0);
    EXPECT_EQ(s.faults(), std::vector<std::string>{"2|0x7f6459a000"});
    s.append(fault.substr(kCut + 4) + "\n" + fault + "\n");
    auto cli = s.ingest();
    ASSERT_EQ(cli.status, 0) << cli.err;
    EXPECT_EQ(s.faults(), (std::vector<std::string>{"2|0x7f6459a00000", "3|0x7f6459a00000"}));
    EXPECT_EQ(storeCount(s.store, "SELECT unended FROM sources"), 0);
    EXPECT_EQ(storeCount(s.store, "SELECT line FROM sources"), 3);
}

// Findings 1 and 2 of the review after ingest11, with gpufaultd as the next reader: the CLI
// stored a fold of repeated HIP errors still open at the file's end (its last repeat without
// its newline) and an amdgpu block whose status lines were not written yet. The daemon,
// following the file as it grows, replaces those rows: one fold of count 4 (before: "2|3" and
// "7|2"), one block record with its client (before: two half-records).
TEST(DaemonUnendedLine, TheDaemonCompletesTheFoldAndBlockTheCliStoredAtTheEnd) {
    Job s;
    const std::string err =
        ":3:hip_module.cpp           :85  : 1000000001 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
        "hipModuleGetFunction: Returned hipErrorNotFound : ";
    const std::string kern = "Nov 30 10:24:16 node7 kernel: amdgpu 0000:0a:00.0: amdgpu: ";
    writeFile(s.log,
              "start\n" + err + "\n" + err + "\nstep 4\n" + kern +
                  "[gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32772, for process "
                  "python3 pid 4242 thread python3 pid 4242)\n" +
                  kern +
                  "  in page starting at address 0x00007f6459a00000 from client 0x1b "
                  "(UTCL2)\n" +
                  err);
    auto folds = [&] {
        return storeRows(s.store,
                         "SELECT line, count FROM evidence WHERE kind = 'runtime_error' "
                         "ORDER BY line",
                         2);
    };
    auto blocks = [&] {
        return storeRows(s.store,
                         "SELECT line, ifnull(json_extract(attrs, '$.client_id'), '-') FROM "
                         "evidence WHERE kind = 'amdgpu_page_fault' ORDER BY line",
                         2);
    };
    auto cli = s.ingest();
    ASSERT_EQ(cli.status, 0) << cli.err;
    EXPECT_EQ(folds(), std::vector<std::string>{"2|3"});
    EXPECT_EQ(blocks(), std::vector<std::string>{"5|-"});
    EXPECT_EQ(s.position(), "6|1|6|1|1");  // the fold's first line

    DaemonProcess d(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(d.start());
    ASSERT_TRUE(d.waitNotify("READY=1", 10s)) << d.stderrText();
    s.append("\n" + kern + "GCVM_L2_PROTECTION_FAULT_STATUS:0x00801031\n" + kern +
             "         Faulty UTCL2 client ID: TCP (0x8)\n" + err + "\n");
    const std::vector<std::string> wantFolds{"2|4"}, wantBlocks{"5|0x8"};
    EXPECT_TRUE(eventually([&] { return folds() == wantFolds && blocks() == wantBlocks; }, 10s))
        << ::testing::PrintToString(folds()) << ::testing::PrintToString(blocks()) << "\n"
        << d.stderrText();
    stop(d);
    EXPECT_EQ(folds(), wantFolds);
    EXPECT_EQ(blocks(), wantBlocks);
    EXPECT_EQ(storeCount(s.store, "SELECT count(*) FROM evidence"), 2);
}
