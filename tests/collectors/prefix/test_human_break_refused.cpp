// dmesg -H/-e time breaks naming no real day (`[Feb30 01:03]`, `[Feb 30 01:03]`): the line is
// still a kernel line, no wall time is kept, and the refusal is recorded as for the other forms
// (TimeInfo::wall_refused, stored as a warning by Store::addEvidence).
#include <gtest/gtest.h>

#include <string>

#include "tests/collectors/prefix/decode_helper.h"

namespace gpufault::testing {
namespace {

const std::string kFault =
    "amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:3 "
    "pasid:32769)";

TEST(DmesgHumanBreak, ImpossibleDateIsRefusedNotDropped) {
    for (const char* stamp : {"[Feb30 01:03] ", "[Feb 30 01:03] ", "[Apr31 12:00] "}) {
        auto d = decodeOne(stamp + kFault);
        EXPECT_EQ(d.text, kFault) << stamp;
        EXPECT_EQ(d.origin, Origin::Kernel) << stamp;
        EXPECT_FALSE(d.time.wall) << stamp;
        EXPECT_EQ(d.time.wall_refused, WallRefusal::Date) << stamp;
    }
}

TEST(DmesgHumanBreak, RealDateIsKeptWithoutRefusal) {
    auto d = decodeOne("[Feb28 01:03] " + kFault);
    EXPECT_EQ(d.text, kFault);
    EXPECT_EQ(d.time.wall, "02-28T01:03");
    EXPECT_EQ(d.time.wall_refused, WallRefusal::None);
    // An unknown month name is no date at all: nothing to refuse.
    auto u = decodeOne("[Xyz28 01:03] " + kFault);
    EXPECT_FALSE(u.time.wall);
    EXPECT_EQ(u.time.wall_refused, WallRefusal::None);
}

}  // namespace
}  // namespace gpufault::testing
