// Hostile review 4 of the allocation join (A, B, D, E, M, Q): the fault's wall time as an
// instant stored at ingest (the zone a record states, else the ingesting zone), an incident's
// clocked record deciding for its clockless one, the Markdown report's allocation table, and
// the record edges (an end of 2^64, a refused `start`, a NUL byte, a line over 1 MiB). Real files
// (tests/data/alloc_join, copied from the review's reproducers) through the built binary into
// a real store.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/process.h"

using namespace gpufault::testing;

namespace {

const std::string kData = GPUFAULT_SOURCE_DIR "/tests/data/alloc_join/";

/// The built gpufault run with TZ=`tz` (the reader's or the ingesting process's zone).
ProcessResult inZone(const std::string& tz, std::vector<std::string> args) {
    std::vector<std::string> argv{"/usr/bin/env", "TZ=" + tz, GPUFAULT_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
}

std::string query(const std::string& tz, const std::string& db, const std::string& sql) {
    auto q = inZone(tz, {"--db", db, "query", sql});
    EXPECT_EQ(q.status, 0) << q.err;
    return q.out;
}

const char* const kZones[] = {"UTC", "Asia/Tokyo", "America/New_York"};

// Every fault record, its instant and the allocations it joins.
const std::string kJoinSql =
    "SELECT e.id, e.wall, e.wall_utc_us, e.wall_zone, v.allocation_id, v.how FROM evidence e "
    "LEFT JOIN fault_allocation_distance v ON v.evidence_id = e.id ORDER BY e.id, "
    "v.allocation_id";

}  // namespace

// A (repro_tz) and E (repro_tz.sh): the recordings started at 10:00Z (procA) and 10:10Z (procB).
// The kernel lines state their zone: 10:05+0000 and 12:05+0200 are procA's, 10:15+0000 is
// procB's, 11:30+0200 (09:30Z) is before both. Ingested in Tokyo, read anywhere: one answer.
TEST(AllocJoin, TheJoinIsTheSameUnderEveryReaderZone) {
    TempDir dir;
    std::string db = dir.file("g.db");
    auto in = inZone("Asia/Tokyo",
                     {"--db",
                      db,
                      "ingest",
                      "-q",
                      kData + "two-processes.gpufault-alloc.4528.log",
                      kData + "two-processes.fault.log",
                      kData + "fault_tz.log",
                      kData + "fault_tz2.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    const std::string want =
        "id\twall\twall_utc_us\twall_zone\tallocation_id\thow\n"
        "1\t2026-11-30T10:05:00\t1796033100000000\tstated\t1\twall time\n"
        "2\t2026-11-30T10:15:00\t1796033700000000\tstated\t2\twall time\n"
        "3\t2026-11-30T12:05:00\t1796033100000000\tstated\t1\twall time\n"
        "4\t2026-11-30T11:30:00\t1796031000000000\tstated\tNULL\tNULL\n";
    // the incident of procA's 10:05 fault (line 1 of two-processes.fault.log)
    auto inc = query("UTC", db, "SELECT incident_id FROM incident_evidence WHERE evidence_id = 1");
    ASSERT_EQ(inc.rfind("incident_id\n", 0), 0u) << inc;
    const std::string incident = inc.substr(12, inc.size() - 13);
    std::string shown;
    for (const char* tz : kZones) {
        EXPECT_EQ(query(tz, db, kJoinSql), want) << "TZ=" << tz;
        auto show = inZone(tz, {"--db", db, "show", incident});
        ASSERT_EQ(show.status, 0) << show.err;
        EXPECT_NE(show.out.find("hipMalloc\t0x00007f0000000000\t0x00007f0000100000\t"),
                  std::string::npos)
            << "TZ=" << tz << "\n"
            << show.out;
        if (shown.empty()) shown = show.out;
        EXPECT_EQ(show.out, shown) << "TZ=" << tz;
    }
}

// A zone-less full date (dmesg -T) is read in the ingesting process's zone, once, and stored as
// such ('local'): 19:05 in Tokyo is 10:05Z (procA's); the same line ingested in UTC is 19:05Z
// (procB's). Neither answer changes with the reader's zone afterwards.
TEST(AllocJoin, AZonelessStampIsReadInTheIngestingZone) {
    TempDir dir;
    writeFile(dir.file("dmesg-T.log"),
              "[Mon Nov 30 19:05:00 2026] procA[4528]: segfault at 7f0000100010 ip "
              "00007f1234567890 sp 00007ffd12345678 error 4 in libfoo.so[7f1234500000+100000]\n");
    struct Case {
        const char* ingest_tz;
        std::string want;
    } cases[] = {
        {"Asia/Tokyo",
         "id\twall\twall_utc_us\twall_zone\tallocation_id\thow\n"
         "1\t2026-11-30T19:05:00\t1796033100000000\tlocal\t1\twall time\n"},
        {"UTC",
         "id\twall\twall_utc_us\twall_zone\tallocation_id\thow\n"
         "1\t2026-11-30T19:05:00\t1796065500000000\tlocal\t2\twall time\n"},
    };
    for (const auto& c : cases) {
        std::string db = dir.file(std::string("g-") + (c.ingest_tz[0] == 'A' ? "tokyo" : "utc"));
        auto in = inZone(c.ingest_tz,
                         {"--db",
                          db,
                          "ingest",
                          "-q",
                          kData + "two-processes.gpufault-alloc.4528.log",
                          dir.file("dmesg-T.log")});
        ASSERT_EQ(in.status, 0) << in.err;
        for (const char* tz : kZones)
            EXPECT_EQ(query(tz, db, kJoinSql), c.want)
                << "ingested in " << c.ingest_tz << ", read with TZ=" << tz;
    }
}

// E (repro_union.sh): a fault at 09:00Z, before the only recording started (10:00Z), in one
// incident with a raw dmesg record of the same pid (no clock: `only recording`). The clocked
// record decides: the 10:00:01 buffer is not measured against the 09:00 fault.
TEST(AllocJoin, AnIncidentsClockedRecordDecidesForItsClocklessOne) {
    TempDir dir;
    std::string db = dir.file("g.db");
    auto in = inZone("UTC",
                     {"--db",
                      db,
                      "ingest",
                      "-q",
                      kData + "one.gpufault-alloc.4528.log",
                      kData + "fault_before.log",
                      kData + "fault_dmesg.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_EQ(query("UTC", db, "SELECT incident_id, count(*) FROM incident_evidence GROUP BY 1"),
              "incident_id\tcount(*)\n1\t2\n");
    // per record, the view keeps its rules: the dmesg record alone has the pid's only recording
    EXPECT_EQ(
        query("UTC", db, "SELECT evidence_id, allocation_id, how FROM fault_allocation_distance"),
        "evidence_id\tallocation_id\thow\n2\t1\tonly recording\n");
    for (const char* fmt : {"show", "report"}) {
        auto out = inZone("UTC", {"--db", db, fmt, "1"});
        ASSERT_EQ(out.status, 0) << out.err;
        EXPECT_EQ(out.out.find("0x00007f0000000000"), std::string::npos) << fmt << "\n" << out.out;
        EXPECT_NE(out.out.find("pid 4528 has 1 allocation recording in the store, none of the "
                               "process that faulted"),
                  std::string::npos)
            << fmt << "\n"
            << out.out;
    }
}

// B: report --format md has the allocation table show has (same columns, signed distances).
TEST(AllocJoin, TheMarkdownReportHasTheAllocationTable) {
    TempDir dir;
    std::string db = dir.file("g.db");
    auto in = inZone("UTC",
                     {"--db",
                      db,
                      "ingest",
                      "-q",
                      kData + "reuse-freed.gpufault-alloc.4528.log",
                      kData + "reuse-freed.fault.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    auto show = inZone("UTC", {"--db", db, "show", "2"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("inside, +1,048,592 B (+1.00 MiB) from ptr"), std::string::npos)
        << show.out;
    auto md = inZone("UTC", {"--db", db, "report", "2", "--format", "md"});
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_NE(md.out.find("### Fault address vs. recorded allocations"), std::string::npos)
        << md.out;
    EXPECT_NE(md.out.find("| api | ptr | end | size | distance | same 2 MiB | device | state | "
                          "stack | where |"),
              std::string::npos)
        << md.out;
    EXPECT_NE(md.out.find("| hipMalloc | `0x00007f0000000000` | `0x00007f0000200000` | "
                          "2,097,152 B (2.00 MiB) | inside, +1,048,592 B (+1.00 MiB) from ptr | "
                          "yes | 0 | FREED before fault (hipFree) | - | "
                          "`" +
                          kData + "reuse-freed.gpufault-alloc.4528.log:4` |"),
              std::string::npos)
        << md.out;
    // incident 1 (procA's fault at 10:05) is 16 B into procA's buffer, which is live
    auto md1 = inZone("UTC", {"--db", db, "report", "1", "--format", "md"});
    EXPECT_NE(md1.out.find("| 1,048,576 B (1.00 MiB) | inside, +16 B from ptr | yes | 0 | live |"),
              std::string::npos)
        << md1.out;
}

// D: ptr + size = 2^64 is refused with what is true (not "wraps"); with the `start` record
// refused, the summary names the records' pid.
TEST(AllocJoin, AnEndOf2To64AndARefusedStartAreReportedAsTheyAre) {
    TempDir dir;
    std::string db = dir.file("g.db"), f = kData + "edges.gpufault-alloc.4600.log";
    auto in = inZone("UTC", {"--db", db, "ingest", f, kData + "edges.fault.log"});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_NE(in.err.find(f + ":2: ptr + size = 2^64: the end is not a 64-bit address"),
              std::string::npos)
        << in.err;
    EXPECT_NE(in.err.find(f + ":4: ptr + size wraps around 2^64: not stored"), std::string::npos)
        << in.err;
    EXPECT_NE(in.err.find(f + ":5: ptr + size wraps around 2^64: not stored"), std::string::npos)
        << in.err;
    EXPECT_NE(in.out.find(f + ": allocation records of pid 4600 (no start record stored): 9 "
                              "lines, 3 allocations"),
              std::string::npos)
        << in.out;
    EXPECT_EQ(query("UTC",
                    db,
                    "SELECT line, message FROM warnings WHERE message LIKE 'ptr + size%' ORDER "
                    "BY line"),
              "line\tmessage\n"
              "2\tptr + size = 2^64: the end is not a 64-bit address (the store keeps [ptr, end) "
              "in 64 bits): not stored\n"
              "4\tptr + size wraps around 2^64: not stored\n"
              "5\tptr + size wraps around 2^64: not stored\n");
}

// Q: a NUL byte inside a value refuses the record, with its line.
TEST(AllocJoin, ARecordWithANulByteIsRefusedWithItsLine) {
    TempDir dir;
    std::string db = dir.file("g.db"), f = kData + "nul.gpufault-alloc.4700.log";
    auto in = inZone("UTC", {"--db", db, "ingest", f});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_NE(in.err.find(f + ":2: NUL byte at column 77: record refused"), std::string::npos)
        << in.err;
    EXPECT_EQ(query("UTC", db, "SELECT count(*) FROM allocations"), "count(*)\n0\n");
    EXPECT_EQ(query("UTC", db, "SELECT line, message FROM warnings"),
              "line\tmessage\n2\tNUL byte at column 77: record refused\n");
}

// M (the CLI's half; the daemon's reader: tests/ingest/test_alloc_long_line.cpp): a record line
// over 1 MiB is not read, with a warning of its line, and the lines after it are.
TEST(AllocJoin, ALineOver1MiBIsNotReadWithAWarning) {
    TempDir dir;
    std::string db = dir.file("g.db"), f = dir.file("gpufault-alloc.4800.log");
    const std::string rec =
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size=4096 mem=device device=0 rc=0 "
        "wall_us=1796032801000000 mono_us=2000000 pid=4800 tid=4800 stack=";
    std::string text =
        "gpufault.alloc 1 start pid=4800 ppid=1 wall_us=1796032800000000 mono_us=1 exe=/x\n";
    std::string under = fmt::format(fmt::runtime(rec), 0x7e0000000000);
    under += std::string((1u << 20) - under.size(), 'b');  // exactly 1 MiB: read
    std::string over = fmt::format(fmt::runtime(rec), 0x7e0000100000);
    over += std::string((1u << 20) + 1 - over.size(), 'c');  // 1 MiB + 1: not read
    text += under + "\n" + over + "\n" + fmt::format(fmt::runtime(rec), 0x7e0000200000) + "-\n";
    writeFile(f, text);
    auto in = inZone("UTC", {"--db", db, "ingest", f});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_NE(in.err.find(f + ":3: line longer than 1 MiB: not read"), std::string::npos)
        << in.err.substr(0, 2000);
    EXPECT_EQ(query("UTC", db, "SELECT line, printf('0x%x', ptr) FROM allocations ORDER BY line"),
              "line\tprintf('0x%x', ptr)\n2\t0x7e0000000000\n4\t0x7e0000200000\n");
}
