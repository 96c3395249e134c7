// The debug agent's stopped wave through the built binary (FORMATS.md §9.7): `gpufault ingest`
// then `events --json` shows the kernel on the ROCr fault record that follows the wave.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

TEST(CliDebugAgent, StoppedWaveNamesKernelOfRocrFault) {
    TempDir t;
    // A HIP program with AMD_LOG_LEVEL=3 (pid-prefixed lines) and the current debug agent on
    // stderr: its wave dump comes before ROCr's own line.
    writeFile(t.file("run.log"),
              ":3:rocvirtual.cpp           :3016: 301282651089 us: [pid:145680 "
              "tid:0x7fffed309180] ShaderName : _Z23vector_add_memory_faultPiS_S_\n"
              "--------------------------------------------------------\n"
              "wave_1: pc=0x7f3a5c401b3c (kernel_code_entry=0x7f3a5c401a00 "
              "<vector_add_memory_fault(int*, int*, int*)>, kernargs=0x7f3a4e800000) (stopped, "
              "reason: MEMORY_VIOLATION)\n"
              "\n"
              "general registers:\n"
              "            s0: 4e800000            s1: 00007f3a            s2: 00000000\n"
              "\n"
              "Disassembly for function vector_add_memory_fault(int*, int*, int*):\n"
              "    code object: file:///opt/app/bin/vadd#offset=16384&size=12808\n"
              "    loaded at: [0x7f3a5c400000-0x7f3a5c403208]\n"
              " => 0x7f3a5c401b3c <+316>:    s_endpgm\n"
              "\n"
              "End of disassembly.\n"
              "Memory access fault by GPU node-1 (Agent handle: 0x59aef28eb440) on address "
              "0x7f3a4e900000. Reason: Page not present or supervisor privilege.\n"
              "Aborted (core dumped)\n");
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("run.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    auto events = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json"}).out);
    ASSERT_EQ(events.size(), 1u);
    const auto& e = events[0];
    EXPECT_EQ(e["kind"], "rocr_memory_fault");
    EXPECT_EQ(e["line"], 14);
    EXPECT_EQ(e["address"], "0x7f3a4e900000");
    EXPECT_EQ(e["gpu_node"], 1);
    EXPECT_EQ(e["kernel"], "vector_add_memory_fault(int*, int*, int*)");
    EXPECT_EQ(e["attrs"]["pc"], "0x7f3a5c401b3c");
    EXPECT_EQ(e["attrs"]["kernel_code_entry"], "0x7f3a5c401a00");
    EXPECT_EQ(e["attrs"]["kernargs"], "0x7f3a4e800000");
    EXPECT_EQ(e["attrs"]["stop_reason"], "MEMORY_VIOLATION");
}

// Waves and no ROCr line (the process killed first): no record, a stored warning.
TEST(CliDebugAgent, WavesWithoutRocrLineWarn) {
    TempDir t;
    writeFile(t.file("run.log"),
              "wave_1: pc=0x7f3a5c401b3c (kernel_code_entry=0x7f3a5c401a00 <k(int*)>, "
              "kernargs=0x7f3a4e800000) (stopped, reason: MEMORY_VIOLATION)\n"
              "Killed\n");
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("run.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("0 evidence"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("1 warning,"), std::string::npos) << r.out;
    auto w = parseJsonLines(run({GPUFAULT_BIN,
                                 "--db",
                                 t.file("db"),
                                 "query",
                                 "SELECT line, message FROM warnings",
                                 "--json"})
                                .out);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(w[0]["line"], 1);
    EXPECT_NE(w[0]["message"].get<std::string>().find(
                  "debug agent: wave_1 (pc=0x7f3a5c401b3c, stopped, reason: MEMORY_VIOLATION) in "
                  "k(int*): no ROCr `Memory access fault` line followed"),
              std::string::npos)
        << w[0].dump();
    auto events = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json"}).out);
    EXPECT_TRUE(events.empty());
}

}  // namespace
}  // namespace gpufault::testing
