// Dispatch context across streams (EVIDENCE.md) through the built binary: with
// AMD_LOG_LEVEL_FILE the HIP log of pid 4242 goes to `hiplog_4242` while ROCr's fault line goes
// to the job's stderr, which states no pid and logged no dispatch. The fault takes its last
// dispatches and operands from the one stream and process whose ArgN operand places its address
// (docs/correlation.md, "Dispatch context across streams"); two processes placing it leave it
// without a context, saying so. The lines are the producers' formats (HIP AMD_LOG_LEVEL 3
// `ArgN: … = ptr:0x… obj:[lo-hi]` and `ShaderName : …` of rocvirtual.cpp; ROCr's
// `Memory access fault by GPU node-%u (Agent handle: %p) on address %p. Reason: %s`).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kBin = GPUFAULT_BIN;

/// AMD_LOG_LEVEL=3 lines of `pid`: thread 1 launches k1 (buffer A), then k2 (buffers B, C);
/// thread 2 launches k3 (buffer D). Buffers at `base` + 0, 0x200000, 0x400000, 0x10000000.
std::string hipLog(int pid, uint64_t base) {
    auto line = [&](int tid, int us, const std::string& text) {
        return fmt::format(
            ":3:rocvirtual.cpp           :723 : {:010d} us: [pid:{:<5d} tid:0x7f0a0000000{}] {}\n",
            us,
            pid,
            tid,
            text);
    };
    auto arg = [](int n, const char* name, uint64_t lo, uint64_t size) {
        return fmt::format(
            "Arg{}: float* {} = ptr:{:#x} obj:[{:#x}-{:#x}]", n, name, lo, lo, lo + size);
    };
    std::string s;
    s += line(1, 100, arg(0, "a", base, 0x100000));
    s += line(1, 105, "ShaderName : _Z2k1Pf");
    s += line(1, 110, arg(0, "b", base + 0x200000, 0x1000));
    s += line(1, 115, arg(1, "c", base + 0x400000, 0x200000));
    s += line(1, 120, "ShaderName : _Z2k2PfS_");
    s += line(2, 125, arg(0, "d", base + 0x10000000, 0x1000));
    s += line(2, 130, "ShaderName : _Z2k3Pf");
    return s;
}

std::string rocrLine(uint64_t address) {
    return fmt::format(
        "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a990) on address {:#x}. "
        "Reason: Page not present or supervisor privilege.\n",
        address);
}

/// A store with each (name, text) written to a temporary directory and ingested, one ingest
/// per file in the order given.
class Store {
  public:
    explicit Store(const std::vector<std::pair<std::string, std::string>>& files) {
        for (const auto& [name, text] : files) {
            writeFile(dir_.file(name), text);
            auto r = run({kBin, "--db", db(), "ingest", "-q", dir_.file(name)});
            EXPECT_EQ(r.status, 0) << r.err;
        }
    }
    std::string db() const { return dir_.file("s.db"); }
    ProcessResult cli(std::vector<std::string> args) const {
        args.insert(args.begin(), {kBin, "--db", db()});
        return run(args);
    }
    nlohmann::json json(std::vector<std::string> args) const {
        auto r = cli(std::move(args));
        EXPECT_EQ(r.status, 0) << r.err;
        return nlohmann::json::parse(r.out.substr(0, r.out.find('\n')), nullptr, false);
    }

  private:
    TempDir dir_;
};

constexpr uint64_t kBase = 0x7ef978800000;

TEST(DispatchContext, AFaultOnStderrFindsTheDispatchesOfTheHipLogFile) {
    // The fault lies 0x100 into buffer c (k2's Arg1 on thread 1).
    for (bool faultFirst : {false, true}) {
        std::vector<std::pair<std::string, std::string>> files{
            {"hiplog_4242", hipLog(4242, kBase)}, {"job.err", rocrLine(kBase + 0x400100)}};
        if (faultFirst) std::swap(files[0], files[1]);
        Store s(files);
        auto show = s.cli({"show", "1"});
        ASSERT_EQ(show.status, 0) << show.err;
        EXPECT_NE(show.out.find("context    dispatches and operands of pid 4242 in "),
                  std::string::npos)
            << show.out;
        EXPECT_NE(
            show.out.find(fmt::format("its operand c (arg1 of k2) [{:#018x}, {:#018x}) at line 5 "
                                      "holds the "
                                      "fault address",
                                      kBase + 0x400000,
                                      kBase + 0x600000)),
            std::string::npos)
            << show.out;
        // The last kernel is thread 2's k3 (the newest dispatch of the process); thread 1's k2
        // and k1 are listed too, from the HIP log's lines.
        EXPECT_NE(show.out.find("last ShaderName  k3(float*)"), std::string::npos) << show.out;
        auto list = show.out.find("Last dispatches (newest first)");
        ASSERT_NE(list, std::string::npos) << show.out;
        EXPECT_NE(show.out.find("hiplog_4242:7\t4242\t0x7f0a00000002\t130\tk3", list),
                  std::string::npos)
            << show.out;
        EXPECT_NE(show.out.find("hiplog_4242:5\t4242\t0x7f0a00000001\t120\tk2", list),
                  std::string::npos)
            << show.out;
        EXPECT_NE(show.out.find("hiplog_4242:2\t4242\t0x7f0a00000001\t105\tk1", list),
                  std::string::npos)
            << show.out;
        // The operand table measures the HIP log's buffers: c holds it, 0x100 from its ptr.
        auto report = s.json({"report", "1", "--format", "json"});
        ASSERT_TRUE(report.is_object());
        EXPECT_EQ(report["dispatch_context"]["pid"], 4242);
        EXPECT_EQ(report["dispatch_context"]["operand"], "c (arg1 of k2)");
        EXPECT_EQ(report["dispatch_context"]["operand_line"], 5);
        EXPECT_EQ(report["dispatch_context"]["inside"], true);
        EXPECT_EQ(report["kernel"], "_Z2k3Pf");
        ASSERT_GE(report["operands"].size(), 4u) << report.dump();
        EXPECT_EQ(report["operands"][0]["name"], "c (arg1 of k2)");
        EXPECT_EQ(report["operands"][0]["distance"], 0);
        EXPECT_EQ(report["operands"][0]["from_ptr"], 0x100);
        EXPECT_EQ(report["operands"][1]["name"], "b (arg0 of k2)");
        EXPECT_EQ(report["operands"][1]["distance"], 0x400100 - 0x201000);
        // `faults` answers the same from the same context.
        auto fault = s.json({"faults", "--json"});
        EXPECT_EQ(fault["nearest_operand"], "c (arg1 of k2)") << fault.dump();
        EXPECT_EQ(fault["nearest_distance"], 0);
        EXPECT_EQ(fault["last_kernel"], "_Z2k3Pf");
    }
}

TEST(DispatchContext, TwoProcessesPlacingTheAddressLeaveItWithoutContext) {
    // Two ranks with the same allocator layout: both HIP logs hold a buffer at the address.
    Store s({{"hiplog_100", hipLog(100, kBase)},
             {"hiplog_200", hipLog(200, kBase)},
             {"job.err", rocrLine(kBase + 0x400100)}});
    auto show = s.cli({"show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("context    none chosen: operands of pid 100 in "), std::string::npos)
        << show.out;
    EXPECT_NE(show.out.find("hiplog_200 place the fault address"), std::string::npos) << show.out;
    EXPECT_EQ(show.out.find("Last dispatches"), std::string::npos) << show.out;
    EXPECT_EQ(show.out.find("last ShaderName"), std::string::npos) << show.out;
    auto fault = s.json({"faults", "--json"});
    EXPECT_TRUE(fault["last_kernel"].is_null()) << fault.dump();
    EXPECT_TRUE(fault["nearest_operand"].is_null()) << fault.dump();
}

TEST(DispatchContext, ASpanHoldingTheAddressOutranksARegionNeighbour) {
    // pid 100's buffer c holds the address; pid 200's layout is 3 MiB higher, so that only its
    // buffer b [base + 5 MiB, + 4 KiB) meets the address's 2 MiB region [base + 4 MiB, + 6 MiB).
    Store s({{"hiplog_100", hipLog(100, kBase)},
             {"hiplog_200", hipLog(200, kBase + 0x300000)},
             {"job.err", rocrLine(kBase + 0x400100)}});
    auto report = s.json({"report", "1", "--format", "json"});
    ASSERT_TRUE(report.is_object());
    EXPECT_EQ(report["dispatch_context"]["pid"], 100) << report.dump();
    EXPECT_EQ(report["dispatch_context"]["inside"], true);
}

TEST(DispatchContext, AnAddressOnlyInABuffersRegionNamesThatAndANullAddressNone) {
    // 0x1000 past buffer b's end, in its 2 MiB region and no buffer's span.
    Store s({{"hiplog_4242", hipLog(4242, kBase)}, {"job.err", rocrLine(kBase + 0x202000)}});
    auto show = s.cli({"show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find(
                  "its operand b (arg0 of k2) [0x00007ef978a00000, 0x00007ef978a01000) at line 5 "
                  "meets "
                  "the 2 MiB region of the fault address"),
              std::string::npos)
        << show.out;
    // A NULL-near fault (first 2 MiB) is every process's: no context.
    Store n({{"hiplog_4242", hipLog(4242, 0x1000)}, {"job.err", rocrLine(0x1100)}});
    auto nshow = n.cli({"show", "1"});
    ASSERT_EQ(nshow.status, 0) << nshow.err;
    EXPECT_EQ(nshow.out.find("context "), std::string::npos) << nshow.out;
    EXPECT_EQ(nshow.out.find("Last dispatches"), std::string::npos) << nshow.out;
}

TEST(DispatchContext, RanksAndRunsOfAStreamWithoutPidsAreProcessesOfTheirOwn) {
    // torchrun's merged output states ranks, no pids: rank 0's and rank 1's probe lines both
    // hold the address, so the fault of the kernel log's stream has no context.
    const std::string probe =
        fmt::format("[probe] name=W ptr={:#x} end={:#x}\n", kBase, kBase + 0x1000);
    Store ranks({{"torchrun.log", "[rank0]: " + probe + "[rank1]: " + probe},
                 {"job.err", rocrLine(kBase + 0x10)}});
    auto show = ranks.cli({"show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("context    none chosen: "), std::string::npos) << show.out;
    // One stream holding two runs (a ROCr fault ends the first): the second run's probe alone
    // places the address, and the context is that run (the first's buffer is elsewhere).
    const std::string far = fmt::format(
        "[probe] name=OLD ptr={:#x} end={:#x}\n", kBase + 0x40000000, kBase + 0x40001000);
    Store runs({{"runs.log", far + rocrLine(0x7f0000000000) + probe},
                {"job.err", rocrLine(kBase + 0x10)}});
    auto report = runs.json({"report", "1", "--format", "json"});  // job.err sorts first
    ASSERT_TRUE(report.is_object());
    EXPECT_EQ(report["address"], fmt::format("{:#x}", kBase + 0x10)) << report.dump();
    EXPECT_EQ(report["dispatch_context"]["operand"], "W") << report.dump();
    EXPECT_EQ(report["dispatch_context"]["operand_line"], 3);
    ASSERT_EQ(report["operands"].size(), 1u) << report.dump();  // not the first run's OLD
    EXPECT_EQ(report["operands"][0]["from_ptr"], 0x10);
}

TEST(DispatchContext, FaultsMeasuresOnlyTheContextsRank) {
    // Rank 0's buffer lies in the fault's 2 MiB region (1 MiB above the address); rank 1's ends
    // 16 bytes below the address, just outside the region: the context is rank 0's, and the
    // nearest operand `faults` and `report` give is R0, not rank 1's nearer R1.
    const uint64_t region = kBase + 0x200000;
    Store s({{"torchrun.log",
              fmt::format("[rank0]: [probe] name=R0 ptr={:#x} end={:#x}\n"
                          "[rank1]: [probe] name=R1 ptr={:#x} end={:#x}\n",
                          region + 0x100000,
                          region + 0x101000,
                          region - 0x1000,
                          region)},
             {"job.err", rocrLine(region + 0x10)}});
    auto report = s.json({"report", "1", "--format", "json"});
    ASSERT_TRUE(report.is_object());
    EXPECT_EQ(report["dispatch_context"]["operand"], "R0") << report.dump();
    ASSERT_EQ(report["operands"].size(), 1u) << report.dump();
    EXPECT_EQ(report["operands"][0]["name"], "R0");
    auto fault = s.json({"faults", "--json"});
    EXPECT_EQ(fault["nearest_operand"], "R0") << fault.dump();
    EXPECT_EQ(fault["nearest_distance"], -0xffff0);
}

/// A store with the files of tests/data/context_stream/`name` ingested in one call, in the
/// order given (hostile review 28's repros).
class Case {
  public:
    Case(const std::string& name, const std::vector<std::string>& files) {
        const std::string data =
            std::string(GPUFAULT_SOURCE_DIR "/tests/data/context_stream/") + name + "/";
        std::vector<std::string> argv{kBin, "--db", dir_.file("s.db"), "ingest", "-q"};
        for (const auto& f : files) argv.push_back(data + f);
        auto r = run(argv);
        EXPECT_EQ(r.status, 0) << r.err;
    }
    ProcessResult cli(std::vector<std::string> args) const {
        args.insert(args.begin(), {kBin, "--db", dir_.file("s.db")});
        return run(args);
    }
    /// `faults --json` rows by their record's line.
    std::map<int64_t, nlohmann::json> faults() const {
        auto r = cli({"faults", "--json"});
        EXPECT_EQ(r.status, 0) << r.err;
        std::map<int64_t, nlohmann::json> out;
        std::istringstream lines(r.out);
        for (std::string l; std::getline(lines, l);)
            if (auto j = nlohmann::json::parse(l); j.is_object()) out[j["line"].get<int64_t>()] = j;
        return out;
    }

  private:
    TempDir dir_;
};

TEST(DispatchContext, AFaultAfterAnEarlierRunsEndDoesNotTakeThatRunsKernel) {
    // job.log: run 1 dispatched `first` and died at line 3; run 2's fault (line 5) has its
    // dispatches in hiplog_777. `faults` agrees with `show`.
    Case c("run_bounds", {"job.log", "hiplog_777"});
    auto f = c.faults();
    ASSERT_TRUE(f.count(5));
    EXPECT_EQ(f[5]["last_kernel"], "_Z6secondPf") << f[5].dump();
    EXPECT_EQ(f[5]["nearest_operand"], "q (arg0 of second)") << f[5].dump();
    EXPECT_EQ(f[3]["last_kernel"], "_Z5firstPf") << f[3].dump();
}

TEST(DispatchContext, AnAmbiguousExactAddressIsNotSettledByAJoinedPage) {
    // The ROCr byte is held by buffers of pid 100 and pid 200; the kernel's page (joined by
    // region) only by pid 100's: no context.
    Case c("primary_ambiguous", {"hiplog_100", "hiplog_200", "job.err", "kern.log"});
    auto show = c.cli({"show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("context    none chosen: operands of pid 100 in "), std::string::npos)
        << show.out;
    EXPECT_EQ(show.out.find("last ShaderName"), std::string::npos) << show.out;
}

TEST(DispatchContext, AProgramsProbeAndHipLinesOfOneStreamAreOneProcess) {
    Case c("same_stream_pid_and_pidless", {"job.log", "kern.log"});
    auto show = c.cli({"show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("context    dispatches and operands of pid 4242 in "),
              std::string::npos)
        << show.out;
}

TEST(DispatchContext, FaultsTakesTheNearerOfItsOwnAndTheContextsOperand) {
    // job.err's own probe x is 4 KiB away; the context's c holds the address.
    Case c("own_probe", {"hiplog_4242", "job.err"});
    auto f = c.faults();
    ASSERT_TRUE(f.count(2));
    EXPECT_EQ(f[2]["nearest_operand"], "c (arg1 of k2)") << f[2].dump();
    EXPECT_EQ(f[2]["nearest_inside"], true);
}

TEST(DispatchContext, ASpanOverTheWholeAddressSpacePlacesNothing) {
    // other.log's `ptr=0x0 end=0xffffffffffffffff` would otherwise make every fault ambiguous.
    Case c("giant_span", {"hiplog_4242", "other.log", "job.err"});
    auto show = c.cli({"show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("context    dispatches and operands of pid 4242 in "),
              std::string::npos)
        << show.out;
}

}  // namespace
}  // namespace gpufault::testing
