// The compatibility table, row by row: does code for `code` run on `device`?
#include <gtest/gtest.h>

#include "collectors/code_object/compat.h"

using namespace gpufault::codeobj;

namespace {

struct Row {
    const char* code;
    const char* device;
    const char* hsa_override;
    bool runs;
    const char* rule;
};

const Row kRows[] = {
    // AMD: processor equality
    {"gfx906", "gfx906", "", true, "same processor"},
    {"gfx906", "gfx1030", "", false, "other processor"},
    {"gfx90a", "gfx942", "", false, "other processor"},
    {"gfx1100", "gfx1151", "", false, "other processor"},
    // xnack / sramecc: + and - must match the device's mode; "any" (left out) runs on both
    {"gfx90a:xnack+", "gfx90a:xnack+", "", true, "same processor"},
    {"gfx90a:xnack+", "gfx90a:xnack-", "", false, "same processor"},
    {"gfx90a:xnack-", "gfx90a:xnack+", "", false, "same processor"},
    {"gfx90a", "gfx90a:xnack+", "", true, "same processor"},
    {"gfx90a", "gfx90a:xnack-", "", true, "same processor"},
    {"gfx90a:xnack+", "gfx90a", "", true, "same processor"},  // device mode not given
    {"gfx908:sramecc-:xnack-", "gfx908:sramecc+:xnack-", "", false, "same processor"},
    {"gfx908:sramecc-:xnack-", "gfx908:sramecc-:xnack-", "", true, "same processor"},
    {"gfx942:sramecc+", "gfx942:sramecc+:xnack-", "", true, "same processor"},
    // code object v6 generic targets (AMDGPUUsage generic processor table, LLVM 20.1)
    {"gfx9-generic", "gfx906", "", true, "generic processor"},
    {"gfx9-generic", "gfx90c", "", true, "generic processor"},
    {"gfx9-generic", "gfx908", "", false, "other processor"},
    {"gfx9-generic", "gfx90a", "", false, "other processor"},
    {"gfx9-4-generic", "gfx942", "", true, "generic processor"},
    {"gfx10-1-generic", "gfx1013", "", true, "generic processor"},
    {"gfx10-1-generic", "gfx1030", "", false, "other processor"},
    {"gfx10-3-generic", "gfx1030", "", true, "generic processor"},
    {"gfx10-3-generic", "gfx1036", "", true, "generic processor"},
    {"gfx10-3-generic", "gfx1100", "", false, "other processor"},
    {"gfx11-generic", "gfx1151", "", true, "generic processor"},
    {"gfx11-generic", "gfx1103", "", true, "generic processor"},
    {"gfx11-generic", "gfx1201", "", false, "other processor"},
    {"gfx12-generic", "gfx1201", "", true, "generic processor"},
    {"gfx12-generic", "gfx1151", "", false, "other processor"},
    {"gfx9-generic:xnack+", "gfx900:xnack-", "", false, "generic processor"},
    // HSA_OVERRIDE_GFX_VERSION: the device reports the overriding processor
    {"gfx1030", "gfx1031", "10.3.0", true, "same processor"},
    {"gfx1100", "gfx1151", "11.0.0", true, "same processor"},
    {"gfx90a", "gfx908", "9.0.10", true, "same processor"},
    {"gfx1030", "gfx1151", "11.0.0", false, "other processor"},
    // CUDA SASS: same major, device minor >= code minor
    {"sm_80", "sm_80", "", true, "SASS within its major"},
    {"sm_80", "sm_86", "", true, "SASS within its major"},
    {"sm_86", "sm_80", "", false, "SASS within its major"},
    {"sm_80", "sm_90", "", false, "SASS within its major"},
    {"sm_75", "sm_90", "", false, "SASS within its major"},
    {"sm_100", "sm_120", "", false, "SASS within its major"},
    {"sm_120", "sm_121", "", true, "SASS within its major"},
    // arch-specific (a) targets: that exact arch only
    {"sm_90a", "sm_90", "", true, "arch-specific SASS"},
    {"sm_90a", "sm_91", "", false, "arch-specific SASS"},
    {"compute_90a", "sm_90", "", true, "arch-specific PTX"},
    {"compute_90a", "sm_100", "", false, "arch-specific PTX"},
    // PTX JIT-compiles forward
    {"compute_75", "sm_90", "", true, "PTX JIT forward"},
    {"compute_90", "sm_120", "", true, "PTX JIT forward"},
    {"compute_90", "sm_86", "", false, "PTX JIT forward"},
    // vendors never mix
    {"sm_90", "gfx942", "", false, "vendor differs"},
    {"gfx942", "sm_90", "", false, "vendor differs"},
};

}  // namespace

TEST(Compat, EveryRowOfTheTable) {
    for (const auto& r : kRows) {
        auto code = parseTarget(r.code);
        auto dev = parseTarget(r.device);
        ASSERT_TRUE(code) << r.code;
        ASSERT_TRUE(dev) << r.device;
        auto v = compatible(*code, *dev, r.hsa_override);
        EXPECT_EQ(v.runs, r.runs) << r.code << " on " << r.device << " (" << r.hsa_override << ")";
        EXPECT_EQ(v.rule, r.rule) << r.code << " on " << r.device;
    }
}

TEST(Compat, HsaOverrideVersions) {
    EXPECT_EQ(processorFromHsaOverride("11.0.0"), "gfx1100");
    EXPECT_EQ(processorFromHsaOverride("10.3.0"), "gfx1030");
    EXPECT_EQ(processorFromHsaOverride("9.0.10"), "gfx90a");
    EXPECT_EQ(processorFromHsaOverride("9.4.2"), "gfx942");
    EXPECT_FALSE(processorFromHsaOverride("11.0"));
    EXPECT_FALSE(processorFromHsaOverride("11.0.0.1"));
    EXPECT_FALSE(processorFromHsaOverride("x"));
    EXPECT_FALSE(processorFromHsaOverride("9.0.16"));
}

TEST(Compat, TargetsParseAndPrint) {
    EXPECT_EQ(parseTarget("sm_90a")->text(), "sm_90a");
    EXPECT_EQ(parseTarget("compute_120")->sm, 120u);
    EXPECT_EQ(parseTarget("gfx90a:xnack+")->text(), "gfx90a:xnack+");
    EXPECT_FALSE(parseTarget("sm_"));
    EXPECT_FALSE(parseTarget("sm_9x"));
    EXPECT_FALSE(parseTarget("nvidia"));
    EXPECT_FALSE(parseTarget("gfx90a:xnack"));
}
