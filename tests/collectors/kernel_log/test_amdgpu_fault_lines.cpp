// Tests of the amdgpu page-fault line parsers (amdgpu_fault_lines.cpp, amdgpu_line.cpp): one
// constructed line per producer format string (FORMATS.md §1.1–1.4, 1.8): gmc_v9 and gmc_v10..v12
// headers, task lines, decode lines, gmc v6..v8, the device prefix.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/collectors/kernel_log/amdgpu_fault_feed.h"

namespace gpufault {
namespace {

using testing::D;
using testing::run;

// ---- gmc_v9 header forms -------------------------------------------------------------------

TEST(AmdgpuFault, V9HeaderCurrentNoRetryThenTaskLineAndFullDecode) {
    auto r =
        run({D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:8 pasid:32772)",
             D + " Process python3 pid 4242 thread python3 pid 4250",
             D + "  in page starting at address 0x00007f3a12340000 from IH client 0x1b (UTCL2)",
             D + "  cookie node_id 1 fault from die AID0.XCD0",
             D + "VM_L2_PROTECTION_FAULT_STATUS:0x00B01031",
             D + "\t Faulty UTCL2 client ID: TCP (0x8)",
             D + "\t MORE_FAULTS: 0x1",
             D + "\t WALKER_ERROR: 0x0",
             D + "\t PERMISSION_FAULTS: 0x3",
             D + "\t MAPPING_ERROR: 0x0",
             D + "\t RW: 0x1"});
    ASSERT_EQ(r.size(), 1u);
    const Evidence& e = r[0];
    EXPECT_EQ(e.line, 1u);
    EXPECT_EQ(e.vendor, "amd");
    EXPECT_EQ(e.pci, "0000:c1:00.0");
    EXPECT_EQ(e.hub, "gfxhub0");
    EXPECT_EQ(e.retry, false);
    EXPECT_EQ(e.vmid, 8);
    EXPECT_EQ(e.pasid, 32772);
    EXPECT_EQ(e.attr("src_id"), "0");
    EXPECT_EQ(e.attr("ring"), "24");
    EXPECT_EQ(e.process, "python3");
    EXPECT_EQ(e.pid, 4242);
    EXPECT_EQ(e.thread, "python3");
    EXPECT_EQ(e.tid, 4250);
    EXPECT_EQ(e.address, 0x7f3a12340000ull);
    EXPECT_EQ(e.address_exact, false);
    EXPECT_EQ(e.attr("ih_client"), "0x1b");
    EXPECT_EQ(e.attr("ih_client_name"), "UTCL2");
    EXPECT_EQ(e.attr("node_id"), "1");
    EXPECT_EQ(e.attr("die"), "AID0.XCD0");
    EXPECT_EQ(e.status, 0x00B01031);
    EXPECT_EQ(e.client, "TCP");
    EXPECT_EQ(e.attr("client_id"), "0x8");
    EXPECT_EQ(e.attr("more_faults"), "0x1");
    EXPECT_EQ(e.attr("walker_error"), "0x0");
    EXPECT_EQ(e.attr("permission_faults"), "0x3");
    EXPECT_EQ(e.attr("mapping_error"), "0x0");
    EXPECT_EQ(e.access, "write");
    EXPECT_EQ(std::count(e.raw.begin(), e.raw.end(), '\n'), 10);
}

TEST(AmdgpuFault, V9RetryHeaderWithInlineProcess) {
    auto r =
        run({D + "[mmhub1] retry page fault (src_id:0 ring:0 vmid:3 pasid:32792, for process "
                 "python3 pid 1134315 thread python3 pid 1134316)",
             D + "  in page starting at address 0x0000149bd0608000 from IH client 0x6 (VMC1)"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].hub, "mmhub1");
    EXPECT_EQ(r[0].retry, true);
    EXPECT_EQ(r[0].pid, 1134315);
    EXPECT_EQ(r[0].tid, 1134316);
    EXPECT_EQ(r[0].process, "python3");
    EXPECT_EQ(r[0].attr("ih_client_name"), "VMC1");
    EXPECT_EQ(r[0].address, 0x149bd0608000ull);
}

TEST(AmdgpuFault, HeaderWithNoProcessInfo) {
    auto r = run({D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:1 pasid:32770, no "
                      "process info)"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].pasid, 32770);
    EXPECT_FALSE(r[0].pid);
    EXPECT_FALSE(r[0].process);
}

TEST(AmdgpuFault, OldestVmcPageFaultWithPasIdAndAtPage) {
    // gmc_v9_0.c 4.14: "[%s] VMC page fault (src_id:%u ring:%u vmid:%u pas_id:%u)",
    // "  at page 0x%016llx from %d"; no amdgpu: tag on kernels of that age.
    auto r = run({"amdgpu 0000:03:00.0: [gfxhub] VMC page fault (src_id:0 ring:24 vmid:5 pas_id:3)",
                  "amdgpu 0000:03:00.0:   at page 0x0000000101234000 from 27",
                  "amdgpu 0000:03:00.0: VM_L2_PROTECTION_FAULT_STATUS:0x00000000"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].hub, "gfxhub");
    EXPECT_FALSE(r[0].retry);
    EXPECT_EQ(r[0].vmid, 5);
    EXPECT_EQ(r[0].pasid, 3);
    EXPECT_EQ(r[0].address, 0x101234000ull);
    EXPECT_EQ(r[0].attr("ih_client"), "27");
    EXPECT_EQ(r[0].status, 0);
}

// FreeBSD drm-kmod prints the VMC header with `vm_id:` (a real report: vmid was left null).
TEST(AmdgpuFault, FreeBsdVmcHeaderNamesItsVmidVmId) {
    auto r = run({"drmn0: [mmhub] VMC page fault (src_id:0 ring:153 vm_id:3 pas_id:5)",
                  "drmn0:   at address 0x00005b7199707000 from 18"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].vmid, 3);
    EXPECT_EQ(r[0].pasid, 5);
    EXPECT_EQ(r[0].address, 0x5b7199707000ull);
}

TEST(AmdgpuFault, VmcPageFaultWithProcessAndAtAddress) {
    // 4.17–4.19: "... pasid:%u, for process %s pid %d thread %s pid %d\n)\n", "  at address
    // 0x%016llx from %d"
    auto r =
        run({"amdgpu 0000:03:00.0: [gfxhub] VMC page fault (src_id:0 ring:24 vmid:5 pasid:32768, "
             "for process glxinfo pid 2222 thread glxinfo:cs0 pid 2223",
             "amdgpu 0000:03:00.0:   at address 0x0000000101234000 from 27"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].thread, "glxinfo:cs0");
    EXPECT_EQ(r[0].tid, 2223);
    EXPECT_EQ(r[0].address, 0x101234000ull);
}

// ---- gmc_v10..v12 -------------------------------------------------------------------------

TEST(AmdgpuFault, V10To12HeaderHasNoRetryWordAndDecimalClient) {
    auto r = run({D + "[mmhub] page fault (src_id:0 ring:40 vmid:3 pasid:32781)",
                  D + "  in page starting at address 0x0000000012345000 from client 18",
                  D + "MMVM_L2_PROTECTION_FAULT_STATUS:0x00341F51",
                  D + "\t Faulty UTCL2 client ID: VCN0 (0x34)"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].hub, "mmhub");
    EXPECT_FALSE(r[0].retry);
    EXPECT_EQ(r[0].attr("ih_client"), "18");
    EXPECT_FALSE(r[0].attr("ih_client_name"));
    EXPECT_EQ(r[0].status, 0x00341F51);
    EXPECT_EQ(r[0].client, "VCN0");
}

TEST(AmdgpuFault, V10ClientHexWithName) {
    auto r = run({D + "[gfxhub] page fault (src_id:0 ring:24 vmid:4 pasid:10)",
                  D + "  in page starting at address 0x00000043800e8000 from client 0x1b (UTCL2)",
                  D + "GCVM_L2_PROTECTION_FAULT_STATUS:0x00401031"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].attr("ih_client"), "0x1b");
    EXPECT_EQ(r[0].attr("ih_client_name"), "UTCL2");
    EXPECT_EQ(r[0].status, 0x00401031);
}

TEST(AmdgpuFault, V12_1IhClientDecimalWithNameAndDieName) {
    auto r =
        run({D + "[gfxhub0] retry page fault (src_id:0 ring:0 vmid:9 pasid:32800)",
             D + "  in page starting at address 0x0100000000001000 from IH client 27 (GC_UTCL2)",
             D + "  cookie node_id 3 fault from die RSV0"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].address, 0x0100000000001000ull);
    EXPECT_EQ(r[0].attr("ih_client"), "27");
    EXPECT_EQ(r[0].attr("ih_client_name"), "GC_UTCL2");
    EXPECT_EQ(r[0].attr("die"), "RSV0");
}

// ---- task lines ---------------------------------------------------------------------------

TEST(AmdgpuFault, TaskLineVariantsWithSpacesColonsAndEmptyNames) {
    auto a = run({D + "[gfxhub] page fault (src_id:0 ring:88 vmid:8 pasid:32787)",
                  D + " Process darktable pid 70131 thread worker 0 pid 70175"});
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].process, "darktable");
    EXPECT_EQ(a[0].thread, "worker 0");
    EXPECT_EQ(a[0].tid, 70175);

    auto b = run({D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32769)",
                  D + " for process pt main:x pid 12 thread pid 13 pid 14)"});
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].process, "pt main:x");
    EXPECT_EQ(b[0].pid, 12);
    EXPECT_EQ(b[0].thread, "pid 13");
    EXPECT_EQ(b[0].tid, 14);

    auto c = run({D + "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32770)",
                  D + " in process cosmic-comp pid 4732 thread cosmic-com:cs0 pid 4753)"});
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].thread, "cosmic-com:cs0");
    EXPECT_EQ(c[0].tid, 4753);

    auto d =
        run({"drmn0: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:3 pasid:32770, for "
             "process  pid 101779 thread  pid 101779)"});
    ASSERT_EQ(d.size(), 1u);
    EXPECT_FALSE(d[0].process);
    EXPECT_FALSE(d[0].thread);
    EXPECT_EQ(d[0].pid, 101779);
    EXPECT_EQ(d[0].tid, 101779);
    EXPECT_FALSE(d[0].pci);  // FreeBSD prints no BDF
}

// A comm may itself read `x pid 1 thread` (14 bytes, within TASK_COMM_LEN): the split is the
// one whose two names fit the kernel's 15 bytes, never the first ` pid N thread ` it meets.
TEST(AmdgpuFault, TaskNamesThatLookLikeThePidPartSplitWhereBothNamesFit) {
    auto a = run({D + "[gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32772, for process x pid "
                      "1 thread pid 4528 thread x pid 1 thread pid 4529)",
                  D + "  in page starting at address 0x00007a5895200000 from client 0x1b (UTCL2)"});
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].process, "x pid 1 thread");
    EXPECT_EQ(a[0].pid, 4528);
    EXPECT_EQ(a[0].thread, "x pid 1 thread");
    EXPECT_EQ(a[0].tid, 4529);

    auto b = run({D + "[gfxhub] page fault (src_id:0 ring:88 vmid:8 pasid:32787)",
                  D + " Process python3 pid 900 thread pid 7 thread z pid 901"});
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].process, "python3");
    EXPECT_EQ(b[0].pid, 900);
    EXPECT_EQ(b[0].thread, "pid 7 thread z");
    EXPECT_EQ(b[0].tid, 901);
}

TEST(AmdgpuFault, TaskLineCutAfterProcessPidKeepsWhatItShows) {
    auto r = run({D + "[gfxhub] page fault (src_id:0 ring:24 vmid:3 pasid:32770)",
                  D + " Process python3 pid 4242 thread pyth"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].process, "python3");
    EXPECT_EQ(r[0].pid, 4242);
    EXPECT_FALSE(r[0].thread);
    EXPECT_FALSE(r[0].tid);
}

// ---- decode lines -------------------------------------------------------------------------

TEST(AmdgpuFault, ClientNamesWithParenthesesSlashesUnknownAndBareNumber) {
    auto one = [](const std::string& client_line) {
        auto r = run({D + "GCVM_L2_PROTECTION_FAULT_STATUS:0x008012B0", D + client_line});
        EXPECT_EQ(r.size(), 1u);
        return r.empty() ? Evidence{} : r[0];
    };
    EXPECT_EQ(one("\t Faulty UTCL2 client ID: SQC (inst) (0x9)").client, "SQC (inst)");
    EXPECT_EQ(one("\t Faulty UTCL2 client ID: CB/DB (0x0)").client, "CB/DB");
    Evidence unknown = one("\t Faulty UTCL2 client ID: unknown (0x1f)");
    EXPECT_FALSE(unknown.client);
    EXPECT_EQ(unknown.attr("client_id"), "0x1f");
    Evidence bare = one("\t Faulty UTCL2 client ID: 0x0");
    EXPECT_FALSE(bare.client);
    EXPECT_EQ(bare.attr("client_id"), "0x0");
}

TEST(AmdgpuFault, RwReadAndUpperCaseStatus) {
    auto r = run({D + "GCVM_L2_PROTECTION_FAULT_STATUS:0x00C01A30", D + "\t RW: 0x0"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].status, 0x00C01A30);
    EXPECT_EQ(r[0].access, "read");
}

TEST(AmdgpuFault, DecodeIndentVariants) {
    // dmesg TAB, journalctl 8 spaces, /dev/kmsg `\x09`, other indents; no amdgpu: tag.
    for (std::string indent : {"\t ", "         ", "\\x09 ", "      "}) {
        auto r = run({"amdgpu 0000:0d:00.0: " + indent + "Faulty UTCL2 client ID: TCP (0x8)",
                      "amdgpu 0000:0d:00.0: " + indent + "MORE_FAULTS: 0x1",
                      "amdgpu 0000:0d:00.0: " + indent + "RW: 0x1"});
        ASSERT_EQ(r.size(), 1u) << indent;
        EXPECT_EQ(r[0].client, "TCP");
        EXPECT_EQ(r[0].access, "write");
        EXPECT_EQ(r[0].attr("more_faults"), "0x1");
    }
}

TEST(AmdgpuFault, NumbersCutByTheEndOfTheLineAreLeftOut) {
    auto r = run({D + "[gfxhub] page fault (src_id:0 ring:24 vmid:7 pasid:327",
                  D + "  in page starting at address 0x00007febd63",
                  D + "GCVM_L2_PROTECTION_FAULT_STATUS:0x0084"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].vmid, 7);
    EXPECT_FALSE(r[0].pasid);
    EXPECT_FALSE(r[0].address);
    EXPECT_FALSE(r[0].status);
}

// Hostile review 23, H3: an address shortened with `...` was stored as if whole. (A header
// cut inside its thread pid cannot be told: 4.17–4.19 print the `)` on the next line.)
TEST(AmdgpuFault, AnEllipsisAddressIsLeftOut) {
    auto r = run({D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32769, for "
                      "process pt_main_thread pid 12924 thread pt_main_thread pid 129",
                  D + "  in page starting at address 0x00007f3a12... from IH client 0x1b (UTCL2)"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].pid, 12924);
    EXPECT_EQ(r[0].thread, "pt_main_thread");
    EXPECT_FALSE(r[0].address);
    auto whole = run({D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32769)",
                      D + " Process python3 pid 4242 thread python3 pid 4250",
                      D + "  in page starting at address 0x7f3a12340000 from client 10"});
    ASSERT_EQ(whole.size(), 1u);
    EXPECT_EQ(whole[0].tid, 4250);
    EXPECT_EQ(whole[0].address, 0x7f3a12340000ull);  // short, but whole (` from` follows)
}

// ---- gmc v6..v8 ---------------------------------------------------------------------------

TEST(AmdgpuFault, GmcV8BlockAddressIsPageTimes4096) {
    const std::string d = "amdgpu 0000:01:00.0: ";
    auto r = run({d + "GPU fault detected: 146 0x00028814",
                  d + "  VM_CONTEXT1_PROTECTION_FAULT_ADDR   0x00508400",
                  d + "  VM_CONTEXT1_PROTECTION_FAULT_STATUS 0x11088014",
                  d + "VM fault (0x14, vmid 8, pasid 32768) at page 5276672, read from 'TC6' "
                      "(0x54433600) (72)"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].address, 5276672ull * 4096);
    EXPECT_EQ(r[0].address_exact, false);
    EXPECT_EQ(r[0].vmid, 8);
    EXPECT_EQ(r[0].pasid, 32768);
    EXPECT_EQ(r[0].client, "TC6");
    EXPECT_EQ(r[0].access, "read");
    EXPECT_EQ(r[0].status, 0x11088014);
    EXPECT_EQ(r[0].attr("src_id"), "146");
    EXPECT_EQ(r[0].attr("src_data"), "0x00028814");
    EXPECT_EQ(r[0].attr("mc_id"), "72");
    EXPECT_EQ(r[0].attr("mc_client"), "0x54433600");
    EXPECT_FALSE(r[0].hub);
}

TEST(AmdgpuFault, GmcV8HugePageNumberDoesNotWrap) {
    // page * 4096 above 2^64 used to wrap into a small, wrong address.
    const std::string d = "amdgpu 0000:01:00.0: ";
    auto r = run({d + "GPU fault detected: 146 0x00028814",
                  d + "  VM_CONTEXT1_PROTECTION_FAULT_ADDR   0xFFFFFFFFFFFFF001",
                  d + "VM fault (0x14, vmid 8, pasid 32768) at page 9223372036854775807, read "
                      "from 'TC6' (0x54433600) (72)"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_FALSE(r[0].address);
    EXPECT_EQ(r[0].vmid, 8);
    auto ok = run({d + "  VM_CONTEXT1_PROTECTION_FAULT_ADDR   0x000FFFFFFFFFFFFF"});
    ASSERT_EQ(ok.size(), 1u);
    EXPECT_EQ(ok[0].address, 0xFFFFFFFFFFFFF000ull);
}

TEST(AmdgpuFault, GmcV6DecodeWithoutPasidAndNumericClient) {
    const std::string d = "amdgpu 0000:01:00.0: amdgpu: ";
    auto a = run({d + "GPU fault detected: 147 0x00001234",
                  d + "  VM_CONTEXT1_PROTECTION_FAULT_ADDR   0x00000100",
                  d + "VM fault (0x04, vmid 2) at page 256, write from 'CB' (0x43420000) (3)"});
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].address, 0x100000ull);
    EXPECT_EQ(a[0].vmid, 2);
    EXPECT_FALSE(a[0].pasid);
    EXPECT_EQ(a[0].client, "CB");
    EXPECT_EQ(a[0].access, "write");
    auto b = run({d + "VM fault (0x04, vmid 2) at page 256, read from 5"});
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].attr("mc_id"), "5");
    EXPECT_FALSE(b[0].client);
    EXPECT_EQ(b[0].access, "read");
    // the block name unquoted (radeon si/cik, early gmc_v6): `from %s (%d)`
    auto c = run({d + "VM fault (0x04, vmid 1) at page 4660, write from CB (200)"});
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].client, "CB");
    EXPECT_EQ(c[0].attr("mc_id"), "200");
    EXPECT_EQ(c[0].address, 4660ull * 4096);
}

TEST(AmdgpuFault, ManyDeviceWordsOnOneLineAreLinear) {
    // Every `amdgpu ` / `drmnN ` of a line is tried as the device: each try used to search the
    // rest of the line for `: ` (minutes for a few such 1 MiB lines).
    std::string amd, drm;
    while (amd.size() < (1u << 20)) amd += "amdgpu ";
    while (drm.size() < (1u << 20)) drm += "drmn0 ";
    // A quadratic scan takes minutes here: ctest's TIMEOUT for unit tests fails it
    // (tests/CMakeLists.txt), no timed assertion.
    auto r = run({amd + D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:7)",
                  drm + "drmn0: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:4 pasid:8)"});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].pci, "0000:c1:00.0");
    EXPECT_EQ(r[0].vmid, 3);
    EXPECT_FALSE(r[1].pci);
    EXPECT_EQ(r[1].vmid, 4);
    // The device name is still found only right before its `: `.
    EXPECT_TRUE(run({"amdgpu 0000:c1:00.0 : [gfxhub] page fault (src_id:0 ring:40 vmid:8 "
                     "pasid:1)"})
                    .empty());
}

}  // namespace
}  // namespace gpufault
