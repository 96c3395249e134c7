// What the CLI prints of a record's own values: `kernel_s` in `events --json` as the stamp
// printed it (fixture 067), and the rank a record states in `show` and `report` (a torchrun log
// of two ranks, tests/data/correlate/torchrun-ranks.log); a fold's count and the kernel's
// `N callbacks suppressed` (fixture 079) in `show`.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

TEST(CliRecordOutput, KernelSecondsAreThePrintedStamp) {
    TempDir t;
    auto in = run({GPUFAULT_BIN,
                   "--db",
                   t.file("db"),
                   "ingest",
                   GPUFAULT_SOURCE_DIR
                   "/tests/data/real/067-nvidia-h200-dmesg-xid31-read-write-null-xid13-43.txt"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto ev = run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json", "--kind", "nvidia_xid"});
    ASSERT_EQ(ev.status, 0) << ev.err;
    // `[   41.257555] NVRM: Xid (PCI:0000:00:06): 43, …` on line 8
    EXPECT_NE(ev.out.find("\"kernel_s\":41.257555}"), std::string::npos) << ev.out;
    EXPECT_EQ(ev.out.find("41.25755499"), std::string::npos) << ev.out;
}

TEST(CliRecordOutput, ShowAndReportPrintTheRankARecordStates) {
    TempDir t;
    auto in = run({GPUFAULT_BIN,
                   "--db",
                   t.file("db"),
                   "ingest",
                   GPUFAULT_SOURCE_DIR "/tests/data/correlate/torchrun-ranks.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    // Incident 2: rank 1's ROCr fault (line 2) and its NCCL watchdog error (line 4).
    auto show = run({GPUFAULT_BIN, "--db", t.file("db"), "show", "2"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("\n  rank       1\n"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("      node-3, rank 1, Write access to a read-only page\n"),
              std::string::npos)
        << show.out;
    EXPECT_EQ(show.out.find("rank 0"), std::string::npos) << show.out;
    auto md = run({GPUFAULT_BIN, "--db", t.file("db"), "report", "2", "--format", "md"});
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_NE(md.out.find("\n- Rank: 1\n"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("torchrun-ranks.log:2` (rocr_memory_fault, rank 1)"), std::string::npos)
        << md.out;
    // A record without a rank: no rank line.
    auto one = run({GPUFAULT_BIN,
                    "--db",
                    t.file("db2"),
                    "ingest",
                    GPUFAULT_SOURCE_DIR "/tests/data/correlate/torchrun-dmesg.log"});
    ASSERT_EQ(one.status, 0) << one.err;
    auto plain = run({GPUFAULT_BIN, "--db", t.file("db2"), "show", "1"});
    EXPECT_EQ(plain.out.find("rank"), std::string::npos) << plain.out;
}

// Fixture 079: `show_signal_msg: 111 callbacks suppressed` before the segfault on line 7: the
// messages the kernel dropped are said, so nobody reads two segfaults as the whole story.
TEST(CliRecordOutput, ShowSaysWhatTheKernelsRateLimitDroppedAndHowManyLinesAFoldHolds) {
    TempDir t;
    auto in =
        run({GPUFAULT_BIN,
             "--db",
             t.file("db"),
             "ingest",
             "-q",
             GPUFAULT_SOURCE_DIR
             "/tests/data/real/079-segfault-unversioned-libamdhip64-callbacks-suppressed.txt"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto show = run({GPUFAULT_BIN, "--db", t.file("db"), "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("the kernel's rate limit dropped 111 messages before it (fault counts "
                            "are lower bounds)"),
              std::string::npos)
        << show.out;
    EXPECT_EQ(show.out.find("×"), std::string::npos) << show.out;
    auto md = run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1", "--format", "md"});
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_NE(md.out.find(":7` (cpu_segfault, after 111 messages the kernel's rate limit dropped)"),
              std::string::npos)
        << md.out;

    // One HIP error printed three times by one process before its fault: one record, ×3.
    const std::string err = "RuntimeError: HIP error: an illegal memory access was encountered\n";
    writeFile(t.file("job.log"),
              err + "step 1\n" + err + err +
                  "Memory access fault by GPU node-2 (Agent handle: 0x55d5b2d4a780) on address "
                  "0x7f6459a01000. Reason: Page not present or supervisor privilege.\n");
    in = run({GPUFAULT_BIN, "--db", t.file("db2"), "ingest", "-q", t.file("job.log")});
    ASSERT_EQ(in.status, 0) << in.err;
    show = run({GPUFAULT_BIN, "--db", t.file("db2"), "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("×3 (identical lines folded into this record)"), std::string::npos)
        << show.out;
    md = run({GPUFAULT_BIN, "--db", t.file("db2"), "report", "1", "--format", "md"});
    EXPECT_NE(md.out.find(":1` (runtime_error, ×3 identical lines)"), std::string::npos) << md.out;
}

}  // namespace
}  // namespace gpufault::testing
