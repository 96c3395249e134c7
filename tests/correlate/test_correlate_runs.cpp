// Two runs of one program in one stream that states no pid (a CI log, a terminal transcript):
// ROCr aborts the process after its fault line, so each fault is its own process's incident,
// with only its own process's dispatches and operands (docs/correlation.md "Contradictions").
// The real binary on a real store.
#include <gtest/gtest.h>

#include "tests/correlate/incidents_cli.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

TEST(CorrelateRuns, AFaultEndsItsProcessInAPidlessStream) {
    // Both faults in one 2 MiB region, 50 µs apart on the runtime clock: only the first fault
    // ending its process keeps them apart.
    auto inc = testing::ingestBothOrders({"two-runs-one-stream.log"});
    std::set<std::set<std::string>> want = {{"two-runs-one-stream.log:4"},
                                            {"two-runs-one-stream.log:9"}};
    EXPECT_EQ(inc.groups, want);

    testing::TempDir t;
    std::string db = t.file("db");
    auto in = testing::run(
        {GPUFAULT_BIN, "--db", db, "ingest", testing::kCorrelateData + "two-runs-one-stream.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto md1 = testing::run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "md"});
    ASSERT_EQ(md1.status, 0) << md1.err;
    EXPECT_NE(md1.out.find("Last dispatched kernel before the fault: `kern_small`"),
              std::string::npos)
        << md1.out;
    EXPECT_EQ(md1.out.find("`kern_big`"), std::string::npos) << md1.out;

    auto show2 = testing::run({GPUFAULT_BIN, "--db", db, "show", "2"});
    ASSERT_EQ(show2.status, 0) << show2.err;
    EXPECT_NE(show2.out.find("kern_big"), std::string::npos) << show2.out;
    EXPECT_EQ(show2.out.find("kern_small"), std::string::npos) << show2.out;
    EXPECT_EQ(show2.out.find("\nsmall\t"), std::string::npos) << show2.out;
    EXPECT_NE(show2.out.find("\nbig\t"), std::string::npos) << show2.out;

    auto faults = testing::run({GPUFAULT_BIN, "--db", db, "faults"});
    ASSERT_EQ(faults.status, 0) << faults.err;
    EXPECT_NE(faults.out.find("\n2\t2\trocr_memory_fault\t0x00007f00001c0000\tno\tbig\t"),
              std::string::npos)
        << faults.out;
    EXPECT_TRUE(faults.out.find("kern_big\n") != std::string::npos) << faults.out;
}

TEST(CorrelateRuns, OtherRanksPrefixesKeepTheirProcess) {
    // torchrun --tee `[{role}{local_rank}]:`, vLLM `({name} pid={pid}) `, compose `svc-1  | `:
    // another process's dispatch and operand are never the fault's.
    testing::TempDir t;
    const std::string rocr =
        "Memory access fault by GPU node-2 (Agent handle: 0x55d5b2d4a780) on address "
        "0x7f0000100000. Reason: Page not present or supervisor privilege.\n";
    const std::string probe = "[probe] name=A ptr=0x7f0000000000 end=0x7f0000100000\n";
    const std::string shader =
        ":3:rocvirtual.cpp           :3190: 0000100000 us:  ShaderName : kern_other\n";
    struct Case {
        std::string name, other, faulting;
    } cases[] = {{"tee", "[default0]:", "[default1]:"},
                 {"vllm", "(VllmWorker rank=0 pid=100) ", "(VllmWorker rank=1 pid=101) "},
                 {"compose", "trainer-1    | ", "evaluator-1  | "}};
    for (const auto& c : cases) {
        std::string log = t.file(c.name + ".log");
        testing::writeFile(log, c.other + probe + c.other + shader + c.faulting + rocr);
        std::string db = t.file(c.name + ".db");
        auto in = testing::run({GPUFAULT_BIN, "--db", db, "ingest", "-q", log});
        ASSERT_EQ(in.status, 0) << in.err;
        auto f = testing::run({GPUFAULT_BIN, "--db", db, "faults"});
        ASSERT_EQ(f.status, 0) << f.err;
        EXPECT_NE(f.out.find("\n1\t1\trocr_memory_fault\t0x00007f0000100000\tno\t-\t-\t-\n"),
                  std::string::npos)
            << c.name << "\n"
            << f.out;
    }
}

}  // namespace
}  // namespace gpufault
