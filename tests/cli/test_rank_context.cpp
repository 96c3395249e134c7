// Distributed ranks (`[rankN]:`) through the built binary (hostile review 8, rank8): torchrun
// merges every rank's output into one stream, so a fault of rank 0 must not take rank 1's
// operands (probe lines, HIP ArgN ranges) nor its dispatches (LAST KERNEL, show's last
// dispatches), even when no pid tells them apart; an operand logged after the fault must not
// win over one logged before it; an operand whose size passes 2^64 leaves a warning.
// The lines are the producers' formats (ROCr `Memory access fault by GPU node-%u (Agent handle:
// %p) on address %p. Reason: %s`, HIP AMD_LOG_LEVEL 3 `ArgN`/`ShaderName`, probe lines) as the
// hostile reviewer's repros (ranks.log, rk.log, rk2.log, after.log) wrote them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kBin = GPUFAULT_BIN;

/// A store in a temporary directory with `log` ingested (as `name`).
class Ingested {
  public:
    explicit Ingested(const std::string& log,
                      const std::string& name = "job.log",
                      const std::vector<std::string>& extra = {}) {
        writeFile(dir_.file(name), log);
        std::vector<std::string> argv{kBin, "--db", db(), "ingest", "-q"};
        argv.insert(argv.end(), extra.begin(), extra.end());
        argv.push_back(dir_.file(name));
        auto r = run(argv);
        EXPECT_EQ(r.status, 0) << r.err;
    }
    std::string db() const { return dir_.file("s.db"); }
    ProcessResult cli(std::vector<std::string> args) const {
        args.insert(args.begin(), {kBin, "--db", db()});
        return run(args);
    }
    /// One JSON object per output line of `args` (keys in their printed order).
    std::vector<nlohmann::ordered_json> jsonLines(std::vector<std::string> args) const {
        auto r = cli(std::move(args));
        EXPECT_EQ(r.status, 0) << r.err;
        std::vector<nlohmann::ordered_json> out;
        size_t start = 0;
        while (start < r.out.size()) {
            size_t e = r.out.find('\n', start);
            if (e == std::string::npos) e = r.out.size();
            if (e > start)
                out.push_back(nlohmann::ordered_json::parse(r.out.substr(start, e - start)));
            start = e + 1;
        }
        return out;
    }
    /// Rows of a `query`, each as its cells' text joined by tabs (NULL: "NULL"), in the order of
    /// `query --json`'s keys (sorted by column name).
    std::vector<std::string> query(const std::string& sql) const {
        std::vector<std::string> rows;
        for (const auto& j : jsonLines({"query", "--json", sql})) {
            std::string row;
            for (const auto& [k, v] : j.items()) {
                if (!row.empty()) row += '\t';
                row += v.is_string() ? v.get<std::string>() : v.is_null() ? "NULL" : v.dump();
            }
            rows.push_back(row);
        }
        return rows;
    }

  private:
    TempDir dir_;
};

// rk.log: rank 0's buffer holds the address rank 1 faulted at; rank 1's own buffer is far.
const char* const kProbeRanks =
    "[rank0]: [probe] name=R0BUF ptr=0x7f6459a00000 end=0x7f6459b00000\n"
    "[rank1]: [probe] name=R1BUF ptr=0x7f0000000000 end=0x7f0000100000\n"
    "[rank1]: Memory access fault by GPU node-3 (Agent handle: 0x55d5b2d4a990) on address "
    "0x7f6459a10000. Reason: Page not present or supervisor privilege.\n";

TEST(RankContext, ProbeOfAnotherRankIsNotTheFaultsOperand) {
    Ingested s(kProbeRanks);
    auto faults = s.jsonLines({"faults", "--json"});
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0]["rank"], 1);
    // R0BUF holds the address but is rank 0's: rank 1's own buffer is the nearest.
    EXPECT_EQ(faults[0]["nearest_operand"], "R1BUF");
    EXPECT_EQ(faults[0]["nearest_inside"], false);
    EXPECT_EQ(faults[0]["nearest_distance"], 0x7f6459a10000LL - 0x7f0000100000LL);
    // The view pairs the fault with rank 1's operand only.
    EXPECT_EQ(s.query("SELECT name, rank_in_time FROM fault_operand_distance"),
              std::vector<std::string>{"R1BUF\t1"});
    // show and report list the same single operand.
    auto show = s.cli({"show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("R1BUF"), std::string::npos) << show.out;
    EXPECT_EQ(show.out.find("R0BUF"), std::string::npos) << show.out;
    auto rep = s.jsonLines({"report", "1", "--format", "json"});
    ASSERT_EQ(rep.size(), 1u);
    ASSERT_EQ(rep[0]["operands"].size(), 1u);
    EXPECT_EQ(rep[0]["operands"][0]["name"], "R1BUF");
}

TEST(RankContext, OperandsWithoutRankStillMeetEveryRank) {
    // An operand line with no `[rankN]:` (and a fault with one) is not told apart: kept.
    Ingested s(
        "[probe] name=SHARED ptr=0x7f6459a00000 end=0x7f6459b00000\n"
        "[rank0]: [probe] name=OTHER ptr=0x7f6459a00000 end=0x7f6459b00000\n"
        "[rank1]: Memory access fault by GPU node-3 (Agent handle: 0x1) on address "
        "0x7f6459a10000. Reason: Page not present or supervisor privilege.\n");
    EXPECT_EQ(s.query("SELECT inside, name FROM fault_operand_distance ORDER BY operand_line"),
              std::vector<std::string>{"1\tSHARED"});
    auto faults = s.jsonLines({"faults", "--json"});
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0]["nearest_operand"], "SHARED");
    EXPECT_EQ(faults[0]["nearest_inside"], true);
}

// HIP ArgN ranges: rank 1's kernel took a buffer holding rank 0's fault address; both ranks
// run in containers (pid 1 each), so only the rank tells them apart.
const char* const kHipRanks =
    "[rank0]: :3:rocvirtual.cpp           :723 : 4815821610380 us: [pid:1 tid:0x7053] Arg0:   "
    "= ptr:0x7e0000000000 obj:[0x7e0000000000-0x7e0000001000]\n"
    "[rank0]: :3:rocvirtual.cpp           :3016: 4815821610381 us: [pid:1 tid:0x7053] "
    "ShaderName : _Z9rank0_kerPf\n"
    "[rank1]: :3:rocvirtual.cpp           :723 : 4815821610388 us: [pid:1 tid:0x7053] Arg0:   "
    "= ptr:0x7f6459a00000 obj:[0x7f6459a00000-0x7f6459b00000]\n"
    "[rank1]: :3:rocvirtual.cpp           :3016: 4815821610391 us: [pid:1 tid:0x7053] "
    "ShaderName : _Z9rank1_kerPf\n"
    "[rank0]: Memory access fault by GPU node-2 (Agent handle: 0x55d5b2d4a780) on address "
    "0x7f6459a10000. Reason: Page not present or supervisor privilege.\n";

TEST(RankContext, HipArgAndDispatchOfAnotherRankAreNotTheFaults) {
    Ingested s(kHipRanks);
    auto faults = s.jsonLines({"faults", "--json"});
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0]["rank"], 0);
    EXPECT_EQ(faults[0]["last_kernel"], "_Z9rank0_kerPf");
    EXPECT_EQ(faults[0]["nearest_operand"], "arg0 of rank0_ker");
    EXPECT_EQ(faults[0]["nearest_inside"], false);
    // The argument operands carry their dispatch's rank.
    auto ops = s.jsonLines({"operands", "--json"});
    ASSERT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0]["name"], "arg0 of rank0_ker");
    EXPECT_EQ(ops[0]["rank"], 0);
    EXPECT_EQ(ops[1]["name"], "arg0 of rank1_ker");
    EXPECT_EQ(ops[1]["rank"], 1);
    auto disp = s.jsonLines({"dispatches", "--json"});
    ASSERT_EQ(disp.size(), 2u);
    EXPECT_EQ(disp[0]["kernel"], "_Z9rank0_kerPf");
    EXPECT_EQ(disp[0]["rank"], 0);
    EXPECT_EQ(disp[1]["rank"], 1);
    // report: the last kernel and the operands are rank 0's.
    auto rep = s.jsonLines({"report", "1", "--format", "json"});
    ASSERT_EQ(rep.size(), 1u);
    EXPECT_EQ(rep[0]["kernel"], "_Z9rank0_kerPf");
    ASSERT_EQ(rep[0]["operands"].size(), 1u);
    EXPECT_EQ(rep[0]["operands"][0]["name"], "arg0 of rank0_ker");
    auto show = s.cli({"show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_EQ(show.out.find("rank1_ker"), std::string::npos) << show.out;
}

// rk2.log: the ranks' dispatches name their pids, the ROCr fault none.
TEST(RankContext, LastKernelOfThePidlessFaultIsItsRanks) {
    Ingested s(
        "[rank1]: :3:rocvirtual.cpp           :3016: 4815821610391 us: [pid:200 tid:0x7053] "
        "ShaderName : _Z9rank1_kerPf\n"
        "[rank0]: :3:rocvirtual.cpp           :3016: 4815821610392 us: [pid:100 tid:0x7054] "
        "ShaderName : _Z9rank0_kerPf\n"
        "[rank1]: Memory access fault by GPU node-3 (Agent handle: 0x55d5b2d4a990) on address "
        "0x7f6459a10000. Reason: Page not present or supervisor privilege.\n");
    auto faults = s.jsonLines({"faults", "--json"});
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0]["last_kernel"], "_Z9rank1_kerPf");
    auto rep = s.jsonLines({"report", "1", "--format", "json"});
    ASSERT_EQ(rep.size(), 1u);
    EXPECT_EQ(rep[0]["kernel"], "_Z9rank1_kerPf");
}

TEST(RankContext, AnotherRanksDispatchesDoNotPushARanksWindowOut) {
    // One (pid, thread) for both ranks (containers), a window of 2: rank 1's two dispatches
    // after rank 0's would have filled the shared window; each rank has its own.
    std::string log;
    for (auto [rank, k] : std::vector<std::pair<int, std::string>>{
             {0, "_Z6r0_oldv"}, {0, "_Z6r0_newv"}, {1, "_Z6r1_onev"}, {1, "_Z6r1_twov"}})
        log += "[rank" + std::to_string(rank) +
               "]: :3:rocvirtual.cpp           :3016: 4815821610391 us: [pid:1 "
               "tid:0x7053] ShaderName : " +
               k + "\n";
    log +=
        "[rank0]: Memory access fault by GPU node-2 (Agent handle: 0x1) on address "
        "0x7f6459a10000. Reason: Page not present or supervisor privilege.\n";
    Ingested s(log, "job.log", {"--window", "2"});
    auto faults = s.jsonLines({"faults", "--json"});
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0]["last_kernel"], "_Z6r0_newv");
    // show's last dispatches: rank 0's two, newest first, none of rank 1.
    auto show = s.cli({"show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    size_t newer = show.out.find("r0_new"), older = show.out.find("r0_old");
    ASSERT_NE(newer, std::string::npos) << show.out;
    ASSERT_NE(older, std::string::npos) << show.out;
    EXPECT_LT(newer, older);
    EXPECT_EQ(show.out.find("r1_"), std::string::npos) << show.out;
}

// after.log: probe A before the fault, LATER (holding the address) after it.
const char* const kAfter =
    "[probe] name=A ptr=0x7f0000000000 end=0x7f0000100000\n"
    "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7f0000200000. Reason: "
    "Page not present or supervisor privilege.\n"
    "[probe] name=LATER ptr=0x7f00001ff000 end=0x7f0000201000\n";

TEST(RankContext, OperandLoggedAfterTheFaultDoesNotWin) {
    Ingested s(kAfter);
    auto faults = s.jsonLines({"faults", "--json"});
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0]["nearest_operand"], "A");
    EXPECT_EQ(faults[0]["nearest_distance"], 0x100000);
    EXPECT_EQ(faults[0]["nearest_after_fault"], false);
    // report lists both, the one logged before first; LATER marked.
    auto rep = s.jsonLines({"report", "1", "--format", "json"});
    ASSERT_EQ(rep.size(), 1u);
    ASSERT_EQ(rep[0]["operands"].size(), 2u);
    EXPECT_EQ(rep[0]["operands"][0]["name"], "A");
    EXPECT_EQ(rep[0]["operands"][0]["logged_after_fault"], false);
    EXPECT_EQ(rep[0]["operands"][1]["name"], "LATER");
    EXPECT_EQ(rep[0]["operands"][1]["logged_after_fault"], true);
    EXPECT_EQ(rep[0]["operands"][1]["inside"], true);
    auto md = s.cli({"report", "1"});
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_NE(md.out.find("| LATER (logged after the fault) |"), std::string::npos) << md.out;
}

TEST(RankContext, OperandLoggedAfterIsShownOnlyWhenNoneCameBefore) {
    Ingested s(
        "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7f0000200000. "
        "Reason: Page not present or supervisor privilege.\n"
        "[probe] name=LATER ptr=0x7f00001ff000 end=0x7f0000201000\n");
    auto faults = s.jsonLines({"faults", "--json"});
    ASSERT_EQ(faults.size(), 1u);
    EXPECT_EQ(faults[0]["nearest_operand"], "LATER");
    EXPECT_EQ(faults[0]["nearest_inside"], true);
    EXPECT_EQ(faults[0]["nearest_after_fault"], true);
    auto text = s.cli({"faults"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("LATER (logged after the fault)"), std::string::npos) << text.out;
}

TEST(RankContext, OperandPastTheTopOfTheAddressSpaceIsAWarning) {
    Ingested s(
        "[probe] name=OVER ptr=0xfffffffffffff000 size=0x2000\n"
        "[probe] name=HUGE ptr=0x7f0000400000 size=18446744073709551000\n"
        "[probe] name=EDGE ptr=0xfffffffffffff000 size=0x1000\n"
        "[probe] name=FITS ptr=0xffffffffffffe000 size=0x1000\n"
        "[probe] name=SZ ptr=0x7f0000b00000 size=1.5GiB\n");
    EXPECT_EQ(s.query("SELECT name FROM operands ORDER BY line"), std::vector<std::string>{"FITS"});
    EXPECT_EQ(
        s.query("SELECT line, message FROM warnings ORDER BY line"),
        (std::vector<std::string>{
            "1\toperand OVER: ptr=0xfffffffffffff000 plus 8192 bytes passes the end of the 64-bit "
            "address space; line ignored",
            "2\toperand HUGE: ptr=0x7f0000400000 plus 18446744073709551000 bytes passes the end "
            "of the 64-bit address space; line ignored",
            "3\toperand EDGE: ptr=0xfffffffffffff000 plus 4096 bytes passes the end of the 64-bit "
            "address space; line ignored",
            "5\toperand SZ: size=1.5GiB is not a byte count (hex or decimal below 2^64); line "
            "ignored"}));
}

// docker compose's `svc-1  | ` names a container, not a distributed rank: its records stay apart
// from another service's (an identity kept in the store) but state no `rank` (EVIDENCE.md: "the
// distributed rank when the line carried a `[rankN]:` prefix"; acceptance audit 125: events
// printed rank 1750472183250). An inner `[rankN]:` is the rank.
TEST(RankContext, AComposeServiceIsNoRank) {
    const std::string fault =
        "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7f6459a00000. "
        "Reason: Page not present or supervisor privilege.";
    Ingested s("trainer-1    | " + fault + "\nevaluator-1  | [rank3]: " + fault + "\n" +
               "evaluator-1  | [probe] name=A ptr=0x7f6459a00000 end=0x7f6459c00000\n" +
               "trainer-1    | RuntimeError: HIP error: an illegal memory access was "
               "encountered\n");
    auto ev = s.jsonLines({"events", "--json"});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_TRUE(ev[0]["rank"].is_null()) << ev[0].dump();
    EXPECT_EQ(ev[1]["rank"], 3);
    auto ops = s.jsonLines({"operands", "--json"});
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_TRUE(ops[0]["rank"].is_null()) << ops[0].dump();
    auto show = s.cli({"show", "1"});
    EXPECT_EQ(show.out.find("rank 1"), std::string::npos) << show.out;  // nor in its links
    EXPECT_NE(show.out.find("same process prefix in one stream"), std::string::npos) << show.out;
    // the two services' records are still two incidents
    EXPECT_EQ(s.query("SELECT count(*) FROM incidents"), std::vector<std::string>{"2"});
}

}  // namespace
}  // namespace gpufault::testing
