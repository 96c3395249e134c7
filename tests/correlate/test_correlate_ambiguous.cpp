// A link by 2 MiB region never picks between candidates that exclude each other
// (docs/correlation.md, link 1): two ranks faulting at one address and the kernel's faults of two
// pids there are not paired by order. Lines built from the formats (amdgpu gfxhub block,
// ROCr's `Memory access fault by GPU node-N …`, the `[rankN]:` prefix) in tests/data/correlate/,
// through the built binary into a real store, ingested in two orders; then what `show` prints.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/correlate/incidents_cli.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using testing::ingestBothOrders;
using Groups = std::set<std::set<std::string>>;

TEST(CorrelateAmbiguous, TwoRanksAndTwoPidsInOneRegionAreNotPairedByOrder) {
    auto inc = ingestBothOrders({"two-pids-one-region-dmesg.log", "two-ranks-one-region.log"});
    EXPECT_EQ(inc.groups,
              (Groups{{"two-pids-one-region-dmesg.log:1"},
                      {"two-pids-one-region-dmesg.log:4"},
                      {"two-ranks-one-region.log:1"},
                      {"two-ranks-one-region.log:2", "two-ranks-one-region.log:3"}}));
    EXPECT_EQ(inc.link["two-ranks-one-region.log:3"], "same rank 1 in one stream, 1 lines apart");
}

TEST(CorrelateAmbiguous, OneFaultOfTwoCandidatesJoinsNeither) {
    // One kernel fault, two ranks at its address: either rank could be its process.
    auto a = ingestBothOrders({"one-pid-one-region-dmesg.log", "two-ranks-one-region.log"});
    EXPECT_EQ(a.groups,
              (Groups{{"one-pid-one-region-dmesg.log:1"},
                      {"two-ranks-one-region.log:1"},
                      {"two-ranks-one-region.log:2", "two-ranks-one-region.log:3"}}));
    // One ROCr line without a rank, two pids faulting at its address.
    auto b = ingestBothOrders({"two-pids-one-region-dmesg.log", "one-rocr-one-region.log"});
    EXPECT_EQ(b.groups,
              (Groups{{"two-pids-one-region-dmesg.log:1"},
                      {"two-pids-one-region-dmesg.log:4"},
                      {"one-rocr-one-region.log:1"}}));
}

TEST(CorrelateAmbiguous, OneCandidateStillJoins) {
    auto inc = ingestBothOrders({"one-pid-one-region-dmesg.log", "one-rocr-one-region.log"});
    EXPECT_EQ(inc.groups,
              (Groups{{"one-pid-one-region-dmesg.log:1", "one-rocr-one-region.log:1"}}));
    EXPECT_EQ(inc.link["one-rocr-one-region.log:1"], "same 2 MiB region 0x7f6459a00000");
}

TEST(CorrelateAmbiguous, ShowAndReportSayWhichRecordsItCouldBe) {
    testing::TempDir t;
    auto in = testing::run({GPUFAULT_BIN,
                            "--db",
                            t.file("db"),
                            "ingest",
                            testing::kCorrelateData + "two-pids-one-region-dmesg.log",
                            testing::kCorrelateData + "one-rocr-one-region.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    // Incidents are numbered in path order: ROCr's line (record 3), then the kernel's two faults
    // (records 1, 2).
    auto show = testing::run({GPUFAULT_BIN, "--db", t.file("db"), "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("could be   pid 2917 python3 (#1) or pid 2918 python3 (#2): same 2 MiB "
                            "region, nothing tells which, none joined"),
              std::string::npos)
        << show.out;
    EXPECT_NE(show.out.find("Could be its (records of other incidents; none joined)\n  #1 "
                            "amdgpu_page_fault"),
              std::string::npos)
        << show.out;
    // Each kernel fault names the ROCr line as its candidate, and counts one record of its own.
    auto one = testing::run({GPUFAULT_BIN, "--db", t.file("db"), "show", "2"});
    EXPECT_NE(
        one.out.find("could be   " + testing::kCorrelateData + "one-rocr-one-region.log:1 (#3)"),
        std::string::npos)
        << one.out;
    EXPECT_NE(one.out.find("(1 record: amdgpu_page_fault)"), std::string::npos) << one.out;
    auto md = testing::run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1", "--format", "md"});
    EXPECT_NE(md.out.find("- Could be: pid 2917 python3 (#1) or pid 2918 python3 (#2)"),
              std::string::npos)
        << md.out;
    EXPECT_NE(md.out.find("(amdgpu_page_fault, could be this incident's, not joined)"),
              std::string::npos)
        << md.out;
}

}  // namespace
}  // namespace gpufault
