#include <gtest/gtest.h>

#include "collectors/pipeline.h"

namespace gpufault {
namespace {

LogLine amd(std::string_view text, int level = 3) {
    LogLine l;
    l.text = text;
    l.amd_level = level;
    return l;
}

// FORMATS.md §3.2: `"%s %s ( %s ) %s"` (KGRN/KNRM around the name) and `"%s: Returned %s : %s"`.
TEST(Pipeline, ApiTraceLinesAreRecognised) {
    EXPECT_TRUE(isApiTrace(amd(" hipGetDevice ( 0x70536bbc2ecc ) ")));
    EXPECT_TRUE(
        isApiTrace(amd("\x1b[32m hipLaunchKernel \x1b[0m( 0x7056a988e9d0, {1,1,1}, {256,1,1}, 0x0, "
                       "0, stream:<null> ) ")));
    EXPECT_TRUE(
        isApiTrace(amd(" __hipPushCallConfiguration ( {128,1,1}, {512,1,1}, 0, stream:<null> ) ")));
    EXPECT_TRUE(isApiTrace(amd("hipGetDevice: Returned hipSuccess : ")));
    // Everything a matcher records stays.
    EXPECT_FALSE(isApiTrace(amd("hipModuleUnload: Returned hipErrorLaunchFailure : ")));
    EXPECT_FALSE(isApiTrace(amd("hipStreamQuery: Returned hipErrorNotReady : ")));
    EXPECT_FALSE(isApiTrace(amd("ShaderName : _Z9vectoraddPfS_S_i")));
    EXPECT_FALSE(
        isApiTrace(amd("Arg1:   = ptr:0x705165a01000 obj:[0x705165a00000-0x705365a00000]")));
    EXPECT_FALSE(isApiTrace(amd("Cannot find the function: Cijk_Ailk_Bljk_SB_MT128x64x8 ")));
    EXPECT_FALSE(
        isApiTrace(amd("Callback: Queue 0x7f3c3c600000 aborting with error : "
                       "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access "
                       "memory beyond the largest legal address. code: 0x29",
                       0)));
    EXPECT_FALSE(isApiTrace(amd(" hipGetDevice ( 0x1 ) ", 4)));  // only level 3 lines
    LogLine plain;
    plain.text = " hipGetDevice ( 0x70536bbc2ecc ) ";
    EXPECT_FALSE(isApiTrace(plain));  // not an AMD log line
}

}  // namespace
}  // namespace gpufault
