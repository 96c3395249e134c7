// gpufault codeobj through the built binary: the seed case, --require as a release gate,
// directories, JSON, exit codes and bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kBin = GPUFAULT_SOURCE_DIR "/tests/data/binaries";
const std::string kSeed = kBin + "/seedcase/multi_plus_one";

TEST(CliCodeobj, SeedCaseForGfx1030NamesExactlyTheGfx906OnlyBundleAndItsKernel) {
    auto r = run({GPUFAULT_BIN, "codeobj", kSeed, "--device", "gfx1030"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.out.find("bundle #4 at 0x12000: no code for gfx1030 (has gfx906); kernels: "
                         "gpu_bench_kernel(float*, int)"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("bundle #1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("gfx1030: 1 of 4 lack code"), std::string::npos) << r.out;
}

TEST(CliCodeobj, SeedCaseRunsOnGfx906) {
    auto r = run({GPUFAULT_BIN, "codeobj", kSeed, "--device", "gfx906"});
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("gfx906: all 4 have code"), std::string::npos) << r.out;
}

TEST(CliCodeobj, RequireIsAReleaseGate) {
    auto r = run({GPUFAULT_BIN, "codeobj", kSeed, "--require", "gfx906,gfx90a,gfx942"});
    EXPECT_EQ(r.status, 1);
    // gfx90a lacks in bundle 4; gfx942 lacks everywhere.
    EXPECT_NE(r.out.find("bundle #4 at 0x12000: no code for gfx90a (has gfx906)"),
              std::string::npos)
        << r.out;
    for (const char* b : {"#1 at 0x3000", "#2 at 0x8000", "#3 at 0xd000", "#4 at 0x12000"})
        EXPECT_NE(r.out.find(std::string("bundle ") + b + ": no code for gfx942"),
                  std::string::npos)
            << b;
    EXPECT_EQ(run({GPUFAULT_BIN,
                   "codeobj",
                   kBin + "/hip/vadd_multi",
                   "--require",
                   "gfx906,gfx90a,gfx1030"})
                  .status,
              0);
}

TEST(CliCodeobj, JsonListsBundlesTargetsAndMissing) {
    auto r = run({GPUFAULT_BIN, "codeobj", kSeed, "--device", "gfx90a", "--json"});
    EXPECT_EQ(r.status, 1);
    auto lines = parseJsonLines(r.out);
    ASSERT_EQ(lines.size(), 1u);
    const auto& j = lines[0];
    ASSERT_EQ(j["bundles"].size(), 4u);
    EXPECT_EQ(j["bundles"][3]["offset"], 0x12000);
    EXPECT_EQ(j["bundles"][3]["targets"], nlohmann::json::array({"gfx906"}));
    ASSERT_EQ(j["missing"].size(), 1u);
    EXPECT_EQ(j["missing"][0]["bundle"], 4);
    EXPECT_EQ(j["missing"][0]["kernels"][0], "gpu_bench_kernel(float*, int)");
}

TEST(CliCodeobj, CudaDeviceChecks) {
    std::string f = kBin + "/cuda/vadd_sm80_sm90_ptx.nv_fatbin.elf";
    EXPECT_EQ(run({GPUFAULT_BIN, "codeobj", f, "--device", "sm_86"}).status, 0);
    EXPECT_EQ(run({GPUFAULT_BIN, "codeobj", f, "--device", "sm_120"}).status,
              1);  // dlink lacks PTX
    auto r =
        run({GPUFAULT_BIN, "codeobj", kBin + "/cuda/vadd_sm75.nv_fatbin.elf", "--device", "sm_90"});
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("fatbin #2 at 0xfc8: no code for sm_90 (has sm_75)"), std::string::npos)
        << r.out;
}

TEST(CliCodeobj, ListingAndMislabeledEntries) {
    auto r = run({GPUFAULT_BIN, "codeobj", "--list", kBin + "/hip/vadd_features"});
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.out.find("bundle #1 at 0x3000, 12696 bytes: gfx908:sramecc-:xnack-, gfx90a:xnack+"),
              std::string::npos)
        << r.out;
    auto m = run({GPUFAULT_BIN,
                  "codeobj",
                  kBin + "/hip/raw/synthetic_mislabeled_gfx1151.hipfb",
                  "--device",
                  "gfx1151"});
    EXPECT_EQ(m.status, 1);
    EXPECT_NE(m.out.find("labeled gfx1151 but holds gfx1030 code"), std::string::npos) << m.out;
}

TEST(CliCodeobj, DirectorySkipsNonElfAndReportsUnreadable) {
    TempDir t;
    writeFile(t.file("notes.txt"), "not an ELF");
    writeFile(t.file("a.hipfb"), readFile(kBin + "/hip/raw/vadd_gfx906.hipfb"));
    auto r = run({GPUFAULT_BIN, "codeobj", t.path(), "--device", "gfx906"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find("notes.txt"), std::string::npos);
    EXPECT_NE(r.out.find("a.hipfb: gfx906: all 1 have code"), std::string::npos) << r.out;
}

/// An ELF header (x86-64 executable) and nothing else: no sections, no program headers; the
/// file is then made `size` bytes long without writing them (sparse).
void sparseElf(const std::string& path, off_t size) {
    std::string h(64, '\0');
    h[0] = 0x7f;
    h.replace(1, 3, "ELF");
    h[4] = 2;      // ELFCLASS64
    h[5] = 1;      // little-endian
    h[6] = 1;      // EV_CURRENT
    h[16] = 2;     // ET_EXEC
    h[18] = 0x3e;  // EM_X86_64
    h[20] = 1;     // e_version
    h[52] = 64;    // e_ehsize
    h[54] = 56;    // e_phentsize
    h[58] = 64;    // e_shentsize
    writeFile(path, h);
    ASSERT_EQ(::truncate(path.c_str(), size), 0);
}

TEST(CliCodeobj, NoOffloadBundlesFailsACheckInsteadOfAllZeroHaveCode) {
    // The hostile review's 3 GB sparse ELF: "all 0 have code", exit 0, was a release gate that
    // passed on a file with nothing to check.
    TempDir t;
    sparseElf(t.file("huge"), off_t{3} << 30);
    auto r = run({GPUFAULT_BIN, "codeobj", t.file("huge"), "--device", "gfx1030"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_EQ(
        r.out,
        t.file("huge") + ": no offload bundles (ELF, no GPU code): nothing has code for gfx1030\n");
    auto req =
        run({GPUFAULT_BIN, "codeobj", t.file("huge"), "--require", "gfx90a,sm_90", "--json"});
    EXPECT_EQ(req.status, 1);
    auto j = parseJsonLines(req.out);
    ASSERT_EQ(j.size(), 1u) << req.out;
    EXPECT_EQ(j[0]["no_bundles"], true);
    EXPECT_TRUE(j[0]["bundles"].empty());
    // --list only lists: nothing is checked, nothing fails.
    auto list = run({GPUFAULT_BIN, "codeobj", t.file("huge"), "--list"});
    EXPECT_EQ(list.status, 0);
    EXPECT_EQ(list.out, t.file("huge") + ": ELF, no GPU code\n");
    // In a directory a host-only ELF is no failure by itself, a directory with no bundle at all is.
    std::filesystem::create_directories(t.file("dir"));
    sparseElf(t.file("dir/libhost.so"), 4096);
    auto dir = run({GPUFAULT_BIN, "codeobj", t.file("dir"), "--device", "gfx906"});
    EXPECT_EQ(dir.status, 1);
    EXPECT_NE(dir.out.find(t.file("dir") + ": no offload bundles in 1 ELF file and no kernel "
                                           "library files\n"),
              std::string::npos)
        << dir.out;
    writeFile(t.file("dir/a.hipfb"), readFile(kBin + "/hip/raw/vadd_gfx906.hipfb"));
    auto mixed = run({GPUFAULT_BIN, "codeobj", t.file("dir"), "--device", "gfx906"});
    EXPECT_EQ(mixed.status, 0) << mixed.out;
    EXPECT_NE(mixed.out.find("libhost.so: no offload bundles"), std::string::npos) << mixed.out;
    EXPECT_NE(mixed.out.find("a.hipfb: gfx906: all 1 have code"), std::string::npos) << mixed.out;
}

TEST(CliCodeobj, BadInputAndUsageExit2) {
    TempDir t;
    writeFile(t.file("junk"), "hello");
    auto r = run({GPUFAULT_BIN, "codeobj", "--list", t.file("junk")});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("junk: offset 0x0: not an ELF file"), std::string::npos) << r.err;
    std::string elf = readFile(kBin + "/hip/vadd_gfx906");
    writeFile(t.file("cut"), elf.substr(0, 0x4000));
    r = run({GPUFAULT_BIN, "codeobj", "--list", t.file("cut")});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("cut: offset 0x28: section table"), std::string::npos) << r.err;
    // A bundle whose entry count is 2^63, inside a copy of a real executable's .hip_fatbin.
    std::string bad = elf;
    bad.replace(0x3000 + 24, 8, std::string("\0\0\0\0\0\0\0\x80", 8));
    writeFile(t.file("count"), bad);
    r = run({GPUFAULT_BIN, "codeobj", t.file("count"), "--device", "gfx906"});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("count: offset 0x3018: offload bundle entry count 9223372036854775808"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(run({GPUFAULT_BIN, "codeobj", "--list", t.file("missing")}).status, 2);
    EXPECT_EQ(run({GPUFAULT_BIN, "codeobj", kSeed, "--device", "nvidia"}).status, 2);
    EXPECT_EQ(run({GPUFAULT_BIN, "codeobj", kSeed, "--hsa-override-gfx-version", "11"}).status, 2);
    EXPECT_EQ(run({GPUFAULT_BIN, "codeobj"}).status, 2);
}

/// A fake sysfs whose KFD topology has a CPU node and one GPU node per gfx_target_version.
std::string fakeSysfs(const TempDir& t, const std::vector<std::string>& versions) {
    std::string nodes = t.file("sys") + "/class/kfd/kfd/topology/nodes";
    auto put = [](const std::string& path, const std::string& text) {
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        writeFile(path, text);
    };
    put(nodes + "/0/properties", "cpu_cores_count 16\nsimd_count 0\n");
    for (size_t i = 0; i < versions.size(); ++i)
        put(nodes + "/" + std::to_string(i + 1) + "/properties",
            "simd_count 80\ngfx_target_version " + versions[i] + "\nlocation_id " +
                std::to_string(768 * (i + 1)) + "\ndomain 0\n");
    return t.file("sys");
}

TEST(CliCodeobj, WithoutDeviceChecksThisMachinesGpus) {
    TempDir t;
    std::string sys = fakeSysfs(t, {"100300", "90006", "100300"});  // gfx1030, gfx906, gfx1030
    auto r = run({GPUFAULT_BIN, "codeobj", kSeed, "--sysfs-root", sys, "--proc-root",
                  t.file("proc")});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_EQ(r.err,
              "gpufault codeobj: checking for this machine's GPU gfx1030 (0000:03:00.0)\n"
              "gpufault codeobj: checking for this machine's GPU gfx906 (0000:06:00.0)\n");
    EXPECT_EQ(r.out,
              kSeed + ": bundle #4 at 0x12000: no code for gfx1030 (has gfx906); kernels: "
                      "gpu_bench_kernel(float*, int)\n" +
                  kSeed + ": gfx1030: 1 of 4 lack code\n" + kSeed + ": gfx906: all 4 have code\n");
    // No GPU at all: said, exit 2; --list still lists.
    auto none = run({GPUFAULT_BIN, "codeobj", kSeed, "--sysfs-root", t.file("empty"),
                     "--proc-root", t.file("empty")});
    EXPECT_EQ(none.status, 2);
    EXPECT_NE(none.err.find("no GPU found on this machine"), std::string::npos) << none.err;
    EXPECT_EQ(none.out, "");
    auto list = run({GPUFAULT_BIN, "codeobj", kSeed, "--list", "--sysfs-root", t.file("empty"),
                     "--proc-root", t.file("empty")});
    EXPECT_EQ(list.status, 0);
    EXPECT_NE(list.out.find("bundle #4 at 0x12000"), std::string::npos) << list.out;
}

TEST(CliCodeobj, WithoutDeviceOnTheH200ChecksSm90) {
    // The real H200's information file: the model gives sm_90. The case of fixture 074: an
    // sm_75-only build on an H200 (cudaErrorNoKernelImageForDevice at launch).
    TempDir t;
    std::string info = readFile(GPUFAULT_SOURCE_DIR "/tests/data/device/h200-proc/information");
    std::filesystem::create_directories(t.file("proc/driver/nvidia/gpus/0000:00:06.0"));
    writeFile(t.file("proc/driver/nvidia/gpus/0000:00:06.0/information"), info);
    auto sm75 = run({GPUFAULT_BIN, "codeobj", kBin + "/cuda/vadd_sm75.nv_fatbin.elf",
                     "--sysfs-root", t.file("sys"), "--proc-root", t.file("proc")});
    EXPECT_EQ(sm75.status, 1) << sm75.err;
    EXPECT_EQ(sm75.err, "gpufault codeobj: checking for this machine's GPU sm_90 (0000:00:06.0)\n");
    EXPECT_NE(sm75.out.find(": sm_90: 2 of 2 lack code"), std::string::npos) << sm75.out;
    auto sm90 = run({GPUFAULT_BIN, "codeobj", kBin + "/cuda/vadd_sm80_sm90_ptx.nv_fatbin.elf",
                     "--sysfs-root", t.file("sys"), "--proc-root", t.file("proc")});
    EXPECT_EQ(sm90.status, 0) << sm90.out << sm90.err;
    EXPECT_NE(sm90.out.find(": sm_90: all 2 have code"), std::string::npos) << sm90.out;
}

TEST(CliCodeobj, DirectoryKernelLibraryFilesFlagATargetWithNone) {
    TempDir t;
    std::string lib = t.file("rocblas/library");
    std::filesystem::create_directories(lib);
    for (const char* f : {"TensileLibrary_lazy_gfx1100.dat", "TensileLibrary_lazy_gfx90a.dat",
                          "TensileLibrary_Type_HH_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx1100.dat",
                          "Kernels.so-000-gfx90a-xnack-.hsaco", "TensileManifest.txt"})
        writeFile(lib + "/" + f, "not read");
    auto list = run({GPUFAULT_BIN, "codeobj", "--list", t.path()});
    EXPECT_EQ(list.status, 0) << list.err;
    EXPECT_EQ(list.out, lib + ": kernel library files for gfx1100 (2), gfx90a (2)\n");
    // The real case: a gfx1201 card, no gfx1201 files.
    auto r = run({GPUFAULT_BIN, "codeobj", t.path(), "--require", "gfx90a,gfx1201"});
    EXPECT_EQ(r.status, 1);
    EXPECT_EQ(r.out,
              lib + ": gfx90a: kernel library files present\n" + lib +
                  ": no kernel library files for gfx1201 (has gfx1100 (2), gfx90a (2))\n");
    auto j = run({GPUFAULT_BIN, "codeobj", t.path(), "--device", "gfx1201", "--json"});
    EXPECT_EQ(j.status, 1);
    auto o = nlohmann::json::parse(j.out);
    EXPECT_EQ(o["directory"], lib);
    EXPECT_EQ(o["library_files"]["gfx90a"], 2);
    EXPECT_EQ(o["missing"], nlohmann::json::array({"gfx1201"}));
}

TEST(CliCodeobj, HsaOverrideMakesGfx1031RunGfx1030Code) {
    EXPECT_EQ(
        run({GPUFAULT_BIN, "codeobj", kBin + "/hip/vadd_multi", "--device", "gfx1031"}).status, 1);
    EXPECT_EQ(run({GPUFAULT_BIN,
                   "codeobj",
                   kBin + "/hip/vadd_multi",
                   "--device",
                   "gfx1031",
                   "--hsa-override-gfx-version",
                   "10.3.0"})
                  .status,
              0);
}

}  // namespace
}  // namespace gpufault::testing
