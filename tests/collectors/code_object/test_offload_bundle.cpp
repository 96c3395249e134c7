// Uncompressed offload bundles: a real one from Debian's hipcc 5.2, built ones, hostile ones.
#include <gtest/gtest.h>

#include "collectors/code_object/offload_bundle.h"
#include "tests/collectors/code_object/bundle_builder.h"

using namespace gpufault::codeobj;
using namespace gpufault::codeobj::testing;

TEST(OffloadBundle, RealMultiTargetBundle) {
    // Debian hipcc 5.2, --offload-arch gfx90a, gfx1030, gfx906 (on-disk order: host, gfx1030, …).
    std::string b = fixture("hip/raw/vadd_multi.hipfb");
    ASSERT_EQ(b.size(), 16793u);
    auto r = parseOffloadBundle(bytesOf(b), 0);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->entries.size(), 4u);
    EXPECT_EQ(r->entries[0].id, "host-x86_64-unknown-linux");
    EXPECT_EQ(r->entries[0].size, 0u);
    EXPECT_EQ(r->entries[1].id, "hipv4-amdgcn-amd-amdhsa--gfx1030");
    EXPECT_EQ(r->entries[1].offset, 0x1000u);  // roc-obj-ls: offset=16384 in the executable
    EXPECT_EQ(r->entries[1].size, 3672u);      // roc-obj-ls: size=3672
    EXPECT_EQ(r->entries[2].parsed.target, "gfx906");
    EXPECT_EQ(r->entries[3].parsed.target, "gfx90a");
    EXPECT_EQ(r->extent, b.size() - 1);  // the section holds one byte more than the bundle
}

TEST(OffloadBundle, Gfx906BundleAsLabNotesHexdumpShows) {
    // LAB-NOTES §2.4: host entry (id_len 25), then the gfx906 entry at +0x51: 0x1000 + 0xd88.
    auto r = parseOffloadBundle(bytesOf(fixture("hip/raw/vadd_gfx906.hipfb")), 0);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 2u);
    EXPECT_EQ(r->entries[0].id.size(), 25u);
    EXPECT_EQ(r->entries[1].id, "hipv4-amdgcn-amd-amdhsa--gfx906");
    EXPECT_EQ(r->entries[1].offset, 0x1000u);
    EXPECT_EQ(r->entries[1].size, 0xd88u);
}

TEST(OffloadBundle, FeatureTargetIdsKeptWhole) {
    auto r = parseOffloadBundle(bytesOf(fixture("hip/raw/vadd_features.hipfb")), 0);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 3u);
    EXPECT_EQ(r->entries[1].parsed.target, "gfx908:sramecc-:xnack-");
    EXPECT_EQ(r->entries[2].parsed.target, "gfx90a:xnack+");
}

TEST(OffloadBundle, BuiltBundleRoundTrips) {
    std::string b = buildBundle({{"host-x86_64-unknown-linux-gnu-", ""},
                                 {"hipv4-amdgcn-amd-amdhsa--gfx11-generic", "abcd"}});
    auto r = parseOffloadBundle(bytesOf(b), 0x5000);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->entries.size(), 2u);
    EXPECT_EQ(r->entries[1].parsed.target, "gfx11-generic");
    EXPECT_EQ(b.substr(r->entries[1].offset, 4), "abcd");
}

TEST(OffloadBundle, HostileHeadersAreErrorsWithOffsets) {
    std::string good = buildBundle({{"hipv4-amdgcn-amd-amdhsa--gfx906", "xxxx"}});
    // entry count 2^63
    std::string huge = good;
    huge.replace(24, 8, std::string("\0\0\0\0\0\0\0\x80", 8));
    auto r = parseOffloadBundle(bytesOf(huge), 0x100);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().offset, 0x100u + 24);
    EXPECT_NE(r.error().message.find("9223372036854775808"), std::string::npos)
        << r.error().message;
    // ID length 2^40
    std::string longId = good;
    longId.replace(48, 8, std::string("\0\0\0\0\0\x01\0\0", 8));
    r = parseOffloadBundle(bytesOf(longId), 0);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().offset, 48u);
    EXPECT_NE(r.error().message.find("1099511627776"), std::string::npos) << r.error().message;
    // payload offset past the end
    std::string past = good;
    past.replace(32, 8, std::string("\0\0\0\x01\0\0\0\0", 8));
    r = parseOffloadBundle(bytesOf(past), 0);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().offset, 32u);
    // offset + size wraps around 2^64
    std::string wrap = good;
    wrap.replace(40, 8, std::string(8, '\xff'));
    EXPECT_FALSE(parseOffloadBundle(bytesOf(wrap), 0));
    // truncated anywhere: never a crash, always an error
    for (size_t n = 0; n < good.size() - 4; ++n)
        EXPECT_FALSE(parseOffloadBundle(bytesOf(good.substr(0, n)), 0)) << n;
    // zero entries
    std::string none = good.substr(0, 24) + std::string(8, '\0');
    EXPECT_FALSE(parseOffloadBundle(bytesOf(none), 0));
}
