// The order of amdgpu page-fault blocks across devices and runs (amdgpu_fault_order.cpp and the
// re-detection in amdgpu_fault.cpp): kernel stamps of interleaved GPUs that step back by a
// microsecond between devices (fixture 084's eight MI300X print so), a clock step inside one
// device's block, and a newest-first journal whose later blocks show no order of their own
// (header and address lines only: gmc_v10–v12 print no decode when the status is 0). Lines are
// built from the format strings of FORMATS.md §1.1, §1.2 and §1.4; whole text pipeline.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/kernel_log/amdgpu_fault_order.h"
#include "tests/collectors/kernel_log/amdgpu_pipeline.h"

namespace gpufault {
namespace {

using testing::parseAmdgpu;

std::string fmt(const char* f, auto... args) {
    char b[256];
    std::snprintf(b, sizeof b, f, args...);
    return b;
}

// dmesg `[%5lu.%06lu] ` then dev_printk `amdgpu %s: ` and the dev_fmt `amdgpu: ` tag.
std::string dmesg(int64_t us, const std::string& bdf, const std::string& msg) {
    return fmt("[%5" PRId64 ".%06" PRId64 "] ", us / 1000000, us % 1000000) + "amdgpu " + bdf +
           ": amdgpu: " + msg;
}

// journalctl -o short (to the second) of a kernel record.
std::string journal(const std::string& bdf, const std::string& msg) {
    return "Jan 02 12:00:00 host kernel: amdgpu " + bdf + ": amdgpu: " + msg;
}

// gmc_v9_0_process_interrupt (§1.1), current form, then amdgpu_vm_print_task_info (§1.4).
std::string v9Header(int vmid, int pasid) {
    return fmt("[%s] %s page fault (src_id:%u ring:%u vmid:%u pasid:%u)",
               "gfxhub0",
               "retry",
               0u,
               0u,
               unsigned(vmid),
               unsigned(pasid));
}
std::string task(const char* name, int pid, int tid) {
    return fmt(" Process %s pid %d thread %s pid %d", name, pid, name, tid);
}
std::string v9Address(uint64_t addr) {
    return fmt("  in page starting at address 0x%016" PRIx64 " from IH client 0x%x (%s)",
               addr,
               0x1bu,
               "UTCL2");
}
std::string v9Status(uint32_t s) {
    return fmt("VM_L2_PROTECTION_FAULT_STATUS:0x%08X", s);
}
std::string client() {
    return fmt("\t Faulty UTCL2 client ID: %s (0x%x)", "TCP", 0x8u);
}
std::string rw(unsigned w) {
    return fmt("\t RW: 0x%x", w);
}

// gmc_v10–v12 between the 2023 reformat and the 2024 task-info refactor (§1.2): the process in
// the header; gmc_v11/v12's decimal client. With status 0 nothing follows the address line.
std::string v11OldHeader(int vmid, int pasid, const char* name, int pid) {
    return fmt(
        "[%s] page fault (src_id:%u ring:%u vmid:%u pasid:%u, for process %s pid %d "
        "thread %s pid %d)",
        "gfxhub",
        0u,
        24u,
        unsigned(vmid),
        unsigned(pasid),
        name,
        pid,
        name,
        pid);
}
std::string v11Address(uint64_t addr) {
    return fmt("  in page starting at address 0x%016" PRIx64 " from client %d", addr, 10);
}

const std::string kA = "0000:c1:00.0";
const std::string kB = "0000:c2:00.0";

// Two MI300-class GPUs printing at once, oldest first; GPU B's header is stamped 3 µs after the
// status line of GPU A that follows it (two CPUs' clocks).
std::vector<std::string> interleavedWithStepBack() {
    return {dmesg(100000100, kA, v9Header(8, 32772)),
            dmesg(100000110, kA, task("python3", 4242, 4250)),
            dmesg(100000120, kA, v9Address(0x7f3a12340000)),
            dmesg(100000125, kB, v9Header(9, 32790)),
            dmesg(100000122, kA, v9Status(0x00B01031)),
            dmesg(100000130, kB, task("python3", 4243, 4251)),
            dmesg(100000131, kA, client()),
            dmesg(100000135, kB, v9Address(0x7f3a22200000)),
            dmesg(100000140, kA, rw(1)),
            dmesg(100000145, kB, v9Status(0x00B01031)),
            dmesg(100000150, kB, client()),
            dmesg(100000155, kB, rw(0))};
}

void expectGpuA(const Evidence& e, uint64_t line) {
    EXPECT_EQ(e.line, line);
    EXPECT_EQ(e.pci, kA);
    EXPECT_EQ(e.pasid, 32772);
    EXPECT_EQ(e.pid, 4242);
    EXPECT_EQ(e.tid, 4250);
    EXPECT_EQ(e.address, 0x7f3a12340000u);
    EXPECT_EQ(e.status, 0x00B01031);
    EXPECT_EQ(e.client, "TCP");
    EXPECT_EQ(e.access, "write");
}

void expectGpuB(const Evidence& e, uint64_t line) {
    EXPECT_EQ(e.line, line);
    EXPECT_EQ(e.pci, kB);
    EXPECT_EQ(e.pasid, 32790);
    EXPECT_EQ(e.pid, 4243);
    EXPECT_EQ(e.address, 0x7f3a22200000u);
    EXPECT_EQ(e.status, 0x00B01031);
    EXPECT_EQ(e.client, "TCP");
    EXPECT_EQ(e.access, "read");
}

// GPU A's first lines decide the order (forward); the step back between B's header and A's next
// line compares two devices' clocks and must not end the run: no phantom headerless record, and
// A's block keeps its status, client and access.
TEST(AmdgpuFaultOrderRuns, StepBackBetweenInterleavedGpusKeepsTheOrder) {
    auto p = parseAmdgpu(interleavedWithStepBack());
    ASSERT_EQ(p.faults.size(), 2u);
    expectGpuA(p.faults[0], 1);
    expectGpuB(p.faults[1], 4);
    EXPECT_TRUE(p.warnings.empty());
}

// Newest first (`tac` of dmesg): GPU B's first lines show the order; then GPU A's RW line begins
// its block and GPU B's next line is stamped 1 µs after it (two CPUs' clocks). That rise compares
// two devices: the run goes on.
TEST(AmdgpuFaultOrderRuns, StepBetweenInterleavedGpusNewestFirst) {
    auto p = parseAmdgpu({dmesg(100000160, kB, rw(0)),
                          dmesg(100000159, kB, client()),
                          dmesg(100000150, kA, rw(1)),
                          dmesg(100000151, kB, v9Status(0x00B01031)),
                          dmesg(100000149, kA, client()),
                          dmesg(100000148, kB, v9Address(0x7f3a22200000)),
                          dmesg(100000147, kA, v9Status(0x00B01031)),
                          dmesg(100000146, kB, task("python3", 4243, 4251)),
                          dmesg(100000145, kA, v9Address(0x7f3a12340000)),
                          dmesg(100000144, kB, v9Header(9, 32790)),
                          dmesg(100000143, kA, task("python3", 4242, 4250)),
                          dmesg(100000142, kA, v9Header(8, 32772))});
    ASSERT_EQ(p.faults.size(), 2u);
    expectGpuB(p.faults[0], 10);
    expectGpuA(p.faults[1], 12);
    EXPECT_TRUE(p.warnings.empty());
}

// The step back comes while the order is still unknown (each GPU has printed one line): the
// probe compares each device's own stamps only.
TEST(AmdgpuFaultOrderRuns, StepBackBeforeTheOrderIsKnown) {
    auto p = parseAmdgpu({dmesg(100000100, kA, v9Header(8, 32772)),
                          dmesg(100000095, kB, v9Header(9, 32790)),
                          dmesg(100000110, kA, task("python3", 4242, 4250)),
                          dmesg(100000105, kB, task("python3", 4243, 4251)),
                          dmesg(100000120, kA, v9Address(0x7f3a12340000)),
                          dmesg(100000115, kB, v9Address(0x7f3a22200000)),
                          dmesg(100000121, kA, v9Status(0x00B01031)),
                          dmesg(100000116, kB, v9Status(0x00B01031)),
                          dmesg(100000122, kA, client()),
                          dmesg(100000117, kB, client()),
                          dmesg(100000123, kA, rw(1)),
                          dmesg(100000118, kB, rw(0))});
    ASSERT_EQ(p.faults.size(), 2u);
    expectGpuA(p.faults[0], 1);
    expectGpuB(p.faults[1], 2);
    EXPECT_TRUE(p.warnings.empty());
}

// One GPU, order learned forward; the next block's task line is stamped 1 µs before its header.
// The line continues the block the header began: a clock step inside a block changes nothing.
TEST(AmdgpuFaultOrderRuns, ClockStepInsideOneBlockKeepsTheOrder) {
    auto p = parseAmdgpu({dmesg(200000100, kB, v9Header(9, 32790)),
                          dmesg(200000110, kB, task("python3", 4243, 4251)),
                          dmesg(200000120, kB, v9Address(0x7f3a22200000)),
                          dmesg(200000130, kB, v9Status(0x00B01031)),
                          dmesg(200000140, kB, client()),
                          dmesg(200000150, kB, rw(0)),
                          dmesg(200000300, kB, v9Header(9, 32790)),
                          dmesg(200000299, kB, task("python3", 4243, 4251)),
                          dmesg(200000310, kB, v9Address(0x7f3a22200000)),
                          dmesg(200000320, kB, v9Status(0x00B01031)),
                          dmesg(200000330, kB, client()),
                          dmesg(200000340, kB, rw(0))});
    ASSERT_EQ(p.faults.size(), 2u);
    expectGpuB(p.faults[0], 1);
    expectGpuB(p.faults[1], 7);
    EXPECT_EQ(p.faults[1].tid, 4251);
    EXPECT_TRUE(p.warnings.empty());
}

// A whole gmc_v9 block of GPU A, newest first (its decode lines show the order), with equal
// journald stamps.
std::vector<std::string> newestFirstWholeBlock() {
    return {journal(kA, rw(1)),
            journal(kA, client()),
            journal(kA, v9Status(0x00B01031)),
            journal(kA, v9Address(0x7f3a12340000)),
            journal(kA, task("python3", 4242, 4250)),
            journal(kA, v9Header(8, 32772))};
}

// Three status-0 gmc_v11 blocks of another GPU, newest first: `address, header` each.
const std::string kC = "0000:03:00.0";
std::vector<std::string> newestFirstHeaderAddressBlocks() {
    return {journal(kC, v11Address(0x3000)),
            journal(kC, v11OldHeader(14, 32775, "gameC", 3333)),
            journal(kC, v11Address(0x2000)),
            journal(kC, v11OldHeader(13, 32774, "gameB", 2222)),
            journal(kC, v11Address(0x1000)),
            journal(kC, v11OldHeader(12, 32773, "gameA", 1111))};
}

void add(std::vector<std::string>& to, const std::vector<std::string>& more) {
    to.insert(to.end(), more.begin(), more.end());
}

void addOtherLines(std::vector<std::string>& to, int n) {
    for (int i = n; i > 0; --i)
        to.push_back("Jan 02 12:00:00 host systemd[1]: Started unit " + std::to_string(i) + ".");
}

void expectHeaderAddressBlocks(const std::vector<Evidence>& f, size_t from, uint64_t line) {
    const int pids[] = {3333, 2222, 1111};
    const uint64_t addrs[] = {0x3000, 0x2000, 0x1000};
    for (size_t i = 0; i < 3; ++i) {
        const Evidence& e = f.at(from + i);
        EXPECT_EQ(e.line, line + 2 * i);
        EXPECT_EQ(e.pci, kC);
        EXPECT_EQ(e.pid, pids[i]);
        EXPECT_EQ(e.pasid, 32775 - static_cast<int>(i));
        EXPECT_EQ(e.address, addrs[i]);
    }
}

// `journalctl -r`: the newest block shows the order; after more than 64 other lines the next
// blocks are header and address only. The journal is still newest first: each address belongs
// to the header after it, not to the previous process.
TEST(AmdgpuFaultOrderRuns, NewestFirstOrderOutlivesAGap) {
    auto lines = newestFirstWholeBlock();
    addOtherLines(lines, 70);
    add(lines, newestFirstHeaderAddressBlocks());
    auto p = parseAmdgpu(lines);
    ASSERT_EQ(p.faults.size(), 4u);
    EXPECT_EQ(p.faults[0].line, 6u);
    EXPECT_EQ(p.faults[0].pid, 4242);
    EXPECT_EQ(p.faults[0].address, 0x7f3a12340000u);
    EXPECT_EQ(p.faults[0].access, "write");
    expectHeaderAddressBlocks(p.faults, 1, 78);
    EXPECT_TRUE(p.warnings.empty());
}

// The same without the gap (one run of blocks).
TEST(AmdgpuFaultOrderRuns, NewestFirstHeaderAddressBlocksAfterAWholeOne) {
    auto lines = newestFirstWholeBlock();
    add(lines, newestFirstHeaderAddressBlocks());
    auto p = parseAmdgpu(lines);
    ASSERT_EQ(p.faults.size(), 4u);
    EXPECT_EQ(p.faults[0].pid, 4242);
    expectHeaderAddressBlocks(p.faults, 1, 8);
    EXPECT_TRUE(p.warnings.empty());
}

// The kept order is only the last one evidence showed: a forward block after the gap shows
// forward (stages, equal stamps), and header-and-address blocks after a second gap read forward.
TEST(AmdgpuFaultOrderRuns, LaterEvidenceReplacesTheKeptOrder) {
    auto lines = newestFirstWholeBlock();
    addOtherLines(lines, 70);
    auto fwd = newestFirstWholeBlock();
    add(lines, {fwd.rbegin(), fwd.rend()});
    addOtherLines(lines, 70);
    auto pairs = newestFirstHeaderAddressBlocks();
    add(lines, {pairs.rbegin(), pairs.rend()});  // header, address: oldest first
    auto p = parseAmdgpu(lines);
    ASSERT_EQ(p.faults.size(), 5u);
    EXPECT_EQ(p.faults[0].line, 6u);
    EXPECT_EQ(p.faults[1].line, 77u);
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(p.faults[i].pid, 4242);
        EXPECT_EQ(p.faults[i].status, 0x00B01031);
        EXPECT_EQ(p.faults[i].access, "write");
    }
    // Oldest first now: gameA's header at line 153 takes the address line after it.
    const int pids[] = {1111, 2222, 3333};
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(p.faults[2 + i].line, 153 + 2 * i);
        EXPECT_EQ(p.faults[2 + i].pid, pids[i]);
        EXPECT_EQ(p.faults[2 + i].address, 0x1000u * (i + 1));
    }
    EXPECT_TRUE(p.warnings.empty());
}

// Nothing before the pairs showed an order: they keep being read oldest first (the shape of a
// forward `grep "page fault|in page"` cut at both ends), whatever a later run shows.
TEST(AmdgpuFaultOrderRuns, PairsBeforeAnyEvidenceReadForward) {
    auto lines = newestFirstHeaderAddressBlocks();
    addOtherLines(lines, 70);
    add(lines, newestFirstWholeBlock());
    auto p = parseAmdgpu(lines);
    ASSERT_EQ(p.faults.size(), 5u);
    EXPECT_FALSE(p.faults[0].pid);  // the leading address line: a block cut before its header
    EXPECT_EQ(p.faults[0].address, 0x3000u);
    EXPECT_EQ(p.faults[1].pid, 3333);
    EXPECT_EQ(p.faults[1].address, 0x2000u);
    EXPECT_EQ(p.faults[4].pid, 4242);
    EXPECT_EQ(p.faults[4].access, "write");
    EXPECT_EQ(p.warnings.size(), 2u);
}

// Newest first, a block whose header was before the input began takes its oldest line's stamp,
// as the same block read forward does.
TEST(AmdgpuFaultOrderRuns, NewestFirstHeaderlessBlockTakesItsOldestStamp) {
    auto p = parseAmdgpu({dmesg(300000140, kA, rw(1)),
                          dmesg(300000130, kA, client()),
                          dmesg(300000120, kA, v9Status(0x00B01031)),
                          dmesg(300000110, kA, v9Address(0x7f3a12340000))});
    ASSERT_EQ(p.faults.size(), 1u);
    EXPECT_FALSE(p.faults[0].pid);
    EXPECT_EQ(p.faults[0].address, 0x7f3a12340000u);
    ASSERT_TRUE(p.faults[0].time.kernel_s);
    EXPECT_DOUBLE_EQ(*p.faults[0].time.kernel_s, 300.000110);
    EXPECT_EQ(p.warnings.size(), 1u);
}

// The probe: a pair of one device whose stamps and stages disagree shows no order; the next
// pair that agrees does, and that order outlives take() as guess()'s answer.
TEST(AmdgpuFaultOrderRuns, ProbeIgnoresPairsWhoseStampsAndStagesDisagree) {
    amdgpu::DirectionProbe probe;
    std::vector<std::string> keep;
    auto offer = [&](int64_t us, const std::string& msg, uint64_t seq) {
        keep.push_back("amdgpu " + kA + ": amdgpu: " + msg);
        LogLine l;
        l.line = seq;
        l.raw = l.text = keep.back();
        l.time.kernel_s = static_cast<double>(us) / 1e6;
        return probe.offer(l, seq);
    };
    keep.reserve(8);
    EXPECT_EQ(probe.guess(), amdgpu::Direction::Forward);
    EXPECT_EQ(offer(100000130, v9Status(0x00B01031), 1), amdgpu::Direction::Unknown);
    // Client after status is forward by stage, but stamped earlier.
    EXPECT_EQ(offer(100000129, client(), 2), amdgpu::Direction::Unknown);
    EXPECT_EQ(probe.learned(), amdgpu::Direction::Unknown);
    // Address after client: both say newest first.
    EXPECT_EQ(offer(100000110, v9Address(0x7f3a12340000), 3), amdgpu::Direction::Reverse);
    EXPECT_EQ(probe.take().size(), 3u);
    EXPECT_TRUE(probe.empty());
    EXPECT_EQ(probe.learned(), amdgpu::Direction::Reverse);
    EXPECT_EQ(probe.guess(), amdgpu::Direction::Reverse);
}

}  // namespace
}  // namespace gpufault
