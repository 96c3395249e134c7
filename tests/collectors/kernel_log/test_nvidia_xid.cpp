#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/kernel_log/nvidia_xid.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

std::vector<Evidence> run(const std::vector<std::string>& lines) {
    auto m = makeNvidiaXidMatcher();
    return testing::feedMatcher(*m,
                                lines,
                                [](LogLine& l) {
                                    l.time.kernel_s = 100.0 + static_cast<double>(l.line);
                                    l.rank = 3;
                                })
        .evidences;
}

Evidence one(const std::string& line) {
    auto ev = run({line});
    EXPECT_EQ(ev.size(), 1u) << line;
    return ev.empty() ? Evidence{} : ev[0];
}

// Format strings (FORMATS.md §6.1), constructed.

TEST(NvidiaXid, MigGpuInstanceAndComputeInstancePrefix) {
    auto e =
        one("NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:00): 31, pid=1234, name=python, channel "
            "0x00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted @ "
            "0x7f1a_2b3c4000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ");
    EXPECT_EQ(e.kind, Kind::NvidiaXid);
    EXPECT_EQ(e.vendor, "nvidia");
    EXPECT_EQ(e.pci, "0000:3b:00.0");
    EXPECT_EQ(e.attr("gpu_instance"), "01");
    EXPECT_EQ(e.attr("compute_instance"), "00");
    EXPECT_EQ(e.xid, 31);
    EXPECT_EQ(e.pid, 1234);
    EXPECT_EQ(e.process, "python");
    EXPECT_EQ(e.address, 0x7f1a2b3c4000ull);
    EXPECT_EQ(e.address_exact, false);
    EXPECT_EQ(e.client, "GPCCLIENT_T1_0");
    EXPECT_EQ(e.attr("engine"), "GRAPHICS");
    EXPECT_EQ(e.attr("channel"), "0x00000008");
    EXPECT_EQ(e.reason, "FAULT_PDE");
    EXPECT_EQ(e.access, "read");
    EXPECT_EQ(e.rank, 3);
    EXPECT_EQ(e.line, 1u);
    EXPECT_EQ(e.time.kernel_s, 101.0);
}

TEST(NvidiaXid, GpuInstanceOnlyPrefix) {
    auto e = one("NVRM: Xid (PCI:0000:3b:00 GPU-I:02): 43, pid=77, name=a.out, channel 0x00000001");
    EXPECT_EQ(e.pci, "0000:3b:00.0");
    EXPECT_EQ(e.attr("gpu_instance"), "02");
    EXPECT_FALSE(e.attr("compute_instance"));
    EXPECT_EQ(e.xid, 43);
    EXPECT_EQ(e.pid, 77);
    EXPECT_EQ(e.process, "a.out");
    EXPECT_FALSE(e.address);
}

// `0x%x_%08x` is two 32-bit halves: a low half printed with fewer digits than the padding
// (a hand-edited or other-driver line) is still the low 32 bits, never glued onto the high
// half; a low half wider than 32 bits is no address of this format. Hostile review 16, i2 M3.
TEST(NvidiaXid, HiLoHalvesAreCombinedNotGlued) {
    const std::string head =
        "NVRM: Xid (PCI:0000:01:00): 31, pid=99999999999, name=a, channel 0x0000000c, intr "
        "00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_PROP_0 faulted @ ";
    auto e = one(head + "0x7f_1234800. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ");
    EXPECT_EQ(e.address, 0x7f01234800ull);
    EXPECT_FALSE(e.pid);  // above PID_MAX_LIMIT (2^22): no pid
    auto wide = one(head + "0x7f_123456789. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ");
    EXPECT_FALSE(wide.address);
    auto zero = one(
        "NVRM: Xid (PCI:0000:01:00): 31, pid=0, name=a, channel 0x0000000c, intr 00000000. MMU "
        "Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_PROP_0 faulted @ 0x0_00001000. Fault is of type "
        "FAULT_PDE ACCESS_TYPE_VIRT_READ");
    EXPECT_EQ(zero.pid, 0);  // as amdgpu's `pid 0`: stated, no process
    EXPECT_EQ(zero.address, 0x1000ull);
}

// Hostile review 17, i2 M1: `0x1_ffffffff_ffffffff` was stored as 0x1ffffffff (the third
// group dropped), and a low part too wide dropped the address without a word: both are now
// refused with a warning naming the line; the record stays.
TEST(NvidiaXid, AnAddressNotOf64BitsIsRefusedWithAWarning) {
    auto m = makeNvidiaXidMatcher();
    const std::string head =
        "NVRM: Xid (PCI:0000:3b:00): 31, pid=1234, name=python, Ch 00000008, intr 00000000. MMU "
        "Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ ";
    const std::string tail = ". Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ";
    auto sink = testing::feedMatcher(*m,
                                     {head + "0x1_ffffffff_ffffffff" + tail,
                                      head + "0x7f00_123456789" + tail,
                                      head + "0x7fd2_baa00000" + tail,
                                      head + "0x7f_0x1234" + tail,
                                      head + "0x7f_1234500g" + tail,
                                      head + "0X7FD2_BAA00000" + tail});
    ASSERT_EQ(sink.evidences.size(), 6u);
    EXPECT_FALSE(sink.evidences[3].address);
    EXPECT_FALSE(sink.evidences[4].address);
    EXPECT_EQ(sink.evidences[5].address, 0x7fd2baa00000ull);
    EXPECT_FALSE(sink.evidences[0].address);
    EXPECT_FALSE(sink.evidences[1].address);
    EXPECT_EQ(sink.evidences[2].address, 0x7fd2baa00000ull);
    EXPECT_EQ(sink.evidences[0].reason, "FAULT_PDE");
    ASSERT_EQ(sink.warnings.size(), 4u);
    EXPECT_EQ(sink.warnings[0].line, 1u);
    EXPECT_EQ(sink.warnings[0].message,
              "Xid: the fault address is not 0x%x_%08x of 64 bits (0x1_ffffffff_ffffffff): "
              "stored without an address");
    EXPECT_EQ(sink.warnings[1].line, 2u);
}

TEST(NvidiaXid, AnXid31WrappedOverThreeLinesIsOneRecord) {
    // A real report's kernel log, wrapped by hand (NVIDIA/open-gpu-kernel-modules#1208; the
    // reporter replaced the pid): the lines after the first have no stamp of their own.
    auto m = makeNvidiaXidMatcher();
    auto sink = testing::feedMatcher(
        *m,
        {"NVRM: Xid (PCI:0000:01:00): 31, pid=<varies>, name=python3, channel 0x00000002,",
         "  intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted",
         "  @ 0x0_00019000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
         "",
         "Always GPC0, GPCCLIENT_T1_{0,1,6}, low virtual addresses (0x3000-0x19000), FAULT_PDE."});
    ASSERT_EQ(sink.evidences.size(), 1u);
    const auto& e = sink.evidences[0];
    EXPECT_EQ(e.line, 1u);
    EXPECT_EQ(e.xid, 31);
    EXPECT_EQ(e.address, 0x19000u);
    EXPECT_EQ(e.address_exact, false);
    EXPECT_EQ(e.client, "GPCCLIENT_T1_0");
    EXPECT_EQ(e.reason, "FAULT_PDE");
    EXPECT_EQ(e.access, "read");
    EXPECT_EQ(e.process, "python3");
    EXPECT_FALSE(e.pid);
    EXPECT_NE(e.raw.find("faulted\n  @ 0x0_00019000"), std::string::npos) << e.raw;
    EXPECT_FALSE(m->openSince());
}

TEST(NvidiaXid, AWrappedXid31EndsAtTheNextStampedLine) {
    // The rest never came (a cut paste): the next stamped line closes it with what it has;
    // the old `engmask` form, which has no MMU fault part, is never held.
    std::vector<std::string> lines{
        "NVRM: Xid (PCI:0000:01:00): 31, pid=77, name=a.out, channel 0x00000002,",
        "NVRM: Xid (PCI:0000:01:00): 31, Ch 00000003, engmask 00000101, intr 10000000",
        "NVRM: Xid (PCI:0000:01:00): 31, pid=78, name=b.out, channel 0x2, intr 0. MMU Fault: "
        "ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted @ 0x7f_00019000.",
        "NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0)"};
    auto m = makeNvidiaXidMatcher();
    auto sink = testing::feedMatcher(*m, lines);
    ASSERT_EQ(sink.evidences.size(), 4u);
    EXPECT_EQ(sink.evidences[0].pid, 77);
    EXPECT_FALSE(sink.evidences[0].address);
    EXPECT_EQ(sink.evidences[1].line, 2u);
    EXPECT_EQ(sink.evidences[2].address, 0x7f00019000u);  // held, then closed by line 4
    EXPECT_FALSE(sink.evidences[2].reason);
    EXPECT_EQ(sink.evidences[3].xid, 13);
    // Another producer's line is never the rest either (hostile review 143).
    auto other = run({lines[0],
                      "RuntimeError: CUDA error: an illegal memory access was encountered",
                      "NVRM: GPU at PCI:0000:01:00: GPU-1234"});
    ASSERT_EQ(other.size(), 1u);
    EXPECT_EQ(other[0].raw.find("RuntimeError"), std::string::npos) << other[0].raw;
    // Stamped lines are never a wrapped line's rest.
    auto stamped =
        run({lines[0], "intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 X faulted @ 0x0_1."});
    ASSERT_EQ(stamped.size(), 1u);
    EXPECT_FALSE(stamped[0].client);
}

TEST(NvidiaXid, ALineCutInsideTheLowHalfHasNoAddress) {
    // `%08x` prints 8 digits: a line that ends after fewer was cut there (a `dmesg | cut`, a
    // full disk), and `0x7f_123` is not 0x7f00000123. Eight digits at the line's end are whole.
    auto m = makeNvidiaXidMatcher();
    const std::string head =
        "NVRM: Xid (PCI:0000:3b:00): 31, pid=1234, name=python, Ch 00000008, intr 00000000. MMU "
        "Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ ";
    auto sink = testing::feedMatcher(*m,
                                     {head + "0x7f_123",
                                      head + "0x7f_12345678",
                                      head + "0x7f_1234800. Fault is of type FAULT_PDE",
                                      head + "0x7f00"});
    ASSERT_EQ(sink.evidences.size(), 4u);
    EXPECT_FALSE(sink.evidences[0].address);
    EXPECT_EQ(sink.evidences[1].address, 0x7f12345678ull);
    EXPECT_EQ(sink.evidences[2].address, 0x7f01234800ull);
    EXPECT_FALSE(sink.evidences[3].address);  // cut before its `_`
    ASSERT_EQ(sink.warnings.size(), 2u);
    EXPECT_EQ(sink.warnings[0].line, 1u);
    EXPECT_EQ(sink.warnings[1].line, 4u);
}

TEST(NvidiaXid, LegacyChNoPidHiLoAddress) {
    auto e = one(
        "NVRM: Xid (PCI:0000:01:00): 31, Ch 0000003a, intr 10000000. MMU Fault: ENGINE GRAPHICS "
        "GPCCLIENT_T1_3 faulted @ 0x17_00592000. Fault is of type FAULT_PDE ACCESS_TYPE_READ");
    EXPECT_EQ(e.xid, 31);
    EXPECT_FALSE(e.pid);
    EXPECT_FALSE(e.process);
    EXPECT_EQ(e.attr("channel"), "0000003a");
    EXPECT_EQ(e.attr("intr"), "10000000");
    EXPECT_EQ(e.address, 0x1700592000ull);
    EXPECT_EQ(e.client, "GPCCLIENT_T1_3");
    EXPECT_EQ(e.access, "read");
}

TEST(NvidiaXid, PidWithoutNameChForm) {
    auto e = one(
        "NVRM: Xid (PCI:0000:c1:00): 31, pid=12890, Ch 0000003b, intr 00000000. MMU Fault: ENGINE "
        "HOST0 HUBCLIENT_HOST_CPU faulted @ 0x1_0c3c0000. Fault is of type FAULT_PDE "
        "ACCESS_TYPE_VIRT_WRITE");
    EXPECT_EQ(e.pci, "0000:c1:00.0");
    EXPECT_EQ(e.pid, 12890);
    EXPECT_FALSE(e.process);
    EXPECT_EQ(e.attr("channel"), "0000003b");
    EXPECT_EQ(e.address, 0x10c3c0000ull);
    EXPECT_EQ(e.client, "HUBCLIENT_HOST_CPU");
    EXPECT_EQ(e.attr("engine"), "HOST0");
    EXPECT_EQ(e.access, "write");
}

TEST(NvidiaXid, AtomicAccessTypeIsNullButKept) {
    auto e =
        one("NVRM: Xid (PCI:0000:01:00): 31, pid=5, name=x, channel 0x00000002, intr 00000000. MMU "
            "Fault: ENGINE CE3 HUBCLIENT_CE1 faulted @ 0x0_00001000. Fault is of type FAULT_PTE "
            "ACCESS_TYPE_VIRT_ATOMIC");
    EXPECT_EQ(e.client, "HUBCLIENT_CE1");
    EXPECT_EQ(e.reason, "FAULT_PTE");
    EXPECT_FALSE(e.access);
    EXPECT_EQ(e.attr("access_type"), "ACCESS_TYPE_VIRT_ATOMIC");
    EXPECT_EQ(e.address, 0x1000ull);
}

TEST(NvidiaXid, UnknownPidAndNameAreNull) {
    auto e = one(
        "[93297.027938] NVRM: Xid (PCI:0000:43:00): 13, pid='<unknown>', name=<unknown>, Graphics "
        "Exception: ESR 0x52e7b0=0x101000e 0x52e7b4=0x4");
    EXPECT_EQ(e.xid, 13);
    EXPECT_FALSE(e.pid);
    EXPECT_FALSE(e.process);
    EXPECT_FALSE(e.address);  // ESR register values are not addresses
    EXPECT_FALSE(e.address_exact);
}

TEST(NvidiaXid, CutBeforeNumberIsNoRecord) {
    EXPECT_TRUE(run({"[93297.045662] NVRM: Xid (PCI:0000:",
                     "[Fri Aug  9] NVRM: Xid (PCI",
                     "NVRM: Xid (PCI:0000:01:00): ",
                     "NVRM: Xid (PCI:0000:01:00)"})
                    .empty());
}

TEST(NvidiaXid, OtherNvrmLinesAreNoRecord) {
    EXPECT_TRUE(run({"[   39.644743] NVRM: GPU at PCI:0000:00:06: GPU-SERIAL",
                     "NVRM: _kgspLogXid119: ********* GSP Timeout *********",
                     "[1084456.074566] NVRM: GPU 0000:09:00.0: GPU has fallen off the bus.",
                     "NVRM: GPU Board Serial Number: SERIAL"})
                    .empty());
}

// Real lines from the fixtures.

TEST(NvidiaXid, RealOpenDriverGpcToken) {  // 022
    auto e =
        one("[  365.969681] NVRM: Xid (PCI:0000:01:00): 31, pid=13705, name=UnrealEditor, channel "
            "0x0000000c, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC2 GPCCLIENT_PROP_0 faulted @ "
            "0x0_00000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ");
    EXPECT_EQ(e.client, "GPCCLIENT_PROP_0");
    EXPECT_EQ(e.address, 0u);
    EXPECT_EQ(e.pid, 13705);
    EXPECT_EQ(e.process, "UnrealEditor");
}

TEST(NvidiaXid, RealXid45CausedByPreviousXid) {  // 087
    auto e = one(
        "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by "
        "previous Xid 149");
    EXPECT_EQ(e.xid, 45);
    EXPECT_EQ(e.pci, "0000:dc:00.0");
    EXPECT_EQ(e.pid, 1818990);
    EXPECT_EQ(e.process, "python3");
    EXPECT_EQ(e.attr("channel"), "00000001");
}

TEST(NvidiaXid, RealXid79PidZeroNoName) {  // 112
    auto e =
        one("[1084456.074562] NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off the bus.");
    EXPECT_EQ(e.xid, 79);
    EXPECT_EQ(e.pid, 0);
    EXPECT_FALSE(e.process);
}

TEST(NvidiaXid, RealXid119PciDomain0001) {  // 086
    auto e =
        one("[Sun Apr 26 23:12:26 2026] NVRM: Xid (PCI:0001:6c:00): 119, pid=10200, "
            "name=NvmlTaskRunner, "
            "Timeout after 45s of waiting for RPC response from GPU5 GSP! Expected function 76");
    EXPECT_EQ(e.pci, "0001:6c:00.0");
    EXPECT_EQ(e.xid, 119);
    EXPECT_EQ(e.process, "NvmlTaskRunner");
    EXPECT_FALSE(e.address);
}

TEST(NvidiaXid, RealXid31WriteTwoMiBAligned) {  // 113
    auto e =
        one("[Mon Aug  5 03:54:13 2024] NVRM: Xid (PCI:0000:00:07): 31, pid=2512125, "
            "name=python3.10, Ch "
            "00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ "
            "0x73ac_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE");
    EXPECT_EQ(e.address, 0x73ac1c000000ull);
    EXPECT_EQ(e.access, "write");
    EXPECT_EQ(e.process, "python3.10");
    EXPECT_EQ(e.raw.substr(0, 27), "[Mon Aug  5 03:54:13 2024] ");
}

}  // namespace
}  // namespace gpufault

namespace gpufault {
namespace {

// The body after the Xid number (the cause of an Xid 13) is kept for display as attr `message`.
TEST(NvidiaXid, Xid13CauseIsKeptAsMessage) {
    auto r =
        run({"[   41.254067] NVRM: Xid (PCI:0000:00:06): 13, Graphics SM Warp Exception on "
             "(GPC 1, TPC 4, SM 0): Misaligned Address"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].xid, 13);
    EXPECT_EQ(r[0].attr("message"),
              "Graphics SM Warp Exception on (GPC 1, TPC 4, SM 0): Misaligned Address");
    EXPECT_FALSE(r[0].reason);  // reason is the MMU fault type only
}

}  // namespace
}  // namespace gpufault
