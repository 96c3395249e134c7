#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/runtime_log/rocr_fault.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

std::vector<Evidence> run(const std::vector<std::string>& lines) {
    auto m = makeRocrFaultMatcher();
    return testing::feedMatcher(*m, lines).evidences;
}

// Constructed from "Memory access fault by GPU node-%u (Agent handle: %p) on address %p%s.
// Reason: %s.\n" (FORMATS.md §2.1).

TEST(RocrFault, CurrentFormat) {
    auto ev =
        run({"Memory access fault by GPU node-2 (Agent handle: 0x5604e1a0c1d0) on address "
             "0x7f1a2b3c4000. Reason: Write access to a read-only page."});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, Kind::RocrMemoryFault);
    EXPECT_EQ(ev[0].vendor, "amd");
    EXPECT_EQ(ev[0].line, 1u);
    EXPECT_EQ(ev[0].gpu_node, 2);
    EXPECT_EQ(ev[0].address, 0x7f1a2b3c4000u);
    EXPECT_EQ(ev[0].address_exact, true);
    EXPECT_EQ(ev[0].reason, "Write access to a read-only page");
    EXPECT_EQ(ev[0].attr("agent_handle"), "0x5604e1a0c1d0");
    EXPECT_FALSE(ev[0].pid);
}

TEST(RocrFault, MayNotBeExactAddress) {
    auto ev =
        run({"Memory access fault by GPU node-2 (Agent handle: 0x5604e1a0c1d0) on address "
             "0x7f1a2b3c4000(may not be exact address). Reason: Page not present or "
             "supervisor privilege."});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].address, 0x7f1a2b3c4000u);
    EXPECT_EQ(ev[0].address_exact, false);
    EXPECT_EQ(ev[0].reason, "Page not present or supervisor privilege");
}

// The same format with values no fixture has (node-%u at UINT_MAX, an upper-case %p from
// another libc, the top address) and what a stream puts after `%s.`: a colour reset of a
// wrapper that paints stderr, the shell's `Aborted` glued on (no newline flushed between).
TEST(RocrFault, ReasonEndsAtRocrsPeriod) {
    auto ev =
        run({"\x1b[31mMemory access fault by GPU node-4294967295 (Agent handle: "
             "0xFFFFFFFFFFFF) on address 0xffffffffffffffff. Reason: Host access "
             "only.\x1b[0m",
             "Memory access fault by GPU node-3 (Agent handle: 0x1) on address 0x200000. "
             "Reason: Generic hang recovery.Aborted (core dumped)",
             "Memory access fault by GPU node-3 (Agent handle: 0x1) on address 0x200000. "
             "Reason: A future reason. With two sentences."});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].gpu_node, 4294967295);
    EXPECT_EQ(ev[0].attr("agent_handle"), "0xFFFFFFFFFFFF");
    EXPECT_EQ(ev[0].address, 0xffffffffffffffffu);
    EXPECT_EQ(ev[0].address_exact, true);
    EXPECT_EQ(ev[0].reason, "Host access only");
    EXPECT_EQ(ev[1].address, 0x200000u);
    EXPECT_EQ(ev[1].reason, "Generic hang recovery");
    EXPECT_EQ(ev[2].reason, "A future reason. With two sentences");  // not in the table: kept
}

TEST(RocrFault, NilAddressAndNoAgentHandleRocm17LowerCaseUnknown) {
    auto ev = run({"Memory access fault by GPU node-2 on address (nil). Reason: unknown",
                   "Memory access fault by GPU node-1 on address 0x1000. Reason: ECC failure (if "
                   "supported by HW)."});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].gpu_node, 2);
    EXPECT_EQ(ev[0].address, 0u);
    EXPECT_EQ(ev[0].address_exact, true);
    EXPECT_EQ(ev[0].reason, "unknown");
    EXPECT_FALSE(ev[0].attr("agent_handle"));
    EXPECT_EQ(ev[1].address, 0x1000u);
    EXPECT_EQ(ev[1].reason, "ECC failure (if supported by HW)");
}

TEST(RocrFault, AnchorAnywhereInLine) {
    auto ev =
        run({"2025-01-01 12:00:00 INFO - Memory access fault by GPU node-7 (Agent handle: "
             "0x12dd920) on address 0x7f8d61545000. Reason: Unknown.   "});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].gpu_node, 7);
    EXPECT_EQ(ev[0].reason, "Unknown");
}

TEST(RocrFault, SplitReasonCompletedFromTable) {
    // Fixture 059: a reporter split the line and prefixed every line with `\\ `.
    auto ev =
        run({"\\\\ error messeage: Memory access fault by GPU node-10 (Agent handle: "
             "0x7538750) on address (nil). Reason: Page not present or ",
             "\\\\ supervisor privilege.",
             "\\\\ Aborted (core dumped)"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].gpu_node, 10);
    EXPECT_EQ(ev[0].address, 0u);
    EXPECT_EQ(ev[0].reason, "Page not present or supervisor privilege");
    EXPECT_EQ(ev[0].line, 1u);
    EXPECT_NE(ev[0].raw.find("supervisor privilege."), std::string::npos);
}

TEST(RocrFault, SplitReasonNotGuessedFromOtherText) {
    auto ev =
        run({"Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x2000. "
             "Reason: Page not present or ",
             "Memory access fault by GPU node-3 (Agent handle: 0x2) on address 0x3000. Reason: "
             "Host access only."});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].reason, "Page not present or");  // as printed, not completed
    EXPECT_EQ(ev[1].gpu_node, 3);
    EXPECT_EQ(ev[1].reason, "Host access only");
}

TEST(RocrFault, ReasonOnTheNextLineOnlyFromTable) {
    auto ev =
        run({"Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x2000. Reason: ",
             "> Unknown.",
             "Memory access fault by GPU node-2 (Agent handle: 0x1) on address 0x3000. Reason: ",
             "Aborted (core dumped)"});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].reason, "Unknown");
    EXPECT_EQ(ev[1].gpu_node, 2);
    EXPECT_FALSE(ev[1].reason);
}

TEST(RocrFault, CutLineKeepsWhatItHas) {
    auto ev = run({"Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on addr"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].gpu_node, 1);
    EXPECT_FALSE(ev[0].address);
    EXPECT_FALSE(ev[0].address_exact);
    EXPECT_FALSE(ev[0].reason);
}

TEST(RocrFault, OldDebugAgentMaskedAddress) {
    // HSAHandleMemoryFault.cpp: "\n" + three lines, page index in upper-case hex + "xxx".
    auto ev = run({"",
                   "Memory access fault by GPU agent: AMD gfx900",
                   "Node: 1",
                   "Address: 0x18DB4xxx (page not present;write access to a read-only page;)",
                   "",
                   "64 wavefront(s) found in XNACK error state @PC: 0x0000001100E01310"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, Kind::RocrMemoryFault);
    EXPECT_EQ(ev[0].line, 2u);
    EXPECT_EQ(ev[0].gpu_node, 1);
    EXPECT_EQ(ev[0].address, 0x18DB4000u);
    EXPECT_EQ(ev[0].address_exact, false);
    EXPECT_EQ(ev[0].reason, "page not present;write access to a read-only page");
    EXPECT_EQ(ev[0].attr("agent"), "AMD gfx900");
}

TEST(RocrFault, DebugAgentBlockCutAfterNode) {
    auto ev = run({"Memory access fault by GPU agent: AMD gfx906", "Node: 2", "something else"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].gpu_node, 2);
    EXPECT_FALSE(ev[0].address);
}

TEST(RocrFault, HwExceptionIsQueueError) {
    auto ev = run({"HW Exception by GPU node-1 (Agent handle: 0x55d5b2d4a780) reason :GPU Hang"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, Kind::HsaQueueError);
    EXPECT_EQ(ev[0].gpu_node, 1);
    EXPECT_EQ(ev[0].reason, "GPU Hang");
    EXPECT_FALSE(ev[0].address);
}

TEST(RocrFault, RealLinesFromFixtures) {
    // 117: trailing spaces after the period; 080: CRI-wrapped (decoder strips; anchor anywhere).
    auto ev =
        run({"Memory access fault by GPU node-2 (Agent handle: 0x560f8742a5e0) on address "
             "0x150c73c10000. Reason: Unknown.                   ",
             "> 2026-08-31T17:43:36.6703347Z stderr F Memory access fault by GPU node-6 (Agent "
             "handle: 0x501def90) on address 0x7f5e50c00000. Reason: Unknown."});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].address, 0x150c73c10000u);
    EXPECT_EQ(ev[0].reason, "Unknown");
    EXPECT_EQ(ev[1].gpu_node, 6);
    EXPECT_EQ(ev[1].address, 0x7f5e50c00000u);
}

TEST(RocrFault, UnrelatedLinesGiveNothing) {
    EXPECT_TRUE(run({"GPU core dump created: gpucore.41237",
                     "Aborted (core dumped)",
                     "Memory access fault by the CPU"})
                    .empty());
}

}  // namespace
}  // namespace gpufault
