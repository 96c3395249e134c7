// `report` on incidents whose main evidence is not a ROCr fault (a compute-sanitizer report, a
// core) and what it states of the GPU target and versions; `ingest`'s hint for pasted crash
// text, `stack` given a path, `faults`' id columns; through the built binary on real inputs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/core_ingest.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

namespace fs = std::filesystem;
const std::string kReal = GPUFAULT_SOURCE_DIR "/tests/data/real/";
const std::string k012 = kReal + "012-llamabench-rocr-fault-plus-journalctl.txt";
const std::string k025 = kReal + "025-compute-sanitizer-oob-nearest-allocation.txt";

/// A fake sysfs with one amdgpu KFD node (node 1, at PCI location `location`: bus << 8 | device
/// << 3 | function, 768 = 0000:03:00.0) of gfx_target_version `version` and the amdgpu module
/// version `driver`.
std::string fakeSysfs(const TempDir& t,
                      const std::string& version,
                      const std::string& driver,
                      const std::string& location = "768") {
    std::string sys = t.file("sys");
    auto put = [](const std::string& path, const std::string& text) {
        fs::create_directories(fs::path(path).parent_path());
        writeFile(path, text);
    };
    put(sys + "/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 16\nsimd_count 0\n");
    put(sys + "/class/kfd/kfd/topology/nodes/1/properties",
        "simd_count 80\ngfx_target_version " + version + "\nlocation_id " + location +
            "\ndomain 0\n");
    put(sys + "/module/amdgpu/version", driver + "\n");
    return sys;
}

TEST(CliReport, SanitizerReportNamesItsKernelAndSaysWhatIsUnknown) {
    TempDir t;
    auto in = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", k025});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_NE(in.out.find(": 6 lines, 1 evidence (1 sanitizer_report), 0 dispatches (0 kept), 0 "
                          "operands, 0 warnings, "),
              std::string::npos)
        << in.out;
    EXPECT_NE(in.out.find("\n1 incident in "), std::string::npos) << in.out;
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(
        r.out.starts_with("## NVIDIA GPU invalid memory access at 0x00007f71b9e01360 "
                          "(compute-sanitizer report)\n\n"))
        << r.out;
    EXPECT_NE(r.out.find("- Evidence: 1 record: sanitizer_report\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("- compute-sanitizer: 1 B after the nearest allocation `0x7f71b9e00a00` "
                         "of 2400 B\n"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("Kernel compute-sanitizer caught the access in: `col_kernel(const "
                         "unsigned int *, unsigned int *, unsigned int, unsigned int, int, "
                         "float)`\n"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("Last dispatched kernel"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("AMD_LOG_LEVEL"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("### Target and versions\n\n- GPU target: unknown (no record names it: "
                         "add the `nvidia-smi -q` output (compute capability))\n- Driver: "
                         "unknown ("),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("- GPU runtime: unknown (no core of this incident maps one: add the "
                         "CUDA version"),
              std::string::npos)
        << r.out;
    auto j = nlohmann::json::parse(
        run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1", "--format", "json"}).out);
    EXPECT_EQ(j["environment"]["gpu_target"], nlohmann::json::array());
    EXPECT_EQ(j["environment"]["runtime"], nlohmann::json::array());
}

TEST(CliReport, CoreIsTheCrashOfItsProcessWithTheDiagnosedTarget) {
    TempDir t;
    std::string sys = fakeSysfs(t, "100300", "6.10.5");  // gfx1030
    auto a = coreIngestArgs(t.file("db"), {kCoreDir + "core"});
    a.insert(a.end(), {"--sysfs-root", sys, "--proc-root", t.file("proc")});
    auto in = run(a);
    ASSERT_EQ(in.status, 0) << in.err;
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.out.starts_with(
        "## Crash of crashmain (pid 14046): SIGSEGV at 0x000000000000008a (from its core)\n\n"))
        << r.out;
    EXPECT_EQ(r.out.find("memory access fault"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("No record names a GPU kernel: the core (its stack below) shows the host "
                         "side of the crash."),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("- GPU target: `gfx1030` (the device the diagnosis checked"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("- GPU runtime: unknown (no core of this incident maps one: add the ROCm "
                         "version"),
              std::string::npos)
        << r.out;
}

TEST(CliReport, RecordedDeviceGivesTargetAndDriverOfTheFaultsNode) {
    TempDir t;
    // gfx1101 at 0000:0a:00.0, the PCI address of the fixture's amdgpu record (and node 1, its
    // ROCr record's node-1).
    std::string sys = fakeSysfs(t, "110001", "6.10.5", "2560");
    auto dev = run({GPUFAULT_BIN,
                    "--db",
                    t.file("db"),
                    "devices",
                    "--record",
                    "--sysfs-root",
                    sys,
                    "--proc-root",
                    t.file("proc")});
    ASSERT_EQ(dev.status, 0) << dev.err << dev.out;
    auto in = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", k012});
    ASSERT_EQ(in.status, 0) << in.err;
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(
        r.out.starts_with("## AMD GPU memory access fault at 0x00007a5895227000 (Page not "
                          "present or supervisor privilege)\n"))
        << r.out;
    char h[256] = {};
    ::gethostname(h, sizeof h - 1);
    std::string from =
        std::string("device 0000:0a:00.0 on ") + h + ", as gpufault devices --record stored it";
    EXPECT_NE(r.out.find("- GPU target: `gfx1101` (" + from + ")\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("- Driver: `amdgpu 6.10.5` (" + from + ")\n"), std::string::npos) << r.out;
    auto j = nlohmann::json::parse(
        run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1", "--format", "json"}).out);
    EXPECT_EQ(j["environment"]["gpu_target"][0]["value"], "gfx1101") << j.dump();
    EXPECT_EQ(j["environment"]["driver"][0]["value"], "amdgpu 6.10.5") << j.dump();
}

TEST(CliHints, PastedCoredumpctlTextGetsAHint) {
    TempDir t;
    writeFile(t.file("info.txt"),
              "           PID: 14046 (crashmain)\n"
              "        Signal: 11 (SEGV)\n"
              "                Stack trace of thread 14046:\n"
              "                #0  0x00007f5eb547916e _ZNK7fakeamd6Symbol15getDeviceKernelEi "
              "(libcrashlib.so + 0x116e)\n");
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("info.txt")});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(" 0 evidence, "), std::string::npos) << r.out;
    EXPECT_NE(r.err.find(t.file("info.txt") + ": this looks like `coredumpctl info` output"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("then `gpufault ingest FILE`"), std::string::npos) << r.err;

    writeFile(t.file("gdb.txt"),
              "#0  0x00007f5eb547916e in fakeamd::Symbol::getDeviceKernel(int) const () from "
              "/tmp/libcrashlib.so\n#1  0x00007f5eb547919b in ?? ()\n");
    r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("gdb.txt")});
    EXPECT_NE(r.err.find("this looks like a gdb backtrace"), std::string::npos) << r.err;
    // A log with records gets no hint, nor one with nothing crash-like.
    r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", k025});
    EXPECT_EQ(r.err, "");
}

// crashTextLike() reads the first 20 000 lines in 64 KiB reads, not line by line: a text on line
// 20 000 counts, one on line 20 001 does not; lines longer than the buffer, a last line without
// its newline and a '#' that does not start its line are read as getline() read them.
TEST(CliHints, CrashTextHintReadsTheFirst20000LinesAcrossBuffers) {
    TempDir t;
    std::string lines;
    for (int i = 0; i < 19999; ++i) lines += "line " + std::to_string(i) + " of plain text\n";
    auto hint = [&](const std::string& name, const std::string& text) {
        writeFile(t.file(name), text);
        auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file(name)});
        EXPECT_EQ(r.status, 0) << r.err;
        return r.err;
    };
    EXPECT_NE(hint("at20000.txt", lines + "Stack trace of thread 7:\n").find("coredumpctl info"),
              std::string::npos);
    EXPECT_EQ(hint("at20001.txt", lines + "one more\nStack trace of thread 7:\n"), "");
    EXPECT_NE(
        hint("long.txt",
             std::string(200000, 'x') + " dumped core." + std::string(100000, 'y') + "\nplain\n")
            .find("`journalctl` text of a crash"),
        std::string::npos);
    EXPECT_NE(hint("noeol.txt", "plain\n \t#3 0x5 in f").find("a gdb backtrace"),
              std::string::npos);
    EXPECT_EQ(hint("midline.txt", "x #0 0x5 in f\nplain\n"), "");
    // A gdb line wins over ` dumped core.` wherever either stands.
    EXPECT_NE(hint("both.txt", "a dumped core.\n#0 0x1 in f\n").find("a gdb backtrace"),
              std::string::npos);
}

TEST(CliHints, StackOfAPathSaysItTakesACoreId) {
    TempDir t;
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "stack", kCoreDir + "core"});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("stack takes a core id (see `gpufault cores`), not '" + kCoreDir +
                         "core'; to read a core file use `gpufault ingest FILE`"),
              std::string::npos)
        << r.err;
}

TEST(CliHints, FaultsPrintsTheIncidentIdShowTakesFirst) {
    TempDir t;
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", k012}).status, 0);
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "faults"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.out.starts_with("INCIDENT\tRECORD\tKIND\t")) << r.out;
    // Both records are of incident 1; the evidence ids are those `events` prints.
    EXPECT_NE(r.out.find("\n1\t1\trocr_memory_fault\t"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\n1\t2\tamdgpu_page_fault\t"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace gpufault::testing
