#include <gtest/gtest.h>

#include <functional>
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

TEST(RocrFault, AGarbledOrCutAddressIsNotStoredAndIsWarned) {
    auto m = makeRocrFaultMatcher();
    auto out = testing::feedMatcher(
        *m,
        {// a NUL inside the address: `0x7a58` is all that parses, `%s.` does not follow
         std::string("Memory access fault by GPU node-1 (Agent handle: 0x59aef28eb440) on address "
                     "0x7a58\0""095227000. Reason: Unknown.",
                     110),
         // the line cut before the address (and its newline written later)
         "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on addr",
         // the line ends right after the address: stored, said to be maybe cut
         "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address 0x7f00"});
    ASSERT_EQ(out.evidences.size(), 3u);
    EXPECT_FALSE(out.evidences[0].address);
    EXPECT_EQ(out.evidences[0].reason, "Unknown");
    EXPECT_FALSE(out.evidences[1].address);
    EXPECT_EQ(out.evidences[2].address, 0x7f00u);
    ASSERT_EQ(out.warnings.size(), 3u);
    EXPECT_EQ(out.warnings[0].line, 1u);
    EXPECT_NE(out.warnings[0].message.find("`0x7a58\\x00095227000. Reason: Unknown.` is not"),
              std::string::npos)
        << out.warnings[0].message;
    EXPECT_EQ(out.warnings[1].line, 2u);
    EXPECT_NE(out.warnings[1].message.find("without ` on address `"), std::string::npos);
    EXPECT_EQ(out.warnings[2].line, 3u);
    EXPECT_NE(out.warnings[2].message.find("ends right after its address 0x7f00: it may be cut"),
              std::string::npos);
}

// A line cut inside `(may not be exact address)`: the address before it is whole, and not
// exact (hostile review 23, L3: it was dropped as garbled).
TEST(RocrFault, ALineCutInsideMayNotBeExactKeepsTheAddress) {
    auto m = makeRocrFaultMatcher();
    auto out = testing::feedMatcher(*m,
                                    {"Memory access fault by GPU node-2 (Agent handle: "
                                     "0x5604e1a0c1d0) on address 0x7f1a2b3c4000(may not be ex"});
    ASSERT_EQ(out.evidences.size(), 1u);
    EXPECT_EQ(out.evidences[0].address, 0x7f1a2b3c4000ull);
    EXPECT_EQ(out.evidences[0].address_exact, false);
    ASSERT_EQ(out.warnings.size(), 1u);
    // with a blank before it (acceptance audit 125: no address)
    auto spaced =
        run({"Memory access fault by GPU node-2 (Agent handle: 0x5604e1a0c1d0) on "
             "address 0x7f1a2b3c4000 (may not be exact address). Reason: Unknown."});
    ASSERT_EQ(spaced.size(), 1u);
    EXPECT_EQ(spaced[0].address, 0x7f1a2b3c4000ull);
    EXPECT_EQ(spaced[0].address_exact, false);
    EXPECT_NE(out.warnings[0].message.find("cut after its address 0x7f1a2b3c4000"),
              std::string::npos);
}

TEST(RocrFault, ANullAgentHandleIsNil) {
    auto ev = run({"Memory access fault by GPU node-1 (Agent handle: (nil)) on address "
                   "0x7f1a2b3c4000. Reason: Unknown."});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].attr("agent_handle"), "(nil)");
    EXPECT_EQ(ev[0].gpu_node, 1);
    EXPECT_EQ(ev[0].address, 0x7f1a2b3c4000u);
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
             "Reason: A future reason. With two sentences.",
             // ROCm/pytorch#797's title: a reason not in the table (a typo), the shell's
             // message glued on after its period
             "Memory access fault by GPU node-2 (Agent handle: 0x56468ab3bb50) on address "
             "0x7fe55fb03000. Reason: Page not present or supervisor p rivilege.Aborted (core "
             "dumped)"});
    ASSERT_EQ(ev.size(), 4u);
    EXPECT_EQ(ev[0].gpu_node, 4294967295);
    EXPECT_EQ(ev[0].attr("agent_handle"), "0xFFFFFFFFFFFF");
    EXPECT_EQ(ev[0].address, 0xffffffffffffffffu);
    EXPECT_EQ(ev[0].address_exact, true);
    EXPECT_EQ(ev[0].reason, "Host access only");
    EXPECT_EQ(ev[1].address, 0x200000u);
    EXPECT_EQ(ev[1].reason, "Generic hang recovery");
    EXPECT_EQ(ev[2].reason, "A future reason. With two sentences");  // not in the table: kept
    EXPECT_EQ(ev[3].reason, "Page not present or supervisor p rivilege");
    EXPECT_EQ(ev[3].address, 0x7fe55fb03000u);
}

TEST(RocrFault, ALineWrappedBeforeItsAddressTakesTheNextLine) {
    // A comment block quoting the message, wrapped after `on address` (jtesta/rainbowcrackalack
    // crackalack_lookup.c); a line cut there with nothing after it keeps no address.
    auto ev = run({" *   Memory access fault by GPU node-2 (Agent handle: 0x1bb5e00) on address",
                   " *   0x7f4c80b27000. Reason: Page not present or supervisor privilege.",
                   "Memory access fault by GPU node-1 (Agent handle: 0x1) on address",
                   "something else",
                   "Memory access fault by GPU node-3 (Agent handle: 0x1) on address"});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].line, 1u);
    EXPECT_EQ(ev[0].gpu_node, 2);
    EXPECT_EQ(ev[0].address, 0x7f4c80b27000u);
    EXPECT_EQ(ev[0].address_exact, true);
    EXPECT_EQ(ev[0].reason, "Page not present or supervisor privilege");
    EXPECT_EQ(ev[1].line, 3u);
    EXPECT_FALSE(ev[1].address);
    EXPECT_EQ(ev[2].line, 5u);  // at the end of the stream
    EXPECT_EQ(ev[2].gpu_node, 3);
    EXPECT_FALSE(ev[2].address);
    // Hostile review 143: one rest at most (a chain of `0x1 on address` lines was joined
    // without end, quadratic), and only an address with nothing but `.`/`(` after it (a next
    // ROCr line that starts with a number is its own record).
    std::vector<std::string> chain{
        "Memory access fault by GPU node-1 (Agent handle: 0x5) on address"};
    for (int i = 0; i < 1000; ++i) chain.push_back("0x1 on address");
    chain.push_back("0x7f0000001000. Reason: Page not present or supervisor privilege.");
    auto c = run(chain);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_FALSE(c[0].address);
    EXPECT_EQ(c[0].raw.find("0x1 on address\n0x1"), std::string::npos);  // one rest joined
    auto two = run({"Memory access fault by GPU node-1 (Agent handle: 0x1) on address",
                    "0x7f0000001000 Memory access fault by GPU node-2 (Agent handle: 0x2) on "
                    "address 0x2000. Reason: Unknown."});
    ASSERT_EQ(two.size(), 2u);
    EXPECT_FALSE(two[0].address);
    EXPECT_FALSE(two[0].reason);
    EXPECT_EQ(two[1].gpu_node, 2);
    EXPECT_EQ(two[1].address, 0x2000u);
    EXPECT_EQ(two[1].reason, "Unknown");
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

// ROCm 2.x's debug agent: the node on the header line (`Memory access fault at GPU Node: N`).
TEST(RocrFault, EarliestDebugAgentNamesItsNodeOnTheHeader) {
    auto ev = run({"Memory access fault at GPU Node: 2",
                   "Address: 0x12345xxx (page not present;write access to a read-only page;)",
                   "Aborted (core dumped)"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, Kind::RocrMemoryFault);
    EXPECT_EQ(ev[0].line, 1u);
    EXPECT_EQ(ev[0].gpu_node, 2);
    EXPECT_EQ(ev[0].address, 0x12345000u);
    EXPECT_EQ(ev[0].address_exact, false);
    EXPECT_EQ(ev[0].reason, "page not present;write access to a read-only page");
    EXPECT_FALSE(ev[0].attr("agent"));
    // `at GPU` in other text is nothing
    EXPECT_TRUE(run({"Looking at GPU Node: 2 topology", "Address: 0x1000 (x)"}).empty());
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

// Debug agent, current generation (FORMATS.md §9.7, rocr_debug_agent print_wavefronts): the
// stopped wave names the kernel of the ROCr line after it. Lines from the format strings.

CollectSink runSink(const std::vector<std::string>& lines,
                    const std::function<void(LogLine&)>& tweak = {}) {
    auto m = makeRocrFaultMatcher();
    return testing::feedMatcher(*m, lines, tweak);
}

const char* kRocrLine =
    "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address "
    "0x7f3a4e900000. Reason: Page not present or supervisor privilege.";

// The constructed example of §9.7, the wave's dump between it and ROCr's line.
TEST(RocrFault, DebugAgentWaveNamesKernelOfRocrLine) {
    auto s = runSink({
        "--------------------------------------------------------",
        "wave_1: pc=0x7f3a5c401b3c (kernel_code_entry=0x7f3a5c401a00 "
        "<vector_add_memory_fault(int*, int*, int*)>, kernargs=0x7f3a4e800000) (stopped, "
        "reason: MEMORY_VIOLATION)",
        "",
        "general registers:",
        "            s0: 4e800000            s1: 00007f3a            s2: 00000000",
        "            v0: [0] 00000003 [1] 00000004 [2] 00000005",
        "",
        "Local memory content (1024 bytes):",
        "    0x0000: 22222222 11111111 00000000 00000000 00000000 00000000 00000000 00000000",
        "",
        "Disassembly for function vector_add_memory_fault(int*, int*, int*):",
        "    code object: file:///opt/app/bin/vadd#offset=16384&size=12808",
        "    loaded at: [0x7f3a5c400000-0x7f3a5c403208]",
        "    0x7f3a5c401b30 <+304>:    global_store_dword v[2:3], v0, off",
        " => 0x7f3a5c401b3c <+316>:    s_endpgm",
        "    ...",
        "",
        "End of disassembly.",
        kRocrLine,
    });
    ASSERT_EQ(s.evidences.size(), 1u);
    const Evidence& e = s.evidences[0];
    EXPECT_EQ(e.kind, Kind::RocrMemoryFault);
    EXPECT_EQ(e.line, 19u);
    EXPECT_EQ(e.address, 0x7f3a4e900000u);
    EXPECT_EQ(e.kernel, "vector_add_memory_fault(int*, int*, int*)");
    EXPECT_EQ(e.attr("pc"), "0x7f3a5c401b3c");
    EXPECT_EQ(e.attr("kernel_code_entry"), "0x7f3a5c401a00");
    EXPECT_EQ(e.attr("kernargs"), "0x7f3a4e800000");
    EXPECT_EQ(e.attr("stop_reason"), "MEMORY_VIOLATION");
    EXPECT_EQ(e.raw, kRocrLine);  // the record is the ROCr line
    EXPECT_TRUE(s.warnings.empty());
}

// A symbol with `<`, `>`, `, ` and `)` in it (a template), reasons joined with `|`.
TEST(RocrFault, DebugAgentTemplateSymbolAndJoinedReasons) {
    auto s = runSink({
        "wave_250: pc=0x7ff734dcbf3c (kernel_code_entry=0x7ff736b8c040 <void "
        "at::native::index_kernel<128, 4>(at::TensorIteratorBase&, long)>, "
        "kernargs=0x7ffb61f00000) (stopped, reason: WATCHPOINT|ADDRESS_ERROR)",
        kRocrLine,
    });
    ASSERT_EQ(s.evidences.size(), 1u);
    EXPECT_EQ(s.evidences[0].kernel,
              "void at::native::index_kernel<128, 4>(at::TensorIteratorBase&, long)");
    EXPECT_EQ(s.evidences[0].attr("stop_reason"), "WATCHPOINT|ADDRESS_ERROR");
    EXPECT_EQ(s.evidences[0].attr("kernargs"), "0x7ffb61f00000");
}

// Older agents print no kernel_code_entry part; `not available` when the agent has no code
// object for the pc: a pc and a reason, no kernel.
TEST(RocrFault, DebugAgentWaveWithoutKernel) {
    auto old = runSink({"wave_0: pc=0x7ff77e253408 (stopped, reason: MEMORY_VIOLATION)  ",
                        "",
                        "scalar registers:",
                        kRocrLine});
    ASSERT_EQ(old.evidences.size(), 1u);
    EXPECT_FALSE(old.evidences[0].kernel);
    EXPECT_EQ(old.evidences[0].attr("pc"), "0x7ff77e253408");
    EXPECT_EQ(old.evidences[0].attr("stop_reason"), "MEMORY_VIOLATION");
    EXPECT_FALSE(old.evidences[0].attr("kernel_code_entry"));
    EXPECT_FALSE(old.evidences[0].attr("kernargs"));

    auto na =
        runSink({"wave_7: pc=0x7f00001000 (kernel_code_entry=not available) (stopped, "
                 "reason: MEMORY_VIOLATION)",
                 kRocrLine});
    ASSERT_EQ(na.evidences.size(), 1u);
    EXPECT_FALSE(na.evidences[0].kernel);
    EXPECT_EQ(na.evidences[0].attr("pc"), "0x7f00001000");
    EXPECT_FALSE(na.evidences[0].attr("kernel_code_entry"));

    auto nosym =
        runSink({"wave_7: pc=0x7f00001010 (kernel_code_entry=0x7f00001000, "
                 "kernargs=0x7f00200000) (stopped, reason: MEMORY_VIOLATION)",
                 kRocrLine});
    ASSERT_EQ(nosym.evidences.size(), 1u);
    EXPECT_FALSE(nosym.evidences[0].kernel);
    EXPECT_EQ(nosym.evidences[0].attr("kernel_code_entry"), "0x7f00001000");
    EXPECT_EQ(nosym.evidences[0].attr("kernargs"), "0x7f00200000");
}

// Waves not stopped for a memory fault (a breakpoint, running waves of --all) name nothing.
TEST(RocrFault, DebugAgentOtherStopsNameNothing) {
    auto s = runSink({
        "wave_2: pc=0x7f10 (kernel_code_entry=0x7f00 <k1()>, kernargs=0x7e00) (stopped, "
        "reason: BREAKPOINT|SINGLE_STEP)",
        "wave_3: pc=0x7f10 (kernel_code_entry=0x7f00 <k1()>, kernargs=0x7e00) (running)",
        "wave_4: pc=0x7f10 (stopped, reason: ASSERT_TRAP)",
        "wave_5: pc=0x7f10 (kernel_code_entry=0x7f00 <k1()>, kernargs=0x7e00) (stopped, "
        "reason: MEMORY_VIOLATIONS)",  // not the name
        kRocrLine,
    });
    ASSERT_EQ(s.evidences.size(), 1u);
    EXPECT_FALSE(s.evidences[0].kernel);
    EXPECT_FALSE(s.evidences[0].attr("pc"));
    EXPECT_TRUE(s.warnings.empty());
}

// AMD_LOG_LEVEL lines of the process (pid-prefixed) around the dump do not part the wave from
// its ROCr line; of several waves the first gives the fields, the kernel is theirs.
TEST(RocrFault, DebugAgentAmongPidPrefixedLogLines) {
    auto s = runSink(
        {
            ":3:rocvirtual.cpp            :3190: 0043127734 us: [pid:4242  tid:0x7f0a1b2c3d40] "
            "ShaderName : _Z3addPiS_S_",
            "wave_1: pc=0x7f3a5c401b3c (kernel_code_entry=0x7f3a5c401a00 <add(int*, int*, "
            "int*)>, kernargs=0x7f3a4e800000) (stopped, reason: MEMORY_VIOLATION)",
            ":1:rocdevice.cpp             :3059: 0043127800 us: [pid:4242  tid:0x7f0a1b2c3e00] "
            "Device::callbackQueue aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_"
            "VIOLATION: The agent attempted to access memory beyond the largest legal address. "
            "code: 0x29",
            "wave_2: pc=0x7f3a5c401b40 (kernel_code_entry=0x7f3a5c401a00 <add(int*, int*, "
            "int*)>, kernargs=0x7f3a4e800000) (stopped, reason: MEMORY_VIOLATION)",
            kRocrLine,
        },
        [](LogLine& l) {
            if (l.text.starts_with(":")) {  // what the decoder gives for a prefixed line
                l.amd_level = 3;
                l.log_pid = 4242;
            }
        });
    ASSERT_EQ(s.evidences.size(), 1u);
    EXPECT_EQ(s.evidences[0].kernel, "add(int*, int*, int*)");
    EXPECT_EQ(s.evidences[0].attr("pc"), "0x7f3a5c401b3c");
    EXPECT_TRUE(s.warnings.empty());
}

// Waves and a ROCr line that state different pids (journald `ident[PID]`) do not join; the
// waves are then reported by a warning. The same pid joins.
TEST(RocrFault, DebugAgentPidMustAgree) {
    const std::vector<std::string> lines = {
        "wave_1: pc=0x7f10 (kernel_code_entry=0x7f00 <k1()>, kernargs=0x7e00) (stopped, "
        "reason: MEMORY_VIOLATION)",
        kRocrLine};
    auto other = runSink(lines, [](LogLine& l) { l.ident_pid = l.line == 1 ? 41 : 42; });
    ASSERT_EQ(other.evidences.size(), 1u);
    EXPECT_FALSE(other.evidences[0].kernel);
    EXPECT_FALSE(other.evidences[0].attr("pc"));
    ASSERT_EQ(other.warnings.size(), 1u);
    EXPECT_EQ(other.warnings[0].line, 1u);
    EXPECT_NE(other.warnings[0].message.find("k1()"), std::string::npos);

    auto same = runSink(lines, [](LogLine& l) { l.ident_pid = 42; });
    ASSERT_EQ(same.evidences.size(), 1u);
    EXPECT_EQ(same.evidences[0].kernel, "k1()");
    EXPECT_TRUE(same.warnings.empty());
}

// A wave dump with no ROCr line after it (the process killed first) makes no record (no kind
// for it) but a warning naming wave, pc and kernel; so does one further than kWaveToFault
// (8192) lines from the ROCr line, which then names no kernel.
TEST(RocrFault, DebugAgentWavesWithoutRocrLineWarn) {
    auto s =
        runSink({"wave_5: pc=0x7f3a5c401b3c (kernel_code_entry=0x7f3a5c401a00 <k2(float*)>, "
                 "kernargs=0x7f3a4e800000) (stopped, reason: MEMORY_VIOLATION)",
                 "wave_6: pc=0x7f3a5c401b40 (kernel_code_entry=0x7f3a5c401a00 <k2(float*)>, "
                 "kernargs=0x7f3a4e800000) (stopped, reason: MEMORY_VIOLATION)",
                 "Aborted (core dumped)"});
    EXPECT_TRUE(s.evidences.empty());
    ASSERT_EQ(s.warnings.size(), 1u);
    EXPECT_EQ(s.warnings[0].line, 1u);
    EXPECT_EQ(s.warnings[0].message,
              "debug agent: wave_5 (pc=0x7f3a5c401b3c, stopped, reason: MEMORY_VIOLATION) in "
              "k2(float*) and 1 more stopped wave(s): no ROCr `Memory access fault` line "
              "followed before the end of the stream, so no fault record names it");

    std::vector<std::string> far(8193, "            v0: [0] 00000003 [1] 00000004");
    far[0] =
        "wave_5: pc=0x7f10 (kernel_code_entry=0x7f00 <k2(float*)>, kernargs=0x7e00) "
        "(stopped, reason: MEMORY_VIOLATION)";
    far.push_back(kRocrLine);  // line 8194: 8193 lines after the wave
    auto f = runSink(far);
    ASSERT_EQ(f.evidences.size(), 1u);
    EXPECT_FALSE(f.evidences[0].kernel);
    ASSERT_EQ(f.warnings.size(), 1u);
    EXPECT_NE(f.warnings[0].message.find("within 8192 lines"), std::string::npos);
    far.pop_back();
    far.back() = kRocrLine;  // line 8193: 8192 lines after it, still the wave's
    auto near = runSink(far);
    ASSERT_EQ(near.evidences.size(), 1u);
    EXPECT_EQ(near.evidences[0].kernel, "k2(float*)");
}

// Waves of different kernels before one ROCr line: which one faulted is not known.
TEST(RocrFault, DebugAgentWavesOfDifferentKernelsNameNone) {
    auto s =
        runSink({"wave_1: pc=0x7f10 (kernel_code_entry=0x7f00 <k1()>, kernargs=0x7e00) "
                 "(stopped, reason: MEMORY_VIOLATION)",
                 "wave_2: pc=0x8f10 (kernel_code_entry=0x8f00 <k2()>, kernargs=0x8e00) "
                 "(stopped, reason: MEMORY_VIOLATION)",
                 kRocrLine});
    ASSERT_EQ(s.evidences.size(), 1u);
    EXPECT_FALSE(s.evidences[0].kernel);
    EXPECT_EQ(s.evidences[0].attr("pc"), "0x7f10");
    ASSERT_EQ(s.warnings.size(), 1u);
    EXPECT_NE(s.warnings[0].message.find("(k1(), k2())"), std::string::npos);
}

// The old agent's block (README sample, §9.7): one rocr_memory_fault of the masked address; its
// wavefront summary and `Faulty PC offset:` add nothing (the old agent names no kernel).
TEST(RocrFault, OldDebugAgentBlockNamesNoKernel) {
    auto s = runSink({"Memory access fault by GPU agent: AMD gfx900",
                      "Node: 1",
                      "Address: 0x18DB4xxx (page not present;write access to a read-only page;)",
                      "",
                      "64 wavefront(s) found in XNACK error state @PC: 0x0000001100E01310",
                      "printing the first one:",
                      "   EXEC: 0xFFFFFFFFFFFFFFFF",
                      "Faulty Code Object:",
                      "Faulty PC offset: 1310"});
    ASSERT_EQ(s.evidences.size(), 1u);
    EXPECT_EQ(s.evidences[0].address, 0x18DB4000u);
    EXPECT_FALSE(s.evidences[0].kernel);
    EXPECT_FALSE(s.evidences[0].attr("pc"));
    EXPECT_TRUE(s.warnings.empty());
}

TEST(RocrFault, UnrelatedLinesGiveNothing) {
    EXPECT_TRUE(run({"GPU core dump created: gpucore.41237",
                     "Aborted (core dumped)",
                     "Memory access fault by the CPU"})
                    .empty());
}

}  // namespace
}  // namespace gpufault
