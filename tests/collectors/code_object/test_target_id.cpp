// Bundle entry IDs and target IDs as clang-offload-bundler writes them (OffloadBundler.cpp).
#include <gtest/gtest.h>

#include "collectors/code_object/target_id.h"

using namespace gpufault::codeobj;

TEST(BundleEntryId, HipV4WithEmptyEnvironmentAndFeatures) {
    auto e = parseBundleEntryId("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
    EXPECT_EQ(e.kind, "hipv4");
    EXPECT_EQ(e.triple, "amdgcn-amd-amdhsa");
    EXPECT_EQ(e.target, "gfx90a:sramecc+:xnack-");
    EXPECT_FALSE(e.isHost());
}

TEST(BundleEntryId, GenericTargetKeepsItsDashes) {
    EXPECT_EQ(parseBundleEntryId("hipv4-amdgcn-amd-amdhsa--gfx10-3-generic").target,
              "gfx10-3-generic");
}

TEST(BundleEntryId, HostOldAndNewAndPreV4Hip) {
    auto h = parseBundleEntryId("host-x86_64-unknown-linux");
    EXPECT_TRUE(h.isHost());
    EXPECT_EQ(h.triple, "x86_64-unknown-linux");
    EXPECT_EQ(h.target, "");
    EXPECT_EQ(parseBundleEntryId("host-x86_64-unknown-linux-gnu-").triple,
              "x86_64-unknown-linux-gnu");
    auto old = parseBundleEntryId("hip-amdgcn-amd-amdhsa-gfx906");
    EXPECT_EQ(old.kind, "hip");
    EXPECT_EQ(old.target, "gfx906");
}

TEST(TargetId, FeaturesParsedAndPrintedInLlvmOrder) {
    auto t = parseTargetId("gfx908:xnack-:sramecc-");
    ASSERT_TRUE(t);
    EXPECT_EQ(t->processor, "gfx908");
    EXPECT_EQ(t->xnack, Feature::Off);
    EXPECT_EQ(t->sramecc, Feature::Off);
    EXPECT_EQ(t->text(), "gfx908:sramecc-:xnack-");
    auto plain = parseTargetId("gfx1151");
    ASSERT_TRUE(plain);
    EXPECT_EQ(plain->xnack, Feature::Any);
    EXPECT_EQ(plain->text(), "gfx1151");
}

TEST(TargetId, MalformedFeatureIsAnErrorWithItsOffset) {
    auto t = parseTargetId("gfx90a:xnack");
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().offset, 7u);
    EXPECT_FALSE(parseTargetId(""));
    EXPECT_FALSE(parseTargetId(":xnack+"));
}
