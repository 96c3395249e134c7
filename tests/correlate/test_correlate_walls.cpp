// Wall stamps of one stream read to the second (docs/correlation.md "Contradictions"): two
// stamps 1 s apart may be 2 s apart or a microsecond, so they compare with a tolerance of that
// second; and a stamp without a year (journald `short`, syslog) is a clock of its stream too,
// compared modulo a year. The same three NVIDIA Xid lines (Xid 31 of pid 4242, its Xid 43 one
// second later, another Xid 43 of pid 4242 five seconds later) in each stamp form, through the
// built binary into a real store.
#include <gtest/gtest.h>

#include "correlate/links.h"
#include "tests/correlate/incidents_cli.h"

namespace gpufault {
namespace {

using Groups = std::set<std::set<std::string>>;
using testing::ingestBothOrders;

class CorrelateWalls : public ::testing::TestWithParam<std::string> {};

TEST_P(CorrelateWalls, StampsOneSecondApartJoinAndFiveSecondsApartDoNot) {
    const std::string file = GetParam() + ".log";
    auto inc = ingestBothOrders({file});
    const std::string f = file + ":";
    EXPECT_EQ(inc.groups, (Groups{{f + "1", f + "2"}, {f + "3"}}));
    EXPECT_EQ(inc.link[f + "2"], "same pid 4242 within 1 s (wall clock)");
    EXPECT_EQ(inc.link[f + "3"], "first");
}

// dmesg -T (zone-less, one stream), journald `short` (no year), `short-iso` (zoned)
INSTANTIATE_TEST_SUITE_P(StampForms,
                         CorrelateWalls,
                         ::testing::Values("walls-dmesg-T",
                                           "walls-journal-short",
                                           "walls-journal-short-iso"),
                         [](const auto& i) {
                             std::string n = i.param;
                             std::erase(n, '-');
                             return n;
                         });

/// A stored record of stream `source` whose line printed `wall` and no other clock.
StoredEvidence stamped(int64_t source, const std::string& wall) {
    StoredEvidence s;
    s.source_id = source;
    s.e.kind = Kind::NvidiaXid;
    s.e.time.wall = wall;
    return s;
}

TEST(CorrelateWallClock, YearlessStampsAreApartModuloAYear) {
    auto gap = [](const std::string& a, const std::string& b) {
        return links::clockGap(stamped(1, a), stamped(1, b));
    };
    auto g = gap("12-31T23:59:59", "01-01T00:00:00");  // the new year
    ASSERT_TRUE(g);
    EXPECT_EQ(g->s, 1.0);
    EXPECT_EQ(g->tolerance, 1.0);
    EXPECT_FALSE(g->exceeds(2.0));
    EXPECT_EQ(gap("02-28T23:59:59", "03-01T00:00:00")->s, 1.0);  // a common year
    EXPECT_EQ(gap("02-29T23:59:59", "03-01T00:00:00")->s, 1.0);  // a leap year
    EXPECT_EQ(gap("06-05T12:40:09", "06-05T12:40:13")->s, 4.0);
    EXPECT_TRUE(gap("06-05T12:40:09", "06-05T12:40:13")->exceeds(2.0));
    EXPECT_EQ(gap("06-05T12:40:08", "06-09T12:40:08")->s, 4 * 86400.0);
    // no shared clock: another stream, or a stamp with a year
    EXPECT_FALSE(links::clockGap(stamped(1, "06-05T12:40:08"), stamped(2, "06-05T12:40:08")));
    EXPECT_FALSE(links::clockGap(stamped(1, "06-05T12:40:08"), stamped(1, "2025-06-05T12:40:08")));
}

TEST(CorrelateWallClock, StampsReadToTheSecondContradictOnlyBeyondTheGapAndTheSecond) {
    // 3 s on the stamps may be 2 s in fact: not a contradiction of the 2 s rule; 4 s is
    CorrelationRules rules;
    links::Linker linker{rules};
    auto a = stamped(1, "2025-06-05T12:40:08");
    EXPECT_FALSE(linker.contradicts(a, stamped(1, "2025-06-05T12:40:11")));
    EXPECT_TRUE(linker.contradicts(a, stamped(1, "2025-06-05T12:40:12")));
    auto t = links::Traits::of(a), late = links::Traits::of(stamped(1, "2025-06-05T12:40:12")),
         near = links::Traits::of(stamped(1, "2025-06-05T12:40:09"));
    EXPECT_FALSE(t.conflicts(near, rules.max_gap_s));
    EXPECT_TRUE(t.conflicts(late, rules.max_gap_s));
}

}  // namespace
}  // namespace gpufault
