// The diagnosis rules one by one (analysis/diagnosis.h), on real-shaped facts: frames as the
// store keeps them (names from HIP, ROCclr and PyTorch stacks and the fixture core), records as
// the parsers store them, and inventories of the real seed-case binary.
#include <gtest/gtest.h>

#include <cstdlib>

#include "analysis/diagnosis.h"
#include "tests/support/process.h"

using namespace gpufault;
using namespace gpufault::diagnosis;

namespace {

coredump::Frame frame(std::string module, std::string symbol) {
    coredump::Frame f;
    f.module = std::move(module);
    f.symbol = std::move(symbol);
    f.module_offset = 0x1234;
    return f;
}

StoredEvidence record(int64_t id, Kind kind, uint64_t line) {
    StoredEvidence s;
    s.id = id;
    s.source = "job.log";
    s.e.kind = kind;
    s.e.line = line;
    return s;
}

codeobj::Inventory seedInventory() {
    std::string bytes = gpufault::testing::readFile(std::string(std::getenv("GPUFAULT_TEST_DATA")) +
                                                    "/binaries/seedcase/multi_plus_one");
    auto inv = codeobj::inventory(codeobj::asBytes(bytes));
    EXPECT_TRUE(inv.has_value());
    return inv.value_or(codeobj::Inventory{});
}

}  // namespace

TEST(DiagnosisRules, HipRuntimeAndKernelLaunchFrames) {
    EXPECT_TRUE(inHipRuntime(frame("/opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200", "n/a")));
    EXPECT_TRUE(inHipRuntime(frame("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5",
                                   "amd::Symbol::getDeviceKernel(amd::Device const&)")));
    EXPECT_TRUE(inHipRuntime(frame("/tmp/app", "amd::Symbol::getDeviceKernel(int) const")));
    EXPECT_TRUE(inHipRuntime(frame("/tmp/app",
                                   "hip::DynCO::getDynFunc(ihipModuleSymbol_t**, "
                                   "std::__cxx11::basic_string<char>)")));
    EXPECT_FALSE(inHipRuntime(frame("/usr/lib/x86_64-linux-gnu/libc.so.6", "__GI_raise")));
    EXPECT_FALSE(inHipRuntime(
        frame("/tmp/crashfixture/libcrashlib.so", "fakeamd::Symbol::getDeviceKernel(int) const")));

    EXPECT_TRUE(launchesKernel(frame("libamdhip64.so.6", "hipLaunchKernel")));
    EXPECT_TRUE(launchesKernel(
        frame("libamdhip64.so.6", "ihipModuleLaunchKernel(ihipModuleSymbol_t*, unsigned int)")));
    EXPECT_TRUE(launchesKernel(frame("libcudart.so.12", "cudaLaunchKernel")));
    EXPECT_TRUE(launchesKernel(frame("libcuda.so.1", "cuLaunchKernel")));
    EXPECT_TRUE(launchesKernel(frame("libtorch_hip.so",
                                     "void at::native::launch_vectorized_kernel<at::native::"
                                     "FillFunctor<float>, at::detail::Array<char*, 1> >(long, "
                                     "at::native::FillFunctor<float> const&, at::detail::Array<"
                                     "char*, 1>)")));
    EXPECT_TRUE(launchesKernel(frame("libcudart.so.12", "cudaLaunchCooperativeKernel")));
    EXPECT_TRUE(launchesKernel(frame("/tmp/crashfixture/libcrashlib.so", "fake_launch_kernel")));
    EXPECT_FALSE(launchesKernel(frame("libamdhip64.so.6", "hipMemcpy")));
    // Only the name before the parameter list counts: an argument type does not launch.
    EXPECT_FALSE(launchesKernel(frame("libfoo.so", "foo(LaunchKernelParams*)")));
}

TEST(DiagnosisRules, TriggersInOrderEvidenceFirst) {
    Facts f;
    CoreFacts c;
    c.evidence_id = 9;
    c.signal = 11;
    c.fault_addr = 0x8a;
    c.frames = {frame("/opt/rocm/lib/libamdhip64.so.6", "amd::Symbol::getDeviceKernel(int) const"),
                frame("/opt/rocm/lib/libamdhip64.so.6", "ihipLaunchKernel")};
    f.cores.push_back(c);
    auto t = trigger(f);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->rule, "runtime_null_deref");
    EXPECT_EQ(t->evidence_id, 9);
    EXPECT_EQ(t->why,
              "SIGSEGV at 0x8a (null page) in the HIP runtime: amd::Symbol::getDeviceKernel(int) "
              "const (libamdhip64.so.6 + 0x1234)");

    // Not in the null page: the launch in the stack still fires.
    f.cores[0].fault_addr = 0x7f6459a00000;
    t = trigger(f);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->rule, "stack_through_launch");
    EXPECT_EQ(t->why,
              "the crashing thread passes through a kernel launch: #1 ihipLaunchKernel "
              "(libamdhip64.so.6 + 0x1234)");

    // A missing_code_object record wins over the core.
    auto e = record(3, Kind::MissingCodeObject, 12);
    e.e.reason = "hipErrorNoBinaryForGpu";
    e.e.raw = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!";
    f.members.push_back(e);
    t = trigger(f);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->rule, "no_binary_for_gpu");
    EXPECT_EQ(t->why, "hipErrorNoBinaryForGpu at job.log:12");

    Facts g;
    auto fn = record(4, Kind::MissingCodeObject, 7);
    fn.e.kernel = "_Z16gpu_bench_kernelPfi";
    fn.e.raw =
        ":1:hip_module.cpp :83 : 2917567 us: Cannot find the function: _Z16gpu_bench_kernelPfi";
    g.members.push_back(fn);
    EXPECT_EQ(trigger(g)->why,
              "Cannot find the function gpu_bench_kernel(float*, int) at job.log:7");
    Facts h;
    auto ni = record(5, Kind::MissingCodeObject, 2);
    ni.e.reason = "cudaErrorNoKernelImageForDevice";
    h.members.push_back(ni);
    EXPECT_EQ(trigger(h)->rule, "no_kernel_image");
    // A segfault with no runtime frame and no launch: no diagnosis.
    Facts none;
    CoreFacts plain;
    plain.signal = 11;
    plain.fault_addr = 0;
    plain.frames = {frame("/usr/bin/python3.11", "_PyEval_EvalFrameDefault")};
    none.cores.push_back(plain);
    EXPECT_FALSE(trigger(none));
}

TEST(DiagnosisRules, DeviceTargetsFromListingPciNodeOrTheOnlyGpu) {
    Facts f;
    f.devices = {{"amd", "gfx90a", "0000:c6:00.0", 1, "this machine"},
                 {"amd", "gfx1100", "0000:03:00.0", 2, "this machine"}};
    auto kernel = record(1, Kind::AmdgpuPageFault, 5);
    kernel.e.pci = "0000:03:00.0";
    f.members = {kernel};
    auto d = deviceTargets(f);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].target, "gfx1100");
    EXPECT_EQ(d[0].device, "0000:03:00.0");
    EXPECT_EQ(d[0].from, "PCI address at job.log:5; this machine");

    auto rocr = record(2, Kind::RocrMemoryFault, 9);
    rocr.e.gpu_node = 1;
    f.members = {rocr};
    d = deviceTargets(f);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].target, "gfx90a");
    EXPECT_EQ(d[0].device, "node-1");

    // The runtime's listing is the most exact (the process's own view, with features).
    auto nb = record(3, Kind::MissingCodeObject, 12);
    nb.e.setAttr("devices", "amdgcn-amd-amdhsa--gfx902:xnack- [Not Found]");
    f.members = {nb, rocr};
    d = deviceTargets(f);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[0].target, "gfx902:xnack-");
    EXPECT_EQ(d[0].from, "the runtime's device listing at job.log:12");

    // No record names a GPU: every GPU known.
    f.members = {};
    d = deviceTargets(f);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_EQ(d[1].from, "this machine, one of 2 GPUs (no record names one)");
    // A HIP error on a machine that also has an NVIDIA GPU: only the AMD ones are candidates.
    auto hip = record(4, Kind::MissingCodeObject, 3);
    hip.e.vendor = "amd";
    f.members = {hip};
    f.devices.push_back({"nvidia", "sm_90", "0000:00:06.0", 0, "this machine"});
    EXPECT_EQ(deviceTargets(f).size(), 2u);
    f.members = {};
    f.devices.pop_back();
    f.devices.pop_back();
    EXPECT_EQ(deviceTargets(f)[0].from, "this machine, its only GPU");
    f.devices.clear();
    EXPECT_TRUE(deviceTargets(f).empty());
}

TEST(DiagnosisRules, ModulesAndLibraryDirsOncePerPath) {
    Facts f;
    auto nb = record(3, Kind::MissingCodeObject, 12);
    nb.e.setAttr("file", "/opt/app/bin/bench");
    auto blas = record(4, Kind::MissingCodeObject, 13);
    blas.e.setAttr("library", "rocBLAS");
    blas.e.setAttr("path", "/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1201.dat");
    f.members = {nb, blas};
    CoreFacts c;
    c.files = {"/opt/app/bin/bench", "/opt/rocm/lib/libamdhip64.so.6", "[vdso]"};
    f.cores = {c};
    f.process_modules = {"/opt/rocm/lib/libamdhip64.so.6", "/opt/app/lib/libk.so"};
    auto m = modules(f);
    ASSERT_EQ(m.size(), 3u);
    EXPECT_EQ(m[0].path, "/opt/app/bin/bench");
    EXPECT_EQ(m[0].from, "named at job.log:12");
    EXPECT_EQ(m[1].path, "/opt/rocm/lib/libamdhip64.so.6");
    EXPECT_EQ(m[2].path, "/opt/app/lib/libk.so");
    EXPECT_EQ(libraryDirs(f), std::vector<std::string>{"/opt/rocm/lib/rocblas/library"});
}

TEST(DiagnosisRules, SeedCaseModuleAgainstEachDevice) {
    auto inv = seedInventory();
    ASSERT_EQ(inv.bundles.size(), 4u);
    auto f = checkModule("/opt/app/multi_plus_one", inv, {"gfx90a", "0000:c6:00.0", "x"});
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].verdict, "no_code");
    EXPECT_EQ(f[0].bundle, 4);
    EXPECT_EQ(f[0].offset, 0x12000u);
    EXPECT_EQ(f[0].has, std::vector<std::string>{"gfx906"});
    EXPECT_EQ(findingText(f[0]),
              "/opt/app/multi_plus_one: bundle #4 at 0x12000: no code for gfx90a (has gfx906); "
              "kernels: gpu_bench_kernel(float*, int)");
    f = checkModule("/opt/app/multi_plus_one", inv, {"gfx906:xnack-", "", "x"});
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].verdict, "covered");
    EXPECT_EQ(findingText(f[0]),
              "/opt/app/multi_plus_one: all 4 bundles carry code for gfx906:xnack-");
    // A CUDA device: the HIP bundles are not its code; nothing to say.
    EXPECT_TRUE(checkModule("/opt/app/multi_plus_one", inv, {"sm_90", "", "x"}).empty());
    // gfx942 runs none of them: all four bundles.
    EXPECT_EQ(checkModule("/opt/app/multi_plus_one", inv, {"gfx942", "", "x"}).size(), 4u);
}

TEST(DiagnosisRules, RuntimeListingAndLibraryDirectory) {
    Facts f;
    auto nb = record(3, Kind::MissingCodeObject, 12);
    nb.e.setAttr("bundles",
                 "host-x86_64-unknown-linux [Unsupported]; hipv4-amdgcn-amd-amdhsa--gfx1030 [code "
                 "object v4 is amdgcn-amd-amdhsa--gfx1030]; hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+ "
                 "[code object v4 is amdgcn-amd-amdhsa--gfx90a:xnack+]");
    f.members = {nb};
    auto l = checkRuntimeListing(f, {"gfx90a:xnack-", "", "x"});
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].verdict, "no_code");
    EXPECT_EQ(l[0].has, (std::vector<std::string>{"gfx1030", "gfx90a:xnack+"}));
    EXPECT_EQ(checkRuntimeListing(f, {"gfx90a", "", "x"})[0].verdict, "covered");

    codeobj::KernelLibraryDir dir{"/opt/rocm/lib/rocblas/library",
                                  {{"gfx1100", 40}, {"gfx90a", 52}}};
    auto miss = checkLibraryDir(dir, {"gfx1201", "", "x"});
    EXPECT_EQ(miss.verdict, "library_missing");
    EXPECT_EQ(findingText(miss),
              "/opt/rocm/lib/rocblas/library: no kernel library files for gfx1201 (has gfx1100 "
              "(40), gfx90a (52))");
    EXPECT_EQ(checkLibraryDir(dir, {"gfx1100", "", "x"}).verdict, "library_present");
}
