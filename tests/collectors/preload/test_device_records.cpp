// The shim's records from a real H200 (tests/data/device/preload, made by run_preload.sh):
// every pointer the programs printed is a recorded allocation of the printed size, and under
// PyTorch every caching-allocator segment (torch.cuda.memory_snapshot) is one, with the
// tensors inside them.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "collectors/preload/alloc_log.h"
#include "tests/support/process.h"

namespace al = gpufault::alloclog;
using gpufault::testing::readFile;

namespace {

struct Printed {
    std::string what;
    uint64_t ptr = 0, size = 0;
};

std::vector<Printed> printed(const std::string& path) {
    std::vector<Printed> v;
    std::istringstream in(readFile(path));
    std::string line;
    static const std::regex re(R"(^(\S+) ptr=(0x[0-9a-f]+) size=(\d+))");
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_search(line, m, re))
            v.push_back({m[1], std::stoull(m[2], nullptr, 16), std::stoull(m[3])});
    }
    return v;
}

std::string dir() {
    return std::string(std::getenv("GPUFAULT_TEST_DATA")) + "/device/preload/";
}

al::Log load(const std::string& name) {
    auto text = readFile(dir() + name);
    EXPECT_FALSE(text.empty()) << name;
    return al::parse(text);
}

const al::Allocation* exact(const al::Log& log, uint64_t ptr, uint64_t size) {
    for (const auto& a : log.allocations)
        if (a.ptr == ptr && a.end - a.ptr == size) return &a;
    return nullptr;
}

}  // namespace

TEST(DeviceRecords, NvccProgramStaticCudartIsSeenThroughTheDriver) {
    auto log = load("static.gpufault-alloc.568.log");
    EXPECT_TRUE(log.warnings.empty());
    auto p = printed(dir() + "static.stdout.txt");
    ASSERT_EQ(p.size(), 8u);
    for (const auto& x : p) {
        const auto* a = exact(log, x.ptr, x.size);
        ASSERT_TRUE(a) << x.what << " 0x" << std::hex << x.ptr;
        EXPECT_EQ(a->pid, 568);
    }
    // Static cudart reaches the driver through cuGetProcAddress: driver API names.
    EXPECT_EQ(exact(log, p[0].ptr, p[0].size)->api, "cuMemAlloc_v2");
    EXPECT_EQ(exact(log, p[3].ptr, p[3].size)->api, "cuMemAllocManaged");
    EXPECT_EQ(exact(log, p[4].ptr, p[4].size)->api, "cuMemHostAlloc");
    EXPECT_EQ(exact(log, p[5].ptr, p[5].size)->api, "cuMemAllocAsync");
    EXPECT_EQ(exact(log, p[5].ptr, p[5].size)->free_api, "cuMemFreeAsync");
    EXPECT_EQ(exact(log, p[6].ptr, p[6].size)->kind, "reserve");
    EXPECT_EQ(exact(log, p[7].ptr, p[7].size)->kind, "map");
    EXPECT_EQ(exact(log, p[7].ptr, p[7].size)->device, 0);
    EXPECT_EQ(exact(log, p[1].ptr, p[1].size)->free_api, "cuMemFree_v2");
    EXPECT_EQ(exact(log, p[0].ptr, p[0].size)->device, 0);
}

TEST(DeviceRecords, NvccProgramSharedCudartIsSeenAsRuntimeCalls) {
    auto log = load("shared.gpufault-alloc.575.log");
    auto p = printed(dir() + "shared.stdout.txt");
    ASSERT_EQ(p.size(), 8u);
    for (const auto& x : p) {
        const auto* a = exact(log, x.ptr, x.size);
        ASSERT_TRUE(a) << x.what;
        if (x.what.starts_with("cuda")) {
            EXPECT_EQ(a->api, x.what);  // no second (driver) record
        }
    }
    EXPECT_EQ(log.allocations.size(), 8u);
}

TEST(DeviceRecords, PyTorchSegmentsAreRecordedAndHoldTheTensors) {
    auto log = load("torch-caching.gpufault-alloc.582.log");
    auto p = printed(dir() + "torch-caching.stdout.txt");
    int segments = 0, tensors = 0;
    for (const auto& x : p) {
        if (x.what == "segment") {
            ++segments;
            const auto* a = exact(log, x.ptr, x.size);
            ASSERT_TRUE(a) << std::hex << x.ptr;
            EXPECT_EQ(a->api, "cudaMalloc");
            EXPECT_TRUE(a->stack.starts_with("libc10_cuda.so+0x")) << a->stack;
        } else if (x.what.starts_with("tensor-")) {
            ++tensors;
            bool inside = false;
            for (const auto& a : log.allocations)
                inside |= a.api == "cudaMalloc" && a.ptr <= x.ptr && x.ptr + x.size <= a.end;
            EXPECT_TRUE(inside) << x.what;
        }
    }
    EXPECT_EQ(segments, 5);
    EXPECT_EQ(tensors, 4);
}

TEST(DeviceRecords, PyTorchExpandableSegmentsAreMappingsInsideAReservation) {
    auto log = load("torch-expandable.gpufault-alloc.604.log");
    EXPECT_TRUE(log.warnings.empty());
    EXPECT_EQ(log.failed, 1u);  // one cuMemCreate returned 800 (then retried)
    for (const auto& x : printed(dir() + "torch-expandable.stdout.txt")) {
        bool reserved = false;
        uint64_t mapped = 0;
        for (const auto& a : log.allocations) {
            if (a.kind == "reserve") reserved |= a.ptr <= x.ptr && x.ptr + x.size <= a.end;
            if (a.kind == "map" && a.ptr >= x.ptr && a.end <= x.ptr + x.size && a.device == 0)
                mapped += a.end - a.ptr;
        }
        EXPECT_TRUE(reserved) << x.what;
        if (x.what == "segment") {
            EXPECT_EQ(mapped, x.size) << std::hex << x.ptr;
        }
    }
}
