// Newest-first input (`journalctl -r`, `tac`) of amdgpu page-fault blocks through the whole text
// pipeline (journald prefixes decoded): one record per real block with every field, at the start
// and the end of the input, two GPUs interleaved, runs cut by other lines, and the lines held
// while the order is not known yet (amdgpu_fault_order.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/kernel_log/amdgpu_fault.h"
#include "collectors/pipeline.h"
#include "tests/collectors/kernel_log/amdgpu_pipeline.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

using Parsed = testing::AmdgpuParsed;
Parsed parse(const std::vector<std::string>& lines) {
    return testing::parseAmdgpu(lines);
}

// journalctl -o short of a kernel record at 13:30:SS of GPU `bdf`, the gmc_v11 dev_printk form.
std::string j(int ss, const std::string& msg, const std::string& bdf = "0000:0d:00.0") {
    return "Nov 04 13:30:" + std::to_string(ss) + " host kernel: amdgpu " + bdf +
           ": amdgpu: " + msg;
}

// One gmc_v11 block (gmc_v11_0_process_interrupt, gfxhub_v3_0 print_l2_protection_fault_status,
// amdgpu_vm_print_task_info), newest line first, at second `ss`; `rw` the RW bit, `page` the
// address.
std::vector<std::string> reversedBlock(int ss,
                                       const std::string& page,
                                       int rw,
                                       const std::string& bdf = "0000:0d:00.0") {
    return {j(ss, "         RW: 0x" + std::to_string(rw), bdf),
            j(ss, "         MAPPING_ERROR: 0x0", bdf),
            j(ss, "         PERMISSION_FAULTS: 0x3", bdf),
            j(ss, "         WALKER_ERROR: 0x0", bdf),
            j(ss, "         MORE_FAULTS: 0x1", bdf),
            j(ss, "         Faulty UTCL2 client ID: TCP (0x8)", bdf),
            j(ss, "GCVM_L2_PROTECTION_FAULT_STATUS:0x00301031", bdf),
            j(ss, "  in page starting at address 0x0000" + page + " from client 10", bdf),
            j(ss, " in process cosmic-comp pid 4732 thread cosmic-com:cs0 pid 4753)", bdf),
            j(ss, "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32770)", bdf)};
}

std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

void expectWholeBlock(const Evidence& e, uint64_t address, const char* access) {
    EXPECT_EQ(e.pci, "0000:0d:00.0");
    EXPECT_EQ(e.pid, 4732);
    EXPECT_EQ(e.process, "cosmic-comp");
    EXPECT_EQ(e.thread, "cosmic-com:cs0");
    EXPECT_EQ(e.tid, 4753);
    EXPECT_EQ(e.address, address);
    EXPECT_EQ(e.client, "TCP");
    EXPECT_EQ(e.status, 0x00301031);
    EXPECT_EQ(e.access, access);
    EXPECT_EQ(e.hub, "gfxhub");
    EXPECT_EQ(e.pasid, 32770);
    EXPECT_EQ(e.attr("permission_faults"), "0x3");
}

// The hostile review's repro: grep-thinned blocks (no *_FAULTS lines), newest first. The leading
// RW and client lines made a record of their own before.
TEST(AmdgpuFaultReversed, ThinnedBlocksMakeNoPhantomRecord) {
    auto p = parse({j(19, "         RW: 0x1"),
                    j(19, "         Faulty UTCL2 client ID: TCP (0x8)"),
                    j(19, "GCVM_L2_PROTECTION_FAULT_STATUS:0x00301031"),
                    j(19, "  in page starting at address 0x00008001089f1000 from client 10"),
                    j(19, " in process cosmic-comp pid 4732 thread cosmic-com:cs0 pid 4753)"),
                    j(19, "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32770)"),
                    j(18, "         RW: 0x0"),
                    j(18, "         Faulty UTCL2 client ID: TCP (0x8)"),
                    j(18, "GCVM_L2_PROTECTION_FAULT_STATUS:0x00301031"),
                    j(18, "  in page starting at address 0x00008001089f0000 from client 10"),
                    j(18, " in process cosmic-comp pid 4732 thread cosmic-com:cs0 pid 4753)"),
                    j(18, "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32770)")});
    ASSERT_EQ(p.faults.size(), 2u);
    EXPECT_EQ(p.faults[0].line, 6u);
    EXPECT_EQ(p.faults[0].pid, 4732);
    EXPECT_EQ(p.faults[0].thread, "cosmic-com:cs0");
    EXPECT_EQ(p.faults[0].address, 0x8001089f1000u);
    EXPECT_EQ(p.faults[0].client, "TCP");
    EXPECT_EQ(p.faults[0].status, 0x00301031);
    EXPECT_EQ(p.faults[0].access, "write");
    EXPECT_EQ(p.faults[0].time.wall, "11-04T13:30:19");
    EXPECT_EQ(p.faults[1].line, 12u);
    EXPECT_EQ(p.faults[1].address, 0x8001089f0000u);
    EXPECT_EQ(p.faults[1].access, "read");
    EXPECT_EQ(p.faults[1].pid, 4732);
    EXPECT_TRUE(p.warnings.empty());
}

// Fixture 005 reversed: the input starts with the newest block cut to its process and header
// lines; the process line belonged to no record before.
TEST(AmdgpuFaultReversed, CutBlockAtTheStartKeepsItsProcessLine) {
    auto lines = cat({j(18, " in process cosmic-comp pid 4732 thread cosmic-com:cs0 pid 4753)"),
                      j(18, "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32770)")},
                     reversedBlock(18, "8001089f0000", 0));
    lines.push_back(j(18, "[drm] Check your /sys/class/drm/card1/device/devcoredump/data"));
    auto p = parse(lines);
    ASSERT_EQ(p.faults.size(), 2u);
    EXPECT_EQ(p.faults[0].line, 2u);
    EXPECT_EQ(p.faults[0].pid, 4732);
    EXPECT_EQ(p.faults[0].tid, 4753);
    EXPECT_EQ(p.faults[0].process, "cosmic-comp");
    EXPECT_FALSE(p.faults[0].address);
    EXPECT_FALSE(p.faults[0].access);
    EXPECT_EQ(p.faults[1].line, 12u);
    expectWholeBlock(p.faults[1], 0x8001089f0000u, "read");
}

// The oldest block's header was before the input began: at the end of newest-first input it is a
// headerless record with a warning, the whole block before it unchanged.
TEST(AmdgpuFaultReversed, HeaderlessBlockAtTheEnd) {
    auto head = reversedBlock(18, "8001089f0000", 0);
    auto p = parse(cat(reversedBlock(19, "8001089f1000", 1),
                       std::vector<std::string>(head.begin(), head.begin() + 7)));
    ASSERT_EQ(p.faults.size(), 2u);
    expectWholeBlock(p.faults[0], 0x8001089f1000u, "write");
    EXPECT_EQ(p.faults[0].line, 10u);
    EXPECT_EQ(p.faults[1].line, 11u);
    EXPECT_FALSE(p.faults[1].hub);
    EXPECT_FALSE(p.faults[1].address);
    EXPECT_FALSE(p.faults[1].pid);
    EXPECT_EQ(p.faults[1].status, 0x00301031);
    EXPECT_EQ(p.faults[1].access, "read");
    ASSERT_EQ(p.warnings.size(), 1u);
    EXPECT_NE(p.warnings[0].message.find("without its header"), std::string::npos);
}

// Two GPUs printing at once, newest first, their lines alternating.
TEST(AmdgpuFaultReversed, TwoGpusInterleaved) {
    auto a = reversedBlock(19, "7ef7cd5fd000", 1, "0000:06:00.0");
    auto b = reversedBlock(19, "7ef7cd600000", 0, "0000:a6:00.0");
    std::vector<std::string> lines;
    for (size_t i = 0; i < a.size(); ++i) {
        lines.push_back(a[i]);
        lines.push_back(b[i]);
    }
    auto p = parse(lines);
    ASSERT_EQ(p.faults.size(), 2u);
    EXPECT_EQ(p.faults[0].pci, "0000:06:00.0");
    EXPECT_EQ(p.faults[0].line, 19u);
    EXPECT_EQ(p.faults[0].address, 0x7ef7cd5fd000u);
    EXPECT_EQ(p.faults[0].access, "write");
    EXPECT_EQ(p.faults[0].pid, 4732);
    EXPECT_EQ(p.faults[0].client, "TCP");
    EXPECT_EQ(p.faults[1].pci, "0000:a6:00.0");
    EXPECT_EQ(p.faults[1].line, 20u);
    EXPECT_EQ(p.faults[1].address, 0x7ef7cd600000u);
    EXPECT_EQ(p.faults[1].access, "read");
    EXPECT_EQ(p.faults[1].tid, 4753);
    EXPECT_TRUE(p.warnings.empty());
}

// Lines of other programs inside and between newest-first blocks, before the order is known.
TEST(AmdgpuFaultReversed, RunCutByOtherLines) {
    auto newer = reversedBlock(19, "8001089f1000", 1);
    auto older = reversedBlock(18, "8001089f0000", 0);
    std::vector<std::string> lines{
        newer[0], "Nov 04 13:30:19 host kwin_wayland[1671]: kwin_core: Failed", newer[1]};
    lines.insert(lines.end(), newer.begin() + 2, newer.end());
    lines.push_back("Nov 04 13:30:18 host systemd[1]: Started session-3.scope.");
    lines.insert(lines.end(), older.begin(), older.end());
    auto p = parse(lines);
    ASSERT_EQ(p.faults.size(), 2u);
    expectWholeBlock(p.faults[0], 0x8001089f1000u, "write");
    EXPECT_EQ(p.faults[0].line, 11u);
    expectWholeBlock(p.faults[1], 0x8001089f0000u, "read");
    EXPECT_EQ(p.faults[1].line, 22u);
    EXPECT_TRUE(p.warnings.empty());
}

// `address, header` pairs with equal stamps tell no order (their shape is also that of a
// forward `grep "page fault|in page"` cut at both ends): read forward, the common case.
TEST(AmdgpuFaultReversed, AddressHeaderPairsWithoutEvidenceReadForward) {
    auto p = parse({j(19, "  in page starting at address 0x0000000000001000 from client 10"),
                    j(19, "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:2)"),
                    j(19, "  in page starting at address 0x0000000000002000 from client 10"),
                    j(19, "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:3)")});
    ASSERT_EQ(p.faults.size(), 3u);
    EXPECT_EQ(p.faults[0].line, 1u);
    EXPECT_FALSE(p.faults[0].pasid);
    EXPECT_EQ(p.faults[0].address, 0x1000u);
    EXPECT_EQ(p.faults[1].line, 2u);
    EXPECT_EQ(p.faults[1].pasid, 2);
    EXPECT_EQ(p.faults[1].address, 0x2000u);
    EXPECT_EQ(p.faults[2].line, 4u);
    EXPECT_EQ(p.faults[2].pasid, 3);
    EXPECT_FALSE(p.faults[2].address);
    EXPECT_EQ(p.warnings.size(), 2u);  // the cut ends: no header, no address
}

// Newest-first wall stamps (one second apart) decide the order of two header-and-address blocks.
TEST(AmdgpuFaultReversed, FallingWallStampsDecide) {
    auto p = parse({j(20, "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:3)"),
                    j(19, "  in page starting at address 0x0000000000002000 from client 10"),
                    j(19, "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:2)"),
                    j(18, "  in page starting at address 0x0000000000001000 from client 10"),
                    j(18, "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:1)")});
    ASSERT_EQ(p.faults.size(), 3u);
    EXPECT_EQ(p.faults[0].pasid, 3);
    EXPECT_FALSE(p.faults[0].address);
    EXPECT_EQ(p.faults[1].pasid, 2);
    EXPECT_EQ(p.faults[1].address, 0x2000u);
    EXPECT_EQ(p.faults[2].pasid, 1);
    EXPECT_EQ(p.faults[2].address, 0x1000u);
}

// While the order is unknown the first held line is the checkpoint (an interrupted ingest
// re-reads it); once a gap ended the held blocks they are emitted and nothing stays held.
TEST(AmdgpuFaultReversed, HeldLinesHoldTheCheckpointUntilAGapSettlesThem) {
    auto m = makeAmdgpuFaultMatcher();
    CollectSink sink;
    const std::string d = "amdgpu 0000:0d:00.0: amdgpu: ";
    testing::feedLine(*m, sink, 1, "unrelated");
    EXPECT_TRUE(m->idle());
    testing::feedLine(*m, sink, 2, d + "  in page starting at address 0x0000000000002000 from 10");
    testing::feedLine(*m, sink, 3, d + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:2)");
    EXPECT_FALSE(m->idle());
    EXPECT_EQ(m->openSince(), 2u);
    EXPECT_TRUE(sink.evidences.empty());
    for (uint64_t n = 4; n < 70; ++n) testing::feedLine(*m, sink, n, "unrelated");
    // Nothing told the order: read forward, a cut block on each side of the header.
    ASSERT_EQ(sink.evidences.size(), 2u);
    EXPECT_EQ(sink.evidences[0].address, 0x2000u);
    EXPECT_FALSE(sink.evidences[0].pasid);
    EXPECT_EQ(sink.evidences[1].pasid, 2);
    EXPECT_FALSE(sink.evidences[1].address);
    EXPECT_EQ(m->openSince(), std::nullopt);
    // The settled pair taught no order: a forward block after it is still read forward.
    testing::feedLine(*m, sink, 70, d + "[gfxhub] page fault (src_id:0 ring:40 vmid:8 pasid:5)");
    testing::feedLine(*m, sink, 71, d + "  in page starting at address 0x0000000000005000 from 10");
    testing::feedLine(*m, sink, 72, d + "GCVM_L2_PROTECTION_FAULT_STATUS:0x00301031");
    m->finish(sink);
    ASSERT_EQ(sink.evidences.size(), 3u);
    EXPECT_EQ(sink.evidences[2].pasid, 5);
    EXPECT_EQ(sink.evidences[2].address, 0x5000u);
    EXPECT_EQ(sink.evidences[2].status, 0x00301031);
}

// A held `header, address` pair is emitted as soon as a line of its device ends the block (here
// a reset line), so it is stored before the reset record the next lines make.
TEST(AmdgpuFaultReversed, HeldBlockEndedByItsDevicesLineIsEmittedThere) {
    auto m = makeAmdgpuFaultMatcher();
    CollectSink sink;
    const std::string d = "amdgpu 0000:03:00.0: amdgpu: ";
    testing::feedLine(
        *m, sink, 1, d + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:1)");
    testing::feedLine(*m, sink, 2, d + "  in page starting at address 0x00007f0000000000 from 10");
    EXPECT_TRUE(sink.evidences.empty());
    // The IOMMU's line on the device interleaves without ending the block.
    testing::feedLine(*m,
                      sink,
                      3,
                      "amdgpu 0000:03:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x000b "
                      "address=0x7f0000000000 flags=0x0020]");
    EXPECT_TRUE(sink.evidences.empty());
    testing::feedLine(*m, sink, 4, d + "GPU reset begin!");
    ASSERT_EQ(sink.evidences.size(), 1u);
    EXPECT_EQ(sink.evidences[0].line, 1u);
    EXPECT_EQ(sink.evidences[0].pasid, 1);
    EXPECT_EQ(sink.evidences[0].address, 0x7f0000000000u);
    EXPECT_TRUE(m->idle());
}

}  // namespace
}  // namespace gpufault
