// The faulting kernel when two processes dispatched in one stream just before a fault that
// states no pid (a ROCr line): `report` names neither as the kernel, it lists each process's
// last kernel (schema/queries.h lastKernelOf()). The real binary on a real store.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/correlate/incidents_cli.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

TEST(ReportTwoProcesses, KernelIsAmbiguousAndEachProcessesLastKernelIsListed) {
    // pid 100 dispatches kernel1 at 1000 µs, pid 200 kernel2 at 1001 µs, then ROCr's line.
    testing::TempDir t;
    std::string db = t.file("db");
    auto in = testing::run({GPUFAULT_BIN,
                            "--db",
                            db,
                            "ingest",
                            testing::kCorrelateData + "two-processes-one-stream.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto md = testing::run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "md"});
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_EQ(md.out.find("Last dispatched kernel before the fault"), std::string::npos) << md.out;
    EXPECT_NE(md.out.find("Ambiguous: 2 processes dispatched in the fault's stream just before "
                          "it, and the fault states no pid."),
              std::string::npos)
        << md.out;
    auto p200 = md.out.find("- pid 200: `kernel2(float*)` (`_Z7kernel2Pf`)");
    auto p100 = md.out.find("- pid 100: `kernel1(float*)` (`_Z7kernel1Pf`)");
    ASSERT_NE(p200, std::string::npos) << md.out;
    ASSERT_NE(p100, std::string::npos) << md.out;
    EXPECT_LT(p200, p100);  // newest first

    auto show = testing::run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("last ShaderName  ambiguous: 2 processes dispatched just before the "
                            "fault\n                   pid 200: kernel2(float*)\n"
                            "                   pid 100: kernel1(float*)\n"),
              std::string::npos)
        << show.out;

    auto js = testing::run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "json"});
    ASSERT_EQ(js.status, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    EXPECT_TRUE(j["kernel"].is_null());
    ASSERT_EQ(j["kernel_candidates"].size(), 2u);
    EXPECT_EQ(j["kernel_candidates"][0]["pid"], 200);
    EXPECT_EQ(j["kernel_candidates"][0]["kernel"], "_Z7kernel2Pf");
    EXPECT_EQ(j["kernel_candidates"][1]["pid"], 100);
    EXPECT_EQ(j["kernel_candidates"][1]["kernel"], "_Z7kernel1Pf");
}

}  // namespace
}  // namespace gpufault
