// `show` and `report` print the 20 nearest operands and the 10 latest before the fault, then
// "… N more operands" (issue 2, review cli3b): a probe that logs every call leaves millions of
// operand lines. Real binary, real store of a generated log.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

size_t count(const std::string& s, const std::string& what) {
    size_t n = 0;
    for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
    return n;
}

TEST(OperandCap, ShowAndReportPrintTheNearestAndLatestAndCountTheRest) {
    TempDir t;
    std::string log;
    for (int i = 0; i < 300; ++i)  // t0..t49 six times each; the fault is 1 past t0's end
        log += fmt::format("[probe] name=t{} ptr=0x{:x} size=4096\n",
                           i % 50,
                           0x7f0000000000ULL + static_cast<uint64_t>(i % 50) * 0x100000);
    log +=
        "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address "
        "0x7f0000001000. Reason: Page not present or supervisor privilege.\n";
    std::string p = t.file("ops.log"), db = t.file("db");
    writeFile(p, log);
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", "-q", p}).status, 0);
    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    // 20 nearest: t0 ×6, t1 ×6, t2 ×6, t3 ×2; latest 10: t49..t40
    EXPECT_EQ(count(show.out, "\t4,096 B (4.00 KiB)\t"), 30u) << show.out;
    EXPECT_NE(show.out.find("… 280 more operands: gpufault query"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("t49\t0x00007f0003100000\t0x00007f0003101000\t"), std::string::npos);
    EXPECT_EQ(show.out.find("t20\t"), std::string::npos) << show.out;
    auto rep = run({GPUFAULT_BIN, "--db", db, "report", "1"});
    ASSERT_EQ(rep.status, 0) << rep.err;
    EXPECT_EQ(count(rep.out, "| t"), 20u) << rep.out;
    EXPECT_NE(rep.out.find("… 280 more operands: `gpufault query"), std::string::npos) << rep.out;
    auto j = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "json"});
    EXPECT_NE(j.out.find("\"operands_total\":300"), std::string::npos) << j.out;
}

}  // namespace
}  // namespace gpufault::testing
