// Stack signatures and module names: pure functions on constructed frames.
#include <gtest/gtest.h>

#include "collectors/coredump/signature.h"

namespace gpufault::coredump {
namespace {

Frame fr(std::string module,
         std::optional<std::string> symbol,
         uint64_t off,
         std::optional<std::string> build_id = std::nullopt) {
    Frame f;
    f.pc = 0x7f0000000000 + off;
    f.module = std::move(module);
    f.symbol = std::move(symbol);
    f.module_offset = off;
    f.build_id = std::move(build_id);
    return f;
}

TEST(Signature, ModuleStemDropsDirectoryAndVersion) {
    EXPECT_EQ(moduleStem("/opt/rocm/lib/libamdhip64.so.6.2.60200"), "libamdhip64.so");
    EXPECT_EQ(moduleStem("/usr/lib/x86_64-linux-gnu/libc.so.6"), "libc.so");
    EXPECT_EQ(moduleStem("libcrashlib.so"), "libcrashlib.so");
    EXPECT_EQ(moduleStem("/tmp/crashfixture/crashmain"), "crashmain");
}

TEST(Signature, GenericFramesAreDropped) {
    EXPECT_TRUE(isGenericFrame(fr("libc.so.6", "__pthread_kill_implementation", 0x969fc)));
    EXPECT_TRUE(isGenericFrame(fr("libc.so.6", "raise", 0x42476)));
    EXPECT_TRUE(isGenericFrame(fr("libc.so.6", "abort", 0x287f3)));
    EXPECT_TRUE(isGenericFrame(fr("libc.so.6", "__libc_start_call_main", 0x2724a)));
    EXPECT_TRUE(isGenericFrame(fr("libc.so.6", "__restore_rt", 0x3c050)));
    EXPECT_TRUE(isGenericFrame(fr("libc.so.6", "__GI_raise", 0x3c050)));
    EXPECT_FALSE(isGenericFrame(fr("libhsa-runtime64.so.1", std::nullopt, 0x3b2c5)));
    EXPECT_FALSE(isGenericFrame(fr("libx.so", "abort_handler(int)", 0x10)));
}

TEST(Signature, CLibraryAndRuntimeModules) {
    EXPECT_TRUE(isCLibraryModule("/usr/lib/x86_64-linux-gnu/libc.so.6"));
    EXPECT_TRUE(isCLibraryModule("/lib64/ld-linux-x86-64.so.2"));
    EXPECT_TRUE(isCLibraryModule("linux-vdso.so.1"));
    EXPECT_TRUE(isCLibraryModule("/lib/x86_64-linux-gnu/libpthread.so.0"));
    EXPECT_FALSE(isCLibraryModule("/usr/lib/x86_64-linux-gnu/libcrypt.so.1"));
    EXPECT_FALSE(isCLibraryModule("/opt/app/libcalc.so"));
    EXPECT_TRUE(isGpuRuntimeModule("/opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200"));
    EXPECT_TRUE(isGpuRuntimeModule("/opt/rocm/lib/libhsa-runtime64.so.1"));
    EXPECT_TRUE(isGpuRuntimeModule("/opt/rocm/lib/libamd_comgr.so.2.8.60200"));
    EXPECT_FALSE(isGpuRuntimeModule("/opt/rocm/lib/librocblas.so.4"));
    EXPECT_FALSE(isGpuRuntimeModule("/opt/rocm/lib/libamdhip64_fake.so"));
}

TEST(Signature, SymbolsAreNotHashedWhenTheBuildIdIsKnown) {
    // One crash read twice: with the library's symbols, and with only its build-id (file gone).
    std::vector<Frame> with{fr("/usr/lib/libc.so.6", "abort", 0x287f3, "cc01"),
                            fr("/srv/libcalc.so", "calc::run(int)", 0x116e, "ab12"),
                            fr("/srv/app", "main", 0x11b1, "cd34")};
    auto without = with;
    for (auto& f : without) f.symbol.reset();  // libc's abort unnamed too: dropped by module
    auto a = stackSignature(with, 5), b = stackSignature(without, 5);
    EXPECT_EQ(a.keys, (std::vector<std::string>{"libcalc.so+0x116e", "app+0x11b1"}));
    EXPECT_EQ(a.hash, b.hash);
    EXPECT_EQ(a.keys, b.keys);
    // No build-id: the symbol is all that identifies the code across reads.
    Frame plain = fr("/srv/libold.so", "old()", 0x40);
    EXPECT_EQ(frameKey(plain), "libold.so!old()");
    plain.symbol.reset();
    EXPECT_EQ(frameKey(plain), "libold.so+0x40");
}

TEST(Signature, RocrAbortStackKeepsTheRuntimeFrames) {
    // systemd-coredump's example of a ROCr abort (FORMATS.md §7.2).
    std::vector<Frame> frames{
        fr("/usr/lib/libc.so.6", "__pthread_kill_implementation", 0x969fc),
        fr("/usr/lib/libc.so.6", "raise", 0x42476),
        fr("/usr/lib/libc.so.6", "abort", 0x287f3),
        fr("/opt/rocm/lib/libhsa-runtime64.so.1.14.60200", std::nullopt, 0x3b2c5, "aabbcc"),
        fr("/opt/rocm/lib/libhsa-runtime64.so.1.14.60200",
           "rocr::core::Runtime::VMFaultHandler(long, void*)",
           0x3c000)};
    auto s = stackSignature(frames, 5);
    EXPECT_EQ(s.keys,
              (std::vector<std::string>{
                  "libhsa-runtime64.so+0x3b2c5",
                  "libhsa-runtime64.so!rocr::core::Runtime::VMFaultHandler(long, void*)"}));
    EXPECT_EQ(s.hash.size(), 16u);
    // The same stack under another ROCm version's soname and path: the same signature.
    auto other = frames;
    for (auto& f : other) {
        if (f.module->find("hsa") != std::string::npos)
            f.module = "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.15.0";
    }
    EXPECT_EQ(stackSignature(other, 5).hash, s.hash);
    // A different top frame: a different signature.
    other[4].symbol = "rocr::core::Runtime::Other()";
    EXPECT_NE(stackSignature(other, 5).hash, s.hash);
    EXPECT_TRUE(stackSignature({}, 5).hash.empty());
}

TEST(Signature, DepthCutsTheFrames) {
    std::vector<Frame> frames;
    for (int i = 0; i < 10; ++i)
        frames.push_back(fr("libx.so", "f" + std::to_string(i) + "()", 0x10u * i));
    EXPECT_EQ(stackSignature(frames, 3).keys.size(), 3u);
    EXPECT_NE(stackSignature(frames, 3).hash, stackSignature(frames, 4).hash);
    Frame noModule;
    noModule.pc = 0x1234;
    EXPECT_EQ(frameKey(noModule), "?!0x1234");
}

TEST(Signature, RuntimeVersionsFromMappedFiles) {
    std::vector<MappedFile> files{
        {0, 0, 0, "/opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200"},
        {0, 0, 0, "/opt/rocm-6.2.0/lib/libhsa-runtime64.so.1.14.60200"},
        {0, 0, 0, "/usr/lib/x86_64-linux-gnu/libc.so.6"},
        {0, 0, 0, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"},
        {0, 0, 0, "/usr/lib/python3/site-packages/torch/lib/libtorch_hip.so"}};
    auto v = runtimeVersions(files);
    EXPECT_EQ(v,
              (std::map<std::string, std::string>{{"libamdhip64.so", "6.2.60200"},
                                                  {"libcuda.so", "550.54.15"},
                                                  {"libhsa-runtime64.so", "1.14.60200"}}));
    // A runtime upgraded under the running job: NT_FILE names it as d_path() does.
    EXPECT_EQ(runtimeVersions({{0, 0, 0, "/opt/rocm/lib/libamdhip64.so.6.2.41133 (deleted)"}}),
              (std::map<std::string, std::string>{{"libamdhip64.so", "6.2.41133"}}));
}

}  // namespace
}  // namespace gpufault::coredump
