// One recording, many files (hostile review 4: F, G): `gpufault ingest` stores the records of one
// process (boot id, pid, start ticks) once whatever path they came through, while two processes
// of one pid stay apart; a free written into a later generation of the file (rewritten, or cut
// short and continued) frees the row an earlier generation holds, so `show` says FREED. Real
// files (tests/data/alloc/gpufault-alloc.4528.log: two processes of pid 4528 in one file, from
// the hostile review), a real store, through the built binary.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

#include "tests/cli/alloc_cli.h"
#include "tests/support/process.h"

using namespace gpufault::testing;

namespace {

const std::string kData = std::string(GPUFAULT_SOURCE_DIR) + "/tests/data/alloc/";
constexpr int64_t kT0 = 1796032800;  // 2026-11-30T10:00:00Z, the recordings' start
const std::string kBoot = "5c040de4-3e9d-429a-9ca3-d2c93965225b";

std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

/// A kernel segfault line of pid 4528 at `t` (local time, as the kernel log prints it).
std::string segfault(std::time_t t, uint64_t address) {
    std::tm tm{};
    ::localtime_r(&t, &tm);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    return fmt::format(
        "{}+0000 host kernel: procA[4528]: segfault at {:x} ip 00007f1234567890 sp "
        "00007ffd12345678 error 4 in libfoo.so[7f1234500000+100000]\n",
        when,
        address);
}

/// The lines of `show`'s allocation table (they start with the API's name; tab-separated when
/// not printed to a terminal).
std::vector<std::string> allocationRows(const std::string& show) {
    std::vector<std::string> rows;
    std::istringstream in(show);
    for (std::string l; std::getline(in, l);)
        if (l.starts_with("hipMalloc\t") || l.starts_with("hipMalloc ")) rows.push_back(l);
    return rows;
}

// The hostile review's G records: process 4528 (start ticks 100) allocates A and B, frees A.
const std::string kL1 = fmt::format(
    "gpufault.alloc 1 start pid=4528 ppid=1 wall_us={} mono_us=1000000 boot={} start_ticks=100 "
    "exe=/usr/bin/procA\n",
    kT0 * 1000000,
    kBoot);
std::string allocAt(uint64_t ptr, int sec) {
    return fmt::format(
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size=1048576 mem=device device=0 rc=0 "
        "wall_us={} mono_us={} pid=4528 tid=4528 stack=-\n",
        ptr,
        (kT0 + sec) * 1000000,
        (1 + sec) * 1000000);
}
std::string freeAt(uint64_t ptr, int sec) {
    return fmt::format(
        "gpufault.alloc 1 free api=hipFree ptr=0x{:x} size=0 device=-1 rc=0 wall_us={} "
        "mono_us={} pid=4528 tid=4528 stack=-\n",
        ptr,
        (kT0 + sec) * 1000000,
        (1 + sec) * 1000000);
}
constexpr uint64_t kA = 0x7f0000000000, kB = 0x7f0000200000, kC = 0x7f0000400000;

/// `show 1` of `db` lists `rows` allocations, the first A (0x7f0000000000) "FREED before
/// fault" by the hipFree at `where` (FILE:LINE). Call under ASSERT_NO_FATAL_FAILURE.
void expectAFreedAt(const std::string& db, size_t rows, const std::string& where) {
    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    auto listed = allocationRows(show.out);
    ASSERT_EQ(listed.size(), rows) << show.out;
    EXPECT_NE(listed[0].find("0x00007f0000000000"), std::string::npos) << listed[0];
    EXPECT_NE(listed[0].find("FREED before fault (hipFree at " + where + ")"), std::string::npos)
        << listed[0];
}

}  // namespace

TEST(AllocRecordings, OneRecordingThroughTwoPathsIsStoredAndListedOnce) {
    TempDir dir;
    std::string db = dir.file("f.db"), copy = dir.file("gpufault-alloc.4528.log");
    std::string file = kData + "gpufault-alloc.4528.log";
    writeFile(copy, readAll(file));
    writeFile(dir.file("fault.log"),
              segfault(kT0 + 300, 0x7f0000100010) + segfault(kT0 + 900, 0x7f0000300010));
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", file, copy, dir.file("fault.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(
        r.out.find(copy +
                   ": allocation records of pid 4528: 4 lines, 2 allocations (0 "
                   "freed, 2 already stored through another file or generation of the recording)"),
        std::string::npos)
        << r.out;
    EXPECT_EQ(query(db, "SELECT count(*) AS n, count(DISTINCT ptr) AS d FROM allocations"),
              "n\td\n2\t2\n");
    // Two processes of pid 4528 in the file (start ticks 100 and 60100): two recordings, each
    // with its own allocation, in each path.
    EXPECT_EQ(
        query(db, "SELECT count(*) AS n, count(DISTINCT recording) AS r FROM alloc_processes"),
        "n\tr\n4\t2\n");
    auto show1 = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show1.status, 0) << show1.err;
    auto rows = allocationRows(show1.out);
    ASSERT_EQ(rows.size(), 1u) << show1.out;
    EXPECT_NE(rows[0].find("0x00007f0000000000"), std::string::npos) << rows[0];
    auto show2 = run({GPUFAULT_BIN, "--db", db, "show", "2"});
    ASSERT_EQ(show2.status, 0) << show2.err;
    rows = allocationRows(show2.out);
    ASSERT_EQ(rows.size(), 1u) << show2.out;
    EXPECT_NE(rows[0].find("0x00007f0000200000"), std::string::npos) << rows[0];
    // Ingested again through either path: nothing more.
    r = run({GPUFAULT_BIN, "--db", db, "ingest", copy, file});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(query(db, "SELECT count(*) AS n FROM allocations"), "n\n2\n");
}

TEST(AllocRecordings, TwoProcessesOfOnePidWithTheSameRecordsStayTwo) {
    TempDir dir;
    std::string db = dir.file("p.db");
    std::string file = kData + "gpufault-alloc.4528.log";
    // The same records written by other processes of pid 4528 (other start ticks): not copies.
    std::string other = readAll(file);
    for (auto [from, to] : {std::pair{" start_ticks=100 ", " start_ticks=101 "},
                            std::pair{" start_ticks=60100 ", " start_ticks=60101 "}}) {
        auto at = other.find(from);
        ASSERT_NE(at, std::string::npos);
        other.replace(at, std::string(from).size(), to);
    }
    ::mkdir(dir.file("other").c_str(), 0755);
    writeFile(dir.file("other/gpufault-alloc.4528.log"), other);
    auto r =
        run({GPUFAULT_BIN, "--db", db, "ingest", file, dir.file("other/gpufault-alloc.4528.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find("already stored"), std::string::npos) << r.out;
    EXPECT_EQ(query(db, "SELECT count(*) AS n, count(DISTINCT ptr) AS d FROM allocations"),
              "n\td\n4\t2\n");
    EXPECT_EQ(query(db, "SELECT count(DISTINCT recording) AS r FROM alloc_processes"), "r\n4\n");
}

TEST(AllocRecordings, AFreeInARewrittenGenerationFreesTheRowTheEarlierOneHolds) {
    TempDir dir;
    std::string db = dir.file("g.db"), f = dir.file("gpufault-alloc.4528.log");
    writeFile(f, kL1 + allocAt(kA, 1) + allocAt(kB, 2));
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", "-q", f}).status, 0);
    // Written again: the start record, A, then A's free where B was.
    writeFile(f, kL1 + allocAt(kA, 1) + freeAt(kA, 3));
    writeFile(dir.file("fault.log"), segfault(kT0 + 300, kA + 0x10));
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", f, dir.file("fault.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(" since it was ingested (479 bytes then, 460 now): a new generation; the "
                         "2 allocation(s) stored before are kept"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(query(db,
                    "SELECT line, printf('%x', ptr) AS ptr, free_line, free_api FROM allocations "
                    "ORDER BY ptr"),
              "line\tptr\tfree_line\tfree_"
              "api\n2\t7f0000000000\t3\thipFree\n3\t7f0000200000\tNULL\tNULL\n");
    // the free came through the file's later generation: named by its file and line
    ASSERT_NO_FATAL_FAILURE(expectAFreedAt(db, 2, f + ":3"));
}

TEST(AllocRecordings, AFreeAfterTheFileWasCutShortAndContinuedFreesTheEarlierRow) {
    TempDir dir;
    std::string db = dir.file("g.db"), f = dir.file("gpufault-alloc.4528.log");
    writeFile(f, kL1 + allocAt(kA, 1) + allocAt(kB, 2));
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", "-q", f}).status, 0);
    // Truncated (same inode) while the process went on appending: A's free and C, with no
    // start record before them.
    writeFile(f, freeAt(kA, 3) + allocAt(kC, 4));
    writeFile(dir.file("fault.log"), segfault(kT0 + 300, kA + 0x10));
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", f, dir.file("fault.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("no open allocation"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find(f + ": allocation records of pid 4528 (no start record stored): 2 lines, "
                             "1 allocation (1 freed), 0 failed calls, 0 warnings"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(
        query(db,
              "SELECT printf('%x', ptr) AS ptr, free_line, free_source_id IS NOT NULL AS "
              "elsewhere FROM allocations ORDER BY ptr"),
        "ptr\tfree_"
        "line\telsewhere\n7f0000000000\t1\t1\n7f0000200000\tNULL\t0\n7f0000400000\tNULL\t0\n");
    // The records after the cut continue the recording: one process, three allocations.
    EXPECT_EQ(query(db, "SELECT count(DISTINCT recording) AS r FROM alloc_processes"), "r\n1\n");
    ASSERT_NO_FATAL_FAILURE(expectAFreedAt(db, 3, f + ":1"));
}

// Hostile review of issue 4, finding 1: a process that exec()s with the shim preloaded keeps
// its pid and start ticks, and its new image writes a second `start` record into the same
// file. The real shim, a real exec: two recordings, the first ended at the exec, and the fault
// the second image prints inside the first image's buffer is not shown as "live" there.
TEST(AllocRecordings, AnExecStartsANewRecordingAndEndsTheImageBefore) {
    TempDir dir;
    std::string db = dir.file("g.db"), spool = dir.file("spool");
    auto r = runUnderShim(db, spool, "exec");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        r.out, m, std::regex(R"(before-exec pid=(\d+) ptr=(0x[0-9a-f]+) size=1048576)")))
        << r.out;
    std::string pid = m[1];
    uint64_t before = std::stoull(m[2], nullptr, 16);
    ASSERT_TRUE(std::regex_search(
        r.out, m, std::regex(R"(after-exec pid=(\d+) ptr=(0x[0-9a-f]+) size=2097152)")))
        << r.out;
    EXPECT_EQ(m[1], pid);  // one process
    uint64_t after = std::stoull(m[2], nullptr, 16);
    EXPECT_NE(r.err.find("2 allocations recorded by 1 process"), std::string::npos) << r.err;
    // The shim's side: two start records of the same boot, pid and start ticks, each naming
    // the pid namespace (ours).
    char ns[64] = {};
    ASSERT_GT(::readlink("/proc/self/ns/pid", ns, sizeof ns - 1), 6);
    std::string pidns(ns + 5, std::strlen(ns) - 6);
    EXPECT_EQ(query(db,
                    "SELECT count(*) AS n, count(DISTINCT boot_id || start_ticks) AS p, "
                    "count(DISTINCT recording) AS r, group_concat(DISTINCT pidns) AS ns FROM "
                    "alloc_processes WHERE pid = " +
                        pid),
              "n\tp\tr\tns\n2\t1\t2\t" + pidns + "\n");
    // The first image ends at the second's start (exactly), the second has no end.
    EXPECT_EQ(query(db,
                    "SELECT a.line, a.ended_by, a.ended_wall_us = b.wall_us AND a.ended_mono_us = "
                    "b.mono_us AS at_exec FROM alloc_processes a JOIN alloc_processes b ON b.line "
                    "= 3 WHERE a.line = 1"),
              "line\tended_by\tat_exec\n1\texec\t1\n");
    EXPECT_EQ(query(db,
                    "SELECT printf('%x', a.ptr) AS ptr, p.line AS image FROM allocations a JOIN "
                    "alloc_processes p ON p.source_id = a.source_id AND p.pid = a.pid AND p.line "
                    "= a.start_line ORDER BY p.line"),
              fmt::format("ptr\timage\n{:x}\t1\n{:x}\t3\n", before, after));
    // The fault (a ROCr line of the run, no time) inside the first image's buffer: that buffer
    // is not "live", its image was gone at the exec.
    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    const std::string row = hipMallocRow(show.out, before);
    ASSERT_FALSE(row.empty()) << show.out;
    EXPECT_NE(row.find("gone at exec, order unknown"), std::string::npos) << row;
    EXPECT_EQ(row.find("live"), std::string::npos) << row;
    auto rep = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "json"});
    ASSERT_EQ(rep.status, 0) << rep.err;
    auto j = nlohmann::json::parse(rep.out);
    // Replaced, but whether before the fault is not known (no time on the fault): null; the
    // second image's buffer was never replaced: false.
    int replaced = 0, kept = 0;
    for (const auto& a : j["allocations"]) {
        if (a["ptr"] == fmt::format("0x{:x}", before))
            replaced += a["image_replaced_by_exec"].is_null();
        if (a["ptr"] == fmt::format("0x{:x}", after))
            kept += a["image_replaced_by_exec"] == false;
    }
    EXPECT_EQ(replaced, 1) << rep.out;
    EXPECT_EQ(kept, 1) << rep.out;
}

// Hostile review of issue 4 (second round), finding 1: the new image allocates nothing (a
// shell). The shim writes its `start` record when it is loaded into an image whose process
// already has a file, so the first image still ends at the exec and its buffer is not `live`.
// The file is named by the process (pid, pid namespace, start ticks), not by the pid alone.
TEST(AllocRecordings, AnExecIntoAProgramThatAllocatesNothingStillEndsTheImageBefore) {
    TempDir dir;
    std::string db = dir.file("g.db"), spool = dir.file("spool");
    auto r = runUnderShim(db, spool, "exec-sh");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(
        r.out, m, std::regex(R"(before-exec pid=(\d+) ptr=(0x[0-9a-f]+) size=1048576)")))
        << r.out;
    std::string pid = m[1];
    uint64_t before = std::stoull(m[2], nullptr, 16);
    EXPECT_EQ(query(db,
                    "SELECT count(*) AS n, count(DISTINCT start_ticks) AS p, sum(ended_by IS "
                    "'exec') AS ended FROM alloc_processes WHERE pid = " +
                        pid),
              "n\tp\tended\n2\t1\t1\n");
    EXPECT_EQ(query(db,
                    "SELECT count(*) AS n FROM sources s JOIN alloc_processes p ON p.source_id = "
                    "s.id AND p.line = 1 WHERE s.path LIKE '%/gpufault-alloc.' || p.pid || '.' || "
                    "p.pidns || '.' || p.start_ticks || '.log'"),
              "n\n1\n");
    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    const std::string row = hipMallocRow(show.out, before);
    ASSERT_FALSE(row.empty()) << show.out;
    EXPECT_NE(row.find("gone at exec"), std::string::npos) << row;
    EXPECT_EQ(row.find("live"), std::string::npos) << row;
}

// Finding 3: `image_replaced_by_exec` says whether the exec came before the fault, not whether
// one happened at all: a fault at 10:03 in image A, which B's exec replaced at 10:05, is false.
TEST(AllocRecordings, AnImageReplacedAfterTheFaultIsNotReplacedForIt) {
    TempDir dir;
    std::string db = dir.file("g.db"), log = dir.file("fault.log"), f = dir.file("a.alloc");
    writeFile(log,
              "2026-11-30T10:03:00+0000 host kernel: A[5000]: segfault at 7f0000000010 ip "
              "00007f1234567890 sp 00007ffd12345678 error 4 in libfoo.so[7f1234500000+100000]\n");
    auto image = [&](int64_t wall_s, int64_t mono_s, const char* exe, uint64_t ptr) {
        return fmt::format(
            "gpufault.alloc 1 start pid=5000 ppid=1 wall_us={} mono_us={} boot={} "
            "pidns=4026531836 start_ticks=100 exe={}\n"
            "gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size=1048576 mem=device device=0 "
            "rc=0 wall_us={} mono_us={} pid=5000 tid=5000 stack=-\n",
            wall_s * 1000000,
            mono_s * 1000000,
            kBoot,
            exe,
            ptr,
            (wall_s + 1) * 1000000,
            (mono_s + 1) * 1000000);
    };
    writeFile(f,
              image(kT0, 1, "/usr/bin/A", 0x7f0000000000) +
                  image(kT0 + 300, 301, "/usr/bin/B", 0x7e0000000000));
    auto ing = run({GPUFAULT_BIN, "--db", db, "ingest", log, f});
    ASSERT_EQ(ing.status, 0) << ing.out << ing.err;
    auto rep = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "json"});
    ASSERT_EQ(rep.status, 0) << rep.err;
    auto j = nlohmann::json::parse(rep.out);
    ASSERT_EQ(j["allocations"].size(), 1u) << rep.out;
    EXPECT_EQ(j["allocations"][0]["ptr"], "0x7f0000000000");
    EXPECT_EQ(j["allocations"][0]["joined_by"], "wall time");
    EXPECT_EQ(j["allocations"][0]["image_replaced_by_exec"], false) << rep.out;
    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    auto rows = allocationRows(show.out);
    ASSERT_EQ(rows.size(), 1u) << show.out;
    EXPECT_NE(rows[0].find("live"), std::string::npos) << rows[0];
}
