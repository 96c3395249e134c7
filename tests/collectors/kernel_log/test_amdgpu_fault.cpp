// Tests of the amdgpu page-fault block assembly (amdgpu_fault.cpp) on real lines from the
// fixtures: blocks cut at either end, headless blocks, interleaved GPUs, unrelated amdgpu lines,
// suppressed callbacks, cut-block warnings and the checkpoint an open block holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectors/kernel_log/amdgpu_fault.h"
#include "collectors/pipeline.h"
#include "tests/collectors/kernel_log/amdgpu_fault_feed.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

using testing::D;
using testing::run;

// ---- real lines from the fixtures ----------------------------------------------------------

TEST(AmdgpuFault, Fixture001ForProcessLineAndLastLineCutInsidePci) {
    auto r = run({
        "[ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 "
        "ring:24 vmid:3 pasid:32769)",
        "[ 4778.916081] amdgpu 0000:c6:00.0: amdgpu:  for process pt_main_thread pid 12924 thread "
        "pt_main_thread pid 12924)",
        "[ 4778.916571] amdgpu 0000:c6:00.0: amdgpu:   in page starting at address "
        "0x0000ae8570611000 from IH client 0x1b (UTCL2)",
        "[ 4778.917054] amdgpu 0000:c6:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00301031",
        "[ 4778.917532] amdgpu 0000:c6:00.0: amdgpu: \t Faulty UTCL2 client ID: TCP (0x8)",
        "[ 4778.919879] amdgpu 0000:c6:00.0: amdgpu: \t RW: 0x0",
        "[ 4778.920325] amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 "
        "ring:24 vmid:3 pasid:32769)",
        "[ 4778.922182] amdgpu 0000:c6:00.0: amdgpu: \t Faulty UTCL2 client ID: CB (0x0)",
        "[ 4778.922656] amdgpu 0000:c6:0",
    });
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_EQ(r[0].pid, 12924);
    EXPECT_EQ(r[0].thread, "pt_main_thread");
    EXPECT_EQ(r[0].status, 3149873);
    EXPECT_EQ(r[0].access, "read");
    EXPECT_EQ(r[1].line, 7u);
    EXPECT_EQ(r[1].client, "CB");
    EXPECT_FALSE(r[1].access);
    EXPECT_FALSE(r[1].address);
}

TEST(AmdgpuFault, Fixture003HeadlessBlockThenBlockJournald) {
    auto r = run({
        "Aug 05 18:46:49 host kernel: amdgpu 0000:0d:00.0: "
        "GCVM_L2_PROTECTION_FAULT_STATUS:0x00401031",
        "Aug 05 18:46:49 host kernel: amdgpu 0000:0d:00.0:          Faulty UTCL2 client ID: TCP "
        "(0x8)",
        "Aug 05 18:46:49 host kernel: amdgpu 0000:0d:00.0:          RW: 0x0",
        "Aug 05 18:46:49 host kernel: amdgpu 0000:0d:00.0: [gfxhub] page fault (src_id:0 ring:24 "
        "vmid:4 pasid:10)",
        "Aug 05 18:46:49 host kernel: amdgpu 0000:0d:00.0:  Process kwin_wayland pid 1671 thread "
        "kwin_wayla:cs0 pid 1722",
        "Aug 05 18:46:49 host kernel: amdgpu 0000:0d:00.0:          WALK",
    });
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_FALSE(r[0].hub);
    EXPECT_FALSE(r[0].vmid);
    EXPECT_EQ(r[0].client, "TCP");
    EXPECT_EQ(r[0].status, 4198449);
    EXPECT_EQ(r[0].access, "read");
    EXPECT_EQ(r[1].line, 4u);
    EXPECT_EQ(r[1].pasid, 10);
    EXPECT_EQ(r[1].thread, "kwin_wayla:cs0");
}

TEST(AmdgpuFault, Fixture011CutHeaderIsStillARecord) {
    auto r =
        run({"[  283.724181] amdgpu 0000:2b:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 "
             "vmid:7 pa"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].hub, "gfxhub");
    EXPECT_EQ(r[0].vmid, 7);
    EXPECT_FALSE(r[0].pasid);
    EXPECT_EQ(r[0].pci, "0000:2b:00.0");
}

TEST(AmdgpuFault, Fixture117InterleavedGpusGroupedByPci) {
    const std::string t = "[Wed Jul 10 11:18:55 2024] ";
    auto r = run({
        t + "amdgpu 0000:26:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00301031",
        t + "amdgpu 0000:26:00.0: amdgpu:          Faulty UTCL2 client ID: TCP (0x8)",
        t + "amdgpu 0000:a6:00.0: amdgpu: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:3 "
            "pasid:32792, for process python3 pid 1134315 thread python3 pid 1134315)",
        t + "amdgpu 0000:26:00.0: amdgpu:          MORE_FAULTS: 0x1",
        t + "amdgpu 0000:a6:00.0: amdgpu:   in page starting at address 0x0000149bd0608000 from IH "
            "client 0x1b (UTCL2)",
        t + "amdgpu 0000:a6:00.0: amdgpu:   cookie node_id 2 fault from die AID0.XCD1",
        t + "amdgpu 0000:85:00.0: amdgpu: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:3 "
            "pasid:32790, for process python3 pid 1134314 thread python3 pid 1134314)",
        t + "amdgpu 0000:26:00.0: amdgpu:          RW: 0x0",
    });
    ASSERT_EQ(r.size(), 3u);
    std::sort(r.begin(), r.end(), [](auto& a, auto& b) { return a.line < b.line; });
    EXPECT_EQ(r[0].pci, "0000:26:00.0");
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_EQ(r[0].access, "read");
    EXPECT_EQ(r[0].attr("more_faults"), "0x1");
    EXPECT_FALSE(r[0].address);
    EXPECT_EQ(r[1].pci, "0000:a6:00.0");
    EXPECT_EQ(r[1].address, 0x149bd0608000ull);
    EXPECT_EQ(r[1].attr("die"), "AID0.XCD1");
    EXPECT_EQ(r[1].retry, true);
    EXPECT_EQ(r[2].pci, "0000:85:00.0");
    EXPECT_EQ(r[2].pasid, 32790);
    EXPECT_FALSE(r[2].address);
}

TEST(AmdgpuFault, Fixture054AmdViLinesNeverAddFieldsOrRecords) {
    auto r = run({
        "[  262.094619] amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:158 vmid:0 "
        "pasid:0, for process  pid 0 thread  pid 0)",
        "[  262.094625] amdgpu 0000:03:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0010 "
        "address=0x64a7f000 flags=0x0000]",
        "[  262.094626] amdgpu 0000:03:00.0: amdgpu:   in page starting at address "
        "0x0000000000000000 from client 10",
        "[  262.094630] amdgpu 0000:03:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00000B3C",
        "[  262.094634] amdgpu 0000:03:00.0: amdgpu:    Faulty UTCL2 client ID: CPC (0x5)",
        "[  262.094645] amdgpu 0000:03:00.0: amdgpu:    RW: 0x0",
        "[  262.094688] amdgpu 0000:03:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0010 "
        "address=0x64a7f000 flags=0x0020]",
        "[  262.230974] amdgpu 0000:03:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0010 "
        "address=0x64a7f000 flags=0x0020]",
    });
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].address, 0u);
    EXPECT_EQ(r[0].pid, 0);
    EXPECT_EQ(r[0].tid, 0);
    EXPECT_EQ(r[0].client, "CPC");
    EXPECT_EQ(r[0].status, 2876);
}

TEST(AmdgpuFault, UnrelatedAmdgpuLinesMakeNoRecords) {
    auto r = run({
        "[  563.230818] amdgpu 0000:44:00.0: amdgpu: ring comp_1.2.1 uses VM inv eng 9 on hub 0",
        "[  511.030771] amdgpu: Evicting PASID 0x8003 queues",
        "[76914.152940] amdgpu 0000:1b:00.0: {1}[Hardware Error]: aca "
        "entry[00].STATUS=0xbaa000000000080b",
        "[76914.152948] amdgpu 0000:1b:00.0: {1}[Hardware Error]: aca "
        "entry[00].ADDR=0x0000000000000000",
        "[  262.094625] amdgpu 0000:03:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0010 "
        "address=0x64a7f000 flags=0x0000]",
        "kernel: amdgpu: Freeing queue vital buffer 0x7f2e70800000, queue evicted",
        // a ring timeout's task line is not a fault block
        "[127033.279661] amdgpu 0000:c5:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled "
        "seq=2662395, emitted seq=2662397",
        "[127033.279667] amdgpu 0000:c5:00.0: amdgpu:  Process code pid 1048641 thread code:cs0 "
        "pid 1048662",
        "[127033.279672] amdgpu 0000:c5:00.0: amdgpu: Starting gfx_0.0.0 ring reset",
    });
    EXPECT_TRUE(r.empty());
}

TEST(AmdgpuFault, Fixture056GmcV8InlineProcessAndPageNumber) {
    auto r = run({
        "[ 2628.405465] amdgpu 0000:01:00.0: GPU fault detected: 146 0x00028814 for process "
        "debayer pid 18204 thread debayer pid 18204",
        "[ 2628.405467] amdgpu 0000:01:00.0:   VM_CONTEXT1_PROTECTION_FAULT_ADDR   0x00508400",
        "[ 2628.405468] amdgpu 0000:01:00.0:   VM_CONTEXT1_PROTECTION_FAULT_STATUS 0x11088014",
        "[ 2628.405469] amdgpu 0000:01:00.0: VM fault (0x14, vmid 8, pasid 32783) at page 5276672, "
        "write from 'TC6' (0x54433600) (136)",
    });
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].address, 0x508400000ull);
    EXPECT_EQ(r[0].pid, 18204);
    EXPECT_EQ(r[0].process, "debayer");
    EXPECT_EQ(r[0].access, "write");
    EXPECT_EQ(r[0].client, "TC6");
    EXPECT_EQ(r[0].pasid, 32783);
}

// The radeon driver's SI/CIK fault (FORMATS.md §1.3; radeon cik.c/si.c): the same three device
// lines as amdgpu's gmc_v6/v7, but the decode line is a bare printk() with the block name
// unquoted. No record before (helper 131's audit).
TEST(AmdgpuFault, RadeonBlockTakesItsBareDecodeLine) {
    auto r = run({
        "[ 1234.567890] radeon 0000:01:00.0: GPU fault detected: 146 0x0a48480c",
        "[ 1234.567895] radeon 0000:01:00.0:   VM_CONTEXT1_PROTECTION_FAULT_ADDR   0x00001034",
        "[ 1234.567897] radeon 0000:01:00.0:   VM_CONTEXT1_PROTECTION_FAULT_STATUS 0x0848000C",
        "[ 1234.567899] VM fault (0x0c, vmid 4) at page 4148, read from TC0 (72)",
        "[ 1240.000000] radeon 0000:02:00.0: GPU fault detected: 147 0x00000001",
        "[ 1240.000001] radeon 0000:02:00.0:   VM_CONTEXT1_PROTECTION_FAULT_ADDR   0x00000010",
        "[ 1240.000002] radeon 0000:02:00.0:   VM_CONTEXT1_PROTECTION_FAULT_STATUS 0x01000000",
        "[ 1240.000003] usb 1-1: new high-speed USB device number 2 using xhci_hcd",
        "[ 1240.000004] usb 1-1: reset high-speed USB device number 2 using xhci_hcd",
        "[ 1240.000005] VM fault (0x04, vmid 1) at page 16, write from CB (200)",
    });
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].kind, Kind::AmdgpuPageFault);
    EXPECT_EQ(r[0].pci, "0000:01:00.0");
    EXPECT_EQ(r[0].address, 4148ull * 4096);
    EXPECT_EQ(r[0].address_exact, false);
    EXPECT_EQ(r[0].vmid, 4);
    EXPECT_EQ(r[0].status, 0x0848000C);
    EXPECT_EQ(r[0].access, "read");
    EXPECT_EQ(r[0].client, "TC0");
    EXPECT_EQ(r[0].attr("mc_id"), "72");
    EXPECT_EQ(r[0].line, 1u);
    // a decode line three lines after its device's last line is none of its lines
    EXPECT_EQ(r[1].pci, "0000:02:00.0");
    EXPECT_EQ(r[1].address, 0x10000ull);
    EXPECT_FALSE(r[1].vmid);
    EXPECT_FALSE(r[1].client);
}

TEST(AmdgpuFault, CallbacksSuppressedGoesOnTheNextRecord) {
    auto r = run({
        "[  196.550063] gmc_v11_0_process_interrupt: 19 callbacks suppressed                    ",
        "[  196.550067] amdgpu 0000:c3:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:12 "
        "pasid:32773, for process rocm-bandwidth- pid 8285 thread rocm-bandwidth- pid 8285)        "
        "          ",
        "[  196.550096] amdgpu 0000:c3:00.0: amdgpu:   in page starting at address "
        "0x00007f0000002000 from client 10        ",
        "[  196.550110] amdgpu 0000:c3:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00C01A30    "
        "   ",
        "[  196.550121] amdgpu 0000:c3:00.0: amdgpu:      Faulty UTCL2 client ID: SDMA0 (0xd)      "
        "  ",
        "[  196.550200] amdgpu 0000:c3:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:12 "
        "pasid:32773)",
        "[  200.000000] show_signal_msg: 5 callbacks suppressed",
    });
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].attr("callbacks_suppressed"), "19");
    EXPECT_EQ(r[0].process, "rocm-bandwidth-");
    EXPECT_EQ(r[0].client, "SDMA0");
    EXPECT_EQ(r[0].status, 12589616);
    EXPECT_EQ(r[0].address, 0x7f0000002000ull);
    EXPECT_FALSE(r[1].attr("callbacks_suppressed"));
}

}  // namespace
}  // namespace gpufault

// A block cut at either end is a record and a counted warning; a complete block warns nothing.
TEST(AmdgpuFault, CutBlocksAreCountedWarnings) {
    gpufault::CollectSink sink;
    gpufault::TextPipeline pipe(sink);
    const char* lines[] = {
        "[  283.724128] amdgpu 0000:2b:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00701031",
        "[  283.724131] amdgpu 0000:2b:00.0: amdgpu: \t Faulty UTCL2 client ID: TCP (0x8)",
        "[  283.724153] amdgpu 0000:2b:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:7 "
        "pasid:32771, for process wezterm-gui pid 5044 thread wezterm-gu:cs0 pid 5072)",
        "[  283.724157] amdgpu 0000:2b:00.0: amdgpu:   in page starting at address "
        "0x0000800505606000 from client 0x1b (UTCL2)",
        "[  283.724161] amdgpu 0000:2b:00.0: amdgpu: GCVM_L2_PROTECTION_FAULT_STATUS:0x00000000",
        "[  283.724181] amdgpu 0000:2b:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:7 "
        "pa",
    };
    uint64_t n = 0;
    for (const char* l : lines) pipe.feedLine(++n, l);
    pipe.finish();
    ASSERT_EQ(sink.evidences.size(), 3u);
    ASSERT_EQ(sink.warnings.size(), 2u);
    EXPECT_EQ(sink.warnings[0].line, 1u);
    EXPECT_NE(sink.warnings[0].message.find("without its header"), std::string::npos);
    EXPECT_EQ(sink.warnings[1].line, 6u);
    EXPECT_NE(sink.warnings[1].message.find("without its address"), std::string::npos);
}

namespace gpufault {
namespace {

// A block in progress holds a checkpoint at its first line (Matcher::openSince), so a daemon
// restarted in the middle of it re-reads the header; a finished block holds nothing.
TEST(AmdgpuFault, OpenBlockHoldsTheCheckpointAtItsFirstLine) {
    auto m = makeAmdgpuFaultMatcher();
    CollectSink sink;
    auto feed = [&](uint64_t line, const std::string& text) {
        testing::feedLine(*m, sink, line, text);
    };
    EXPECT_FALSE(m->openSince());
    EXPECT_TRUE(m->idle());
    feed(7, D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32769)");
    EXPECT_EQ(m->openSince(), 7u);
    EXPECT_FALSE(m->idle());
    feed(8, D + "  in page starting at address 0x00007f6459a00000 from client 0x1b (UTCL2)");
    EXPECT_EQ(m->openSince(), 7u);
    m->finish(sink);
    EXPECT_FALSE(m->openSince());
    ASSERT_EQ(sink.evidences.size(), 1u);
    EXPECT_EQ(sink.evidences[0].address, 0x7f6459a00000u);
}

}  // namespace
}  // namespace gpufault
