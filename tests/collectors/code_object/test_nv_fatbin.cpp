// CUDA fat binaries from nvcc 13.0 (.nv_fatbin sections kept by objcopy; LAB-NOTES §5 figures).
#include <gtest/gtest.h>

#include "collectors/code_object/inventory.h"
#include "collectors/code_object/nv_fatbin.h"
#include "tests/collectors/code_object/bundle_builder.h"

using namespace gpufault::codeobj;
using namespace gpufault::codeobj::testing;

namespace {

std::vector<FatbinContainer> containers(const std::string& name) {
    auto inv = inventory(bytesOf(fixture("cuda/" + name + ".nv_fatbin.elf")));
    EXPECT_TRUE(inv);
    std::vector<FatbinContainer> out;
    if (!inv) return out;
    EXPECT_TRUE(inv->errors.empty());
    for (const auto& b : inv->bundles) out.push_back(b.fatbin);
    return out;
}

}  // namespace

TEST(NvFatbin, Sm75HasTheDlinkContainerAndTheKernelContainer) {
    auto c = containers("vadd_sm75");
    ASSERT_EQ(c.size(), 2u);
    ASSERT_EQ(c[0].entries.size(), 1u);
    EXPECT_EQ(c[0].entries[0].target(), "sm_75");
    EXPECT_EQ(c[0].entries[0].size, 1448u);
    EXPECT_EQ(c[0].fat_size, 0x5e8u);  // LAB-NOTES hexdump: fat_size 0x5e8
    EXPECT_EQ(c[1].entries[0].size, 3368u);
    EXPECT_EQ(c[0].entries[0].header_size, 64u);
    EXPECT_EQ(c[0].entries[0].mismatch, "");  // cubin e_flags agree: sm_75
}

TEST(NvFatbin, Sm80Sm90AndZstdPtx) {
    auto c = containers("vadd_sm80_sm90_ptx");
    ASSERT_EQ(c.size(), 2u);
    ASSERT_EQ(c[0].entries.size(), 2u);
    EXPECT_EQ(c[0].entries[0].size, 1464u);
    EXPECT_EQ(c[0].entries[1].size, 1544u);
    ASSERT_EQ(c[1].entries.size(), 3u);
    const auto& ptx = c[1].entries[1];
    EXPECT_TRUE(ptx.isPtx());
    EXPECT_EQ(ptx.target(), "compute_90");
    EXPECT_EQ(ptx.header_size, 80u);
    EXPECT_TRUE(ptx.compressed());
    EXPECT_EQ(ptx.compressed_size, 404u);
    EXPECT_EQ(ptx.decompressed_size, 1047u);
    EXPECT_EQ(c[1].entries[0].size, 3624u);
    EXPECT_EQ(c[1].entries[2].size, 3976u);
    for (const auto& e : c[1].entries) EXPECT_EQ(e.mismatch, "");
}

TEST(NvFatbin, CompressAllMarksEveryEntryZstd) {
    auto c = containers("vadd_sm80_sm90_ptx_compressall");
    ASSERT_EQ(c.size(), 2u);
    size_t n = 0;
    for (const auto& k : c)
        for (const auto& e : k.entries) {
            ++n;
            EXPECT_TRUE(e.compressed());
            EXPECT_EQ(e.flags & 0x8000, 0x8000u);
        }
    EXPECT_EQ(n, 5u);
    EXPECT_EQ(c[0].entries[0].compressed_size, 537u);  // LAB-NOTES: ELF sm_80 537 → 1464
    EXPECT_EQ(c[0].entries[0].decompressed_size, 1464u);
}

TEST(NvFatbin, HostileContainers) {
    std::string s;
    putU32(s, kFatbinMagic);
    s += std::string("\x01\0\x10\0", 4);
    putU64(s, uint64_t{1} << 62);  // fat_size past the end
    auto r = parseNvFatbin(bytesOf(s), 0x900);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().offset, 0x908u);
    EXPECT_EQ(parseNvFatbin(bytesOf(std::string("\x01\x02\x03\x04", 4)), 0).error().offset, 0u);
    // An entry whose payload runs past its container.
    std::string e;
    putU32(e, kFatbinMagic);
    e += std::string("\x01\0\x10\0", 4);
    putU64(e, 64);
    std::string entry(64, '\0');
    entry[0] = 2;
    entry[4] = 64;
    entry[8] = 100;  // size 100 > 0 bytes left
    e += entry;
    r = parseNvFatbin(bytesOf(e), 0);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().offset, 20u);
    EXPECT_TRUE(parseNvFatbin(bytesOf(std::string(32, '\0')), 0)->empty());  // padding only
}
