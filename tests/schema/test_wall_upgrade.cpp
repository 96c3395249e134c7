// Hostile review of issue 4, findings 3 and 4 on the store side: the upgrade of a store written
// before 016 takes the zone a row's raw line states (016 read every row as local time in the
// upgrader's zone), and a wall time that is not a date (`02-30`) is stored without an instant
// and with a warning, not normalised by mktime into another day. A real store (SQLite file).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "collectors/prefix/line_decoder.h"
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

// Hostile review of issue 4 (second round), finding 1: the upgrade of a 016 store reads every
// row's wall time again exactly as a fresh ingest reads it. 016 took a DST gap or overlap as
// plain `local`, normalised Feb 30 into March 2nd and took the offsets `+1500` and `+0060`; the
// upgraded rows must equal a fresh ingest's (instant, zone, warnings), in Berlin time.
TEST(WallUpgrade, AnUpgraded016StoreEqualsAFreshIngest) {
    // The raw lines and what 016 (gpufault before 017, in Europe/Berlin) stored for them.
    const std::vector<std::string> raw = {
        "[Sun Mar 29 02:30:00 2026] A[4601]: segfault at 7f0000000010 ip 0 sp 0 error 4",
        "[Sun Oct 25 02:30:00 2026] A[4602]: segfault at 7f0000000010 ip 0 sp 0 error 4",
        "[Mon Feb 30 10:00:00 2026] A[4606]: segfault at 7f0000000010 ip 0 sp 0 error 4",
        "2026-10-25T02:30:00+0100 host kernel: A[4530]: segfault at 7f0000000010 ip 0 sp 0 error 4",
        "2026-11-30T10:00:00+1500 host kernel: A[4541]: segfault at 7f0000000010 ip 0 sp 0 error 4",
        "2026-11-30T10:00:00+0060 host kernel: A[4544]: segfault at 7f0000000010 ip 0 sp 0 error 4",
    };
    const char* old016 =
        "('2026-03-29T02:30:00', 1774747800000000, 'local'), "
        "('2026-10-25T02:30:00', 1792891800000000, 'local'), "
        "('2026-02-30T10:00:00', 1772442000000000, 'local'), "
        "('2026-10-25T02:30:00', 1792891800000000, 'stated'), "
        "('2026-11-30T10:00:00', 1795978800000000, 'stated'), "
        "('2026-11-30T10:00:00', 1796029200000000, 'stated')";
    TempDir t;
    const std::string oldPath = t.file("old.db"), freshPath = t.file("fresh.db");
    {
        auto d = db::Db::open(oldPath, false, true);
        ASSERT_TRUE(d) << d.error().message;
        for (size_t v = 0; v < 16; ++v) ASSERT_TRUE(d->exec(migrations()[v])) << v + 1;
        ASSERT_TRUE(d->exec("PRAGMA user_version=16"));
        ASSERT_TRUE(d->exec(
            fmt::format("INSERT INTO sources(id, path, kind, fingerprint) VALUES(1, 'u.log', "
                        "'file', 'x'); CREATE TEMP TABLE w(wall, utc, zone); INSERT INTO w "
                        "VALUES {};",
                        old016)));
        auto ins = d->prepare(
            "INSERT INTO evidence(source_id, line, kind, wall, wall_utc_us, wall_zone, pid, raw) "
            "SELECT 1, ?1, 'cpu_segfault', wall, utc, zone, 4528, ?2 FROM w WHERE rowid = ?1");
        ASSERT_TRUE(ins);
        for (size_t i = 0; i < raw.size(); ++i) {
            ins->bind(1, static_cast<int64_t>(i + 1)).bind(2, raw[i]);
            ASSERT_TRUE(ins->run());
        }
    }
    ::setenv("TZ", "Europe/Berlin", 1);
    ::tzset();
    auto upgraded = Store::open(oldPath, Store::Mode::ReadWrite);
    auto fresh = Store::open(freshPath, Store::Mode::ReadWrite);
    ASSERT_TRUE(upgraded) << upgraded.error().message;
    ASSERT_TRUE(fresh) << fresh.error().message;
    auto src = fresh->source(SourceIdentity{"u.log", "file", 1, 2, "fp"});
    ASSERT_TRUE(src);
    LineDecoder decoder;  // what `gpufault ingest` does with each line
    for (size_t i = 0; i < raw.size(); ++i)
        decoder.feed(i + 1, raw[i], [&](const LogLine& l) {
            Evidence e;
            e.kind = Kind::CpuSegfault;
            e.line = i + 1;
            e.pid = 4528;
            e.raw = raw[i];
            e.time = l.time;
            ASSERT_TRUE(fresh->addEvidence(src->id, e));
        });
    ::unsetenv("TZ");
    ::tzset();
    const std::string rows = text(*fresh, kRows);
    EXPECT_EQ(rows,
              "1 1774747800000000 local_ambiguous; 2 1792888200000000 local_ambiguous; 3 - -; "
              "4 1792891800000000 stated; 5 - -; 6 - -");
    EXPECT_EQ(text(*upgraded, kRows), rows);
    EXPECT_EQ(text(*upgraded, "SELECT group_concat(line || ' ' || message, '; ') FROM warnings"),
              "3 wall time 2026-02-30T10:00:00 is not a date and time: no instant stored; "
              "5 wall time 2026-11-30T10:00:00 is not a date and time with a zone offset of "
              "-12:00 to +14:00: no instant stored; 6 wall time 2026-11-30T10:00:00 is not a date "
              "and time with a zone offset of -12:00 to +14:00: no instant stored");
    EXPECT_EQ(text(*upgraded, "SELECT count(*) FROM upgrade_steps"), "0");  // done, not again
}

// Finding 3: a read-only open (show, report) of an older store upgrades it where this user may
// write it, else refuses it with what to do (the queries need the current schema).
TEST(WallUpgrade, AReadOnlyOpenOfAnOlderStoreUpgradesItOrSaysHow) {
    TempDir t;
    const std::string dir = t.file("s"), path = dir + "/old.db";
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    ASSERT_EQ(::chmod(t.path().c_str(), 0755), 0);
    auto make16 = [&] {
        ::unlink(path.c_str());
        auto d = db::Db::open(path, false, true);
        ASSERT_TRUE(d) << d.error().message;
        ASSERT_TRUE(d->exec("PRAGMA journal_mode=WAL"));
        for (size_t v = 0; v < 16; ++v) ASSERT_TRUE(d->exec(migrations()[v])) << v + 1;
        ASSERT_TRUE(d->exec("PRAGMA user_version=16"));
    };
    make16();
    {  // writable: upgraded, then read
        auto s = Store::open(path, Store::Mode::ReadOnly);
        ASSERT_TRUE(s) << s.error().message;
        EXPECT_EQ(text(*s, "PRAGMA user_version"), std::to_string(migrations().size()));
        EXPECT_EQ(text(*s, "SELECT count(*) FROM alloc_processes WHERE ended_by IS NULL"), "0");
    }
    for (const char* f : {"", "-wal", "-shm"}) ::unlink((path + f).c_str());
    make16();
    for (const char* f : {"", "-wal", "-shm"}) ::chmod((path + f).c_str(), 0444);
    ASSERT_EQ(::chmod(dir.c_str(), 0555), 0);
    // Another user (root writes anything): nobody, in a child.
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(5);
        auto s = Store::open(path, Store::Mode::ReadOnly);
        if (s) ::_exit(2);
        bool said = s.error().message ==
                    fmt::format("store {} is at schema version 16, this gpufault needs {}: run "
                                "any `gpufault ingest` with write access to upgrade",
                                path, migrations().size());
        ::_exit(said ? 0 : 3);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ::chmod(dir.c_str(), 0755);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);  // 2: opened, 3: another message, 5: no setuid
}

}  // namespace gpufault
