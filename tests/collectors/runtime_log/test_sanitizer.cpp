#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/runtime_log/sanitizer.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

std::vector<Evidence> run(const std::vector<std::string>& lines) {
    auto m = makeSanitizerMatcher();
    return testing::feedMatcher(*m, lines, [](LogLine& l) { l.rank = 1; }).evidences;
}

// Layouts of FORMATS.md §9.5, constructed.

TEST(Sanitizer, DocsLayoutKernelColonOffsetMisaligned) {
    auto ev = run({"========= Invalid __global__ write of size 4 bytes",
                   "=========     at unaligned_kernel():0x160 in memcheck_demo.cu:6",
                   "=========     by thread (0,0,0) in block (0,0,0)",
                   "=========     Address 0x7f6510c00001 is misaligned",
                   "=========",
                   "========= ERROR SUMMARY: 1 error"});
    ASSERT_EQ(ev.size(), 1u);
    const auto& e = ev[0];
    EXPECT_EQ(e.kind, Kind::SanitizerReport);
    EXPECT_EQ(e.vendor, "nvidia");
    EXPECT_EQ(e.line, 1u);
    EXPECT_EQ(e.rank, 1);
    EXPECT_EQ(e.access, "write");
    EXPECT_EQ(e.kernel, "unaligned_kernel()");
    EXPECT_EQ(e.attr("pc_offset"), "0x160");
    EXPECT_EQ(e.attr("source"), "memcheck_demo.cu:6");
    EXPECT_EQ(e.address, 0x7f6510c00001ull);
    EXPECT_EQ(e.address_exact, true);
    EXPECT_EQ(e.attr("violation"), "misaligned");
    EXPECT_EQ(e.attr("access_size"), "4");
    EXPECT_EQ(e.attr("segment"), "global");
    EXPECT_EQ(e.attr("thread"), "(0,0,0)");
    EXPECT_EQ(e.raw,
              "========= Invalid __global__ write of size 4 bytes\n"
              "=========     at unaligned_kernel():0x160 in memcheck_demo.cu:6\n"
              "=========     by thread (0,0,0) in block (0,0,0)\n"
              "=========     Address 0x7f6510c00001 is misaligned");
}

TEST(Sanitizer, NoLineInfoLayoutAtOffsetInKernel) {
    auto ev = run(
        {"========= Invalid __shared__ read of size 8 bytes",
         "=========     at 0x130 in convolution(pixel const*, int, int, float const*, int, pixel*)",
         "=========     by thread (3,0,0) in block (1,2,0)",
         "=========     Address 0x00000400 is out of bounds"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kernel, "convolution(pixel const*, int, int, float const*, int, pixel*)");
    EXPECT_EQ(ev[0].attr("pc_offset"), "0x130");
    EXPECT_EQ(ev[0].attr("segment"), "shared");
    EXPECT_EQ(ev[0].attr("block"), "(1,2,0)");
    EXPECT_EQ(ev[0].address, 0x400u);
    EXPECT_EQ(ev[0].access, "read");
}

TEST(Sanitizer, OldCudaMemcheckLayoutFileLineKernel) {
    auto ev =
        run({"========= CUDA-MEMCHECK",
             "========= Invalid __global__ read of size 4",
             "=========     at 0x000003b8 in ../lfcm.cu:418:update_umatrix(float*, int, int, int, "
             "float)",
             "=========     by thread (31,0,0) in block (2,0,0)",
             "=========     Address 0x7047e9f1c is out of bounds",
             "=========     Saved host backtrace up to driver entry point at kernel launch time",
             "=========     Host Frame:/usr/lib/x86_64-linux-gnu/libcuda.so.1 (cuLaunchKernel + "
             "0x2b8) [0x222dc8]",
             "=========",
             "========= Invalid __local__ write of size 16",
             "=========     at 0x00000010 in k.cu:3:ns::k<3>(int*)",
             "=========     Address 0x00fffd10 is out of bounds"});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].kernel, "update_umatrix(float*, int, int, int, float)");
    EXPECT_EQ(ev[0].attr("source"), "../lfcm.cu:418");
    EXPECT_EQ(ev[0].attr("access_size"), "4");
    EXPECT_EQ(ev[0].address, 0x7047e9f1cull);
    EXPECT_EQ(ev[0].line, 2u);
    EXPECT_EQ(ev[1].kernel, "ns::k<3>(int*)");
    EXPECT_EQ(ev[1].attr("segment"), "local");
    EXPECT_EQ(ev[1].attr("access_size"), "16");
    EXPECT_EQ(ev[1].line, 9u);
}

TEST(Sanitizer, PlusOffsetLayoutWithWrappedSourceAndBeforeNearest) {
    auto ev = run({"========= Invalid __global__ read of size 2 bytes",
                   "=========     at k(const float *, float *, long)+0x2c0",
                   "=========         in /path/k.cu:12",
                   "=========     by thread (0,0,0) in block (687,0,0)",
                   "=========     Address 0x7fdc7b1ffff0 is out of bounds",
                   "=========     and is 16 bytes before the nearest allocation at 0x7fdc7b200000 "
                   "of size 2,097,152 bytes"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kernel, "k(const float *, float *, long)");
    EXPECT_EQ(ev[0].attr("pc_offset"), "0x2c0");
    EXPECT_EQ(ev[0].attr("nearest_side"), "before");
    EXPECT_EQ(ev[0].attr("nearest_distance"), "16");
    EXPECT_EQ(ev[0].attr("nearest_alloc"), "0x7fdc7b200000");
    EXPECT_EQ(ev[0].attr("nearest_alloc_size"), "2097152");
}

TEST(Sanitizer, InsideTheNearestAllocationIsKept) {
    // pytorch/pytorch#196209: memcheck places the access inside the nearest allocation.
    auto ev = run({"========= Invalid __global__ write of size 256 bytes",
                   "=========     at bulk_copy_range(unsigned char *, int)+0x120",
                   "=========     by thread (0,0,0) in block (0,0,0)",
                   "=========     Access to 0x147267fff80 is out of bounds",
                   "=========     and is inside the nearest allocation at 0x14725400000 of size "
                   "20971520 bytes",
                   "=========     Saved host backtrace up to driver entry point at kernel launch "
                   "time"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].address, 0x147267fff80u);
    EXPECT_EQ(ev[0].attr("nearest_side"), "inside");
    EXPECT_EQ(ev[0].attr("nearest_distance"), "0");
    EXPECT_EQ(ev[0].attr("nearest_alloc"), "0x14725400000");
    EXPECT_EQ(ev[0].attr("nearest_alloc_size"), "20971520");
}

TEST(Sanitizer, InterleavedProgramOutputMidLine) {
    auto ev = run({"step 3 done========= Invalid __global__ read of size 4 bytes",
                   "=========     at kern(int*)+0x40 in a.cu:9",
                   "progress 50%",
                   "partial=========     by thread (5,0,0) in block (0,0,0)",
                   "=========     Access to 0x7f0000000010 is out of bounds",
                   "========= "});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].kernel, "kern(int*)");
    EXPECT_EQ(ev[0].attr("thread"), "(5,0,0)");
    EXPECT_EQ(ev[0].address, 0x7f0000000010ull);
    EXPECT_EQ(ev[0].raw.find("progress"), std::string::npos);  // program output is not the report
}

TEST(Sanitizer, CustomPrefix) {
    auto ev = run({"## Invalid __global__ write of size 1 bytes",
                   "##     at w(char*)+0x10",
                   "##     Access to 0x10 is out of bounds",
                   "##",
                   "##     Access to 0x20 is out of bounds"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].address, 0x10u);
    EXPECT_EQ(ev[0].kernel, "w(char*)");
}

TEST(Sanitizer, OtherReportKindsAreNoRecord) {
    EXPECT_TRUE(
        run({"========= Leaked 64 bytes at 0x400200200",
             "========= Program hit cudaErrorLaunchFailure (error 719) due to \"unspecified "
             "launch failure\" on CUDA API call to cudaDeviceSynchronize.",
             "[access] kernel=k op=read addr_first=0x7f78bf4cce00 addr_last=0x7f78bf4cce7f"})
            .empty());
}

TEST(Sanitizer, ApiErrorEndsReportAndIsNotMerged) {
    auto ev = run({"========= Invalid __global__ read of size 4 bytes",
                   "=========     at k()+0x10",
                   "========= Program hit cudaErrorLaunchFailure (error 719) due to \"x\" on CUDA "
                   "API call to f.",
                   "=========     Address 0x1234 is out of bounds"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_FALSE(ev[0].address);  // the address line after the API error is not this report's
}

TEST(Sanitizer, CutReportIsFlushedAtFinishAndRawCapped) {
    std::vector<std::string> lines{"========= Invalid __global__ read of size 4 bytes"};
    for (int i = 0; i < 100; ++i)
        lines.push_back("=========         Host Frame: " + std::string(80, 'x'));
    auto ev = run(lines);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].raw.size(), 4096u);
}

// Real report from the fixtures (070: digit grouping, `Access to`).

TEST(Sanitizer, RealH200WildRead) {
    auto ev =
        run({"[result] kernel=forensics::wild_read_kernel<float> launch=cudaSuccess (0): no error",
             "========= Invalid __global__ read of size 4 bytes",
             "=========     at void forensics::wild_read_kernel<float>(const T1 *, long long, T1 "
             "*)+0xa0 in fault.cu:32",
             "=========     by thread (0,0,0) in block (0,0,0)",
             "=========     Access to 0x7f78bf4cce00 is out of bounds",
             "=========     and is 7,055,657,985 bytes after the nearest allocation at "
             "0x7f771ac00000 of size 512 bytes",
             "=========     Saved host backtrace up to driver entry point at kernel launch time",
             "=========         Host Frame: main in fault.cu:206 [0x9a28] in fault_sm90",
             "========= "});
    ASSERT_EQ(ev.size(), 1u);
    const auto& e = ev[0];
    EXPECT_EQ(e.line, 2u);
    EXPECT_EQ(e.kernel, "void forensics::wild_read_kernel<float>(const T1 *, long long, T1 *)");
    EXPECT_EQ(e.attr("source"), "fault.cu:32");
    EXPECT_EQ(e.address, 0x7f78bf4cce00ull);
    EXPECT_EQ(e.attr("nearest_distance"), "7055657985");
    EXPECT_EQ(e.attr("nearest_side"), "after");
    EXPECT_EQ(e.attr("nearest_alloc"), "0x7f771ac00000");
    EXPECT_EQ(e.attr("nearest_alloc_size"), "512");
}

TEST(Sanitizer, RealOlderAccessAtWordingCutLastLine) {  // 025
    auto ev = run({"========= Invalid __global__ read of size 4 bytes",
                   "=========     at col_kernel(const unsigned int *, unsigned int *, unsigned "
                   "int, unsigned int, int, float)+0x490",
                   "=========     by thread (1,0,0) in block (0,0,0)",
                   "=========     Access at 0x7f71b9e01360 is out of bounds",
                   "=========     and is 1 bytes after the nearest allocation at 0x7f71b9e00a00 of "
                   "size 2400 bytes",
                   "=========     Saved host backtrace up to driver entry point at kern"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(
        ev[0].kernel,
        "col_kernel(const unsigned int *, unsigned int *, unsigned int, unsigned int, int, float)");
    EXPECT_EQ(ev[0].address, 0x7f71b9e01360ull);
    EXPECT_EQ(ev[0].attr("nearest_alloc_size"), "2400");
}

// `Address 0x%llx is …`: a line that ends in the number was cut inside it (hostile review 23,
// H3: `Address 0x7f3a12` was stored as the fault address).
TEST(Sanitizer, AnAddressCutByTheLinesEndIsLeftOut) {
    auto ev = run({"========= Invalid __global__ write of size 4 bytes",
                   "=========     at k(float *)+0x10",
                   "=========     Address 0x7f3a12"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_FALSE(ev[0].address);
    EXPECT_EQ(ev[0].kernel, "k(float *)");
}

// memcheck's imprecise hardware exceptions (FORMATS.md §9.5): a report without an address
// (hostile review 24: no record, only the API error after it).
TEST(Sanitizer, HardwareExceptionReportsHaveTheirKernelAndNoAddress) {
    auto ev = run({"========= COMPUTE-SANITIZER",
                   "========= Warp Illegal Address",
                   "=========     at k(float *)+0x1d0 in /tmp/k.cu:9",
                   "=========     by thread (0,0,0) in block (0,0,0)",
                   "=========     Saved host backtrace up to driver entry point at kernel launch time",
                   "=========",
                   "========= Out-of-range Shared or Local Address",
                   "=========     at reduce(int *)+0x90",
                   "========= Warp Illegal Instruction",
                   "=========     at other(int *)+0x10"});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].kind, Kind::SanitizerReport);
    EXPECT_EQ(ev[0].line, 2u);
    EXPECT_EQ(ev[0].kernel, "k(float *)");
    EXPECT_FALSE(ev[0].address);
    EXPECT_FALSE(ev[0].access);
    EXPECT_EQ(ev[0].attr("exception"), "Warp Illegal Address");
    EXPECT_EQ(ev[0].attr("thread"), "(0,0,0)");
    EXPECT_EQ(ev[1].attr("exception"), "Out-of-range Shared or Local Address");
    EXPECT_EQ(ev[1].kernel, "reduce(int *)");
}

// The device heap's malloc/free reports (FORMATS.md §9.5 "Other documented report kinds"): the
// address ends its `Address` line. No record before (helper 131's audit).
TEST(Sanitizer, DeviceHeapMallocFreeErrorKeepsItsAddress) {
    auto ev = run({"========= Malloc/Free error encountered : Double free",
                   "=========     at 0x79d8",
                   "=========     by thread (0,0,0) in block (0,0,0)",
                   "=========     Address 0x400aff920",
                   "=========",
                   "========= Malloc/Free error encountered : Invalid pointer to free",
                   "=========     at free_twice(int *)+0x40 in /src/heap.cu:7",
                   "=========     by thread (1,0,0) in block (0,0,0)",
                   "=========     Address 0x400a00000 is misaligned"});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].kind, Kind::SanitizerReport);
    EXPECT_EQ(ev[0].attr("heap_error"), "Double free");
    EXPECT_EQ(ev[0].address, 0x400aff920ull);
    EXPECT_EQ(ev[0].attr("thread"), "(0,0,0)");
    EXPECT_EQ(ev[0].line, 1u);
    EXPECT_EQ(ev[1].attr("heap_error"), "Invalid pointer to free");
    EXPECT_EQ(ev[1].kernel, "free_twice(int *)");
    EXPECT_EQ(ev[1].address, 0x400a00000ull);
}

// Real reports: memcheck prints `?` for an access it cannot tell (a Triton kernel's shared
// memory: no record before), and `at NAME in FILE:LINE` without an offset (kernel was null).
TEST(Sanitizer, UnknownAccessAndAnAtLineWithoutOffset) {
    auto ev = run({"========= Invalid __shared__ ? of size 2048 bytes",
                   "=========     at 0x2570 in /src/03-matrix-multiplication.py:223:matmul_kernel",
                   "=========     by thread (224,0,0) in block (4,0,0)",
                   "=========     Address 0x1bc20 is out of bounds",
                   "  ========= Invalid __shared__ read of size 16 bytes",
                   "  =========     at cp_async_bulk_cp_mask in cp_async_bulk.h:236",
                   "  =========     Address 0x400 is out of bounds",
                   "========= Invalid __global__ read of size 4 bytes",
                   "=========     at k in the middle of nowhere",
                   "=========     Address 0x10 is out of bounds"});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].address, 0x1bc20u);
    EXPECT_FALSE(ev[0].access);
    EXPECT_EQ(ev[0].attr("access_op"), "?");
    EXPECT_EQ(ev[0].kernel, "matmul_kernel");
    EXPECT_EQ(ev[1].kernel, "cp_async_bulk_cp_mask");
    EXPECT_EQ(ev[1].attr("source"), "cp_async_bulk.h:236");
    EXPECT_EQ(ev[1].address, 0x400u);
    EXPECT_FALSE(ev[2].kernel);  // no FILE:LINE after ` in `: no kernel guessed
}

// CUDA 11.5+ memcheck: `Invalid __global__ atomic of size 4 bytes` … `Address 0x… is not
// readable/writable with atomic operations`. EVIDENCE.md's access has no `atomic`: stored as
// `write` with attr access_op=atomic.
TEST(Sanitizer, AtomicReportIsAWriteWithAccessOpAtomic) {
    auto ev = run({"========= Invalid __global__ atomic of size 4 bytes",
                   "=========     at 0xa0 in IncrementTwice(unsigned int*)",
                   "=========     by thread (0,0,0) in block (0,0,0)",
                   "=========     Address 0x7f6f67000000 is not readable/writable with atomic "
                   "operations",
                   "========="});
    ASSERT_EQ(ev.size(), 1u);
    const auto& e = ev[0];
    EXPECT_EQ(e.kind, Kind::SanitizerReport);
    EXPECT_EQ(e.access, "write");
    EXPECT_EQ(e.attr("access_op"), "atomic");
    EXPECT_EQ(e.attr("access_size"), "4");
    EXPECT_EQ(e.attr("segment"), "global");
    EXPECT_EQ(e.kernel, "IncrementTwice(unsigned int*)");
    EXPECT_EQ(e.attr("pc_offset"), "0xa0");
    EXPECT_EQ(e.address, 0x7f6f67000000ull);
    EXPECT_EQ(e.address_exact, true);
    EXPECT_EQ(e.attr("violation"), "not readable/writable with atomic operations");
}

// A read, then two atomics (one in the cuda-memcheck `FILE:LINE:KERNEL` layout): three records.
TEST(Sanitizer, ReadThenTwoAtomicsAreThreeRecords) {
    auto ev = run({"========= Invalid __global__ read of size 4 bytes",
                   "=========     at 0x20 in IncrementTwice(unsigned int*)",
                   "=========     by thread (0,0,0) in block (0,0,0)",
                   "=========     Address 0x7f6f67000000 is not readable",
                   "=========",
                   "========= Invalid __global__ atomic of size 4 bytes",
                   "=========     at 0xa0 in IncrementTwice(unsigned int*)",
                   "=========     by thread (0,0,0) in block (0,0,0)",
                   "=========     Address 0x7f6f67000000 is not readable/writable with atomic "
                   "operations",
                   "=========",
                   "========= Invalid __global__ atomic of size 8 bytes",
                   "=========     at 0x270 in sync.h:81:_ZN2cg6atomicEv",
                   "=========     by thread (0,0,0) in block (0,0,0)",
                   "=========     Address 0x7f6f68000000 is out of bounds",
                   "========="});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].access, "read");
    EXPECT_EQ(ev[0].attr("access_op"), std::nullopt);
    EXPECT_EQ(ev[0].attr("violation"), "not readable");
    EXPECT_EQ(ev[1].line, 6u);
    EXPECT_EQ(ev[1].access, "write");
    EXPECT_EQ(ev[1].attr("access_op"), "atomic");
    EXPECT_EQ(ev[2].line, 11u);
    EXPECT_EQ(ev[2].access, "write");
    EXPECT_EQ(ev[2].attr("access_op"), "atomic");
    EXPECT_EQ(ev[2].attr("access_size"), "8");
    EXPECT_EQ(ev[2].kernel, "_ZN2cg6atomicEv");
    EXPECT_EQ(ev[2].attr("source"), "sync.h:81");
    EXPECT_EQ(ev[2].address, 0x7f6f68000000ull);
}

// Hostile input: each of these was quadratic in the line length (minutes for 1 MiB lines);
// ctest's TIMEOUT for unit tests (tests/CMakeLists.txt) fails a regression, no timed assertion.

TEST(Sanitizer, AtLineOfOnlyColonsIsLinear) {
    std::vector<Evidence> ev = run({"========= Invalid __global__ read of size 4 bytes",
                                    "=========     at 0x10 in " + std::string(1u << 20, ':')});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].attr("pc_offset"), "0x10");
}

TEST(Sanitizer, OverlongPrefixIsBoundedAndStillJoinsTheReport) {
    std::string long_a(300000, 'a');
    std::vector<Evidence> ev =
        run({long_a + " Invalid __global__ read of size 4 bytes", std::string(1u << 20, 'a')});
    ASSERT_EQ(ev.size(), 1u);
    // A long (non-repeating) prefix: its last 64 bytes identify the continuation lines.
    std::string pfx = "p";
    for (int i = 0; i < 10; ++i) pfx += "0123456789";
    ev = run({pfx + " Invalid __global__ write of size 8 bytes",
              pfx + "     Address 0x7f0000001000 is out of bounds"});
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].address, 0x7f0000001000ull);
    EXPECT_EQ(ev[0].access, "write");
}

}  // namespace
}  // namespace gpufault
