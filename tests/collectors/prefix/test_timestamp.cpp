// Calendar helpers of the prefix parsers.
#include <gtest/gtest.h>

#include "collectors/prefix/timestamp.h"

namespace gpufault::prefix {
namespace {

TEST(Timestamp, MonthNames) {
    EXPECT_EQ(monthFromName("Sep"), 9);
    EXPECT_EQ(monthFromName("nov"), 11);
    EXPECT_EQ(monthFromName("DEC"), 12);
    EXPECT_EQ(monthFromName("Dez"), 12);
    EXPECT_EQ(monthFromName("M\xc3\xa4r"), 3);
    EXPECT_EQ(monthFromName("M\xc3\x84R"), 3);
    EXPECT_EQ(monthFromName("juin"), 6);
    EXPECT_EQ(monthFromName("juil."), 7);
    EXPECT_EQ(monthFromName("ao\xc3\xbbt"), 8);
    EXPECT_EQ(monthFromName("okt"), 10);
    EXPECT_EQ(monthFromName("marras"), 11);
    EXPECT_EQ(monthFromName("\xd0\xa1\xd0\xb5\xd0\xbd"), 9);  // Сен
    EXPECT_EQ(monthFromName("12\xe6\x9c\x88"), 12);           // 12月
    EXPECT_EQ(monthFromName("9\xec\x9b\x94"), 9);             // 9월
    EXPECT_EQ(monthFromName("Tue"), 0);
    EXPECT_EQ(monthFromName("13\xe6\x9c\x88"), 0);
    EXPECT_EQ(monthFromName("x"), 0);
}

TEST(Timestamp, WallFormats) {
    EXPECT_EQ(formatWall({2025, 9, 9, 2, 30, 28}), "2025-09-09T02:30:28");
    EXPECT_EQ(formatWall({0, 11, 4, 13, 30, 18}), "11-04T13:30:18");
    EXPECT_FALSE(formatWall({2025, 0, 9, 2, 30, 28}));
    EXPECT_FALSE(formatWall({2025, 9, 9, 25, 30, 28}));
}

TEST(Timestamp, IsoScanner) {
    auto a = scanIsoStamp("2016-10-06T00:17:09.669794202Z stdout");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->len, 30u);
    EXPECT_EQ(a->frac_digits, 9);
    EXPECT_TRUE(a->zone_z);
    auto b = scanIsoStamp("2025-09-09T02:30:28,123456+0200 x");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->frac_sep, ',');
    EXPECT_TRUE(b->zone);
    EXPECT_EQ(b->len, 31u);
    auto c = scanIsoStamp("2025-12-21T05:01:45.677513 - x");
    ASSERT_TRUE(c);
    EXPECT_FALSE(c->zone);
    EXPECT_FALSE(scanIsoStamp("2025-09-09 02:30:28"));
    EXPECT_TRUE(scanIsoStamp("2025-09-09 02:30:28", true));
    auto month13 = scanIsoStamp("2025-13-09T02:30:28");  // the shape of a stamp, no time
    ASSERT_TRUE(month13);
    EXPECT_TRUE(month13->bad_date);
    EXPECT_EQ(month13->len, 19u);
    EXPECT_FALSE(stampWall(*month13));
    EXPECT_EQ(stampRefusal(*month13), WallRefusal::Date);
    EXPECT_FALSE(scanIsoStamp("2025-09-09T02:30"));
}

TEST(Timestamp, Epoch) {
    auto t = civilFromEpoch(1757377828);
    EXPECT_EQ(formatWall(t), "2025-09-09T00:30:28");
    EXPECT_EQ(formatWall(civilFromEpoch(0)), "1970-01-01T00:00:00");
    EXPECT_EQ(formatWall(civilFromEpoch(951782400)), "2000-02-29T00:00:00");
}

// Hostile review 4, A: the zone a stamp states gives its instant (`Z`, `±HH:MM`, `±HHMM`).
TEST(Timestamp, ZonedStampInstant) {
    auto z = scanIsoStamp("2026-11-30T10:05:00Z x");
    ASSERT_TRUE(z);
    EXPECT_EQ(zonedEpoch(*z), 1796033100);
    auto east = scanIsoStamp("2026-11-30T12:05:00+0200 x");
    ASSERT_TRUE(east);
    EXPECT_EQ(east->offset_s, 7200);
    EXPECT_EQ(zonedEpoch(*east), 1796033100);
    auto west = scanIsoStamp("2026-11-30T05:05:00.123-05:00 x");
    ASSERT_TRUE(west);
    EXPECT_EQ(west->offset_s, -18000);
    EXPECT_EQ(zonedEpoch(*west), 1796033100);
    auto half = scanIsoStamp("2026-11-30T15:35:00+05:30");
    ASSERT_TRUE(half);
    EXPECT_EQ(zonedEpoch(*half), 1796033100);
    auto none = scanIsoStamp("2026-11-30T10:05:00 x");
    ASSERT_TRUE(none);
    EXPECT_FALSE(zonedEpoch(*none));  // no zone stated: no instant here
    EXPECT_EQ(epochFromCivil({1970, 1, 1, 0, 0, 0}), 0);
    EXPECT_EQ(epochFromCivil({2000, 2, 29, 0, 0, 0}), 951782400);
    EXPECT_FALSE(epochFromCivil({0, 11, 30, 10, 5, 0}));  // no year
    for (int64_t t : {int64_t{0}, int64_t{951782400}, int64_t{1796033100}, int64_t{4102444799}})
        EXPECT_EQ(epochFromCivil(civilFromEpoch(t)), t);
}

// Hostile review 4, finding 4: one parser for every stamp. `+01` is a zone; an offset out of
// range is refused (no instant), not read as another; a day the month does not have is no
// stamp; `24:00:00` is the next day's midnight.
TEST(Timestamp, ZoneSpellingsInvalidDatesAndEndOfDay) {
    for (const char* s : {"2026-11-30T11:05:00+01 x",
                          "2026-11-30T11:05:00+0100 x",
                          "2026-11-30T11:05:00+01:00 x"}) {
        auto st = scanIsoStamp(s);
        ASSERT_TRUE(st) << s;
        EXPECT_EQ(st->len, std::string_view(s).find(' ')) << s;
        EXPECT_EQ(zonedEpoch(*st), 1796033100) << s;
    }
    auto bad = scanIsoStamp("2026-11-30T10:05:00+2500 x");
    ASSERT_TRUE(bad);
    EXPECT_TRUE(bad->bad_zone);
    EXPECT_EQ(bad->len, 24u);
    EXPECT_FALSE(zonedEpoch(*bad));
    EXPECT_FALSE(stampWall(*bad));
    EXPECT_TRUE(scanIsoStamp("2026-11-30T10:05:00+01:75 x")->bad_zone);
    // Offsets zones use: −12:00 to +14:00 (Kiribati); `+1500`, `-1201`, `+0060` are none.
    EXPECT_TRUE(scanIsoStamp("2026-11-30T10:05:00+1500 x")->bad_zone);
    EXPECT_TRUE(scanIsoStamp("2026-11-30T10:05:00+14:01 x")->bad_zone);
    EXPECT_TRUE(scanIsoStamp("2026-11-30T10:05:00-1201 x")->bad_zone);
    EXPECT_TRUE(scanIsoStamp("2026-11-30T10:05:00+0060 x")->bad_zone);
    EXPECT_EQ(zonedEpoch(*scanIsoStamp("2026-11-30T10:05:00+14:00 x")), 1796033100 - 14 * 3600);
    EXPECT_EQ(zonedEpoch(*scanIsoStamp("2026-11-30T10:05:00-12:00 x")), 1796033100 + 12 * 3600);
    // A date that does not exist: a stamp (its length known) whose time is refused.
    for (const char* s : {"2026-02-30T10:05:00Z",
                          "2026-02-29T10:05:00Z" /* not a leap year */,
                          "2026-11-30T25:05:00Z",
                          "2026-11-30T10:60:00Z",
                          "2026-00-10T10:05:00Z"}) {
        auto st = scanIsoStamp(s);
        ASSERT_TRUE(st) << s;
        EXPECT_TRUE(st->bad_date) << s;
        EXPECT_EQ(st->len, 20u) << s;
        EXPECT_FALSE(stampWall(*st)) << s;
        EXPECT_FALSE(zonedEpoch(*st)) << s;
    }
    EXPECT_FALSE(scanIsoStamp("2028-02-29T10:05:00Z")->bad_date);
    EXPECT_EQ(stampRefusal(*scanIsoStamp("2026-11-30T10:05:00+1500 x")), WallRefusal::Zone);
    EXPECT_EQ(stampRefusal(*scanIsoStamp("2026-11-30T10:05:00+1400 x")), WallRefusal::None);
    EXPECT_FALSE(formatWall({2026, 4, 31, 0, 0, 0}));
    EXPECT_EQ(formatWall({0, 2, 29, 0, 0, 0}), "02-29T00:00:00");  // no year: may be a leap day
    auto eod = scanIsoStamp("2026-12-31T24:00:00Z x");
    ASSERT_TRUE(eod);
    EXPECT_EQ(stampWall(*eod), "2027-01-01T00:00:00");
    EXPECT_TRUE(scanIsoStamp("2026-12-31T24:00:01Z")->bad_date);
    EXPECT_FALSE(stampWall(*scanIsoStamp("2026-12-31T24:00:01Z")));
}

}  // namespace
}  // namespace gpufault::prefix
