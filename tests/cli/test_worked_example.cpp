// The worked gfx1201 example of the issue, through the built binary: alignment and signed
// distances must come out exactly (the hand-written report was wrong by a factor of four).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kExample = GPUFAULT_SOURCE_DIR "/examples/gfx1201-worked-example.log";

class WorkedExample : public ::testing::Test {
  protected:
    void SetUp() override {
        auto r = run({GPUFAULT_BIN, "--db", db(), "ingest", kExample});
        ASSERT_EQ(r.status, 0) << r.err;
    }
    std::string db() const { return tmp_.file("db"); }
    TempDir tmp_;
};

TEST_F(WorkedExample, DistancesFromTheView) {
    auto r = run({GPUFAULT_BIN,
                  "--db",
                  db(),
                  "query",
                  "--json",
                  "SELECT name, distance, from_ptr, inside, same_2mib FROM fault_operand_distance "
                  "ORDER BY name"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto rows = parseJsonLines(r.out);
    ASSERT_EQ(rows.size(), 2u) << r.out;
    EXPECT_EQ(rows[0]["name"], "A");
    EXPECT_EQ(rows[0]["distance"].get<int64_t>(), -4381900800LL);  // below A.ptr
    EXPECT_EQ(rows[0]["from_ptr"].get<int64_t>(), -4381900800LL);
    EXPECT_EQ(rows[0]["inside"].get<int64_t>(), 0);
    EXPECT_EQ(rows[1]["name"], "B");
    EXPECT_EQ(rows[1]["distance"].get<int64_t>(), 1539178496LL);  // above B.end
    EXPECT_EQ(rows[1]["inside"].get<int64_t>(), 0);
    EXPECT_EQ(rows[1]["same_2mib"].get<int64_t>(), 0);
}

TEST_F(WorkedExample, FaultsListsAlignmentAndNearestOperand) {
    auto r = run({GPUFAULT_BIN, "--db", db(), "faults", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto rows = parseJsonLines(r.out);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["address"], "0x7f6459a00000");
    EXPECT_EQ(rows[0]["align_2mib"], true);
    EXPECT_EQ(rows[0]["nearest_operand"], "B");
    EXPECT_EQ(rows[0]["nearest_distance"].get<int64_t>(), 1539178496LL);
}

TEST_F(WorkedExample, ShowAndReportPrintBytesAndGiB) {
    auto show = run({GPUFAULT_BIN, "--db", db(), "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("2 MiB aligned: yes"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("-4,381,900,800 B (-4.08 GiB) below ptr"), std::string::npos)
        << show.out;
    EXPECT_NE(show.out.find("+1,539,178,496 B (+1.43 GiB) above end"), std::string::npos)
        << show.out;
    auto md = run({GPUFAULT_BIN, "--db", db(), "report", "1", "--format", "md"});
    ASSERT_EQ(md.status, 0) << md.err;
    // exact distances signed and grouped, as show prints them (hostile review 4, B)
    EXPECT_NE(md.out.find("| A | `0x00007f655ece8000` | `0x00007f65605d8000` | 26148864 | "
                          "-4,381,900,800 below ptr | -4.08 GiB | no | no |"),
              std::string::npos)
        << md.out;
    EXPECT_NE(md.out.find("| B | `0x00007f63f01a0000` | `0x00007f63fde20000` | 231211008 | "
                          "+1,539,178,496 above end | +1.43 GiB | no | no |"),
              std::string::npos)
        << md.out;
    auto js = run({GPUFAULT_BIN, "--db", db(), "report", "1", "--format", "json"});
    ASSERT_EQ(js.status, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    EXPECT_EQ(j["address"], "0x7f6459a00000");
    EXPECT_EQ(j["align_2mib"], true);
    ASSERT_EQ(j["operands"].size(), 2u);
    EXPECT_EQ(j["operands"][0]["name"], "B");  // nearest first
}

}  // namespace
}  // namespace gpufault::testing

namespace gpufault::testing {
namespace {

// The constructed AMD_LOG_LEVEL=3 example: with no instrumentation, HIP's ArgN lines make the
// operands and the last ShaderName names the kernel.
TEST(AmdLogExample, LastKernelAndArgumentOperands) {
    TempDir t;
    auto in = run({GPUFAULT_BIN,
                   "--db",
                   t.file("db"),
                   "ingest",
                   GPUFAULT_SOURCE_DIR "/examples/amdlog3-scatter-fault.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto rows = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "faults", "--json"}).out);
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0]["address"], "0x7f3a13101000");
    EXPECT_EQ(rows[0]["last_kernel"], "_Z12scatter_rowsPKfPKiPfi");
    EXPECT_EQ(rows[0]["nearest_operand"], "dst (arg2 of scatter_rows)");
    EXPECT_EQ(rows[0]["nearest_distance"].get<int64_t>(), 4096);
    EXPECT_EQ(rows[0]["nearest_inside"], false);
    auto d = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "dispatches", "--json"}).out);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0]["kernel"], "_Z9vectoraddPfS_S_i");
    EXPECT_EQ(d[0]["pid"], 4242);
}

// Tables print kernels as `show` does (demangled, no parameter list); --json keeps the mangled
// ShaderName and adds the full demangled name (new-user run: `kernels`/`faults` printed _Z…).
TEST(AmdLogExample, ListingsPrintDemangledKernels) {
    TempDir t;
    auto in = run({GPUFAULT_BIN,
                   "--db",
                   t.file("db"),
                   "ingest",
                   GPUFAULT_SOURCE_DIR "/examples/amdlog3-scatter-fault.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto kernels = run({GPUFAULT_BIN, "--db", t.file("db"), "kernels"});
    ASSERT_EQ(kernels.status, 0) << kernels.err;
    EXPECT_EQ(kernels.out,
              "DISPATCHES\tPID\tSOURCE\tLINES\tKERNEL\n"
              "1\t4242\t" GPUFAULT_SOURCE_DIR
              "/examples/amdlog3-scatter-fault.log\t15-15\tscatter_rows\n"
              "1\t4242\t" GPUFAULT_SOURCE_DIR
              "/examples/amdlog3-scatter-fault.log\t8-8\tvectoradd\n");
    auto faults = run({GPUFAULT_BIN, "--db", t.file("db"), "faults"});
    ASSERT_EQ(faults.status, 0) << faults.err;
    EXPECT_NE(faults.out.find("\tscatter_rows\n"), std::string::npos) << faults.out;
    EXPECT_EQ(faults.out.find("_Z"), std::string::npos) << faults.out;
    auto dispatches = run({GPUFAULT_BIN, "--db", t.file("db"), "dispatches"});
    EXPECT_NE(dispatches.out.find("\tvectoradd\n"), std::string::npos) << dispatches.out;
    EXPECT_EQ(dispatches.out.find("_Z"), std::string::npos) << dispatches.out;

    auto kj = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "kernels", "--json"}).out);
    ASSERT_EQ(kj.size(), 2u);
    EXPECT_EQ(kj[0]["kernel"], "_Z12scatter_rowsPKfPKiPfi");
    EXPECT_EQ(kj[0]["kernel_demangled"], "scatter_rows(float const*, int const*, float*, int)");
    auto fj = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "faults", "--json"}).out);
    ASSERT_EQ(fj.size(), 1u);
    EXPECT_EQ(fj[0]["last_kernel"], "_Z12scatter_rowsPKfPKiPfi");
    EXPECT_EQ(fj[0]["last_kernel_demangled"],
              "scatter_rows(float const*, int const*, float*, int)");
}

// The example cut after scatter_rows' Arg lines (a job killed inside its launch): the three
// pointer args belong to no dispatch; a stored warning names the file and their first line.
TEST(AmdLogExample, ArgLinesCutOffAtTheEndAreWarnedWithFileAndLine) {
    TempDir t;
    std::string text = readFile(GPUFAULT_SOURCE_DIR "/examples/amdlog3-scatter-fault.log");
    size_t end = 0;
    for (int i = 0; i < 14; ++i) end = text.find('\n', end) + 1;  // lines 1-14
    const std::string cut = t.file("cut.log");
    writeFile(cut, text.substr(0, end));
    auto in = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", cut});
    ASSERT_EQ(in.status, 0) << in.err;
    // vectoradd's three args are operands; scatter_rows' are not.
    EXPECT_NE(in.out.find("1 dispatch (1 kept), 3 operands, 1 warning"), std::string::npos)
        << in.out;
    auto ops = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "operands", "--json"}).out);
    ASSERT_EQ(ops.size(), 3u);
    for (const auto& o : ops)
        EXPECT_NE(o["name"].get<std::string>().find("of vectoradd"), std::string::npos) << o;
    auto w = parseJsonLines(run({GPUFAULT_BIN,
                                 "--db",
                                 t.file("db"),
                                 "query",
                                 "--json",
                                 "SELECT s.path, w.line, w.message FROM warnings w JOIN sources s "
                                 "ON s.id = w.source_id"})
                                .out);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0]["path"], cut);
    EXPECT_EQ(w[0]["line"], 11);
    EXPECT_EQ(w[0]["message"],
              "Arg lines of a launch with no ShaderName (3 pointer arg(s), pid 4242 thread "
              "0x7f0a1b2c3d40) at the end of the input: not attached to any dispatch (unless its "
              "ShaderName is appended later)");
}

// A real PyTorch ShaderName (MI210, AMD_LOG_LEVEL=3): the template kernel's demangled name is
// cut to 100 characters in the table, as `show` cuts it; --json has it whole.
TEST(AmdLogExample, KernelsShortensLongTemplateNames) {
    TempDir t;
    const std::string log =
        GPUFAULT_SOURCE_DIR "/tests/data/real/016-amdlog-shadername-ptr-obj-range-mi210.txt";
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "-q", log}).status, 0);
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "kernels"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("\tvoid at::native::vectorized_elementwise_kernel<4, "
                         "at::native::FillFunctor<c10::Half>, at::detail:...\n"),
              std::string::npos)
        << r.out;
    auto j = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "kernels", "--json"}).out);
    ASSERT_EQ(j.size(), 1u);
    EXPECT_EQ(j[0]["kernel"],
              "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIN3c104HalfEEENS_"
              "6detail5ArrayIPcLi1EEEEEviT0_T1_");
    EXPECT_EQ(
        j[0]["kernel_demangled"],
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<c10::Half>, "
        "at::detail::Array<char*, 1>)");
}

}  // namespace
}  // namespace gpufault::testing
