// Reused pids (issue 4): allocations belong to the recording process that held the fault
// record's pid at the fault's time, not to every process that ever had that pid. Real shim-format
// files of two processes of pid 4528 (different times, different directories), real kernel
// log lines, a real store, through the built binary.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/alloc_cli.h"
#include "tests/support/process.h"

using namespace gpufault::testing;

namespace {

/// µs since the epoch of 2026-01-01 HH:MM:SS UTC (the kernel lines below state `+0000`).
int64_t localUs(int hour, int min, int sec) {
    std::tm tm{};
    tm.tm_year = 2026 - 1900;
    tm.tm_mon = 0;
    tm.tm_mday = 1;
    tm.tm_hour = hour;
    tm.tm_min = min;
    tm.tm_sec = sec;
    return static_cast<int64_t>(timegm(&tm)) * 1000000;
}

std::string start(int64_t wall) {
    return fmt::format(
        "gpufault.alloc 1 start pid=4528 ppid=1 wall_us={} mono_us=5 boot=0d5e9c1a-1111-4222-8333-"
        "944455556666 start_ticks=777 exe=/usr/bin/python3\n",
        wall);
}

std::string alloc(uint64_t ptr, uint64_t size, int64_t wall) {
    return fmt::format(
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size={} mem=device device=0 rc=0 "
        "wall_us={} mono_us=6 pid=4528 tid=4528 stack=-\n",
        ptr,
        size,
        wall);
}

std::string freeRec(uint64_t ptr, int64_t wall) {
    return fmt::format(
        "gpufault.alloc 1 free api=hipFree ptr=0x{:x} size=0 device=-1 rc=0 wall_us={} "
        "mono_us=7 pid=4528 tid=4528 stack=-\n",
        ptr,
        wall);
}

/// A kernel segfault line of pid 4528 at `address`, at 2026-01-01 HH:MM:00 (short-iso).
std::string segfault(int hour, int min, uint64_t address) {
    return fmt::format(
        "2026-01-01T{:02}:{:02}:00+0000 node7 kernel: python3[4528]: segfault at {:x} ip "
        "00007f5eb547916e sp 00007fff363a9000 error 4 in libfoo.so[116e,7f5eb5479000+1000]\n",
        hour,
        min,
        address);
}

// Two processes of pid 4528: the first ran 10:00–(unknown), the second started at 12:00.
constexpr uint64_t kOld = 0x7f1000000000, kNew = 0x7f2000000000, kFreed = 0x7f2000400000,
                   kLater = 0x7f2000800000, kAfter = 0x7f2000c00000;

void writeRecordings(TempDir& dir) {
    ::mkdir(dir.file("job1").c_str(), 0755);
    ::mkdir(dir.file("job2").c_str(), 0755);
    writeFile(dir.file("job1/gpufault-alloc.4528.log"),
              start(localUs(10, 0, 0)) + alloc(kOld, 1 << 20, localUs(10, 0, 1)));
    writeFile(dir.file("job2/gpufault-alloc.4528.log"),
              start(localUs(12, 0, 0)) + alloc(kNew, 1 << 20, localUs(12, 0, 1)) +
                  alloc(kFreed, 1 << 20, localUs(12, 0, 2)) +
                  alloc(kLater, 1 << 20, localUs(12, 0, 3)) +
                  freeRec(kFreed, localUs(12, 10, 0)) +         // before the 12:30 fault
                  freeRec(kLater, localUs(13, 0, 0)) +          // after it
                  alloc(kAfter, 1 << 20, localUs(12, 45, 0)));  // made after the fault
}

}  // namespace

TEST(AllocPidReuse, OnlyTheRecordingThatHeldThePidAtTheFaultIsJoined) {
    TempDir dir;
    writeRecordings(dir);
    std::string db = dir.file("g.db");
    // 10:30: the first process's fault (1 MiB + 4 KiB past its buffer); 12:30: the second's,
    // inside the buffer it freed at 12:10.
    writeFile(dir.file("kern.log"),
              segfault(10, 30, kOld + (1 << 20) + 0x1000) + segfault(12, 30, kFreed + 0x2000));
    auto r = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "ingest",
                  dir.file("job1/gpufault-alloc.4528.log"),
                  dir.file("job2/gpufault-alloc.4528.log"),
                  dir.file("kern.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(query(db,
                    "SELECT line, pid, boot_id, start_ticks, ended_wall_us FROM alloc_processes "
                    "ORDER BY id"),
              "line\tpid\tboot_id\tstart_ticks\tended_wall_us\n"
              "1\t4528\t0d5e9c1a-1111-4222-8333-944455556666\t777\tNULL\n"
              "1\t4528\t0d5e9c1a-1111-4222-8333-944455556666\t777\tNULL\n");
    // Each fault record meets only its own process's allocations made before it; the freed
    // one is marked freed before the fault, the one freed at 13:00 as freed after it.
    EXPECT_EQ(query(db,
                    "SELECT e.wall, printf('0x%x', a.ptr) AS ptr, v.freed, v.freed_before, v.how "
                    "FROM fault_allocation_distance v JOIN evidence e ON e.id = v.evidence_id "
                    "JOIN allocations a ON a.id = v.allocation_id ORDER BY e.id, a.ptr"),
              "wall\tptr\tfreed\tfreed_before\thow\n"
              "2026-01-01T10:30:00\t0x7f1000000000\t0\t0\twall time\n"
              "2026-01-01T12:30:00\t0x7f2000000000\t0\t0\twall time\n"
              "2026-01-01T12:30:00\t0x7f2000400000\t1\t1\twall time\n"
              "2026-01-01T12:30:00\t0x7f2000800000\t1\t0\twall time\n");

    auto incidentAt = [&](const std::string& wall) {
        auto q = query(db,
                       "SELECT m.incident_id FROM incident_evidence m JOIN evidence e ON e.id = "
                       "m.evidence_id WHERE e.wall = '" +
                           wall + "'");
        return q.substr(q.find('\n') + 1, q.size() - q.find('\n') - 2);
    };
    auto second = run({GPUFAULT_BIN, "--db", db, "show", incidentAt("2026-01-01T12:30:00")});
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_NE(second.out.find(
                  fmt::format("by |distance| from 0x{:016x} (3 of pid 4528)", kFreed + 0x2000)),
              std::string::npos)
        << second.out;
    EXPECT_NE(second.out.find("FREED before fault (hipFree)"), std::string::npos) << second.out;
    EXPECT_NE(second.out.find("live (freed after, hipFree)"), std::string::npos) << second.out;
    EXPECT_EQ(second.out.find("0x00007f1000000000"), std::string::npos) << second.out;
    EXPECT_EQ(second.out.find("0x00007f2000c00000"), std::string::npos) << second.out;
    auto rep = run({GPUFAULT_BIN,
                    "--db",
                    db,
                    "report",
                    incidentAt("2026-01-01T12:30:00"),
                    "--format",
                    "json"});
    auto rj = nlohmann::json::parse(rep.out);
    ASSERT_EQ(rj["allocations"].size(), 3u) << rep.out;
    EXPECT_EQ(rj["allocations"][0]["ptr"], "0x7f2000400000");  // inside: nearest
    EXPECT_EQ(rj["allocations"][0]["freed_before_fault"], true);
    EXPECT_EQ(rj["allocations"][0]["joined_by"], "wall time");

    auto first = run({GPUFAULT_BIN, "--db", db, "show", incidentAt("2026-01-01T10:30:00")});
    ASSERT_EQ(first.status, 0) << first.err;
    EXPECT_NE(first.out.find(fmt::format("by |distance| from 0x{:016x} (1 of pid 4528)",
                                         kOld + (1 << 20) + 0x1000)),
              std::string::npos)
        << first.out;
    EXPECT_NE(first.out.find("+4,096 B (+4.00 KiB) above end"), std::string::npos) << first.out;
    EXPECT_EQ(first.out.find("0x00007f2000"), std::string::npos) << first.out;
}

TEST(AllocPidReuse, AFaultBeforeEveryRecordingOrWithoutATimeMeetsNone) {
    TempDir dir;
    writeRecordings(dir);
    std::string db = dir.file("g.db");
    // 09:00: before both processes recorded anything; a syslog line without a year: no clock
    // to tell the two recordings apart.
    writeFile(dir.file("kern1.log"), segfault(9, 0, kOld + 0x10));
    writeFile(dir.file("kern.log"),
              "Jan  1 12:30:00 node7 kernel: python3[4528]: segfault at 7f2000000010 ip "
              "00007f5eb547916e sp 00007fff363a9000 error 4 in libfoo.so[116e,7f5eb5479000+"
              "1000]\n");
    auto r = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "ingest",
                  dir.file("job1/gpufault-alloc.4528.log"),
                  dir.file("job2/gpufault-alloc.4528.log"),
                  dir.file("kern1.log"),
                  dir.file("kern.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(query(db, "SELECT count(*) FROM fault_allocation_distance"), "count(*)\n0\n");
    // Each says why in one line: the 09:00 fault precedes both recordings; the yearless line
    // has no time to choose between them.
    auto incidentOf = [&](const std::string& file) {
        auto q = query(db,
                       "SELECT m.incident_id FROM incident_evidence m JOIN evidence e ON e.id = "
                       "m.evidence_id JOIN sources s ON s.id = e.source_id WHERE s.path = '" +
                           dir.file(file) + "'");
        return q.substr(q.find('\n') + 1, q.size() - q.find('\n') - 2);
    };
    for (auto [file, why] :
         {std::pair<std::string, std::string>{"kern1.log", "started after the fault"},
          {"kern.log", "the fault's records have no time to tell which of the 2 held the pid"}}) {
        auto show = run({GPUFAULT_BIN, "--db", db, "show", incidentOf(file)});
        ASSERT_EQ(show.status, 0) << show.err;
        EXPECT_EQ(show.out.find("Allocations recorded by the preload shim"), std::string::npos)
            << show.out;
        bool untold = why.starts_with("the fault's records have no time");
        EXPECT_NE(show.out.find("Allocations: pid 4528 has 2 allocation recordings in the "
                                "store, " +
                                std::string(untold ? "and which of them (if any) is the process "
                                                     "that faulted is not known: "
                                                   : "none of the process that faulted: ") +
                                why + " (docs/preload.md"),
                  std::string::npos)
            << file << "\n"
            << show.out;
    }
    // With only the second recording in a store, the yearless line has the pid's only
    // recording: joined (as before 013), marked so.
    std::string db2 = dir.file("h.db");
    ASSERT_EQ(run({GPUFAULT_BIN,
                   "--db",
                   db2,
                   "ingest",
                   dir.file("job2/gpufault-alloc.4528.log"),
                   dir.file("kern1.log"),
                   dir.file("kern.log")})
                  .status,
              0);
    EXPECT_EQ(query(db2,
                    "SELECT printf('0x%x', a.ptr) AS ptr, v.freed_before, v.how FROM "
                    "fault_allocation_distance v JOIN evidence e ON e.id = v.evidence_id JOIN "
                    "allocations a ON a.id = v.allocation_id WHERE e.wall NOT LIKE '2026-%' "
                    "ORDER BY a.ptr"),
              "ptr\tfreed_before\thow\n"
              "0x7f2000000000\t0\tonly recording\n"
              "0x7f2000400000\tNULL\tonly recording\n"
              "0x7f2000800000\tNULL\tonly recording\n"
              "0x7f2000c00000\t0\tonly recording\n");
}

// A recording that cannot meet the fault is named, with why, in one line of `show` and of
// `report` (Markdown; JSON: `allocations_unjoined`): the fault is of another pid; the fault's
// record names no pid; the faulting process's recording holds allocations made only after the
// fault.
TEST(AllocPidReuse, ShowSaysWhyARecordingInTheStoreWasNotJoined) {
    TempDir dir;
    writeRecordings(dir);
    struct Said {
        std::string show, md;
        nlohmann::json json;
    };
    auto saidBy = [&](const std::string& db, const std::string& log) {
        auto r = run(
            {GPUFAULT_BIN, "--db", db, "ingest", dir.file("job2/gpufault-alloc.4528.log"), log});
        EXPECT_EQ(r.status, 0) << r.err;
        auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
        EXPECT_EQ(show.status, 0) << show.err;
        EXPECT_EQ(show.out.find("Allocations recorded by the preload shim"), std::string::npos)
            << show.out;
        auto md = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "md"});
        EXPECT_EQ(md.status, 0) << md.err;
        auto js = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "json"});
        EXPECT_EQ(js.status, 0) << js.err;
        auto j = nlohmann::json::parse(js.out, nullptr, false);
        EXPECT_TRUE(j.is_object()) << js.out;
        if (!j.is_object()) return Said{show.out, md.out, nullptr};
        EXPECT_EQ(j["allocations"], nlohmann::json::array()) << js.out;
        return Said{show.out, md.out, j["allocations_unjoined"]};
    };
    // The line in `show` (a paragraph of its own) and in the report (one paragraph).
    auto expectLine = [](const Said& s, const std::string& line) {
        EXPECT_NE(s.show.find("\n" + line + "\n"), std::string::npos) << s.show;
        EXPECT_NE(s.md.find("\n" + line + "\n\n"), std::string::npos) << s.md;
    };
    // pid 999 faulted at 12:30, while pid 4528's recording ran.
    writeFile(
        dir.file("other.log"),
        "2026-01-01T12:30:00+0000 node7 kernel: python3[999]: segfault at 7f2000000010 ip "
        "00007f5eb547916e sp 00007fff363a9000 error 4 in libfoo.so[116e,7f5eb5479000+1000]\n");
    auto other = saidBy(dir.file("a.db"), dir.file("other.log"));
    expectLine(other,
               "Allocations: 1 allocation recording in the store (pid 4528), none joined: the "
               "fault is of pid 999");
    EXPECT_EQ(other.json,
              nlohmann::json::parse(R"([{"pid":null,"recordings":1,"pids":[4528],"pid_count":1,)"
                                    R"("why":"the fault is of pid 999"}])"));
    // ROCr's line alone names no pid.
    writeFile(dir.file("rocr.log"),
              "Memory access fault by GPU node-1 (Agent handle: 0x55d4c0a1b2c0) on address "
              "0x7f2000100000. Reason: Page not present or supervisor privilege.\n");
    auto nopid = saidBy(dir.file("b.db"), dir.file("rocr.log"));
    const std::string noPid =
        "the fault's records name no pid (docs/preload.md: a kernel record of the pid, or the "
        "job run by `gpufault run --record-allocations`)";
    expectLine(
        nopid,
        "Allocations: 1 allocation recording in the store (pid 4528), none joined: " + noPid);
    ASSERT_EQ(nopid.json.size(), 1u) << nopid.json;
    EXPECT_EQ(nopid.json[0]["why"], noPid);
    EXPECT_EQ(nopid.json[0]["pids"], nlohmann::json::array({4528}));
    // 12:00:00: the recording had started (that second) but allocated first at 12:00:01.
    writeFile(dir.file("early.log"), segfault(12, 0, kNew + 0x10));
    auto early = saidBy(dir.file("c.db"), dir.file("early.log"));
    expectLine(early,
               "Allocations: pid 4528 has 1 allocation recording in the store, none of the "
               "process that faulted: the recording of the process that faulted has no "
               "allocation made before the fault (docs/preload.md \"Reused pids\")");
    EXPECT_EQ(early.json,
              nlohmann::json::parse(
                  R"([{"pid":4528,"recordings":1,"pids":[],"pid_count":0,"why":"the recording )"
                  R"(of the process that faulted has no allocation made before the fault"}])"));
    // With no recording in the store, nothing is said.
    std::string none = dir.file("d.db");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", none, "ingest", dir.file("other.log")}).status, 0);
    auto plain = run({GPUFAULT_BIN, "--db", none, "show", "1"});
    EXPECT_EQ(plain.out.find("Allocations"), std::string::npos) << plain.out;
    auto plainMd = run({GPUFAULT_BIN, "--db", none, "report", "1"});
    EXPECT_EQ(plainMd.out.find("Allocations"), std::string::npos) << plainMd.out;
    auto plainJson = run({GPUFAULT_BIN, "--db", none, "report", "1", "--format", "json"});
    EXPECT_EQ(nlohmann::json::parse(plainJson.out, nullptr, false)["allocations_unjoined"],
              nlohmann::json::array())
        << plainJson.out;
}
