// Wall times without a zone (docs/correlation.md "Zone-less wall times"): a `dmesg -T` or
// journald `short-full` time is read in the ingesting zone, so it never contradicts a zoned
// time or another stream's zone-less one unless no zone offset explains the gap; times of one
// stream still compare. Each case is ingested by the built binary under several TZ values (the
// child inherits this process's TZ), in two orders, and must give the same incidents in all.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <optional>

#include "tests/correlate/incidents_cli.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using Groups = std::set<std::set<std::string>>;
using testing::ingestBothOrders;

/// Sets TZ for this process (and the binaries it runs) until destroyed.
class ZoneScope {
  public:
    explicit ZoneScope(const char* tz) {
        if (const char* old = std::getenv("TZ")) old_ = old;
        ::setenv("TZ", tz, 1);
        ::tzset();
    }
    ~ZoneScope() {
        if (old_)
            ::setenv("TZ", old_->c_str(), 1);
        else
            ::unsetenv("TZ");
        ::tzset();
    }

  private:
    std::optional<std::string> old_;
};

// UTC (the CRI stamp's zone), Europe/Berlin (CEST: the zone dmesg -T printed in), and a zone
// west of both.
constexpr const char* kZones[] = {"UTC", "Europe/Berlin", "America/Los_Angeles"};

TEST(CorrelateZone, DmesgTAndCriStampOfOneFaultAreOneIncidentInEveryZone) {
    // dmesg -T says 14:40:08 (local: CEST), the container's CRI stamp 12:40:08.1Z: one instant.
    for (const char* tz : kZones) {
        ZoneScope zone(tz);
        auto inc = ingestBothOrders({"zone-dmesg-T.log", "zone-cri.log"});
        EXPECT_EQ(inc.groups, (Groups{{"zone-dmesg-T.log:1", "zone-cri.log:1"}})) << tz;
        EXPECT_EQ(inc.link["zone-dmesg-T.log:1"], "same 2 MiB region 0x7f6459a00000") << tz;

        // The incident has the kernel's pid; the stored instants are as ingested (the
        // dmesg -T one in this zone, marked local).
        testing::TempDir t;
        auto in = testing::run({GPUFAULT_BIN,
                                "--db",
                                t.file("db"),
                                "ingest",
                                testing::kCorrelateData + "zone-dmesg-T.log",
                                testing::kCorrelateData + "zone-cri.log"});
        ASSERT_EQ(in.status, 0) << in.err;
        auto list = testing::run({GPUFAULT_BIN, "--db", t.file("db"), "incidents", "--json"});
        auto rows = testing::parseJsonLines(list.out);
        ASSERT_EQ(rows.size(), 1u) << tz << list.out;
        EXPECT_EQ(rows[0]["pid"], 4242) << tz;
        auto q = testing::run({GPUFAULT_BIN,
                               "--db",
                               t.file("db"),
                               "query",
                               "--json",
                               "SELECT wall_zone AS z, wall_utc_us AS us FROM evidence ORDER BY "
                               "source_id"});
        auto ev = testing::parseJsonLines(q.out);
        ASSERT_EQ(ev.size(), 2u) << q.out;
        EXPECT_EQ(ev[0]["z"], "local");
        EXPECT_EQ(ev[1]["z"], "stated");
        EXPECT_EQ(ev[1]["us"], 1749127208000000);  // 12:40:08Z, whatever the zone
        int64_t local = std::string(tz) == "UTC"             ? 1749134408000000   // 14:40:08Z
                        : std::string(tz) == "Europe/Berlin" ? 1749127208000000   // 12:40:08Z
                                                             : 1749159608000000;  // 21:40:08Z
        EXPECT_EQ(ev[0]["us"], local) << tz;
    }
}

TEST(CorrelateZone, TwoZoneLessStreamsHoursApartStillJoinByRegion) {
    // The same fault as dmesg -T printed it in CEST and as journald short-full printed it on
    // a UTC machine (the zone name is not read): two hours apart as read, one fault.
    for (const char* tz : kZones) {
        ZoneScope zone(tz);
        auto inc = ingestBothOrders({"zone-dmesg-T.log", "zone-journal-short-full.log"});
        EXPECT_EQ(inc.groups, (Groups{{"zone-dmesg-T.log:1", "zone-journal-short-full.log:1"}}))
            << tz;
    }
}

TEST(CorrelateZone, BeyondAnyZoneOffsetAZoneLessTimeStillContradicts) {
    // The ROCr line of the same region two days later is another run: no offset explains 46 h.
    for (const char* tz : kZones) {
        ZoneScope zone(tz);
        auto inc = ingestBothOrders({"zone-dmesg-T.log", "zone-cri-two-days-later.log"});
        EXPECT_EQ(inc.groups, (Groups{{"zone-dmesg-T.log:1"}, {"zone-cri-two-days-later.log:1"}}))
            << tz;
    }
}

TEST(CorrelateZone, ZoneLessTimesOfOneStreamStillCompare) {
    // One pid faulting in two regions 12 s apart in one dmesg -T log: one zone, so the gap is
    // real and they are two faults (within 2 s the pid would join them).
    for (const char* tz : kZones) {
        ZoneScope zone(tz);
        auto inc = ingestBothOrders({"zone-dmesg-T-one-pid-12s.log"});
        EXPECT_EQ(inc.groups,
                  (Groups{{"zone-dmesg-T-one-pid-12s.log:1"}, {"zone-dmesg-T-one-pid-12s.log:4"}}))
            << tz;
    }
}

}  // namespace
}  // namespace gpufault
