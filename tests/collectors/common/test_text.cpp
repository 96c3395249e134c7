#include <gtest/gtest.h>

#include "collectors/common/text.h"

namespace gpufault::text {

TEST(Text, ParseHexAcceptsNvidiaUnderscoreForm) {
    size_t used = 0;
    auto v = parseHex("0x17_00592000. Fault", &used, true);
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, 0x1700592000ull);
    EXPECT_EQ(used, 13u);
    EXPECT_FALSE(parseHex("0x17_00592000", nullptr, false) ==
                 std::optional<uint64_t>(0x1700592000ull));
}

TEST(Text, ParseHexRejectsOverflowAndEmpty) {
    EXPECT_FALSE(parseHex("0x1ffffffffffffffff"));
    EXPECT_FALSE(parseHex("0xg"));
    EXPECT_EQ(*parseHex("ffffffffffffffff"), 0xffffffffffffffffull);
}

TEST(Text, ParseGroupedDecimal) {
    size_t used = 0;
    EXPECT_EQ(*parseGroupedDec("7,055,657,985 bytes", &used), 7055657985ull);
    EXPECT_EQ(used, 13u);
    EXPECT_EQ(*parseGroupedDec("512,"), 512u);
}

TEST(Text, NormalizePci) {
    EXPECT_EQ(*normalizePci("PCI:0000:00:06"), "0000:00:06.0");
    EXPECT_EQ(*normalizePci("PCI:0001:6C:00"), "0001:6c:00.0");
    EXPECT_EQ(*normalizePci("0000:c6:00.0"), "0000:c6:00.0");
    EXPECT_EQ(*normalizePci("c6:00.1"), "0000:c6:00.1");
    EXPECT_FALSE(normalizePci("0000:c6:0"));
    EXPECT_FALSE(normalizePci("gfxhub0"));
}

}  // namespace gpufault::text

#include "collectors/common/demangle.h"

namespace gpufault {

TEST(Demangle, HipKernelNames) {
    EXPECT_EQ(demangle("_Z9vectoraddPfS_S_i"), "vectoradd(float*, float*, float*, int)");
    EXPECT_EQ(shortKernelName("_Z9vectoraddPfS_S_i"), "vectoradd");
    EXPECT_EQ(shortKernelName("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_"
                              "11FillFunctorIN3c104HalfEEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
                              200),
              "void at::native::vectorized_elementwise_kernel<4, "
              "at::native::FillFunctor<c10::Half>, at::detail::Array<char*, 1> >");
    // Tensile kernels are plain C identifiers; garbage stays as it is.
    EXPECT_EQ(demangle("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32"), "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32");
    EXPECT_EQ(demangle("_Zgarbage"), "_Zgarbage");
    EXPECT_EQ(shortKernelName("Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1", 20),
              "Cijk_Ailk_Bljk_HH...");
}

}  // namespace gpufault
