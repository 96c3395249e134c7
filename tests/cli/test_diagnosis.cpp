// Diagnosis on every crash, through the built binary: a real core of a process that had the
// seed-case binary mapped and died in amd::Symbol::getDeviceKernel, the fixture core (a stack
// through a kernel launch), the runtime's own hipErrorNoBinaryForGpu listing (a real log) and a
// rocBLAS kernel library error against a real directory; devices from fake sysfs trees.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/support/module_crash.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

namespace fs = std::filesystem;
const std::string kData = GPUFAULT_SOURCE_DIR "/tests/data/";

void put(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    writeFile(path, text);
}

/// A fake sysfs with one amdgpu KFD node (node 1, 0000:03:00.0) of `gfx_target_version`.
std::string fakeSysfs(const TempDir& t, const std::string& name, const std::string& version) {
    std::string sys = t.file(name);
    put(sys + "/class/kfd/kfd/topology/nodes/0/properties", "cpu_cores_count 16\nsimd_count 0\n");
    put(sys + "/class/kfd/kfd/topology/nodes/1/properties",
        "simd_count 80\ngfx_target_version " + version + "\nlocation_id 768\ndomain 0\n");
    return sys;
}

/// Runs gpu_module_crash on `module` in `dir` with cores enabled; the core's path, "" when the
/// kernel wrote none there (core_pattern is not a plain file name on this machine).
std::string makeCore(const std::string& dir, const std::string& module) {
    return crashModuleForCore(dir, module);
}

/// Each test's directory `t` (its store t/db), the seed-case binary copied there, and
/// `gpufault ingest` against a fake sysfs root and an empty /proc.
class CliDiagnosis : public ::testing::Test {
  protected:
    TempDir t;

    /// A copy of the seed-case binary (tests/data/binaries/seedcase) in `t`; its path.
    std::string seedModule() const {
        std::string module = t.file("multi_plus_one");
        writeFile(module, readFile(kData + "binaries/seedcase/multi_plus_one"));
        return module;
    }
    /// `gpufault --db DIR/db ingest ARGS… --sysfs-root SYS --proc-root DIR/proc FILE` (DIR: `t`
    /// unless given): this machine's GPUs from `sys` (a missing directory: none), no /proc.
    static ProcessResult ingest(const TempDir& dir,
                                const std::string& sys,
                                const std::string& file,
                                const std::vector<std::string>& args = {}) {
        std::vector<std::string> a{GPUFAULT_BIN, "--db", dir.file("db"), "ingest"};
        a.insert(a.end(), args.begin(), args.end());
        a.insert(a.end(), {"--sysfs-root", sys, "--proc-root", dir.file("proc"), file});
        return run(a);
    }
    ProcessResult ingest(const std::string& sys, const std::string& file) const {
        return ingest(t, sys, file);
    }
    /// `gpufault show N` on DIR/db (DIR: `t` unless given); its output.
    static std::string show(const TempDir& dir, int incident) {
        auto r = run({GPUFAULT_BIN, "--db", dir.file("db"), "show", std::to_string(incident)});
        EXPECT_EQ(r.status, 0) << r.err;
        return r.out;
    }
    std::string show(int incident) const { return show(t, incident); }
};

TEST_F(CliDiagnosis, CoreOfACrashInTheHipRuntimeNamesTheBundleWithoutCode) {
    std::string module = seedModule();
    std::string core = makeCore(t.path(), module);
    if (core.empty()) GTEST_SKIP() << "no core written (kernel.core_pattern is not 'core')";
    std::string sys = fakeSysfs(t, "sys", "100300");  // gfx1030
    auto r = ingest(sys, core);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("1 diagnosis (gpufault show INCIDENT)"), std::string::npos) << r.out;
    std::string out = show(1);
    // The diagnosis comes first, right after the title.
    std::string first = out.substr(out.find('\n') + 1);
    EXPECT_TRUE(
        first.starts_with("  DIAGNOSIS  SIGSEGV at 0x8a (null page) in the HIP runtime: "
                          "amd::Symbol::getDeviceKernel(int) const (gpu_module_crash + 0x"))
        << out;
    EXPECT_NE(out.find("(runtime_null_deref)\n  device     gfx1030 (0000:03:00.0): this machine, "
                       "its only GPU\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("  NO CODE    " + module +
                       ": bundle #4 at 0x12000: no code for gfx1030 (has gfx906); kernels: "
                       "gpu_bench_kernel(float*, int)\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("bundle #1"), std::string::npos) << out;  // the three others have code
    EXPECT_NE(out.find("  modules    "), std::string::npos) << out;

    // Nothing changed: diagnosing again keeps it.
    auto same = run({GPUFAULT_BIN, "--db", t.file("db"), "diagnose", "--sysfs-root", sys});
    EXPECT_EQ(same.status, 0) << same.err;
    EXPECT_EQ(same.out, "1 diagnosis in " + t.file("db") + "\n");

    // The same core from a gfx906 machine: every bundle has code. Recorded devices win over
    // this machine's sysfs, and a changed device recomputes the diagnosis (on the next ingest
    // or `gpufault diagnose`).
    std::string sys906 = fakeSysfs(t, "sys906", "90006");
    auto rec = run({GPUFAULT_BIN,
                    "--db",
                    t.file("db"),
                    "devices",
                    "--record",
                    "--sysfs-root",
                    sys906,
                    "--proc-root",
                    t.file("proc")});
    ASSERT_EQ(rec.status, 0) << rec.err;
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "diagnose", "--sysfs-root", sys}).status, 0);
    out = show(1);
    EXPECT_NE(out.find("  covered    " + module + ": all 4 bundles carry code for gfx906\n"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("NO CODE"), std::string::npos) << out;

    auto rep = run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1", "--format", "json"});
    ASSERT_EQ(rep.status, 0) << rep.err;
    auto j = nlohmann::json::parse(rep.out);
    ASSERT_EQ(j["diagnosis"].size(), 1u) << rep.out;
    EXPECT_EQ(j["diagnosis"][0]["rule"], "runtime_null_deref");
    EXPECT_EQ(j["diagnosis"][0]["findings"][0]["verdict"], "device");
    EXPECT_EQ(j["diagnosis"][0]["findings"][0]["device_target"], "gfx906");
    EXPECT_EQ(j["diagnosis"][0]["findings"][1]["verdict"], "covered");
    EXPECT_EQ(j["diagnosis"][0]["findings"][1]["module"], module);
}

TEST_F(CliDiagnosis, FixtureCoreThroughAKernelLaunchWithItsModulesGone) {
    std::string sys = fakeSysfs(t, "sys", "110501");  // gfx1151
    // Without symbols (no --debuginfo-path) its frames are `n/a (libcrashlib.so + 0x…)`: no
    // rule can fire on them.
    auto r = ingest(sys, kData + "cores/core");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(show(1).find("DIAGNOSIS"), std::string::npos);
    TempDir t2;
    r = ingest(t2,
               sys,
               kData + "cores/core",
               {"--exe", kData + "cores/crashmain", "--debuginfo-path", kData + "cores/buildid"});
    ASSERT_EQ(r.status, 0) << r.err;
    std::string out = show(t2, 1);
    EXPECT_NE(out.find("  DIAGNOSIS  the crashing thread passes through a kernel launch: #2 "
                       "fake_launch_kernel (libcrashlib.so + 0x11d6) (stack_through_launch)\n"),
              std::string::npos)
        << out;
    // The core names /tmp/crashfixture/{crashmain,libcrashlib.so}, gone since: --exe stands for
    // the first (read), the second is not read; no module read carries GPU code.
    EXPECT_NE(out.find("  modules    4 modules named, 3 read, 0 with GPU code; 1 not read here "
                       "(/tmp/crashfixture/libcrashlib.so: No such file or directory)\n"),
              std::string::npos)
        << out;
}

// `ingest CORE --exe PATH`: the executable is stored (cores --json `exe`) and inventoried for the
// diagnosis in place of the path the core recorded (gone): here a copy of the seed-case binary
// named as the core's executable, whose bundle #4 has no code for the machine's gfx1030.
// The core records /tmp/crashfixture/crashmain, gone since. `--exe` with a copy of that binary
// (same build-id, another path) stands for it: stored, read and named in show. `--exe` with
// another program of the same name (the seed-case binary, another build-id) is refused: not
// stored, not inventoried, and show says why.
TEST_F(CliDiagnosis, TheExecutableGivenWithExeIsStoredAndInventoried) {
    std::string sys = fakeSysfs(t, "sys", "100300");  // gfx1030
    std::string exe = t.file("crashmain");
    writeFile(exe, readFile(kData + "cores/crashmain"));
    auto r = ingest(
        t, sys, kData + "cores/core", {"--exe", exe, "--debuginfo-path", kData + "cores/buildid"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto cores = run({GPUFAULT_BIN, "--db", t.file("db"), "cores", "--json"});
    ASSERT_EQ(cores.status, 0) << cores.err;
    EXPECT_EQ(nlohmann::json::parse(cores.out)["exe"], exe);
    std::string out = show(1);
    EXPECT_NE(out.find("  modules    4 modules named, 3 read, 0 with GPU code; 1 not read here "
                       "(/tmp/crashfixture/libcrashlib.so: No such file or directory)\n"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("\n  exe        " + exe + "\n"), std::string::npos) << out;
    EXPECT_NE(
        out.find("#4  0x00005628408d51b1 main + 0x37 (crashmain + 0x11b1) ./crashmain.cpp:12"),
        std::string::npos)
        << out;

    TempDir other;
    std::string wrong = other.file("crashmain");
    writeFile(wrong, readFile(kData + "binaries/seedcase/multi_plus_one"));
    r = ingest(other,
               sys,
               kData + "cores/core",
               {"--exe", wrong, "--debuginfo-path", kData + "cores/buildid"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("has build-id d9d8733e8fdd3686e469ec324fcb82c44548f48d, the core's "
                         "executable f3fd0fa19b387315a62730e7781520419a4ece0f: not used"),
              std::string::npos)
        << r.err;
    auto none = run({GPUFAULT_BIN, "--db", other.file("db"), "cores", "--json"});
    EXPECT_TRUE(nlohmann::json::parse(none.out)["exe"].is_null()) << none.out;
    out = show(other, 1);
    EXPECT_EQ(out.find("NO CODE"), std::string::npos) << out;
    EXPECT_NE(out.find("  modules    4 modules named, 2 read, 0 with GPU code; 2 not read here "
                       "(/tmp/crashfixture/crashmain: No such file or directory, "),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("\n  exe        refused: --exe " + wrong + " has build-id d9d8733e"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("#4  0x00005628408d51b1 n/a (crashmain + 0x11b1) "
                       "f3fd0fa19b387315a62730e7781520419a4ece0f"),
              std::string::npos)
        << out;
}

TEST_F(CliDiagnosis, RuntimeListingOfARealNoBinaryForGpuAbort) {
    auto r =
        ingest(t.file("none"),
               kData + "real/111-nobinaryforgpu-devices-bundled-list-level6-no-pid-zsh-abort.txt");
    ASSERT_EQ(r.status, 0) << r.err;
    std::string out = show(1);
    EXPECT_NE(out.find("  DIAGNOSIS  hipErrorNoBinaryForGpu at "), std::string::npos) << out;
    EXPECT_NE(out.find("  device     gfx902:xnack-: the runtime's device listing at "),
              std::string::npos)
        << out;
    EXPECT_NE(out.find(": no code for gfx902:xnack- (has gfx1030, gfx803, gfx900:xnack-, "
                       "gfx906:xnack-, gfx908:xnack-, gfx90a:xnack+, gfx90a:xnack-)\n"),
              std::string::npos)
        << out;
    auto md = run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1"});
    ASSERT_EQ(md.status, 0);
    EXPECT_LT(md.out.find("### Diagnosis"), md.out.find("### Summary")) << md.out;
    EXPECT_NE(md.out.find("- **NO CODE** the code objects the runtime listed at "),
              std::string::npos)
        << md.out;
}

TEST_F(CliDiagnosis, RocblasLibraryErrorFindsNoFilesForTheDevice) {
    std::string lib = t.file("rocblas/library");
    for (const char* f : {"TensileLibrary_lazy_gfx1100.dat",
                          "TensileLibrary_lazy_gfx90a.dat",
                          "TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100.co",
                          "Kernels.so-000-gfx90a-xnack-.hsaco",
                          "TensileManifest.txt"})
        put(lib + "/" + f, "x");
    // tensile_host.cpp's message for a lazy-loading library without the device's file.
    writeFile(t.file("job.log"),
              "rocBLAS error: Cannot read " + lib +
                  "/TensileLibrary_lazy_gfx1201.dat: No such file or directory for GPU arch : "
                  "gfx1201\n");
    auto r = ingest(t.file("none"), t.file("job.log"));
    ASSERT_EQ(r.status, 0) << r.err;
    std::string out = show(1);
    EXPECT_NE(out.find("(kernel_library)\n  device     gfx1201: the library error at "),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("  NO LIBRARY " + lib +
                       ": no kernel library files for gfx1201 (has gfx1100 (2), gfx90a (2))\n"),
              std::string::npos)
        << out;
}

TEST_F(CliDiagnosis, FileNamedByTheRuntimeIsInventoriedAndAFifoIsNotOpened) {
    // hip_code_object.cpp's message names the binary it could not use.
    auto line = [](const std::string& file) {
        return ":1:hip_code_object.cpp      :507 : 0635372365 us: 16170: [tid:0x7fe0e2402880] "
               "hipErrorNoBinaryForGpu: Couldn't find binary for file: " +
               file + "\n";
    };
    std::string sys = fakeSysfs(t, "sys", "90010");  // gfx90a
    std::string module = seedModule();
    writeFile(t.file("run.log"), line(module));
    auto r = ingest(sys, t.file("run.log"));
    ASSERT_EQ(r.status, 0) << r.err;
    std::string out = show(1);
    EXPECT_NE(out.find("  device     gfx90a (0000:03:00.0): this machine, its only GPU\n  NO "
                       "CODE    " +
                       module + ": bundle #4 at 0x12000: no code for gfx90a (has gfx906)"),
              std::string::npos)
        << out;

    // A FIFO (or a device node) named in a log is never opened: ingest does not wait on it.
    TempDir f;
    ASSERT_EQ(::mkfifo(f.file("fifo").c_str(), 0600), 0);
    writeFile(f.file("run.log"), line(f.file("fifo")));
    r = ingest(f, sys, f.file("run.log"));
    ASSERT_EQ(r.status, 0) << r.err;
    out = show(f, 1);
    EXPECT_NE(out.find("  modules    1 module named, 0 read, 0 with GPU code; 1 not read here (" +
                       f.file("fifo") + ": not a regular file)\n"),
              std::string::npos)
        << out;
}

}  // namespace
}  // namespace gpufault::testing
