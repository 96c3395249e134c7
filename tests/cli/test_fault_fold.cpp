// Hostile review 9: (HIGH) identical runtime errors of one stream were folded into one record
// across a ROCr fault that ended the process (a log appended to by a second run): run 2's error
// counted into run 1's record. A record that ends a process (endsProcess(): rocr_memory_fault,
// an Xid or segfault with an address) now closes the folds of its process/rank at its line.
// (MEDIUM) HIP `ArgN … obj:[lo-hi]` with a wrapped, inverted or wider-than-64-bit range was
// dropped without a word: the operand is still not stored, with a warning naming the line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kBin = GPUFAULT_BIN;

/// `gpufault ingest` of `log`, then `query --json` rows joined by `|`.
class Ingest {
  public:
    explicit Ingest(const std::string& log) {
        writeFile(dir_.file("job.log"), log);
        auto r = run({kBin, "--db", dir_.file("s.db"), "ingest", "-q", dir_.file("job.log")});
        EXPECT_EQ(r.status, 0) << r.err;
    }
    /// Rows of `sql`, each its cells (in column order of `cols`) joined by `|`.
    std::vector<std::string> rows(const std::string& sql, const std::vector<std::string>& cols) {
        auto r = run({kBin, "--db", dir_.file("s.db"), "query", "--json", sql});
        EXPECT_EQ(r.status, 0) << r.err;
        std::vector<std::string> out;
        size_t start = 0;
        while (start < r.out.size()) {
            size_t e = r.out.find('\n', start);
            if (e == std::string::npos) e = r.out.size();
            if (e > start) {
                auto j = nlohmann::json::parse(r.out.substr(start, e - start));
                std::string row;
                for (const auto& c : cols) {
                    if (!row.empty()) row += "|";
                    row += j[c].is_string() ? j[c].get<std::string>() : j[c].dump();
                }
                out.push_back(row);
            }
            start = e + 1;
        }
        return out;
    }

  private:
    TempDir dir_;
};

std::string rocr(const char* addr) {
    return std::string(
               "Memory access fault by GPU node-2 (Agent handle: 0x55d5b2d4a780) on "
               "address ") +
           addr + ". Reason: Page not present or supervisor privilege.\n";
}
const std::string kErr = "RuntimeError: HIP error: an illegal memory access was encountered\n";

std::string steps(int n) {
    std::string s;
    for (int i = 1; i <= n; ++i) s += "step " + std::to_string(i) + " loss 0.1\n";
    return s;
}

const char* kRuntimeRows =
    "SELECT line, count FROM evidence WHERE kind = 'runtime_error' ORDER BY line";

TEST(FaultFold, ARunsRepeatedErrorIsNotFoldedIntoThePreviousRunsRecord) {
    // /tmp/hostile9a/fold1.log: two runs appended, 22 lines apart.
    Ingest in(rocr("0x7f6459a01000") + kErr + steps(20) + rocr("0x7e0000a01000") + kErr);
    EXPECT_EQ(in.rows(kRuntimeRows, {"line", "count"}), (std::vector<std::string>{"2|1", "24|1"}));
    // Each run's error is in its own incident.
    EXPECT_EQ(in.rows("SELECT COUNT(DISTINCT i.incident_id) AS n FROM incident_evidence i JOIN "
                      "evidence e ON e.id = i.evidence_id WHERE e.kind = 'runtime_error'",
                      {"n"}),
              (std::vector<std::string>{"2"}));
}

TEST(FaultFold, RepeatsWithinOneRunStillFold) {
    Ingest in(kErr + steps(5) + kErr + rocr("0x7f6459a01000") + steps(3) + kErr);
    EXPECT_EQ(in.rows(kRuntimeRows, {"line", "count"}), (std::vector<std::string>{"1|2", "12|1"}));
}

TEST(FaultFold, AnErrorOnTheLineBeforeTheFaultFoldsNoRepeatAfterIt) {
    // The error's line waits for the next one (PyTorch may name the error there): it is held
    // back when the fault comes, and still folds nothing after the fault.
    Ingest in(kErr + rocr("0x7f6459a01000") + steps(2) + kErr + kErr);
    EXPECT_EQ(in.rows(kRuntimeRows, {"line", "count"}), (std::vector<std::string>{"1|1", "5|2"}));
}

TEST(FaultFold, AFaultOfOneRankClosesOnlyThatRanksFolds) {
    const std::string e0 = "[rank0]: " + kErr, e1 = "[rank1]: " + kErr;
    Ingest in(e0 + e1 + "[rank0]: " + rocr("0x7f6459a01000") + e0 + e1);
    EXPECT_EQ(in.rows("SELECT line, count, rank FROM evidence WHERE kind = 'runtime_error' ORDER "
                      "BY line",
                      {"line", "count", "rank"}),
              (std::vector<std::string>{"1|1|0", "2|2|1", "4|1|0"}));
}

TEST(FaultFold, AFaultOfAnotherPidLeavesAFoldOpen) {
    const std::string err =
        ":1:hip_code_object.cpp      :  1 : 0000000100 us: [pid:500  tid:0x7f0a00000001] "
        "hipErrorNoBinaryForGpu: Couldn't find binary for file: /opt/a.so\n";
    const std::string seg =
        "[  100.000000] python[600]: segfault at 7f0000001000 ip 00007f0000002000 sp "
        "00007ffc00000000 error 4 in libx.so[7f0000000000+10000]\n";
    const std::string seg500 =
        "[  101.000000] python[500]: segfault at 7f0000001000 ip 00007f0000002000 sp "
        "00007ffc00000000 error 4 in libx.so[7f0000000000+10000]\n";
    Ingest in(err + seg + err + seg500 + err);
    EXPECT_EQ(in.rows("SELECT line, count FROM evidence WHERE kind = 'missing_code_object' ORDER "
                      "BY line",
                      {"line", "count"}),
              (std::vector<std::string>{"1|2", "5|1"}));
}

TEST(FaultFold, WrappedInvertedWideAndHugeObjRangesWarnAndKeepTheDispatch) {
    // /tmp/hostile9a/op2.log and op1.log in one stream.
    const std::string p =
        ":3:rocvirtual.cpp           :723 : 0000000105 us: [pid:500  "
        "tid:0x7f0a00000001] ";
    const std::string launch =
        ":3:hip_module.cpp           :669 : 0000000100 us: [pid:500  tid:0x7f0a00000001]  "
        "hipLaunchKernel ( 0x1, {1,1,1}, {1,1,1}, 0x2, 0, stream:<null> ) \n";
    const std::string shader =
        ":3:rocvirtual.cpp           :3016: 0000000110 us: [pid:500  "
        "tid:0x7f0a00000001] ShaderName : _Z4kernv\n";
    Ingest in(launch +  // 1
              p + "Arg0: float* w = ptr:0xfffffffffffff000 obj:[0xfffffffffffff000-0x1000]\n" + p +
              "Arg1: float* z = ptr:0x7f0000002000 obj:[0x7f0000003000-0x7f0000001000]\n" + p +
              "Arg2: float* ov = ptr:0xfffffffffffff000 "
              "obj:[0xfffffffffffff000-0x10000000000001000]\n" +
              p + "Arg3: float* a = ptr:0x7f0000000000 obj:[0x7f0000000000-0x7f0000001000]\n" +
              p + "Arg4: float* s = ptr:0x7f0000004000 obj:[0x7f0000004000-0xffffffffffffffff]\n" +
              shader +  // 7
              rocr("0x0000000000000800"));
    EXPECT_EQ(in.rows("SELECT d.line AS line, k.name AS kernel FROM dispatches d JOIN kernels k ON "
                      "k.id = d.kernel_id",
                      {"line", "kernel"}),
              (std::vector<std::string>{"7|_Z4kernv"}));
    EXPECT_EQ(in.rows("SELECT name, ptr FROM operands ORDER BY name", {"name", "ptr"}).size(), 1u);
    auto w = in.rows(
        "SELECT line, message FROM warnings WHERE message LIKE '%obj:[lo-hi]%' "
        "ORDER BY message",
        {"line", "message"});
    ASSERT_EQ(w.size(), 4u);
    EXPECT_NE(w[0].find("7|Arg0 of"), std::string::npos) << w[0];
    EXPECT_NE(w[0].find("wraps around 2^64"), std::string::npos) << w[0];
    EXPECT_NE(w[1].find("7|Arg1 of"), std::string::npos) << w[1];
    EXPECT_NE(w[2].find("7|Arg2 of"), std::string::npos) << w[2];
    EXPECT_NE(w[2].find("wider than 64 bits"), std::string::npos) << w[2];
    // hostile11a argn.txt: a range to 0xffff…ffff (16 EiB) is no allocation.
    EXPECT_NE(w[3].find("7|Arg4 of"), std::string::npos) << w[3];
    EXPECT_NE(w[3].find("spans more than 2^48 bytes"), std::string::npos) << w[3];
}

}  // namespace
}  // namespace gpufault::testing
