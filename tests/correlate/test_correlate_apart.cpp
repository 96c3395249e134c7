// Records that must stay apart (docs/correlation.md "Contradictions" and "Regions"): ranks of
// one torchrun log, two faults of one stream, chains across 2 MiB regions. Real-shaped lines
// (tests/data/correlate/, copied from the fixtures' formats) through the built binary into a real
// store, each set of files ingested in two orders; plus the pure rules on constructed records.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "correlate/correlate.h"
#include "tests/correlate/incidents_cli.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using testing::Incidents;
using testing::incidentsOf;
using testing::ingestBothOrders;
using testing::kCorrelateData;
const std::string& kData = kCorrelateData;

using Groups = std::set<std::set<std::string>>;

TEST(CorrelateApart, RanksOfOneTorchrunLogNeverJoin) {
    // Two ranks' ROCr faults and their NCCL watchdog errors interleaved, no pid; the kernel's
    // page fault of rank 0's process in another file.
    auto inc = ingestBothOrders({"torchrun-ranks.log", "torchrun-dmesg.log"});
    EXPECT_EQ(inc.groups,
              (Groups{{"torchrun-dmesg.log:1", "torchrun-ranks.log:1", "torchrun-ranks.log:3"},
                      {"torchrun-ranks.log:2", "torchrun-ranks.log:4"}}));
    EXPECT_EQ(inc.link["torchrun-ranks.log:3"], "same rank 0 in one stream, 2 lines apart");
    EXPECT_EQ(inc.link["torchrun-ranks.log:4"], "same rank 1 in one stream, 2 lines apart");
    EXPECT_EQ(inc.link["torchrun-ranks.log:1"], "same 2 MiB region 0x7f6459a00000");
    EXPECT_EQ(inc.link["torchrun-ranks.log:2"], "first");
}

TEST(CorrelateApart, TwoRocrFaultsOfOneLogAreTwoIncidentsWithTheirOwnKernels) {
    // Two runs appended to one AMD_LOG_LEVEL=3 log: ROCr's lines state no pid.
    testing::TempDir t;
    std::string db = t.file("db");
    auto in = testing::run(
        {GPUFAULT_BIN, "--db", db, "ingest", testing::kCorrelateData + "two-runs-amdlog.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto inc = incidentsOf(db);
    EXPECT_EQ(inc.groups, (Groups{{"two-runs-amdlog.log:5"}, {"two-runs-amdlog.log:11"}}));
    // Each incident's last dispatch is its own run's, never the later run's.
    std::map<int64_t, std::string> kernelOfLine;
    for (int id = 1; id <= 2; ++id) {
        auto r = testing::run(
            {GPUFAULT_BIN, "--db", db, "report", std::to_string(id), "--format", "json"});
        ASSERT_EQ(r.status, 0) << r.err;
        auto j = nlohmann::json::parse(r.out);
        ASSERT_EQ(j["evidence"].size(), 1u);
        kernelOfLine[j["evidence"][0]["line"].get<int64_t>()] = j["kernel"].get<std::string>();
    }
    EXPECT_NE(kernelOfLine[5].find("FillFunctor"), std::string::npos) << kernelOfLine[5];
    EXPECT_NE(kernelOfLine[11].find("MulFunctor"), std::string::npos) << kernelOfLine[11];
}

TEST(CorrelateApart, TwoXid31OfOneDeviceWithoutPidAreTwoFaults) {
    // 021: an Xid 31 at 0x0 (pasted alone, no time), one at 0x17_00592000, and 66 s later the
    // Xid 13/32 lines of one channel.
    auto inc = ingestBothOrders(
        {GPUFAULT_SOURCE_DIR "/tests/data/real/021-nvidia-xid31-old-format-plus-xid13-32.txt"});
    const std::string f = "021-nvidia-xid31-old-format-plus-xid13-32.txt:";
    EXPECT_EQ(inc.groups,
              (Groups{{f + "1"}, {f + "4"}, {f + "6", f + "7", f + "8", f + "9", f + "10"}}));
    EXPECT_EQ(inc.link[f + "7"], "same device 0000:01:00.0 in one stream");
}

TEST(CorrelateApart, ChainThroughADeviceLinkNeverAddsARegion) {
    // Two pid-less amdgpu faults of one GPU 29 µs apart in two regions; a ROCr fault in each
    // region, each in its own log. One incident per region, never all four.
    auto inc = ingestBothOrders({"chain-dmesg.log", "chain-rocr-x.log", "chain-rocr-y.log"});
    EXPECT_EQ(inc.groups,
              (Groups{{"chain-dmesg.log:1", "chain-rocr-x.log:1"},
                      {"chain-dmesg.log:4", "chain-rocr-y.log:1"}}));
    EXPECT_EQ(inc.link["chain-rocr-x.log:1"], "same 2 MiB region 0x7a5895200000");
    EXPECT_EQ(inc.link["chain-rocr-y.log:1"], "same 2 MiB region 0x7a58a1e00000");
}

TEST(CorrelateApart, OneProcessFaultingInTwoRegionsStaysOneIncident) {
    // The kernel reports each page a process's waves touched (095: pid 5748, three regions in
    // 30 µs); ROCr one of them. The host pid within 2 s proves one process.
    auto inc = ingestBothOrders({"storm-dmesg.log", "chain-rocr-x.log"});
    EXPECT_EQ(inc.groups,
              (Groups{{"storm-dmesg.log:1", "storm-dmesg.log:5", "chain-rocr-x.log:1"}}));
    EXPECT_EQ(inc.link["storm-dmesg.log:5"], "same pid 5748 within 0.000 s");
    // … but two ROCr faults (two processes: each aborts) never share it through that chain.
    auto two = ingestBothOrders({"storm-dmesg.log", "chain-rocr-x.log", "chain-rocr-y.log"});
    EXPECT_EQ(two.groups.size(), 2u);
    for (const auto& g : two.groups)
        EXPECT_FALSE(g.contains("chain-rocr-x.log:1") && g.contains("chain-rocr-y.log:1"));
}

// The pure rules on constructed records.

StoredEvidence rec(int64_t id, Kind k, uint64_t line) {
    StoredEvidence s;
    s.id = id;
    s.source_id = 1;
    s.source = "run.log";
    s.e.kind = k;
    s.e.line = line;
    return s;
}

std::set<std::set<int64_t>> groupsOf(const std::vector<IncidentRecord>& inc) {
    std::set<std::set<int64_t>> out;
    for (auto& i : inc) {
        std::set<int64_t> g;
        for (auto& m : i.members)
            if (m.role == "member") g.insert(m.evidence_id);
        out.insert(g);
    }
    return out;
}

TEST(CorrelateApart, RuntimeErrorJoinsTheFaultItFollows) {
    // fault A, its error, fault B (another region), its error: all within 50 lines, no pid.
    auto a = rec(1, Kind::RocrMemoryFault, 10);
    a.e.address = 0x7f6459a00000;
    auto ea = rec(2, Kind::RuntimeError, 12);
    ea.e.reason = "hipErrorIllegalAddress";
    auto b = rec(3, Kind::RocrMemoryFault, 30);
    b.e.address = 0x7e1111000000;
    auto eb = rec(4, Kind::RuntimeError, 32);
    eb.e.reason = "hipErrorIllegalAddress";
    EXPECT_EQ(groupsOf(correlate({a, ea, b, eb})), (std::set<std::set<int64_t>>{{1, 2}, {3, 4}}));
    // The same region: still two processes, the stream states no pid and ROCr aborted the first
    // after its line (processRuns()); each error joins the fault it follows.
    b.e.address = 0x7f6459a1f000;
    EXPECT_EQ(groupsOf(correlate({a, ea, b, eb})), (std::set<std::set<int64_t>>{{1, 2}, {3, 4}}));
    // The same with pids stated: one pid is one process, whatever it printed.
    for (auto* r : {&a, &ea, &b, &eb}) r->e.pid = 42;
    EXPECT_EQ(groupsOf(correlate({a, ea, b, eb})), (std::set<std::set<int64_t>>{{1, 2, 3, 4}}));
}

TEST(CorrelateApart, DifferentRanksContradictOneRankJoins) {
    auto a = rec(1, Kind::RuntimeError, 10);
    a.e.rank = 0;
    auto b = rec(2, Kind::RuntimeError, 11);
    b.e.rank = 1;
    EXPECT_EQ(correlate({a, b}).size(), 2u);
    b.e.rank = 0;
    auto inc = correlate({a, b});
    ASSERT_EQ(inc.size(), 1u);
    EXPECT_EQ(inc[0].members[1].link, "same rank 0 in one stream, 1 lines apart");
    // An alloc failure of rank 1 is never context of rank 0's fault.
    auto al = rec(3, Kind::AllocFailure, 9);
    al.e.rank = 1;
    b.e.rank = 1;
    std::optional<int64_t> holder;  // the first member of the incident that holds it
    for (const auto& i : correlate({a, b, al}))
        for (const auto& m : i.members)
            if (m.evidence_id == 3) holder = i.members.front().evidence_id;
    EXPECT_EQ(holder, 2);
}

TEST(CorrelateApart, AnAddressedXidWithAnotherRegionIsAnotherFaultEvenForOnePid) {
    auto a = rec(1, Kind::NvidiaXid, 1);
    a.e.xid = 31;
    a.e.pid = 524;
    a.e.pci = "0000:00:06.0";
    a.e.address = 0x7fd747e00000;
    a.e.time.kernel_s = 10.0;
    auto b = a;
    b.id = 2;
    b.e.line = 2;
    b.e.address = 0x0;
    b.e.time.kernel_s = 10.1;
    EXPECT_EQ(correlate({a, b}).size(), 2u);
    b.e.address = 0x7fd747e01000;
    EXPECT_EQ(correlate({a, b}).size(), 1u);
}

}  // namespace
}  // namespace gpufault
