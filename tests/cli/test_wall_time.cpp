// Hostile review of issue 4, finding 4: a record's wall time is read by one parser
// (prefix::scanIsoStamp) whatever the zone's spelling (`+01`, `+0100`, `+01:00`, `Z`), a stamp
// that is not a date and time (`02-30`, an offset `+2500`) gives no instant rather than another
// one, `24:00:00` is the next day's midnight, and a zone-less local time that the zone's DST
// change skipped or repeated is stored marked (`local_ambiguous`) and not joined on. Real log
// files through the built binary into a real store.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/process.h"

using namespace gpufault::testing;

namespace {

ProcessResult inZone(const std::string& tz, std::vector<std::string> args) {
    std::vector<std::string> argv{"/usr/bin/env", "TZ=" + tz, GPUFAULT_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
}

std::string query(const std::string& db, const std::string& sql) {
    auto q = inZone("UTC", {"--db", db, "query", sql});
    EXPECT_EQ(q.status, 0) << q.err;
    return q.out;
}

/// A kernel segfault line of pid 4528 after `prefix`.
std::string segfault(const std::string& prefix) {
    return prefix +
           "procA[4528]: segfault at 7f0000100010 ip 00007f1234567890 sp 00007ffd12345678 error 4 "
           "in libfoo.so[7f1234500000+100000]\n";
}

const std::string kSql =
    "SELECT line, ifnull(wall, '-') AS wall, ifnull(wall_utc_us, '-') AS utc, ifnull(wall_zone, "
    "'-') AS zone FROM evidence ORDER BY line";

}  // namespace

TEST(WallTime, EverySpellingOfAZoneIsStatedAndAnInvalidStampGivesNoInstant) {
    TempDir dir;
    std::string db = dir.file("g.db"), log = dir.file("syslog.log");
    writeFile(log,
              segfault("2026-11-30T11:05:00+01 host kernel: ") +
                  segfault("2026-11-30T11:05:00+0100 host kernel: ") +
                  segfault("2026-11-30T11:05:00+01:00 host kernel: ") +
                  segfault("2026-11-29T24:00:00Z host kernel: ") +
                  segfault("2026-11-30T10:05:00+2500 host kernel: ") +
                  segfault("[Mon Feb 30 10:05:00 2026] "));
    // Ingested in Tokyo: a refused zone must not become a Tokyo reading.
    auto in = inZone("Asia/Tokyo", {"--db", db, "ingest", "-q", log});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_EQ(query(db, kSql),
              "line\twall\tutc\tzone\n"
              "1\t2026-11-30T11:05:00\t1796033100000000\tstated\n"
              "2\t2026-11-30T11:05:00\t1796033100000000\tstated\n"
              "3\t2026-11-30T11:05:00\t1796033100000000\tstated\n"
              "4\t2026-11-30T00:00:00\t1795996800000000\tstated\n"
              "5\t-\t-\t-\n"
              "6\t-\t-\t-\n");
}

TEST(WallTime, ALocalTimeInADstGapOrOverlapIsMarkedAndNotJoinedOn) {
    TempDir dir;
    std::string db = dir.file("g.db"), log = dir.file("dmesg-T.log");
    writeFile(log,
              segfault("[Sun Oct 25 02:30:00 2026] ") +      // Berlin: shown twice (CEST, then CET)
                  segfault("[Sun Mar 29 02:30:00 2026] ") +  // Berlin: skipped (CET → CEST)
                  segfault("[Mon Nov 30 19:05:00 2026] "));
    auto in = inZone("Europe/Berlin", {"--db", db, "ingest", "-q", log});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_EQ(query(db, kSql),
              "line\twall\tutc\tzone\n"
              "1\t2026-10-25T02:30:00\t1792888200000000\tlocal_ambiguous\n"  // 00:30Z (CEST)
              "2\t2026-03-29T02:30:00\t1774747800000000\tlocal_ambiguous\n"  // 01:30Z (CET)
              "3\t2026-11-30T19:05:00\t1796061900000000\tlocal\n");
    EXPECT_EQ(query(db,
                    "SELECT e.line, ifnull(c.wall_us, '-') AS wall_us FROM fault_clock c JOIN "
                    "evidence e ON e.id = c.evidence_id ORDER BY e.line"),
              "line\twall_us\n1\t-\n2\t-\n3\t1796061900000000\n");
}

// A stamp of a known form whose date, time or zone does not exist is refused at a fresh ingest
// with a warning of its file and line (the 017 upgrade gives the same for stored rows): month
// 13, Feb 30 (RFC 3339, dmesg -T, RFC 3164), an offset no zone uses. The line is still read as
// the kernel's (its prefix stripped, its pid kept); only its wall time is left out.
TEST(WallTime, AStampThatIsNoDateIsRefusedWithAWarningOfItsLine) {
    TempDir dir;
    std::string db = dir.file("g.db"), log = dir.file("bad-stamps.log");
    writeFile(log,
              segfault("2026-13-01T10:05:00+00:00 host kernel: ") +
                  segfault("2026-02-30T10:05:00Z host kernel: ") +
                  segfault("2026-11-30T10:05:00+15:00 host kernel: ") +
                  segfault("[Mon Feb 30 10:05:00 2026] ") +
                  segfault("Feb 30 10:05:00 host kernel: ") +
                  segfault("2026-11-30T11:05:00+01:00 host kernel: "));
    auto in = inZone("UTC", {"--db", db, "ingest", "-q", log});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_EQ(query(db, kSql),
              "line\twall\tutc\tzone\n"
              "1\t-\t-\t-\n"
              "2\t-\t-\t-\n"
              "3\t-\t-\t-\n"
              "4\t-\t-\t-\n"
              "5\t-\t-\t-\n"
              "6\t2026-11-30T11:05:00\t1796033100000000\tstated\n");
    // every line is still the kernel's record of pid 4528, its stamp and host stripped
    EXPECT_EQ(
        query(db, "SELECT count(*) AS n FROM evidence WHERE pid = 4528 AND process = 'procA'"),
        "n\n6\n");
    const std::string date =
        "timestamp is not a date and time (no such month, day, hour, minute or second): no wall "
        "time stored";
    EXPECT_EQ(query(db,
                    "SELECT w.line, s.path = '" + log +
                        "' AS here, w.message FROM warnings w JOIN sources s ON s.id = "
                        "w.source_id ORDER BY w.line"),
              "line\there\tmessage\n"
              "1\t1\t" +
                  date +
                  "\n"
                  "2\t1\t" +
                  date +
                  "\n"
                  "3\t1\ttimestamp states a zone offset no zone uses (beyond -12:00 to +14:00): no "
                  "wall time stored\n"
                  "4\t1\t" +
                  date +
                  "\n"
                  "5\t1\t" +
                  date + "\n");
    // ingested again (nothing new): no warning twice
    auto again = inZone("UTC", {"--db", db, "ingest", "-q", log});
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(query(db, "SELECT count(*) AS n FROM warnings"), "n\n5\n");
}
