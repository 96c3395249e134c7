// What the CLI prints of a record's own values: `kernel_s` in `events --json` as the stamp
// printed it (fixture 067), and the rank a record states in `show` and `report` (a torchrun log
// of two ranks, tests/data/correlate/torchrun-ranks.log).
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

}  // namespace
}  // namespace gpufault::testing
