// Allocations end to end: `gpufault run --record-allocations` preloads the shim into a host
// that allocates through the stand-in runtime (tests/collectors/preload) and prints a ROCr
// fault 4 KiB past the end of its buffer; `show` measures the fault from the recorded
// allocation. And `ingest` of a shim file: recognised, summarised, bad lines named.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "tests/cli/alloc_cli.h"
#include "tests/support/process.h"

using namespace gpufault::testing;

namespace {

uint64_t printedPtr(const std::string& out) {
    std::smatch m;
    static const std::regex re(R"(hipMalloc ptr=(0x[0-9a-f]+) size=1048576)");
    return std::regex_search(out, m, re) ? std::stoull(m[1], nullptr, 16) : 0;
}

}  // namespace

TEST(RunRecordAllocations, ShowMeasuresTheFaultFromTheRecordedAllocation) {
    TempDir dir;
    std::string db = dir.file("g.db"), spool = dir.file("spool");
    auto r = runUnderShim(db, spool, "fault");
    EXPECT_EQ(r.status, 1) << r.out << r.err;  // the host's own status, passed through
    uint64_t ptr = printedPtr(r.out);
    ASSERT_NE(ptr, 0u) << r.out;
    EXPECT_NE(r.err.find("1 allocation recorded by 1 process in " + spool + "/run-"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("incident 1 (rocr_memory_fault)"), std::string::npos) << r.err;

    auto q = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "query",
                  "--json",
                  "SELECT a.api, a.ptr, a.end, a.device, a.run_id, v.distance, v.inside, "
                  "v.same_2mib, v.freed FROM fault_allocation_distance v JOIN allocations a ON "
                  "a.id = v.allocation_id"});
    ASSERT_EQ(q.status, 0) << q.err;
    auto j = nlohmann::json::parse(q.out);
    EXPECT_EQ(j["api"], "hipMalloc");
    EXPECT_EQ(j["ptr"].get<int64_t>(), static_cast<int64_t>(ptr));
    EXPECT_EQ(j["end"].get<int64_t>(), static_cast<int64_t>(ptr + (1 << 20)));
    EXPECT_EQ(j["device"], 3);
    EXPECT_EQ(j["run_id"], 1);
    EXPECT_EQ(j["distance"], 4096);  // the fault is 0x1000 past the end
    EXPECT_EQ(j["inside"], 0);
    EXPECT_EQ(j["same_2mib"], 1);  // the stand-in hands out 2 MiB-aligned blocks
    EXPECT_EQ(j["freed"], 0);

    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find(fmt::format("Allocations recorded by the preload shim, by |distance| "
                                        "from 0x{:016x} (1 of pid ",
                                        ptr + (1 << 20) + 0x1000)),
              std::string::npos)
        << show.out;
    EXPECT_NE(show.out.find("Under PyTorch's caching allocator these are segments"),
              std::string::npos);
    EXPECT_NE(show.out.find("+4,096 B (+4.00 KiB) above end"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("libgpufault_standin_fw.so+0x"), std::string::npos) << show.out;

    auto rep = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "json"});
    auto rj = nlohmann::json::parse(rep.out);
    ASSERT_EQ(rj["allocations"].size(), 1u);
    EXPECT_EQ(rj["allocations"][0]["distance"], 4096);
    EXPECT_EQ(rj["allocations"][0]["ptr"], fmt::format("0x{:x}", ptr));
}

TEST(RunRecordAllocations, MissingShimIsAUsageError) {
    TempDir dir;
    auto r = run({GPUFAULT_BIN,
                  "--db",
                  dir.file("g.db"),
                  "run",
                  "--spool",
                  dir.file("s"),
                  "--record-allocations",
                  "--preload",
                  dir.file("nope.so"),
                  "--",
                  "true"});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("libgpufault-preload.so not found at " + dir.file("nope.so")),
              std::string::npos)
        << r.err;
}

// Two processes of one run, each printing a ROCr fault that names no pid: each fault joins the
// run's allocations of both, and `show`/`report` say whose each row is (a PID column) instead of
// naming the first row's pid for all (hostile review 16, i4 H4).
TEST(RunRecordAllocations, AllocationsOfSeveralProcessesOfARunSayWhoseEachIs) {
    TempDir dir;
    std::string db = dir.file("g.db"), spool = dir.file("spool");
    const std::string host = fmt::format("{} {} {} fault", PRELOAD_HOST, STANDIN_FW, STANDIN_RT);
    auto r = run({GPUFAULT_BIN, "--db", db, "run", "--spool", spool, "--record-allocations",
                  "--", "/bin/sh", "-c", host + "; " + host});
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_NE(r.err.find("2 allocations recorded by 2 processes"), std::string::npos) << r.err;
    std::string pids = query(db, "SELECT group_concat(pid, ', ') AS p FROM (SELECT DISTINCT pid "
                                 "FROM allocations ORDER BY pid)");
    pids = pids.substr(pids.find('\n') + 1);  // below the header
    pids.erase(pids.find_last_not_of('\n') + 1);
    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("(2 of pids " + pids + ")"), std::string::npos) << pids << show.out;
    EXPECT_NE(show.out.find("PID\tAPI\tPTR"), std::string::npos) << show.out;
    auto md = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "md"});
    EXPECT_NE(md.out.find("| pid | api | ptr |"), std::string::npos) << md.out;
}

TEST(IngestAllocations, RealH200FileIsRecognisedAndStored) {
    TempDir dir;
    std::string db = dir.file("g.db");
    std::string f = std::string(GPUFAULT_SOURCE_DIR) +
                    "/tests/data/device/preload/torch-caching.gpufault-alloc.582.log";
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(f + ": allocation records of pid 582: 12 lines, 9 allocations (2 freed), "
                             "0 failed calls, 0 warnings"),
              std::string::npos)
        << r.out;
    auto again = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_NE(again.out.find("allocation records already ingested, unchanged"), std::string::npos);
    auto q = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "query",
                  "SELECT count(*), sum(end - ptr), count(free_line) FROM allocations WHERE "
                  "api = 'cudaMalloc'"});
    EXPECT_EQ(q.out, "count(*)\tsum(end - ptr)\tcount(free_line)\n5\t484442112\t2\n");
}

TEST(IngestAllocations, BadLinesAreNamedByFileAndLineAndTheRestIsKept) {
    TempDir dir;
    std::string f = dir.file("gpufault-alloc.77.log");
    writeFile(f,
              "gpufault.alloc 1 start pid=77 ppid=1 wall_us=1 mono_us=1 exe=/bin/x\n"
              "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=4096 rc=0 pid=77\n"
              "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f00zz size=4096 rc=0 pid=77\n"
              "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000200000 si");
    auto r = run({GPUFAULT_BIN, "--db", dir.file("g.db"), "ingest", f});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(f + ":3: bad value for ptr: '0x7f00zz'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(f + ":4: record cut short (no newline at the end of the file)"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("1 allocation (0 freed), 0 failed calls, 2 warnings"), std::string::npos)
        << r.out;
    auto w = run({GPUFAULT_BIN, "--db", dir.file("g.db"), "query", "SELECT line FROM warnings"});
    EXPECT_EQ(w.out, "line\n3\n4\n");
}

TEST(IngestAllocations, ALineCutShortIsTakenWholeWhenTheFileIsIngestedAgain) {
    TempDir dir;
    const std::string f = dir.file("gpufault-alloc.77.log");
    const std::string db = dir.file("g.db");
    const std::string head =
        "gpufault.alloc 1 start pid=77 ppid=1 wall_us=1 mono_us=1 exe=/bin/x\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=4096 rc=0 pid=77\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000200000 si";
    writeFile(f, head);
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(f + ":3: record cut short (no newline at the end of the file)"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.out.find("2 lines, 1 allocation (0 freed), 0 failed calls, 1 warning"),
              std::string::npos)
        << r.out;
    // The writer finishes the line: the next ingest reads it whole, and its warning goes.
    writeFile(f, head + "ze=8192 rc=0 pid=77\n");
    auto again = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(again.err, "");
    EXPECT_NE(again.out.find("allocation records of pid 77: 1 line after the 2 ingested before, 1 "
                             "allocation (0 freed), 0 failed calls, 0 warnings"),
              std::string::npos)
        << again.out;
    auto q = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "query",
                  "SELECT (SELECT group_concat(end - ptr) FROM allocations), (SELECT count(*) "
                  "FROM warnings)"});
    EXPECT_EQ(q.out.substr(q.out.find('\n') + 1), "4096,8192\t0\n") << q.out;
    // Read to its end: unchanged.
    auto third = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_NE(third.out.find("allocation records already ingested, unchanged"), std::string::npos)
        << third.out;
}

TEST(IngestAllocations, AFileWithoutOneWholeRecordIsAnErrorNamingIt) {
    TempDir dir;
    const std::string f = dir.file("gpufault-alloc.77.log");
    writeFile(f, "gpufault.alloc 1 start pid=77 ppid=1 wall_us=1 mono_us=1 exe=/bin/x");
    auto r = run({GPUFAULT_BIN, "--db", dir.file("g.db"), "ingest", f});
    EXPECT_EQ(r.status, 2) << r.out;
    EXPECT_NE(r.err.find(f + ": no whole record (the first line has no newline)"),
              std::string::npos)
        << r.err;
}
