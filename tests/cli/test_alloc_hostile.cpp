// Hostile allocation logs (issue 4, the hostile report's defects 2, 4, 10 and 12): real files
// through the built binary into a real store. A file cut short, written again or with garbage
// appended never loses rows already stored.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/support/process.h"

using namespace gpufault::testing;

namespace {

const std::string kStart = "gpufault.alloc 1 start pid=4528 ppid=1 wall_us=1 mono_us=1 exe=/x\n";

std::string alloc(uint64_t ptr, uint64_t size, int wall = 2) {
    return fmt::format(
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size={} mem=device device=0 rc=0 "
        "wall_us={} mono_us=2 pid=4528 tid=4528 stack=-\n",
        ptr,
        size,
        wall);
}

std::string query(const std::string& db, const std::string& sql) {
    auto q = run({GPUFAULT_BIN, "--db", db, "query", sql});
    EXPECT_EQ(q.status, 0) << q.err;
    return q.out;
}

}  // namespace

TEST(AllocGenerations, CutShortRewrittenOrGarbageKeepsTheStoredRows) {
    TempDir dir;
    std::string db = dir.file("g.db"), f = dir.file("gpufault-alloc.4528.log");
    std::string full = kStart + alloc(0x7a58951ff000, 4096) + alloc(0x7a5895201000, 1048576);
    writeFile(f, full);
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", f}).status, 0);
    const std::string count = "SELECT count(*) AS n FROM allocations";
    EXPECT_EQ(query(db, count), "n\n2\n");

    writeFile(f, kStart);  // cut to its start line
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(f + ": cut short since it was ingested (" + std::to_string(full.size()) +
                         " bytes then, " + std::to_string(kStart.size()) +
                         " now): a new generation; the 2 allocation(s) stored before are kept"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(query(db, count), "n\n2\n");

    // Grown (its stored bytes unchanged): the same source, the new rows added.
    writeFile(f, kStart + alloc(0x7a5900000000, 8192, 9));
    r = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(query(db, count), "n\n3\n");

    // Written again at the same size (other records): added beside the old ones.
    writeFile(f, kStart + alloc(0x7a5a00000000, 8192, 7));
    r = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("written again since it was ingested"), std::string::npos) << r.err;
    EXPECT_EQ(query(db, "SELECT ptr, end FROM allocations ORDER BY ptr"),
              "ptr\tend\n134520877608960\t134520877613056\n134520877617152\t134520878665728\n"
              "134522670678016\t134522670686208\n134526965645312\t134526965653504\n");

    // Garbage appended: a warning naming the line; the rows before it stay.
    writeFile(f, kStart + alloc(0x7a5a00000000, 8192, 7) + "\x01garbage\xff\n");
    r = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(f + ":3: not a gpufault.alloc record"), std::string::npos) << r.err;
    EXPECT_EQ(query(db, count), "n\n4\n");

    // The first content again: its rows are already stored (an earlier generation), not doubled.
    writeFile(f, full);
    r = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(query(db, count), "n\n4\n");
    EXPECT_EQ(query(db, "SELECT count(*) AS n FROM sources WHERE kind = 'alloc'"), "n\n4\n");
}

TEST(AllocRecords, NullPointersUnmatchedFreesAndRepeatedKeysAreWarnedPerLine) {
    TempDir dir;
    std::string db = dir.file("g.db"), f = dir.file("gpufault-alloc.4528.log");
    writeFile(f,
              kStart + alloc(0, 4096) +  // line 2: ptr=0, rc=0
                  "gpufault.alloc 1 free api=hipFree ptr=0x7a5895200000 size=0 rc=0 pid=4528\n"
                  "gpufault.alloc 1 free api=hipFree ptr=0x0 size=0 rc=0 pid=4528\n"  // a no-op
                  "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7a5895200000 size=100 rc=0 "
                  "pid=4528 ptr=0x1 size=99999999999999 pid=1\n" +
                  alloc(0x7a5895400000, 4096));
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(f + ":2: alloc record with ptr=0 and rc=0: no allocation stored"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(f + ":3: free of 0x7a5895200000 with no open allocation in this file"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.err.find(f + ":4:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(f + ":5: repeated key 'ptr': record refused"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("1 allocations (0 freed), 0 failed calls, 3 warnings"), std::string::npos)
        << r.out;
    EXPECT_EQ(query(db, "SELECT pid, ptr, end FROM allocations"),
              "pid\tptr\tend\n4528\t134520879710208\t134520879714304\n");
    EXPECT_EQ(query(db, "SELECT line FROM warnings ORDER BY line"), "line\n2\n3\n5\n");
}
