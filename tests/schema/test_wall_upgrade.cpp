// Hostile review of issue 4, findings 3 and 4 on the store side: the upgrade of a store written
// before 016 takes the zone a row's raw line states (016 read every row as local time in the
// upgrader's zone), and a wall time that is not a date (`02-30`) is stored without an instant
// and with a warning, not normalised by mktime into another day. A real store (SQLite file).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "schema/migrations.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using testing::TempDir;

std::string text(Store& s, const std::string& sql) {
    auto st = s.db().prepare(sql);
    EXPECT_TRUE(st.has_value());
    if (!st) return "";
    auto row = st->step();
    EXPECT_TRUE(row.has_value() && *row) << sql;
    return st->isNull(0) ? "NULL" : st->str(0);
}

const char* kRows =
    "SELECT group_concat(line || ' ' || ifnull(wall_utc_us, '-') || ' ' || ifnull(wall_zone, "
    "'-'), '; ') FROM (SELECT * FROM evidence ORDER BY line)";

}  // namespace

TEST(WallUpgrade, RowsWhoseRawStatesTheZoneTakeItOnUpgrade) {
    TempDir t;
    const std::string path = t.file("db");
    {  // a store of version 15: rows with a full date, before wall_utc_us existed
        auto d = db::Db::open(path, false, true);
        ASSERT_TRUE(d) << d.error().message;
        for (size_t v = 0; v < 15; ++v) ASSERT_TRUE(d->exec(migrations()[v])) << v + 1;
        ASSERT_TRUE(d->exec("PRAGMA user_version=15"));
        ASSERT_TRUE(d->exec(
            "INSERT INTO sources(id, path, kind, fingerprint) VALUES(1, 'old.log', 'file', 'x');"
            "INSERT INTO evidence(source_id, line, kind, wall, pid, raw) VALUES"
            "(1, 1, 'cpu_segfault', '2026-11-30T12:05:00', 4528, '2026-11-30T12:05:00+0200 host "
            "kernel: procA[4528]: segfault at 7f0000100010 ip 0 sp 0 error 4'),"
            "(1, 2, 'cpu_segfault', '2026-11-30T10:05:00', 4528, '2026-11-30T10:05:00.123456Z "
            "host kernel: procA[4528]: segfault at 7f0000100010 ip 0 sp 0 error 4'),"
            "(1, 3, 'cpu_segfault', '2026-11-30T19:05:00', 4528, '[Mon Nov 30 19:05:00 2026] "
            "procA[4528]: segfault at 7f0000100010 ip 0 sp 0 error 4')"));
    }
    ::setenv("TZ", "JST-9", 1);  // the upgrading process runs in Tokyo time
    ::tzset();
    auto s = Store::open(path, Store::Mode::ReadWrite);
    ::unsetenv("TZ");
    ::tzset();
    ASSERT_TRUE(s) << s.error().message;
    // 12:05+0200 and 10:05Z are 10:05Z (stated); the zone-less dmesg -T date is Tokyo's 19:05.
    EXPECT_EQ(text(*s, kRows),
              "1 1796033100000000 stated; 2 1796033100000000 stated; 3 1796033100000000 local");
}

TEST(WallUpgrade, AWallTimeThatIsNotADateGetsNoInstantAndAWarning) {
    TempDir t;
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    auto src = s->source(SourceIdentity{"x.log", "file", 1, 2, "fp"});
    ASSERT_TRUE(src);
    Evidence feb30, ok;
    feb30.kind = ok.kind = Kind::CpuSegfault;
    feb30.line = 1;
    ok.line = 2;
    feb30.pid = ok.pid = 4528;
    feb30.raw = ok.raw = "r";
    feb30.time.wall = "2026-02-30T10:05:00";  // mktime made it March 2nd
    ok.time.wall = "2026-11-30T10:05:00";
    ASSERT_TRUE(s->addEvidence(src->id, feb30));
    ASSERT_TRUE(s->addEvidence(src->id, ok));
    ::unsetenv("TZ");
    ::tzset();
    EXPECT_EQ(text(*s, kRows), "1 - -; 2 1796033100000000 local");
    EXPECT_EQ(text(*s, "SELECT line || ' ' || message FROM warnings"),
              "1 wall time 2026-02-30T10:05:00 is not a date and time: no instant stored");
}

}  // namespace gpufault
