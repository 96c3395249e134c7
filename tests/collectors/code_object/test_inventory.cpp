// Inventories of the real HIP builds in tests/data/binaries (Debian hipcc 5.2 / clang-15).
#include <gtest/gtest.h>

#include "collectors/code_object/compat.h"
#include "collectors/code_object/compressed_bundle.h"
#include "collectors/code_object/inventory.h"
#include "tests/collectors/code_object/bundle_builder.h"

using namespace gpufault::codeobj;
using namespace gpufault::codeobj::testing;

namespace {

using Strings = std::vector<std::string>;

bool runsOn(const BundleInfo& b, const std::string& device) {
    for (const auto& t : b.targets())
        if (compatible(*parseTarget(t), *parseTarget(device)).runs) return true;
    return false;
}

}  // namespace

TEST(Inventory, SeedCaseNamesTheOneGfx906OnlyBundleAndItsKernel) {
    std::string file = fixture("seedcase/multi_plus_one");
    ASSERT_EQ(file.size(), 91704u);
    auto inv = inventory(bytesOf(file));
    ASSERT_TRUE(inv);
    EXPECT_EQ(inv->format, "ELF");
    EXPECT_TRUE(inv->errors.empty());
    EXPECT_EQ(inv->hip_wrappers, 4u);  // .hipFatBinSegment 0x60 = 4 × 24
    ASSERT_EQ(inv->bundles.size(), 4u);
    // .hip_fatbin at file offset 0x3000; one bundle per translation unit, 4096-aligned.
    EXPECT_EQ(inv->bundles[0].offset, 0x3000u);
    EXPECT_EQ(inv->bundles[1].offset, 0x8000u);
    EXPECT_EQ(inv->bundles[2].offset, 0xd000u);
    EXPECT_EQ(inv->bundles[3].offset, 0x12000u);
    for (int i = 0; i < 3; ++i)
        EXPECT_EQ(inv->bundles[i].targets(), (Strings{"gfx1030", "gfx906", "gfx90a"}));
    EXPECT_EQ(inv->bundles[3].targets(), Strings{"gfx906"});
    EXPECT_EQ(inv->bundles[3].kernels(), Strings{"_Z16gpu_bench_kernelPfi"});
    EXPECT_EQ(inv->bundles[0].kernels(), Strings{"_Z8kernel_1Pfi"});
    for (const std::string dev : {"gfx1030", "gfx90a"}) {
        std::vector<size_t> lacking;
        for (size_t i = 0; i < 4; ++i)
            if (!runsOn(inv->bundles[i], dev)) lacking.push_back(i + 1);
        EXPECT_EQ(lacking, std::vector<size_t>{4}) << dev;
    }
    for (const auto& b : inv->bundles) EXPECT_TRUE(runsOn(b, "gfx906"));
}

TEST(Inventory, MultiTargetExecutableCodeObjectsMatchTheirLabels) {
    auto inv = inventory(bytesOf(fixture("hip/vadd_multi")));
    ASSERT_TRUE(inv);
    ASSERT_EQ(inv->bundles.size(), 1u);
    const auto& b = inv->bundles[0];
    EXPECT_EQ(b.offset, 0x3000u);
    EXPECT_EQ(b.size, 0x4198u);  // .hip_fatbin is 0x4199: one byte of padding after the bundle
    ASSERT_EQ(b.entries.size(), 4u);
    EXPECT_EQ(b.entries[1].code->e_flags, 0x36u);   // gfx1030
    EXPECT_EQ(b.entries[2].code->e_flags, 0x52fu);  // gfx906, xnack any, sramecc any
    EXPECT_EQ(b.entries[3].code->target.text(), "gfx90a");
    for (const auto& e : b.entries) EXPECT_EQ(e.mismatch, "") << e.entry.id;
    EXPECT_EQ(b.entries[2].code->kernels, Strings{"_Z11vadd_kernelPKfS0_Pfi"});
}

TEST(Inventory, FeatureTargetsDecodedFromEFlags) {
    auto inv = inventory(bytesOf(fixture("hip/vadd_features")));
    ASSERT_TRUE(inv);
    const auto& e = inv->bundles.at(0).entries;
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[1].code->e_flags, 0xa30u);
    EXPECT_EQ(e[1].code->target.text(), "gfx908:sramecc-:xnack-");
    EXPECT_EQ(e[2].code->e_flags, 0x73fu);
    EXPECT_EQ(e[2].code->target.text(), "gfx90a:xnack+");
    EXPECT_EQ(e[1].mismatch, "");
    EXPECT_EQ(e[2].mismatch, "");
    EXPECT_FALSE(runsOn(inv->bundles[0], "gfx90a:xnack-"));
    EXPECT_TRUE(runsOn(inv->bundles[0], "gfx90a:xnack+"));
}

TEST(Inventory, MislabeledEntriesAreReported) {
    auto inv = inventory(bytesOf(fixture("hip/raw/synthetic_mislabeled_gfx1151.hipfb")));
    ASSERT_TRUE(inv);
    EXPECT_EQ(inv->format, "offload bundle");
    const auto& e = inv->bundles.at(0).entries;
    ASSERT_EQ(e.size(), 3u);
    EXPECT_EQ(e[1].mismatch,
              "labeled gfx1151 but holds gfx1030 code (e_flags 0x36, code object v4)");
    EXPECT_EQ(e[2].mismatch,
              "labeled gfx906 but holds gfx90a code (e_flags 0x53f, code object v4)");
}

TEST(Inventory, BareCodeObjectAndGfx1100) {
    auto co = inventory(bytesOf(fixture("hip/raw/vadd_multi.gfx906.co")));
    ASSERT_TRUE(co);
    EXPECT_EQ(co->format, "AMDGPU code object");
    EXPECT_EQ(co->bundles.at(0).targets(), Strings{"gfx906"});
    auto shim = inventory(bytesOf(fixture("hip/raw/vadd_gfx1100_shim.hipfb")));
    ASSERT_TRUE(shim);
    EXPECT_EQ(shim->bundles.at(0).entries.at(1).code->e_flags, 0x41u);
    EXPECT_EQ(shim->bundles.at(0).entries.at(1).mismatch, "");
}

TEST(Inventory, CompressedBundlesInsideASectionAreSplitByTotalSize) {
    std::string a = fixture("hip/raw/vadd_gfx906.hipfb"), b = fixture("hip/raw/vadd_multi.hipfb");
    auto za = compressBundle(bytesOf(a), Compression::Zstd, 3);
    auto zb = compressBundle(bytesOf(b), Compression::Zlib, 2);
    std::string region(reinterpret_cast<const char*>(za.data()), za.size());
    ASSERT_LT(region.size(), 0x1000u);
    region.resize(0x1000, '\0');
    region.append(reinterpret_cast<const char*>(zb.data()), zb.size());
    region += a;  // and a plain bundle after them
    Inventory inv;
    scanBundles(bytesOf(region), 0x3000, {}, inv);
    EXPECT_TRUE(inv.errors.empty());
    ASSERT_EQ(inv.bundles.size(), 3u);
    EXPECT_EQ(inv.bundles[0].offset, 0x3000u);
    EXPECT_EQ(inv.bundles[1].offset, 0x4000u);
    EXPECT_EQ(inv.bundles[0].targets(), Strings{"gfx906"});
    EXPECT_EQ(inv.bundles[1].targets(), (Strings{"gfx1030", "gfx906", "gfx90a"}));
    EXPECT_FALSE(inv.bundles[2].compressed);
}

TEST(Inventory, HostileInputIsAnErrorWithItsOffsetNeverACrash) {
    EXPECT_EQ(inventory(bytesOf(std::string("hello world"))).error().offset, 0u);
    EXPECT_FALSE(inventory(bytesOf(std::string(""))));
    // An ELF whose section table lies past the end.
    std::string elf = fixture("hip/vadd_gfx906");
    auto cut = inventory(bytesOf(elf.substr(0, 0x4000)));
    ASSERT_FALSE(cut);
    EXPECT_EQ(cut.error().offset, 40u);  // e_shoff
    // Truncated at every 97th byte: a clean error every time (the section table is at the end).
    for (size_t n = 0; n < elf.size(); n += 97)
        EXPECT_FALSE(inventory(bytesOf(elf.substr(0, n)))) << n;
    // A bundle magic followed by garbage inside a region, then a good bundle: one error, one
    // bundle.
    std::string region =
        "__CLANG_OFFLOAD_BUNDLE__" + std::string(8, '\xff') + std::string(100, 'x');
    size_t good = region.size();
    region += fixture("hip/raw/vadd_gfx906.hipfb");
    Inventory inv;
    scanBundles(bytesOf(region), 0, {}, inv);
    ASSERT_EQ(inv.errors.size(), 1u);
    EXPECT_EQ(inv.errors[0].offset, 24u);
    ASSERT_EQ(inv.bundles.size(), 1u);
    EXPECT_EQ(inv.bundles[0].offset, good);
    // A compressed bundle over the cap is an error, not an allocation.
    auto z = compressBundle(bytesOf(fixture("hip/raw/vadd_gfx906.hipfb")), Compression::Zstd, 2);
    auto capped = inventory(Bytes(z.data(), z.size()), {.max_decompressed = 1000});
    ASSERT_TRUE(capped);
    ASSERT_EQ(capped->errors.size(), 1u);
    EXPECT_NE(capped->errors[0].message.find("over the limit of 1000"), std::string::npos);
}
