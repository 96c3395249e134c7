// Tests of where amdgpu page-fault blocks begin and end (amdgpu_fault.cpp): newest-first
// (journalctl -r) input with and without stamps, grep-filtered blocks, forward blocks, gaps of
// unrelated lines, the cap on blocks in progress and on raw text, the rank.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "collectors/kernel_log/amdgpu_fault.h"
#include "tests/collectors/kernel_log/amdgpu_fault_feed.h"

namespace gpufault {
namespace {

using testing::D;
using testing::run;
using testing::runStamped;

// journalctl -r: newest first. Blocks appear bottom-up; `line` is still the header's.
TEST(AmdgpuFault, NewestFirstBlocksAreOneRecordEach) {
    const std::string j = "Sep 09 02:30:28 host kernel: amdgpu 0000:65:00.0: amdgpu: ";
    auto r = run({
        j + "        RW: 0x1",
        j + "        MAPPING_ERROR: 0x0",
        j + "        Faulty UTCL2 client ID: TCP (0x8)",
        j + "GCVM_L2_PROTECTION_FAULT_STATUS:0x00841051",
        j + "  in page starting at address 0x0000796073ed4000 from client 10",
        j + " Process python3 pid 5748 thread python3 pid 5749",
        j + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:32781)",
        "Sep 09 02:30:28 host kernel: gmc_v12_0_process_interrupt: 7 callbacks suppressed",
        j + "  in page starting at address 0x0000796073ed3000 from client 10",
        j + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:32781)",
    });
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].line, 7u);
    EXPECT_EQ(r[0].address, 0x796073ed4000ull);
    EXPECT_EQ(r[0].tid, 5749);
    EXPECT_EQ(r[0].client, "TCP");
    EXPECT_EQ(r[0].access, "write");
    EXPECT_EQ(r[0].attr("callbacks_suppressed"), "7");
    EXPECT_EQ(r[1].line, 10u);
    EXPECT_EQ(r[1].address, 0x796073ed3000ull);
}

TEST(AmdgpuFault, NewestFirstShortBlockIsRecognisedByItsStamps) {
    // Fixture 014's block reversed: address line, then header; only the stamps tell the order.
    const std::string d = "amdgpu 0000:0b:00.0: amdgpu: ";
    auto r = runStamped({
        {d + "  in page starting at address 0x00007f5279bab000 from client 0x1b (UTCL2)",
         629.844087},
        {d + "[gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32770, for process python pid "
             "1796 thread python pid 1796)",
         629.844077},
    });
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].line, 2u);
    EXPECT_EQ(r[0].address, 0x7f5279bab000ull);
    EXPECT_EQ(r[0].pid, 1796);
    ASSERT_TRUE(r[0].time.kernel_s);
    EXPECT_DOUBLE_EQ(*r[0].time.kernel_s, 629.844077);
}

TEST(AmdgpuFault, NewestFirstStartingWithACutHeaderWithoutStamps) {
    // Fixture 011 reversed: its last (cut) header comes first, then a whole block bottom-up.
    const std::string d = "amdgpu 0000:2b:00.0: amdgpu: ";
    auto r = run({d + "[gfxhub] page fault (src_id:0 ring:24 vmid:7 pa",
                  d + "\t RW: 0x0",
                  d + "\t MAPPING_ERROR: 0x0",
                  d + "\t Faulty UTCL2 client ID: CB/DB (0x0)",
                  d + "GCVM_L2_PROTECTION_FAULT_STATUS:0x00000000",
                  d + "  in page starting at address 0x0000800505606000 from client 0x1b (UTCL2)",
                  d + "[gfxhub] page fault (src_id:0 ring:24 vmid:7 pasid:32771, for process "
                      "wezterm-gui pid 5044 thread wezterm-gu:cs0 pid 5072)"});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_FALSE(r[0].access);
    EXPECT_EQ(r[1].line, 7u);
    EXPECT_EQ(r[1].client, "CB/DB");
    EXPECT_EQ(r[1].access, "read");
    EXPECT_EQ(r[1].address, 0x800505606000ull);
    EXPECT_EQ(r[1].pid, 5044);
}

TEST(AmdgpuFault, GrepFilteredForwardBlockWithMissingLinesIsOneRecord) {
    // `dmesg | grep -i fault` keeps the header, the status and the *_FAULTS lines.
    auto r = run({D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32769)",
                  D + "VM_L2_PROTECTION_FAULT_STATUS:0x00301031",
                  D + "\t MORE_FAULTS: 0x1",
                  D + "\t PERMISSION_FAULTS: 0x3",
                  D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32770)",
                  D + "VM_L2_PROTECTION_FAULT_STATUS:0x00301031"});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].status, 0x00301031);
    EXPECT_EQ(r[0].attr("permission_faults"), "0x3");
    EXPECT_EQ(r[1].pasid, 32770);
    EXPECT_EQ(r[1].status, 0x00301031);
}

TEST(AmdgpuFault, ForwardBlockWithoutStampsStaysForward) {
    // Two status-less blocks (address after header): a new header starts a new record.
    auto r = run({D + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:1)",
                  D + "  in page starting at address 0x0000000000001000 from client 10",
                  D + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:2)",
                  D + "  in page starting at address 0x0000000000002000 from client 10"});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].pasid, 1);
    EXPECT_EQ(r[0].address, 0x1000u);
    EXPECT_EQ(r[1].pasid, 2);
    EXPECT_EQ(r[1].address, 0x2000u);
}

TEST(AmdgpuFault, BlockEndsAfterManyUnrelatedLines) {
    std::vector<std::string> lines{D + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:1)"};
    for (int i = 0; i < 100; ++i) lines.push_back("unrelated program output " + std::to_string(i));
    lines.push_back(D + "  in page starting at address 0x0000000000001000 from client 10");
    auto r = run(lines);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_FALSE(r[0].address);
    EXPECT_EQ(r[1].address, 0x1000u);
    EXPECT_EQ(r[1].line, 102u);
}

TEST(AmdgpuFault, AtMostSixteenBlocksInProgress) {
    // A headerless block first: its rising stages make the input oldest first, so the matcher
    // does not hold the headers while it waits to learn the order.
    std::vector<std::string> lines{
        "amdgpu 0000:01:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00301031",
        "amdgpu 0000:01:00.0: amdgpu: \t Faulty UTCL2 client ID: TCP (0x8)"};
    for (int i = 0; i < 20; ++i) {
        char pci[32];
        std::snprintf(pci, sizeof pci, "0000:%02x:00.0", i + 1);
        lines.push_back(std::string("amdgpu ") + pci +
                        ": amdgpu: [gfxhub] page fault (src_id:0 "
                        "ring:0 vmid:1 pasid:" +
                        std::to_string(i) + ")");
    }
    auto m = makeAmdgpuFaultMatcher();
    CollectSink sink;
    uint64_t n = 0;
    for (auto& l : lines) {
        LogLine ll;
        ll.line = ++n;
        ll.raw = l;
        ll.text = l;
        m->feed(ll, sink);
    }
    // The headerless block ended at its device's header; the 4 oldest headers were closed to
    // make room.
    EXPECT_EQ(sink.evidences.size(), 5u);
    m->finish(sink);
    EXPECT_EQ(sink.evidences.size(), 21u);
}

TEST(AmdgpuFault, RawIsCappedAt4KiB) {
    std::vector<std::string> lines{D +
                                   "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:1, for "
                                   "process " +
                                   std::string(5000, 'x') + " pid 1 thread y pid 2)"};
    auto r = run(lines);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].raw.size(), 4096u);
    EXPECT_EQ(r[0].tid, 2);
}

TEST(AmdgpuFault, RankIsCopied) {
    auto m = makeAmdgpuFaultMatcher();
    CollectSink sink;
    std::string l = D + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:1)";
    LogLine ll;
    ll.line = 5;
    ll.raw = l;
    ll.text = l;
    ll.rank = 3;
    m->feed(ll, sink);
    m->finish(sink);
    ASSERT_EQ(sink.evidences.size(), 1u);
    EXPECT_EQ(sink.evidences[0].rank, 3);
    EXPECT_EQ(sink.evidences[0].line, 5u);
}

}  // namespace
}  // namespace gpufault
