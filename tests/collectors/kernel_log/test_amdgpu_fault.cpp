// Tests of the amdgpu page-fault matcher: one constructed line per producer format string
// (FORMATS.md §1.1–1.4, 1.8), then real lines from the fixtures.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "collectors/common/text.h"
#include "collectors/kernel_log/amdgpu_fault.h"
#include "collectors/pipeline.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

struct In {
    std::string raw;
    std::optional<double> kernel_s = std::nullopt;
};

std::vector<Evidence> runStamped(const std::vector<In>& lines) {
    auto m = makeAmdgpuFaultMatcher();
    CollectSink sink;
    uint64_t n = 0;
    for (auto& l : lines) {
        LogLine ll;
        ll.line = ++n;
        ll.raw = l.raw;
        ll.text = text::trimRight(l.raw);
        ll.time.kernel_s = l.kernel_s;
        m->feed(ll, sink);
    }
    m->finish(sink);
    for (auto& e : sink.evidences) EXPECT_EQ(e.kind, Kind::AmdgpuPageFault);
    return sink.evidences;
}

std::vector<Evidence> run(const std::vector<std::string>& lines) {
    std::vector<In> in;
    for (auto& l : lines) in.push_back({l});
    return runStamped(in);
}

const std::string D = "amdgpu 0000:c1:00.0: amdgpu: ";

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
}

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
    std::vector<std::string> lines;
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
    EXPECT_EQ(sink.evidences.size(), 4u);  // the 4 oldest were closed to make room
    m->finish(sink);
    EXPECT_EQ(sink.evidences.size(), 20u);
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

TEST(AmdgpuFault, ManyDeviceWordsOnOneLineAreLinear) {
    // Every `amdgpu ` / `drmnN ` of a line is tried as the device: each try used to search the
    // rest of the line for `: ` (minutes for a few such 1 MiB lines).
    std::string amd, drm;
    while (amd.size() < (1u << 20)) amd += "amdgpu ";
    while (drm.size() < (1u << 20)) drm += "drmn0 ";
    auto t0 = std::chrono::steady_clock::now();
    auto r = run({amd + D + "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:7)",
                  drm + "drmn0: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:4 pasid:8)"});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(s, 5.0);
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
        "[  283.724181] amdgpu 0000:2b:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:7 pa",
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
