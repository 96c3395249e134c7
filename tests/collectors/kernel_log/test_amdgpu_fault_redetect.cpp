// The order of amdgpu page-fault blocks when nothing decides it (forward), and learned again for
// each run of blocks: after a gap without block lines, and when kernel stamps run against it
// (`dmesg` and `journalctl -r -k` pasted into one bug report). Whole text pipeline.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/pipeline.h"
#include "tests/collectors/kernel_log/amdgpu_pipeline.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

using Parsed = testing::AmdgpuParsed;
Parsed parse(const std::vector<std::string>& lines) {
    return testing::parseAmdgpu(lines);
}

const std::string kDev = "amdgpu 0000:c6:00.0: amdgpu: ";

// dmesg `[%5ld.%06ld] ` line of the gmc_v10 block printers.
std::string k(double s, const std::string& msg) {
    char b[32];
    std::snprintf(b, sizeof b, "[%5.6f] ", s);
    return b + kDev + msg;
}

// A gmc_v10 block at `t` (stamps 100 µs apart), oldest line first.
std::vector<std::string> block(double t, int pid, const std::string& page) {
    std::string p = std::to_string(pid);
    return {k(t, "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:32769)"),
            k(t + 0.0001,
              " for process proc" + p + " pid " + p + " thread proc" + p + " pid " + p + ")"),
            k(t + 0.0002,
              "  in page starting at address 0x0000" + page + " from IH client 0x1b (UTCL2)"),
            k(t + 0.0003, "VM_L2_PROTECTION_FAULT_STATUS:0x00301031"),
            k(t + 0.0004, "\t Faulty UTCL2 client ID: TCP (0x8)"),
            k(t + 0.0005, "\t RW: 0x0")};
}

std::vector<std::string> reversed(std::vector<std::string> v) {
    return {v.rbegin(), v.rend()};
}

void add(std::vector<std::string>& to, const std::vector<std::string>& more) {
    to.insert(to.end(), more.begin(), more.end());
}

void expectBlock(const Evidence& e, uint64_t line, int pid, uint64_t address) {
    EXPECT_EQ(e.line, line);
    EXPECT_EQ(e.pid, pid);
    EXPECT_EQ(e.address, address);
    EXPECT_EQ(e.pasid, 32769);
    EXPECT_EQ(e.status, 0x00301031);
    EXPECT_EQ(e.client, "TCP");
    EXPECT_EQ(e.access, "read");
}

// `grep -E "page fault|in page"` of forward dmesg -H output cut at both ends: deltas tell no order.
TEST(AmdgpuFaultRedetect, ForwardGrepCutAtBothEndsReadsForward) {
    std::vector<std::string> lines{
        "[Dec 1 01:02] " + kDev +
        "  in page starting at address 0x00007f0000000000 from IH client 0x1b (UTCL2)"};
    for (int v = 1; v <= 3; ++v) {
        lines.push_back("[  +0.000010] " + kDev +
                        "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:" +
                        std::to_string(v) + " pasid:" + std::to_string(32768 + v) + ")");
        lines.push_back("[  +0.000010] " + kDev + "  in page starting at address 0x00007f000" +
                        std::to_string(v) + "000000 from IH client 0x1b (UTCL2)");
    }
    lines.push_back("[  +0.000010] " + kDev +
                    "[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:4 pasid:32772)");
    auto p = parse(lines);
    ASSERT_EQ(p.faults.size(), 5u);
    EXPECT_FALSE(p.faults[0].vmid);
    EXPECT_EQ(p.faults[0].address, 0x7f0000000000u);
    for (int v = 1; v <= 3; ++v) {
        EXPECT_EQ(p.faults[v].line, static_cast<uint64_t>(2 * v));
        EXPECT_EQ(p.faults[v].vmid, v);
        EXPECT_EQ(p.faults[v].address, 0x7f0000000000u + (static_cast<uint64_t>(v) << 24));
    }
    EXPECT_EQ(p.faults[4].vmid, 4);
    EXPECT_FALSE(p.faults[4].address);
}

// journalctl short (to the second) header and task lines, forward, cut at the start.
TEST(AmdgpuFaultRedetect, ForwardHeaderTaskPairsWithEqualStampsReadForward) {
    auto j = [](const std::string& msg) { return "Aug 10 19:55:33 host kernel: " + kDev + msg; };
    std::vector<std::string> lines{j(" for process proc999 pid 999 thread proc999 pid 999)")};
    for (int i = 1; i <= 3; ++i) {
        std::string pid = std::to_string(999 + i);
        lines.push_back(j("[gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 pasid:" +
                          std::to_string(32768 + i) + ")"));
        lines.push_back(j(" for process proc" + pid + " pid " + pid + " thread proc" + pid +
                          " pid " + pid + ")"));
    }
    auto p = parse(lines);
    ASSERT_EQ(p.faults.size(), 3u);  // the lone leading task line is no record
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(p.faults[i].line, static_cast<uint64_t>(2 + 2 * i));
        ASSERT_TRUE(p.faults[i].pasid && p.faults[i].pid);
        EXPECT_EQ(*p.faults[i].pasid - 32768, *p.faults[i].pid - 999);
    }
}

// A forward block, other lines, then a newest-first block: the second block is read newest first.
TEST(AmdgpuFaultRedetect, ForwardThenReversedAfterAGap) {
    auto lines = block(100.1, 111, "aaaa00001000");
    for (int i = 0; i < 100; ++i) lines.push_back("[  101.000001] usb 1-1: something");
    add(lines, reversed(block(200.1, 222, "bbbb00002000")));
    auto p = parse(lines);
    ASSERT_EQ(p.faults.size(), 2u);
    expectBlock(p.faults[0], 1, 111, 0xaaaa00001000u);
    expectBlock(p.faults[1], 112, 222, 0xbbbb00002000u);
    EXPECT_TRUE(p.warnings.empty());
}

// A newest-first block straight followed by a forward block: the header's stamp still falls, the
// line after it rises against the learned order; the header begins the forward block.
TEST(AmdgpuFaultRedetect, ReversedThenForwardWithoutAGap) {
    auto lines = reversed(block(200.1, 222, "bbbb00002000"));
    add(lines, block(100.1, 111, "aaaa00001000"));
    auto p = parse(lines);
    ASSERT_EQ(p.faults.size(), 2u);
    expectBlock(p.faults[0], 6, 222, 0xbbbb00002000u);
    expectBlock(p.faults[1], 7, 111, 0xaaaa00001000u);
    EXPECT_TRUE(p.warnings.empty());
}

// Forward then newest first without a gap: the newest-first block's first line rises, the next
// one falls and the order is learned again from that first line on.
TEST(AmdgpuFaultRedetect, ForwardThenReversedWithoutAGap) {
    auto lines = block(100.1, 111, "aaaa00001000");
    add(lines, reversed(block(200.1, 222, "bbbb00002000")));
    auto p = parse(lines);
    ASSERT_EQ(p.faults.size(), 2u);
    expectBlock(p.faults[0], 1, 111, 0xaaaa00001000u);
    expectBlock(p.faults[1], 12, 222, 0xbbbb00002000u);
    EXPECT_TRUE(p.warnings.empty());
}

}  // namespace
}  // namespace gpufault
