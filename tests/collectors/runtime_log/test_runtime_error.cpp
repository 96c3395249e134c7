#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/runtime_log/runtime_error.h"

namespace gpufault {
namespace {

struct Line {
    Line(std::string t, std::optional<int64_t> r = {}) : text(std::move(t)), rank(r) {}
    Line(const char* t) : text(t) {}
    std::string text;
    std::optional<int64_t> rank;
};

std::vector<Evidence> run(const std::vector<Line>& lines) {
    auto m = makeRuntimeErrorMatcher();
    CollectSink sink;
    uint64_t n = 0;
    for (const auto& s : lines) {
        LogLine l;
        l.line = ++n;
        l.text = s.text;
        l.raw = s.text;
        l.rank = s.rank;
        m->feed(l, sink);
    }
    m->finish(sink);
    return sink.evidences;
}

// PyTorch (c10/cuda/CUDAException.cpp, FORMATS.md §9.6): "CUDA error: " + cudaGetErrorString.

TEST(RuntimeError, TorchAcceleratorErrorCudaTextMappedToName) {
    auto ev =
        run({{"torch.AcceleratorError: CUDA error: an illegal memory access was encountered"},
             {"CUDA kernel errors might be asynchronously reported at some other API call, so "
              "the stacktrace below might be incorrect."},
             {"For debugging consider passing CUDA_LAUNCH_BLOCKING=1"}});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kind, Kind::RuntimeError);
    EXPECT_EQ(ev[0].vendor, "nvidia");
    EXPECT_EQ(ev[0].reason, "cudaErrorIllegalAddress");
    EXPECT_EQ(ev[0].line, 1u);
    EXPECT_FALSE(ev[0].address);
}

TEST(RuntimeError, HipErrorTextAndSearchLineOverrides) {
    auto ev =
        run({{"RuntimeError: HIP error: the operation cannot be performed in the present state"},
             {"AcceleratorError: CUDA error: device-side assert triggered"},
             {"Search for `cudaErrorAssert' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
              "group__CUDART__TYPES.html for more information."}});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].vendor, "amd");
    EXPECT_EQ(ev[0].reason, "hipErrorIllegalState");
    EXPECT_EQ(ev[1].reason, "cudaErrorAssert");
    EXPECT_EQ(ev[1].line, 2u);
}

// cuGetErrorName()'s driver names (FORMATS.md §9.5) as TensorFlow/XLA, CuPy and Numba print
// them: one record each, the name as printed (hostile review 23, H1: no record at all).
TEST(RuntimeError, CudaDriverErrorNames) {
    auto ev = run({{"2024-05-01 10:00:00.123456: E external/local_xla/xla/stream_executor/cuda/"
                    "cuda_driver.cc:1161] failed to synchronize the stop event: "
                    "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"},
                   {"cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_MISALIGNED_ADDRESS: "
                    "misaligned address"},
                   {"numba.cuda.cudadrv.driver.CudaAPIError: [700] Call to cuMemcpyDtoH results in "
                    "CUDA_ERROR_LAUNCH_FAILED"},
                   {"cuStreamQuery returned CUDA_ERROR_NOT_READY"},
                   {"CUDA_ERROR_ is not a name"},
                   // not errors (hostile review 25): an enum, a define, a made-up name, a poll
                   {"    CUDA_ERROR_ILLEGAL_ADDRESS = 700,"},
                   {"#define CUDA_ERROR_OUT_OF_MEMORY 2"},
                   {"set CUDA_ERROR_LEVEL=3"},
                   {"CUDA Error: CUDA_ERROR_NOT_READY while polling"},
                   {"CUDA Error: cudaSuccess"}});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].reason, "CUDA_ERROR_ILLEGAL_ADDRESS");
    EXPECT_EQ(ev[0].vendor, "nvidia");
    EXPECT_EQ(ev[0].kind, Kind::RuntimeError);
    EXPECT_EQ(ev[1].reason, "CUDA_ERROR_MISALIGNED_ADDRESS");
    EXPECT_EQ(ev[2].reason, "CUDA_ERROR_LAUNCH_FAILED");
    EXPECT_EQ(ev[2].line, 3u);
}

// Two ranks' PyTorch errors interleaved: each `Search for` hint names its own rank's error
// (hostile review 23, M1: rank 1's record took rank 0's name).
TEST(RuntimeError, SearchLinesNameTheErrorOfTheirRank) {
    auto ev =
        run({{"torch.AcceleratorError: CUDA error: an illegal memory access was encountered", 0},
             {"torch.AcceleratorError: CUDA error: misaligned address", 1},
             {"Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/ for more "
              "information.",
              0},
             {"Search for `cudaErrorMisalignedAddress' in https://docs.nvidia.com/cuda/ for "
              "more information.",
              1}});
    ASSERT_EQ(ev.size(), 2u);
    for (const auto& e : ev) {
        ASSERT_TRUE(e.rank);
        EXPECT_EQ(e.reason, *e.rank == 0 ? "cudaErrorIllegalAddress" : "cudaErrorMisalignedAddress")
            << e.line;
        EXPECT_NE(e.raw.find("Search for"), std::string::npos) << e.raw;
    }
}

// PyTorch's caching allocator's out-of-memory errors are allocation failures (hostile review 24:
// no record), and Triton's and the common CHECK macros' error prints are runtime errors.
TEST(RuntimeError, TorchOutOfMemoryIsAnAllocationFailure) {
    auto ev =
        run({{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
              "has a total capacity of 79.15 GiB of which 1.23 GiB is free."},
             {"torch.OutOfMemoryError: HIP out of memory. Tried to allocate 1024.00 MiB. GPU "
              "0 has a total capacity of 63.98 GiB of which 512.00 MiB is free."},
             {"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 2.00 GiB "
              "total capacity; 1.10 GiB already allocated)"},
             {"RuntimeError: Triton Error [CUDA]: an illegal memory access was encountered"},
             {"CUDA Error: unspecified launch failure at /src/kernel.cu:42"},
             {"CUDA Error: misaligned address /src/main.cu 88"}});
    ASSERT_EQ(ev.size(), 6u);
    EXPECT_EQ(ev[0].kind, Kind::AllocFailure);
    EXPECT_EQ(ev[0].vendor, "nvidia");
    EXPECT_EQ(ev[0].attr("requested"), "2.00 GiB");
    EXPECT_TRUE(ev[0].attr("message")->starts_with("CUDA out of memory. Tried"));
    EXPECT_EQ(ev[1].kind, Kind::AllocFailure);
    EXPECT_EQ(ev[1].vendor, "amd");
    EXPECT_EQ(ev[1].attr("requested"), "1024.00 MiB");
    EXPECT_EQ(ev[2].attr("requested"), "20.00 MiB");
    EXPECT_EQ(ev[3].kind, Kind::RuntimeError);
    EXPECT_EQ(ev[3].reason, "cudaErrorIllegalAddress");
    EXPECT_EQ(ev[4].reason, "cudaErrorLaunchFailure");
    EXPECT_EQ(ev[5].reason, "cudaErrorMisalignedAddress");
}

// The same messages without a word containing "rror" before them: PyTorch's OOM text printed on
// its own and the GPUassert macro with cudaGetErrorString()'s text (no record before).
TEST(RuntimeError, BareOutOfMemoryAndGpuAssertLines) {
    auto ev = run({{"CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                    "of 79.15 GiB of which 1.23 GiB is free."},
                   {"GPUassert: an illegal memory access was encountered /src/main.cu 42"},
                   {"[rank1]: GPUassert: misaligned address kernel.cu 7"},
                   {"GPUassert: unspecified launch failure at line 9"}});
    ASSERT_EQ(ev.size(), 4u);
    EXPECT_EQ(ev[0].kind, Kind::AllocFailure);
    EXPECT_EQ(ev[0].vendor, "nvidia");
    EXPECT_EQ(ev[0].attr("requested"), "2.00 GiB");
    EXPECT_EQ(ev[1].kind, Kind::RuntimeError);
    EXPECT_EQ(ev[1].reason, "cudaErrorIllegalAddress");
    EXPECT_EQ(ev[1].attr("message"), "an illegal memory access was encountered /src/main.cu 42");
    EXPECT_EQ(ev[2].reason, "cudaErrorMisalignedAddress");
    EXPECT_EQ(ev[2].rank, 1);
    EXPECT_EQ(ev[3].reason, "cudaErrorLaunchFailure");
}

// cudaGetErrorString()'s distinctive texts wherever a framework prints them (real reports: no
// record before): glog CHECK, TensorRT, NVIDIA Warp, a program's own `… failed: TEXT`.
TEST(RuntimeError, DistinctiveErrorTextsInOtherWrappers) {
    auto ev = run({{"F0524 19:24:39.746389 13813 math_functions.cu:81] Check failed: error == "
                    "cudaSuccess (77 vs. 0)  an illegal memory access was encountered"},
                   {"[01/13/2023-16:35:26] [TRT] [E] 1: [cudaResources.cpp::~ScopedCudaEvent::24] "
                    "Error Code 1: Cuda Runtime (an illegal memory access was encountered)"},
                   {"Warp CUDA error 700: an illegal memory access was encountered (warp.cu:223)"},
                   {"ds4: CUDA end commands failed: unspecified launch failure"},
                   {"llama: ROCm sync failed: an illegal memory access was encountered"},
                   {"the loss was encountered twice"}});
    ASSERT_EQ(ev.size(), 3u);  // the first three fold: the same error of the same process
    EXPECT_EQ(ev[0].kind, Kind::RuntimeError);
    EXPECT_EQ(ev[0].reason, "cudaErrorIllegalAddress");
    EXPECT_EQ(ev[0].vendor, "nvidia");
    EXPECT_EQ(ev[0].count, 3u);
    EXPECT_EQ(ev[0].line, 1u);
    EXPECT_EQ(ev[1].reason, "cudaErrorLaunchFailure");
    EXPECT_EQ(ev[2].reason, "hipErrorIllegalAddress");
    EXPECT_EQ(ev[2].vendor, "amd");
}

// An error text retyped with a capital (a real report: `HIP error: Invalid device function` was a
// runtime_error without a name, the pasted one a missing_code_object).
TEST(RuntimeError, ACapitalisedErrorTextStillNamesItsError) {
    auto ev = run({{"HIP error: Invalid device function"}, {"CUDA error: Out of memory"}});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].kind, Kind::MissingCodeObject);
    EXPECT_EQ(ev[0].reason, "hipErrorInvalidDeviceFunction");
    EXPECT_EQ(ev[1].reason, "cudaErrorMemoryAllocation");
}

// Helper 135's hostile lines: the distinctive texts, the OOM message and GPUassert mentioned in
// tests, FAQs, source and compiler output are no record; a path with `ship` is no HIP line.
TEST(RuntimeError, ErrorTextsMentionedNotPrintedAreNoRecord) {
    EXPECT_TRUE(
        run({{"Checks that an illegal memory access was encountered is reported ... ok"},
             {"FAQ: \"unspecified launch failure\" usually means a kernel crashed"},
             {"    assert \"an illegal instruction was encountered\" in msg"},
             {"Tip: if you see \"CUDA out of memory. Tried to allocate X MiB\", lower the batch"},
             {"main.cu:12:5: warning: format '%d' in fprintf(stderr,\"GPUassert: %s %s %d\\n\")"},
             {"GPUassert: no error main.cu 1"}})
            .empty());
    auto ev = run({{"ship.cu:42 sync failed: unspecified launch failure"},
                   {"An exception was encountered in step 3: an illegal memory access was "
                    "encountered"}});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].reason, "cudaErrorLaunchFailure");
    EXPECT_EQ(ev[0].vendor, "nvidia");
    EXPECT_EQ(ev[1].reason, "cudaErrorIllegalAddress");
}

TEST(RuntimeError, RocmBuildSayingCudaErrorIsAmd) {
    // Fixture 065.
    auto ev =
        run({{"terminate called after throwing an instance of 'c10::AcceleratorError'"},
             {"  what():  CUDA error: an illegal memory access was encountered"},
             {"Search for `hipErrorIllegalAddress' in https://rocm.docs.amd.com/projects/HIP/en/"
              "latest/index.html for more information."}});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].vendor, "amd");
    EXPECT_EQ(ev[0].reason, "hipErrorIllegalAddress");
    EXPECT_EQ(ev[0].line, 2u);
}

TEST(RuntimeError, SearchLineAloneIsAHintNotARecord) {
    // Fixture 066 starts at PyTorch's hint line (the error line before it was cut): the hint
    // names an error but is not one; after its error line it names that record exactly.
    auto alone =
        run({{"[rank3]: Search for `hipErrorLaunchFailure' in https://rocm.docs.amd.com/x for "
              "more information.",
              3},
             {"[rank3]: HIP kernel errors might be asynchronously reported at some other API "
              "call, so the stacktrace below might be incorrect.",
              3}});
    EXPECT_TRUE(alone.empty());
    auto after = run({{"RuntimeError: HIP error: unspecified launch failure", 3},
                      {"Search for `hipErrorLaunchFailure' in https://rocm.docs.amd.com/x for "
                       "more information.",
                       3}});
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].reason, "hipErrorLaunchFailure");
    EXPECT_EQ(after[0].vendor, "amd");
    EXPECT_EQ(after[0].rank, 3);
    EXPECT_EQ(after[0].line, 1u);
}

TEST(RuntimeError, MissingCodeObjectTexts) {
    auto ev =
        run({{"torch.AcceleratorError: HIP error: no kernel image is available for execution on "
              "the device"},
             {"Search for `hipErrorNoBinaryForGpu' in https://rocm.docs.amd.com/x for more "
              "information."},
             {"RuntimeError: HIP error: invalid device function"},
             {"launch=cudaErrorNoKernelImageForDevice (209): no kernel image is available for "
              "execution on the device"}});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].kind, Kind::MissingCodeObject);
    EXPECT_EQ(ev[0].reason, "hipErrorNoBinaryForGpu");
    EXPECT_EQ(ev[1].kind, Kind::MissingCodeObject);
    EXPECT_EQ(ev[1].reason, "hipErrorInvalidDeviceFunction");
    EXPECT_EQ(ev[2].kind, Kind::MissingCodeObject);
    EXPECT_EQ(ev[2].reason, "cudaErrorNoKernelImageForDevice");
    EXPECT_EQ(ev[2].vendor, "nvidia");
}

TEST(RuntimeError, RepeatsFoldIntoOneWithCount) {
    // Fixture 063: the same error per dtype.
    std::vector<Line> lines;
    for (const char* t : {"int8", "int16", "int32"})
        lines.push_back({std::string("  Tensor creation failed for torch.") + t +
                         ": HIP error: no kernel image is available for execution on the device"});
    auto ev = run(lines);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].count, 3u);
    EXPECT_EQ(ev[0].line, 1u);
}

TEST(RuntimeError, BareErrorLinesAndTokens) {
    auto ev = run(
        {{"CUDA error: an illegal memory access was encountered"},
         {"error: hipErrorIllegalAddress at foo.cpp:12"},
         {"src/fault.cu:156: CUDA error 719 cudaErrorLaunchFailure: unspecified launch failure"},
         {"ggml-cuda.cu:110: ROCm error: unspecified launch failure"}});
    ASSERT_EQ(ev.size(), 4u);
    EXPECT_EQ(ev[0].reason, "cudaErrorIllegalAddress");
    EXPECT_EQ(ev[1].reason, "hipErrorIllegalAddress");
    EXPECT_EQ(ev[1].vendor, "amd");
    EXPECT_EQ(ev[2].reason, "cudaErrorLaunchFailure");
    EXPECT_EQ(ev[3].reason, "hipErrorLaunchFailure");
    EXPECT_EQ(ev[3].vendor, "amd");
}

TEST(RuntimeError, BenignStatusesAndTypeNamesAreNotRecords) {
    auto ev = run({{"hipEventQuery returned hipErrorNotReady"},
                   {"cudaStreamQuery: cudaErrorNotReady (600)"},
                   {"peer: hipErrorPeerAccessAlreadyEnabled"},
                   {"RuntimeError: CUDA error: device not ready"},
                   {"hipError_t err = hipMalloc(&p, n); // check error"},
                   {"UserWarning: HIP warning: unspecified launch failure"}});
    EXPECT_TRUE(ev.empty());
}

// compute-sanitizer API errors (§9.5): runtime_error, not sanitizer_report.

TEST(RuntimeError, ComputeSanitizerProgramHit) {
    auto ev =
        run({{"========= Program hit cudaErrorLaunchFailure (error 719) due to \"unspecified "
              "launch failure\" on CUDA API call to cudaDeviceSynchronize."},
             {"========= Program hit invalid copy direction for memcpy (error 21) on CUDA API "
              "call to cudaMemcpy."},
             {"========= Program hit error 13 on CUDA API call to cudaMemcpyToSymbol"},
             {"========= Program hit cudaErrorNotReady (error 600) due to \"device not ready\" on "
              "CUDA API call to cudaEventQuery."}});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].kind, Kind::RuntimeError);
    EXPECT_EQ(ev[0].vendor, "nvidia");
    EXPECT_EQ(ev[0].reason, "cudaErrorLaunchFailure");
    EXPECT_EQ(ev[0].attr("code"), "719");
    EXPECT_EQ(ev[0].attr("api"), "cudaDeviceSynchronize");
    EXPECT_FALSE(ev[1].reason);
    EXPECT_EQ(ev[1].attr("code"), "21");
    EXPECT_EQ(ev[1].attr("api"), "cudaMemcpy");
    EXPECT_FALSE(ev[2].reason);
    EXPECT_EQ(ev[2].attr("code"), "13");
}

TEST(RuntimeError, NcclWatchdogRankFromLineOrText) {
    std::string w =
        "[E610 07:42:53.345100746 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 5] Process "
        "group "
        "watchdog thread terminated with exception: CUDA error: an illegal memory access was "
        "encountered";
    auto ev = run({{w, 5}});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].rank, 5);
    EXPECT_EQ(ev[0].reason, "cudaErrorIllegalAddress");
    auto ev2 = run({{"[rank1]:" + w}});
    ASSERT_EQ(ev2.size(), 1u);
    EXPECT_EQ(ev2[0].rank, 1);
    auto ev3 = run({{w}});  // only NCCL's own `Rank 5]`
    ASSERT_EQ(ev3.size(), 1u);
    EXPECT_EQ(ev3[0].rank, 5);
    // The older `[Rank N]` (vllm-project/vllm#4108); a rank that is not all digits is none.
    auto ev4 = run({{"[E ProcessGroupNCCL.cpp:916] [Rank 0] NCCL watchdog thread terminated "
                     "with exception: CUDA error: an illegal memory access was encountered"},
                    {"[E ProcessGroupNCCL.cpp:916] [Rank 3x] NCCL watchdog thread terminated "
                     "with exception: CUDA error: an illegal memory access was encountered"}});
    ASSERT_EQ(ev4.size(), 2u);
    EXPECT_EQ(ev4[0].rank, 0);
    EXPECT_EQ(ev4[0].reason, "cudaErrorIllegalAddress");
    EXPECT_FALSE(ev4[1].rank);
}

TEST(RuntimeError, DifferentRanksAreDifferentRecords) {
    auto ev = run({{"RuntimeError: CUDA error: unspecified launch failure", 0},
                   {"RuntimeError: CUDA error: unspecified launch failure", 1}});
    ASSERT_EQ(ev.size(), 2u);
}

// rocBLAS / hipBLASLt (§9.8).

TEST(RuntimeError, TensileLibraryMissing) {
    auto ev = run({{"rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: "
                    "Illegal seek for GPU arch : gfx1100"},
                   {" List of available TensileLibrary Files : "},
                   {"rocBLAS error: Could not initialize Tensile host: No devices found"},
                   {"rocblaslt warning: No paths matched /opt/hipBLASLt/library/../Tensile/library/"
                    "*gfx906*co. Make sure that HIPBLASLT_TENSILE_LIBPATH is set correctly."}});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].kind, Kind::MissingCodeObject);
    EXPECT_EQ(ev[0].vendor, "amd");
    EXPECT_EQ(ev[0].attr("target"), "gfx1100");
    EXPECT_EQ(ev[0].attr("path"), "/opt/rocm/lib/rocblas/library/TensileLibrary.dat");
    EXPECT_EQ(ev[1].kind, Kind::MissingCodeObject);
    EXPECT_FALSE(ev[1].attr("target"));
    EXPECT_EQ(ev[2].attr("target"), "gfx906");
    EXPECT_EQ(ev[2].attr("library"), "hipBLASLt");
    // The lazy library of one arch, on Windows (a path with blanks; likelovewant/
    // ROCmLibs-for-gfx1103-AMD780M-APU#12), then the library's own failure.
    auto lazy = run({{"rocBLAS error: Could not load C:\\Program Files\\AMD\\ROCm\\6.1\\bin\\/"
                      "rocblas/library/TensileLibrary_lazy_gfx1103.dat"},
                     {""},
                     {"rocBLAS error: Could not initialize Tensile library"}});
    ASSERT_EQ(lazy.size(), 2u);
    EXPECT_EQ(lazy[0].line, 1u);
    EXPECT_EQ(lazy[0].kind, Kind::MissingCodeObject);
    EXPECT_EQ(lazy[0].attr("target"), "gfx1103");
    EXPECT_EQ(lazy[0].attr("path"),
              "C:\\Program Files\\AMD\\ROCm\\6.1\\bin\\/rocblas/library/"
              "TensileLibrary_lazy_gfx1103.dat");
    EXPECT_EQ(lazy[1].attr("message"), "Could not initialize Tensile library");
}

TEST(RuntimeError, AmdLogLinesBelongToHipLog) {
    LogLine l;
    std::string t = "hipDeviceSynchronize: Returned hipErrorLaunchFailure : ";
    l.line = 1;
    l.text = t;
    l.raw = t;
    l.amd_level = 3;
    auto m = makeRuntimeErrorMatcher();
    CollectSink sink;
    m->feed(l, sink);
    m->finish(sink);
    EXPECT_TRUE(sink.evidences.empty());
    EXPECT_TRUE(
        run({{":3:hip_module.cpp           :47  : 48517562042 us: [pid:77544 tid: 0x7fd5bfa8d640] "
              "hipModuleUnload: Returned hipErrorLaunchFailure : "}})
            .empty());
}

}  // namespace
}  // namespace gpufault
