// Hostile allocation logs (issue 4, the hostile report's defects 2, 4, 10 and 12): real files
// through the built binary into a real store. A file cut short, written again or with garbage
// appended never loses rows already stored.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/alloc_cli.h"
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

// Hostile review 17, i4 M4: a second free of a pointer the file had freed was found stored
// (freed) and its warning dropped as "the same free through another file": a double hipFree,
// evidence in itself, went without a word.
TEST(AllocRecords, ADoubleFreeIsNamedWithTheLineThatFreedItFirst) {
    TempDir dir;
    std::string db = dir.file("g.db"), f = dir.file("gpufault-alloc.4528.log");
    const std::string free = "gpufault.alloc 1 free api=hipFree ptr=0x7a5895200000 size=0 rc=0 "
                             "pid=4528 wall_us=3\n";
    writeFile(f, kStart + alloc(0x7a5895200000, 4096) + free + free);
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(f + ":4: free of 0x7a5895200000 freed already at line 3 (a double free)"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(query(db, "SELECT free_line FROM allocations"), "free_line\n3\n");
    // Ingested again (the same file, nothing new): the same warning, no second row.
    auto again = run({GPUFAULT_BIN, "--db", db, "ingest", f});
    EXPECT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(query(db, "SELECT count(*) AS n FROM allocations"), "n\n1\n");
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
    EXPECT_NE(r.out.find("1 allocation (0 freed), 0 failed calls, 3 warnings"), std::string::npos)
        << r.out;
    EXPECT_EQ(query(db, "SELECT pid, ptr, end FROM allocations"),
              "pid\tptr\tend\n4528\t134520879710208\t134520879714304\n");
    EXPECT_EQ(query(db, "SELECT line FROM warnings ORDER BY line"), "line\n2\n3\n5\n");
}

// Addresses at and above 2^63 (stored as the signed 64-bit pattern): exact distances, or NULL /
// "2^63 B or more" when the exact value does not fit 64 signed bits; never a clamped, wrapped
// or floating-point number. The worked example's ordinary addresses beside them.
TEST(AllocDistances, ExactAtAndAbove2To63InTheViewsShowAndReport) {
    TempDir dir;
    std::string db = dir.file("g.db"), f = dir.file("gpufault-alloc.4528.log");
    writeFile(f,
              kStart + alloc(0xffffffffffff0000, 65535) + alloc(0x8000000000000000, 4096) +
                  alloc(0x7a58951ff000, 4096));
    std::string real = std::string(GPUFAULT_SOURCE_DIR) +
                       "/tests/data/real/012-llamabench-rocr-fault-plus-journalctl.txt";
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", real, f}).status, 0);
    // The amdgpu record (pid 4528, 0x7a5895200000) against each allocation.
    EXPECT_EQ(query(db,
                    "SELECT a.line, v.distance, typeof(v.distance) AS t, v.inside, v.from_ptr, "
                    "v.same_2mib FROM fault_allocation_distance v JOIN allocations a ON a.id = "
                    "v.allocation_id ORDER BY a.line"),
              "line\tdistance\tt\tinside\tfrom_ptr\tsame_2mib\n"
              "2\tNULL\tnull\t0\tNULL\t0\n"
              "3\t-9223237515977162752\tinteger\t0\t-9223237515977162752\t0\n"
              "4\t0\tinteger\t0\t4096\t0\n");

    // Incident 1 joins the ROCr line (no pid, 0x7a5895227000) to the amdgpu record of pid 4528:
    // its allocations are pid 4528's (hostile report defect 12), measured from the ROCr address.
    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("by |distance| from 0x00007a5895227000 (3 of pid 4528)"),
              std::string::npos)
        << show.out;
    EXPECT_NE(show.out.find("+159,744 B (+156.00 KiB) above end"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("-9,223,237,515,977,003,008 B"), std::string::npos) << show.out;
    EXPECT_NE(show.out.find("2^63 B or more below ptr"), std::string::npos) << show.out;
    auto rep = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "json"});
    ASSERT_EQ(rep.status, 0) << rep.err;
    EXPECT_NE(rep.out.find(R"({"api":"hipMalloc","distance":159744,)"), std::string::npos)
        << rep.out;
    EXPECT_NE(rep.out.find(R"("distance":null,"end":"0xffffffffffffffff")"), std::string::npos)
        << rep.out;

    // Operands (view fault_operand_distance): the worked example's A and B, and ranges at 2^63
    // and 2^64 - 64 KiB, from a fault below 2^63 and from one above it.
    std::string ops = dir.file("job.log");
    auto opLine = [](const char* name, uint64_t ptr, uint64_t end) {
        return fmt::format("gpufault.operand name={} ptr=0x{:x} end=0x{:x}\n", name, ptr, end);
    };
    std::string set = opLine("A", 0x7f655ece8000, 0x7f65605d8000) +
                      opLine("B", 0x7f63f01a0000, 0x7f63fde20000) +
                      opLine("H", 0xffffffffffff0000, 0xffffffffffffffff) +
                      opLine("M", 0x8000000000000000, 0x8000000000001000);
    auto fault = [](uint64_t a) {
        return fmt::format(
            "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address 0x{:x}. "
            "Reason: Page not present or supervisor privilege.\n",
            a);
    };
    writeFile(ops, set + fault(0x7f6459a00000));
    std::string ops2 = dir.file("job2.log");
    writeFile(ops2, set + fault(0xffffffffffff1000));
    std::string db2 = dir.file("o.db");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db2, "ingest", ops, ops2}).status, 0);
    EXPECT_EQ(query(db2,
                    "SELECT e.source_id AS s, v.name, v.distance, v.inside, v.from_ptr FROM "
                    "fault_operand_distance v JOIN evidence e ON e.id = v.evidence_id ORDER BY "
                    "e.source_id, v.name"),
              "s\tname\tdistance\tinside\tfrom_ptr\n"
              "1\tA\t-4381900800\t0\t-4381900800\n"
              "1\tB\t1539178496\t0\t1770389504\n"
              "1\tH\tNULL\t0\tNULL\n"
              "1\tM\t-9223231967877660672\t0\t-9223231967877660672\n"
              "2\tA\tNULL\t0\tNULL\n"
              "2\tB\tNULL\t0\tNULL\n"
              "2\tH\t0\t1\t4096\n"
              "2\tM\t9223372036854710272\t0\t9223372036854714368\n");
    auto show2 = run({GPUFAULT_BIN, "--db", db2, "show", "2"});
    EXPECT_NE(show2.out.find("inside, +4,096 B (+4.00 KiB) from ptr"), std::string::npos)
        << show2.out;
    EXPECT_NE(show2.out.find("2^63 B or more above end"), std::string::npos) << show2.out;
    auto show1 = run({GPUFAULT_BIN, "--db", db2, "show", "1"});
    EXPECT_NE(show1.out.find("+1,539,178,496 B (+1.43 GiB) above end"), std::string::npos)
        << show1.out;
    EXPECT_NE(show1.out.find("2^63 B or more below ptr"), std::string::npos) << show1.out;
    // `faults`: the nearest operand of each record; the second record's is H (inside).
    auto faults = run({GPUFAULT_BIN, "--db", db2, "faults", "--json"});
    EXPECT_NE(faults.out.find(R"("nearest_distance":1539178496)"), std::string::npos) << faults.out;
    EXPECT_NE(faults.out.find(R"("nearest_distance":0)"), std::string::npos) << faults.out;

    // Only a range at 2^64 - 64 KiB: the nearest distance is refused, not a number.
    std::string h = dir.file("h.log"), db3 = dir.file("h.db");
    writeFile(h, opLine("H", 0xffffffffffff0000, 0xffffffffffffffff) + fault(0x7f6459a00000));
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db3, "ingest", h}).status, 0);
    auto f3 = run({GPUFAULT_BIN, "--db", db3, "faults"});
    EXPECT_NE(f3.out.find("\tH\t2^63 B or more away\t"), std::string::npos) << f3.out;
}
