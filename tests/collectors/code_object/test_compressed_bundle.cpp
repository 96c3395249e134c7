// CCOB compressed bundles v1/v2/v3 with zlib and zstd, built from a real bundle; zip bombs.
#include <gtest/gtest.h>

#include "collectors/code_object/compressed_bundle.h"
#include "collectors/code_object/inventory.h"
#include "tests/collectors/code_object/bundle_builder.h"

using namespace gpufault::codeobj;
using namespace gpufault::codeobj::testing;

namespace {

std::string str(const std::vector<std::byte>& v) {
    return {reinterpret_cast<const char*>(v.data()), v.size()};
}

}  // namespace

TEST(CompressedBundle, EveryVersionAndMethodInflatesToTheRealBundle) {
    std::string raw = fixture("hip/raw/vadd_multi.hipfb");
    ASSERT_EQ(raw.size(), 16793u);
    for (auto method : {Compression::Zlib, Compression::Zstd}) {
        for (uint16_t version : {1, 2, 3}) {
            std::string ccob = str(compressBundle(bytesOf(raw), method, version));
            auto h = parseCompressedBundleHeader(bytesOf(ccob), 0);
            ASSERT_TRUE(h) << h.error().message;
            EXPECT_EQ(h->version, version);
            EXPECT_EQ(h->method, method);
            EXPECT_EQ(h->header_size, version == 1 ? 20u : version == 2 ? 24u : 32u);
            EXPECT_EQ(h->uncompressed_size, 16793u);
            EXPECT_EQ(h->total_size, ccob.size());
            EXPECT_LT(ccob.size(), raw.size());
            auto out = decompressBundle(bytesOf(ccob), *h, 1 << 20, 0);
            ASSERT_TRUE(out) << out.error().message;
            EXPECT_EQ(str(*out), raw);
            // The inventory reads the header, inflates, and finds the four entries.
            auto inv = inventory(bytesOf(ccob));
            ASSERT_TRUE(inv);
            ASSERT_EQ(inv->bundles.size(), 1u);
            EXPECT_TRUE(inv->bundles[0].decompressed);
            EXPECT_EQ(inv->bundles[0].targets(),
                      (std::vector<std::string>{"gfx1030", "gfx906", "gfx90a"}));
            // Headers only when not asked to decompress.
            auto headersOnly = inventory(bytesOf(ccob), {.decompress = false});
            ASSERT_TRUE(headersOnly);
            EXPECT_TRUE(headersOnly->bundles[0].entries.empty());
            EXPECT_EQ(headersOnly->bundles[0].compressed->uncompressed_size, 16793u);
        }
    }
}

TEST(CompressedBundle, SizeCapIsCheckedBeforeAllocating) {
    std::string raw = fixture("hip/raw/vadd_multi.hipfb");
    std::string ccob = str(compressBundle(bytesOf(raw), Compression::Zstd, 3));
    // Claim 2^50 bytes: refused by the cap, nothing allocated.
    std::string claim = ccob;
    claim.replace(16, 8, std::string("\0\0\0\0\0\0\x04\0", 8));
    auto h = parseCompressedBundleHeader(bytesOf(claim), 0x2000);
    ASSERT_TRUE(h);
    auto out = decompressBundle(bytesOf(claim), *h, 1 << 30, 0x2000);
    ASSERT_FALSE(out);
    EXPECT_EQ(out.error().offset, 0x2000u);
    EXPECT_NE(out.error().message.find("over the limit"), std::string::npos) << out.error().message;
}

TEST(CompressedBundle, ZipBombStopsAtTheDeclaredSize) {
    // 64 MiB of zeros compress to a few KiB; the header declares 4 KiB.
    std::string zeros(64 << 20, '\0');
    for (auto method : {Compression::Zlib, Compression::Zstd}) {
        std::string bomb = str(compressBundle(bytesOf(zeros), method, 2));
        ASSERT_LT(bomb.size(), 100000u);
        bomb.replace(12, 4, std::string("\0\x10\0\0", 4));  // uncompressed_size = 4096
        auto h = parseCompressedBundleHeader(bytesOf(bomb), 0);
        ASSERT_TRUE(h);
        auto out = decompressBundle(bytesOf(bomb), *h, 1 << 30, 0);
        ASSERT_FALSE(out);
        EXPECT_EQ(out.error().offset, 24u);
    }
}

TEST(CompressedBundle, HostileHeaders) {
    std::string raw = fixture("hip/raw/vadd_gfx906.hipfb");
    std::string ccob = str(compressBundle(bytesOf(raw), Compression::Zlib, 2));
    std::string v9 = ccob;
    v9[4] = 9;
    EXPECT_EQ(parseCompressedBundleHeader(bytesOf(v9), 0).error().offset, 4u);
    std::string method = ccob;
    method[6] = 7;
    EXPECT_EQ(parseCompressedBundleHeader(bytesOf(method), 0).error().offset, 6u);
    // total size past the buffer
    std::string big = ccob;
    big.replace(8, 4, std::string("\xff\xff\xff\x7f", 4));
    EXPECT_FALSE(parseCompressedBundleHeader(bytesOf(big), 0));
    // truncated compressed payload: an error, never a crash
    for (size_t n : {size_t{4}, size_t{12}, size_t{30}, ccob.size() / 2}) {
        std::string cut = ccob.substr(0, n);
        auto h = parseCompressedBundleHeader(bytesOf(cut), 0);
        EXPECT_FALSE(h && decompressBundle(bytesOf(cut), *h, 1 << 20, 0)) << n;
    }
    // corrupted payload
    std::string bad = ccob;
    for (size_t i = 30; i < 60; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    auto h = parseCompressedBundleHeader(bytesOf(bad), 0);
    ASSERT_TRUE(h);
    EXPECT_FALSE(decompressBundle(bytesOf(bad), *h, 1 << 20, 0));
}
