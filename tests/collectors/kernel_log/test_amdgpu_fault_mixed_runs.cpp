// One file holding a `journalctl -r` excerpt and a forward excerpt of other faults (either
// first, either older), built from real fixture blocks in each prefix form (mixed_runs.h):
// every block is one complete record (amdgpu_fault.cpp learns the order again where a block
// starts against it). And journalctl's boot markers end the blocks and the order learned.
// Whole text pipeline (prefixes decoded as ingest decodes them).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "tests/collectors/kernel_log/amdgpu_pipeline.h"
#include "tests/collectors/kernel_log/mixed_runs.h"

namespace gpufault {
namespace {

using namespace testing;

// GPU c5 (fixture 077): two whole gmc_v11 blocks, CPF then CPC.
std::vector<std::string> blocksA() {
    return concat(fixtureMessages("077-gfx1151-faults-between-gp-traps-libamdhip64.txt", 1, 10),
                  fixtureMessages("077-gfx1151-faults-between-gp-traps-libamdhip64.txt", 17, 26));
}

// GPU 0e (fixture 009, SDMA0), then GPU 05 (fixture 004, TCP, no `amdgpu: ` tag).
std::vector<std::string> blocksB() {
    return concat(fixtureMessages("009-rdna4-sdma0-ring173.txt", 2, 11),
                  fixtureMessages("004-no-timestamp-cosmic-comp.txt", 1, 10));
}

struct Want {
    int64_t vmid, pasid, pid, tid;
    const char* client;
    const char* pci;
};

// The four records by address; `one_gpu`: B's blocks were moved to GPU c5.
void expectFour(const AmdgpuParsed& p, bool one_gpu) {
    const char* b1 = one_gpu ? "0000:c5:00.0" : "0000:0e:00.0";
    const char* b2 = one_gpu ? "0000:c5:00.0" : "0000:05:00.0";
    const std::map<uint64_t, Want> want{
        {0x00007f1b61269000, {8, 32770, 2231, 2231, "CPF", "0000:c5:00.0"}},
        {0x00007f5c29dd8000, {8, 32770, 6958, 6958, "CPC", "0000:c5:00.0"}},
        {0x00007febd6383000, {8, 32791, 15615, 15615, "SDMA0", b1}},
        {0x0000800107007000, {7, 98, 20242, 20273, "TCP", b2}},
    };
    ASSERT_EQ(p.faults.size(), 4u);
    EXPECT_TRUE(p.warnings.empty()) << p.warnings.front().message;
    for (const auto& f : p.faults) {
        ASSERT_TRUE(f.address);
        auto it = want.find(*f.address);
        ASSERT_NE(it, want.end()) << std::hex << *f.address;
        const Want& w = it->second;
        SCOPED_TRACE(std::to_string(*f.address));
        EXPECT_EQ(f.vmid, w.vmid);
        EXPECT_EQ(f.pasid, w.pasid);
        EXPECT_EQ(f.pid, w.pid);
        EXPECT_EQ(f.tid, w.tid);
        EXPECT_EQ(f.client, w.client);
        EXPECT_EQ(f.pci, w.pci);
    }
}

// Newest first, then oldest first (journalctl -r pasted before journalctl), in every form, the
// forward excerpt older or newer, on two GPUs and with every block on one GPU.
TEST(AmdgpuFaultMixedRuns, NewestFirstThenOldestFirstGivesEachBlockOnce) {
    for (Form f : kForms) {
        for (bool later : {true, false}) {
            for (bool one_gpu : {false, true}) {
                SCOPED_TRACE(std::string(formName(f)) + (later ? " later" : " earlier") +
                             (one_gpu ? " one GPU" : " two GPUs"));
                auto b = one_gpu ? replaced(replaced(blocksB(), "0000:0e:00.0", "0000:c5:00.0"),
                                            "0000:05:00.0",
                                            "0000:c5:00.0")
                                 : blocksB();
                auto rev = newestFirst(stamped(f, 40000000000, 3, blocksA()));
                auto fwd = stamped(f, later ? 50000000000 : 30000000000, 3, b);
                expectFour(parseAmdgpu(concat(rev, fwd)), one_gpu);
            }
        }
    }
}

// Oldest first, then newest first (journalctl pasted before journalctl -r).
TEST(AmdgpuFaultMixedRuns, OldestFirstThenNewestFirstGivesEachBlockOnce) {
    for (Form f : kForms) {
        for (bool later : {true, false}) {
            for (bool one_gpu : {false, true}) {
                SCOPED_TRACE(std::string(formName(f)) + (later ? " later" : " earlier") +
                             (one_gpu ? " one GPU" : " two GPUs"));
                auto b = one_gpu ? replaced(replaced(blocksB(), "0000:0e:00.0", "0000:c5:00.0"),
                                            "0000:05:00.0",
                                            "0000:c5:00.0")
                                 : blocksB();
                auto fwd = stamped(f, 40000000000, 3, b);
                auto rev = newestFirst(stamped(f, later ? 50000000000 : 30000000000, 3, blocksA()));
                expectFour(parseAmdgpu(concat(fwd, rev)), one_gpu);
            }
        }
    }
}

// A block cut by the end of one boot's excerpt does not take the next boot's lines: the
// `-- Boot ID --` marker ends it (a cut record and its warning), and the next boot's block is
// one of its own.
TEST(AmdgpuFaultMixedRuns, BootMarkerEndsTheOpenBlock) {
    const auto name = "077-gfx1151-faults-between-gp-traps-libamdhip64.txt";
    for (const char* marker : {"-- Boot 6bd9b0a8e3f94d1c8e0a2b3c4d5e6f70 --", "-- Reboot --"}) {
        for (Form f : kForms) {
            SCOPED_TRACE(std::string(formName(f)) + " " + marker);
            auto lines =
                concat(stamped(f, 40000000000, 3, fixtureMessages(name, 1, 2)),
                       concat({marker}, stamped(f, 5000000, 3, fixtureMessages(name, 19, 26))));
            auto p = parseAmdgpu(lines);
            ASSERT_EQ(p.faults.size(), 2u);
            EXPECT_EQ(p.faults[0].line, 1u);
            EXPECT_EQ(p.faults[0].pid, 2231);
            EXPECT_FALSE(p.faults[0].address);
            EXPECT_EQ(p.faults[1].line, 4u);
            EXPECT_EQ(p.faults[1].address, 0x00007f5c29dd8000u);
            EXPECT_EQ(p.faults[1].client, "CPC");
            EXPECT_FALSE(p.faults[1].pid);     // the task line was the other boot's
            EXPECT_EQ(p.warnings.size(), 2u);  // one cut block each
        }
    }
}

// After a boot marker the order is learned again: a newest-first excerpt of one boot, then
// header and address lines (which show no order with stamps to the second) of the next boot,
// read forward: each header takes the address after it, not the one before.
TEST(AmdgpuFaultMixedRuns, BootMarkerForgetsTheLearnedOrder) {
    const auto name = "095-gfx1201-dmesg-H-cjk-month-gmc-v12-write-faults.txt";
    auto thin = concat(fixtureMessages(name, 11, 11), fixtureMessages(name, 13, 14));
    thin = concat(thin, fixtureMessages(name, 16, 16));
    for (Form f : kForms) {
        SCOPED_TRACE(formName(f));
        auto lines = concat(
            newestFirst(stamped(f, 40000000000, 3, blocksA())),
            concat({"-- Boot 6bd9b0a8e3f94d1c8e0a2b3c4d5e6f70 --"}, stamped(f, 5000000, 3, thin)));
        auto p = parseAmdgpu(lines);
        ASSERT_EQ(p.faults.size(), 4u);
        EXPECT_TRUE(p.warnings.empty());
        EXPECT_EQ(p.faults[2].line, 22u);
        EXPECT_EQ(p.faults[2].pasid, 32781);
        EXPECT_EQ(p.faults[2].address, 0x00007963a2a21000u);
        EXPECT_EQ(p.faults[3].line, 24u);
        EXPECT_EQ(p.faults[3].address, 0x00007963a6433000u);
    }
}

}  // namespace
}  // namespace gpufault
