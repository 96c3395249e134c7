// The store on a real SQLite file: migrations, pragmas, idempotent inserts, the distance view.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "ingest/ingest.h"
#include "schema/core_queries.h"
#include "schema/diagnosis_queries.h"
#include "schema/migrations.h"
#include "schema/queries.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using testing::TempDir;

int64_t scalar(Store& s, const std::string& sql) {
    auto st = s.db().prepare(sql);
    EXPECT_TRUE(st.has_value());
    auto row = st->step();
    EXPECT_TRUE(row.has_value() && *row);
    return st->i64(0);
}

Evidence rocr(uint64_t line, uint64_t address) {
    Evidence e;
    e.kind = Kind::RocrMemoryFault;
    e.vendor = "amd";
    e.line = line;
    e.address = address;
    e.address_exact = true;
    e.raw = "Memory access fault by GPU node-1 ...";
    return e;
}

Operand operand(uint64_t line, std::string name, uint64_t ptr, uint64_t end) {
    Operand o;
    o.line = line;
    o.name = std::move(name);
    o.ptr = ptr;
    o.end = end;
    o.origin = "probe";
    return o;
}

/// TZ for this process (mktime, and SQLite's localtime through tzset()).
void setZone(const char* tz) {
    ::setenv("TZ", tz, 1);
    ::tzset();
}

// Hostile review 4, A: the instant of a record's wall time is stored at ingest — the zone the
// record states, else this process's zone then (`local`) — and 014 converts the rows of an
// older store once, in the upgrading process's zone. Reading later in another zone changes
// nothing.
TEST(Store, WallTimeIsStoredAsAnInstantAtIngestAndByTheUpgrade) {
    TempDir t;
    const std::string path = t.file("db");
    {  // a store of version 13 holding one record with a zone-less full date
        auto d = db::Db::open(path, false, true);
        ASSERT_TRUE(d) << d.error().message;
        for (size_t v = 0; v < 13; ++v) ASSERT_TRUE(d->exec(migrations()[v])) << v + 1;
        ASSERT_TRUE(d->exec("PRAGMA user_version=13"));
        ASSERT_TRUE(d->exec(
            "INSERT INTO sources(id, path, kind, fingerprint) VALUES(1, 'old.log', 'file', 'x');"
            "INSERT INTO evidence(source_id, line, kind, wall, pid, raw) VALUES(1, 1, "
            "'cpu_segfault', '2026-11-30T19:05:00', 4528, 'r');"
            "INSERT INTO evidence(source_id, line, kind, wall, pid, raw) VALUES(1, 2, "
            "'cpu_segfault', '11-30T19:05:00', 4528, 'r')"));
    }
    setZone("JST-9");  // the upgrade and the ingest below run in Tokyo time (no DST)
    auto s = Store::open(path, Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    auto src = s->source(SourceIdentity{"new.log", "file", 1, 2, "fp"});
    ASSERT_TRUE(src) << src.error().message;
    Evidence zoned = rocr(1, 0x1000), local = rocr(2, 0x2000), none = rocr(3, 0x3000);
    zoned.pid = local.pid = none.pid = 4528;
    zoned.time.wall = "2026-11-30T12:05:00";  // as printed with `+0200`
    zoned.time.wall_utc_s = 1796033100;
    local.time.wall = "2026-11-30T19:05:00";
    none.time.wall = "11-30T19:05:00";
    for (const auto* e : {&zoned, &local, &none}) ASSERT_TRUE(s->addEvidence(src->id, *e));
    const std::string sql =
        "SELECT group_concat(ifnull(wall_utc_us, 'NULL') || ' ' || ifnull(wall_zone, 'NULL'), "
        "'; ') FROM (SELECT * FROM evidence ORDER BY id)";
    auto rows = [&] {
        auto st = s->db().prepare(sql);
        EXPECT_TRUE(st && st->step().value_or(false));
        return st ? st->str(0) : std::string();
    };
    const std::string want =
        "1796033100000000 local; NULL NULL; 1796033100000000 stated; 1796033100000000 local; "
        "NULL NULL";
    EXPECT_EQ(rows(), want);
    setZone("EST5EDT,M3.2.0,M11.1.0");  // a reader in New York: the same instants
    EXPECT_EQ(rows(), want);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM fault_clock WHERE wall_us = 1796033100000000"), 3);
    setZone("UTC0");
}

TEST(Store, NewFileIsMigratedWithIncrementalVacuumAndWal) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    // One version per schema/sql file (001 … 005_cores, 006_core_origins, 007_allocations,
    // 008_diagnoses_devices, 009_unsigned_distances, 010_allocation_distance, 011_prefix_hash,
    // 012_alloc_processes, 013_pending_cores, 014_lost_bytes, 015_alloc_recordings,
    // 016_fault_utc, 017_alloc_images, 018_held_dispatches, 019_rank_context,
    // 020_alloc_threads_core_content, 021_foreign_pidns, 022_unended_line, 023_unended_read_hash,
    // 024_lost_records, 025_sources_fingerprint).
    const auto versions = static_cast<int64_t>(migrations().size());
    EXPECT_EQ(versions, 26);  // 001 … 026
    EXPECT_EQ(scalar(*s,
                     "SELECT count(*) FROM pragma_table_info('sources') WHERE name = "
                     "'lost_records'"),
              1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM sqlite_master WHERE name = 'sources_fingerprint'"),
              1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM pragma_table_info('cores') WHERE name = "
                         "'content_fingerprint'"),
              1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM sqlite_master WHERE name = 'alloc_thread'"), 1);
    EXPECT_EQ(scalar(*s, "PRAGMA user_version"), versions);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM sqlite_master WHERE name = 'diagnoses'"), 1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM pragma_table_info('sources') WHERE name = "
                         "'lost_bytes'"),
              1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM sqlite_master WHERE name = 'allocations'"), 1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM sqlite_master WHERE name = 'held_dispatches'"), 1);
    EXPECT_EQ(scalar(*s, "PRAGMA auto_vacuum"), 2);  // 2 = INCREMENTAL
    auto mode = s->db().prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode && *mode->step());
    EXPECT_EQ(mode->str(0), "wal");
    // Reopening does not migrate again.
    s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    EXPECT_EQ(scalar(*s, "PRAGMA user_version"), versions);
}

TEST(Store, ReadOnlyRefusesFilesThatAreNotStores) {
    TempDir t;
    testing::writeFile(t.file("x.db"), "not sqlite at all");
    auto s = Store::open(t.file("x.db"), Store::Mode::ReadOnly);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("x.db"), std::string::npos);
}

TEST(Store, SameSourceSameRecordIsStoredOnce) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    SourceIdentity id{"a.log", "file", 1, 2, "abc"};
    auto src = s->source(id);
    ASSERT_TRUE(src);
    auto again = s->source(id);
    ASSERT_TRUE(again);
    EXPECT_EQ(src->id, again->id);
    ASSERT_TRUE(s->addEvidence(src->id, rocr(3, 0x7f6459a00000)));
    ASSERT_TRUE(s->addEvidence(src->id, rocr(3, 0x7f6459a00000)));
    ASSERT_TRUE(s->addEvidence(src->id, rocr(4, 0x7f6459a00000)));
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM evidence"), 2);
    EXPECT_EQ(scalar(*s, "SELECT align_log2 FROM evidence WHERE line = 3"), 21);
}

// addDispatch returns the row's id: a new row's, or for a line stored before (a window flushed
// twice, a re-ingest) the stored row's, which keeps its fields; rows stored in between (another
// table's insert moves last_insert_rowid) do not confuse it.
TEST(Store, DispatchStoredTwiceKeepsItsRowAndId) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    auto src = s->source(SourceIdentity{"a.log", "file", 1, 2, "abc"});
    ASSERT_TRUE(src);
    auto other = s->source(SourceIdentity{"b.log", "file", 1, 3, "def"});
    ASSERT_TRUE(other);
    ASSERT_TRUE(s->begin());
    Dispatch d;
    d.line = 40;
    d.pid = 7;
    d.runtime_tid = "0x7f00";
    d.kernel = "k1";
    d.time.runtime_us = 1000;
    auto first = s->addDispatch(src->id, d);
    ASSERT_TRUE(first);
    d.line = 41;
    auto second = s->addDispatch(src->id, d);
    ASSERT_TRUE(second);
    EXPECT_NE(*first, *second);
    ASSERT_TRUE(s->addOperand(src->id, operand(41, "arg0 of k1", 0x1000, 0x2000), *second));
    ASSERT_TRUE(s->addEvidence(src->id, rocr(42, 0x7f6459a00000)));
    d.line = 40;  // again, with other fields: the stored row stays as it was
    d.pid = 8;
    d.kernel = "k2";
    d.time.runtime_us = 2000;
    auto again = s->addDispatch(src->id, d);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *first);
    auto elsewhere = s->addDispatch(other->id, d);  // the same line of another source: new
    ASSERT_TRUE(elsewhere);
    EXPECT_NE(*elsewhere, *first);
    EXPECT_NE(*elsewhere, *second);
    d.line = 41;
    auto again2 = s->addDispatch(src->id, d);
    ASSERT_TRUE(again2);
    EXPECT_EQ(*again2, *second);
    ASSERT_TRUE(s->commit());
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM dispatches"), 3);
    EXPECT_EQ(scalar(*s, fmt::format("SELECT pid FROM dispatches WHERE id={}", *first)), 7);
    EXPECT_EQ(scalar(*s, fmt::format("SELECT runtime_us FROM dispatches WHERE id={}", *first)),
              1000);
    EXPECT_EQ(scalar(*s, fmt::format("SELECT line FROM dispatches WHERE id={}", *second)), 41);
    EXPECT_EQ(scalar(*s, fmt::format("SELECT pid FROM dispatches WHERE id={}", *elsewhere)), 8);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM kernels"), 2);
    EXPECT_EQ(scalar(*s, "SELECT dispatch_id FROM operands"), *second);
}

// copytruncate across restarts: a file checkpoint keeps its prefix hash (all 64 bits) and the
// checkpoints before it; a copy's file takes the stream over, and a row that already had the
// copy's identity is set aside (complete when it recorded nothing).
TEST(Store, PrefixHashesRoundTripAndACopyTakesTheStreamOver) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    SourceIdentity orig{"app.log", "file", 1, 10, "fp"};
    auto src = s->source(orig);
    ASSERT_TRUE(src);
    SourceState st = *src;
    st.offset = 300;
    st.line = 3;
    st.max_line = 3;
    st.prefix_hash = 0xfedcba9876543210ull;  // top bit set: stored as a negative integer
    st.earlier = {{200, 2, 0x8000000000000001ull}, {100, 1, 0x1234ull}};
    ASSERT_TRUE(s->setPosition(st.id, st, 350));
    auto back = s->source(orig);
    ASSERT_TRUE(back);
    EXPECT_EQ(back->prefix_hash, std::optional<uint64_t>(0xfedcba9876543210ull));
    ASSERT_EQ(back->earlier.size(), 2u);
    EXPECT_EQ(back->earlier[0].offset, 200);
    EXPECT_EQ(back->earlier[0].line, 2);
    EXPECT_EQ(back->earlier[0].hash, 0x8000000000000001ull);
    EXPECT_EQ(back->earlier[1].hash, 0x1234ull);

    auto cands = s->copyCandidates("fp", 16);
    ASSERT_TRUE(cands);
    ASSERT_EQ(cands->size(), 1u);
    EXPECT_EQ(cands->front().state.id, st.id);
    EXPECT_EQ(cands->front().state.size, 350);
    EXPECT_EQ(cands->front().state.earlier.size(), 2u);
    auto none = s->copyCandidates("other", 16);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());

    SourceIdentity copy{"app.log.1", "file", 1, 11, "fp"};
    auto own = s->source(copy);  // the copy's own row, nothing read from it
    ASSERT_TRUE(own);
    ASSERT_NE(own->id, st.id);
    ASSERT_TRUE(s->adoptSource(st.id, copy));
    auto moved = s->source(copy);
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->id, st.id);
    EXPECT_EQ(moved->offset, 300);
    EXPECT_FALSE(moved->complete);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM sources WHERE fingerprint LIKE 'fp#copied-%'"), 1);
    EXPECT_EQ(scalar(*s, "SELECT complete FROM sources WHERE fingerprint LIKE 'fp#copied-%'"), 1);
    // The original's identity is free: the truncated file is a new stream.
    auto fresh = s->source(orig);
    ASSERT_TRUE(fresh);
    EXPECT_NE(fresh->id, st.id);
    EXPECT_NE(fresh->id, own->id);
    EXPECT_EQ(fresh->offset, 0);
}

// finishSource marks a stream complete and keeps its checkpoint, prefix hash and earlier
// checkpoints (a copy found later still continues it); lost_bytes adds up, given back too.
TEST(Store, FinishingAStreamKeepsItsPrefixHashAndLostBytesAddUp) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    SourceIdentity orig{"app.log", "file", 1, 10, "fp"};
    auto src = s->source(orig);
    ASSERT_TRUE(src);
    SourceState st = *src;
    st.offset = 300;
    st.line = 3;
    st.max_line = 3;
    st.prefix_hash = 0x1234ull;
    st.earlier = {{200, 2, 0x99ull}};
    ASSERT_TRUE(s->setPosition(st.id, st, 320));
    ASSERT_TRUE(s->finishSource(st.id));
    ASSERT_TRUE(s->addLostBytes(st.id, 20));
    auto cands = s->copyCandidates("fp", 16);
    ASSERT_TRUE(cands);
    ASSERT_EQ(cands->size(), 1u);
    const auto& c = cands->front();
    EXPECT_TRUE(c.state.complete);
    EXPECT_EQ(c.state.offset, 300);
    EXPECT_EQ(c.state.size, 320);
    EXPECT_EQ(c.state.prefix_hash, std::optional<uint64_t>(0x1234ull));
    ASSERT_EQ(c.state.earlier.size(), 1u);
    EXPECT_EQ(c.state.earlier[0].offset, 200);
    EXPECT_EQ(c.lost, 20);
    ASSERT_TRUE(s->addLostBytes(st.id, -15));  // a copy held 15 of them
    EXPECT_EQ(scalar(*s, "SELECT lost_bytes FROM sources WHERE id = " + std::to_string(st.id)), 5);
}

TEST(Store, DistanceViewSignsAndBoundaries) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    auto src = s->source(SourceIdentity{"a.log", "file", 1, 2, "abc"});
    ASSERT_TRUE(src);
    const uint64_t fault = 0x7f0000200000;
    ASSERT_TRUE(
        s->addOperand(src->id, operand(1, "below", fault + 0x1000, fault + 0x2000), std::nullopt));
    ASSERT_TRUE(
        s->addOperand(src->id, operand(2, "inside", fault - 0x10, fault + 0x10), std::nullopt));
    ASSERT_TRUE(s->addOperand(src->id, operand(3, "at_end", fault - 0x100, fault), std::nullopt));
    ASSERT_TRUE(s->addOperand(
        src->id, operand(9, "after", fault - 0x300000, fault - 0x200000), std::nullopt));
    ASSERT_TRUE(s->addEvidence(src->id, rocr(5, fault)));
    auto d = [&](const char* name) {
        return scalar(
            *s,
            std::string("SELECT distance FROM fault_operand_distance WHERE name = '") + name + "'");
    };
    EXPECT_EQ(d("below"), -0x1000);
    EXPECT_EQ(d("inside"), 0);
    EXPECT_EQ(d("at_end"), 0);
    EXPECT_EQ(scalar(*s, "SELECT inside FROM fault_operand_distance WHERE name = 'at_end'"), 0);
    EXPECT_EQ(scalar(*s, "SELECT inside FROM fault_operand_distance WHERE name = 'inside'"), 1);
    EXPECT_EQ(d("after"), 0x200000);
    EXPECT_EQ(scalar(*s, "SELECT same_2mib FROM fault_operand_distance WHERE name = 'inside'"), 1);
    EXPECT_EQ(scalar(*s, "SELECT same_2mib FROM fault_operand_distance WHERE name = 'after'"), 0);
    // Rank in time: the operand logged last before the fault (line 5) is rank 1; line 9 is after.
    EXPECT_EQ(scalar(*s, "SELECT rank_in_time FROM fault_operand_distance WHERE name = 'at_end'"),
              1);
    EXPECT_EQ(scalar(*s, "SELECT rank_in_time FROM fault_operand_distance WHERE name = 'below'"),
              3);
    EXPECT_EQ(
        scalar(*s, "SELECT rank_in_time IS NULL FROM fault_operand_distance WHERE name = 'after'"),
        1);
}

TEST(Store, AllocationDistancesByPidAndReplacedOnReingest) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    auto src = s->source(SourceIdentity{"gpufault-alloc.41.log", "alloc", 1, 3, "alloc-1"});
    auto log = alloclog::parse(
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=2097152 rc=0 pid=41\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000400000 size=4096 rc=0 pid=41\n"
        "gpufault.alloc 1 free api=hipFree ptr=0x7f0000400000 size=0 rc=0 pid=41\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000200000 size=4096 rc=0 pid=42\n");
    ASSERT_TRUE(s->begin());
    auto n = s->replaceAllocations(src->id, std::nullopt, log);
    ASSERT_TRUE(n) << n.error().message;
    EXPECT_EQ(n->added, 3);
    ASSERT_TRUE(s->commit());
    auto logSrc = s->source(SourceIdentity{"job.log", "file", 1, 4, "job"});
    Evidence e = rocr(1, 0x7f0000200010);
    e.pid = 41;
    ASSERT_TRUE(s->addEvidence(logSrc->id, e));
    auto d = [&](const char* where) {
        return scalar(*s,
                      std::string("SELECT distance FROM fault_allocation_distance WHERE ") + where);
    };
    EXPECT_EQ(d("ptr = 0x7f0000000000"), 0x10);                // above the end
    EXPECT_EQ(d("ptr = 0x7f0000400000"), -(0x200000 - 0x10));  // below, and freed
    EXPECT_EQ(scalar(*s, "SELECT freed FROM fault_allocation_distance WHERE ptr = 0x7f0000400000"),
              1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM fault_allocation_distance"), 2);  // not pid 42's
    // The file grew: its rows are merged, never duplicated.
    ASSERT_TRUE(s->begin());
    ASSERT_TRUE(s->replaceAllocations(src->id, std::nullopt, log));
    ASSERT_TRUE(s->commit());
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM allocations"), 3);
    EXPECT_EQ(*s->prune(0, 1, {}), 2);  // retention drops the allocations with their source
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM allocations"), 0);
}

// Hostile review 4 #3: a file cut short while its process lived became a new source; when the
// process ended only the newest generation's row was marked, and a later process with the
// reused pid was joined to the first generation's buffers.
TEST(Store, AProcessEndedIsMarkedInEveryGenerationOfItsRecording) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    auto rec = [](int ticks) {
        return fmt::format(
            "gpufault.alloc 1 start pid=4528 ppid=1 wall_us=1000 mono_us=5 "
            "boot=0d5e9c1a-1111-4222-8333-944455556666 start_ticks={} exe=/usr/bin/python3\n"
            "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=4096 rc=0 pid=4528\n",
            ticks);
    };
    const char* legacy =
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000200000 size=4096 rc=0 pid=4528\n";
    // Two generations of one process's file, another process of pid 4528 (other start ticks),
    // and a recording without identity (an older shim).
    std::vector<std::pair<std::string, std::string>> files = {
        {"gen1", rec(777)}, {"gen2", rec(777)}, {"other", rec(999)}, {"legacy", legacy}};
    std::vector<int64_t> ids;
    ASSERT_TRUE(s->begin());
    for (size_t i = 0; i < files.size(); ++i) {
        auto src = s->source(SourceIdentity{
            files[i].first, "alloc", 1, static_cast<int64_t>(10 + i), files[i].first});
        ASSERT_TRUE(src);
        ids.push_back(src->id);
        ASSERT_TRUE(s->replaceAllocations(src->id, std::nullopt, alloclog::parse(files[i].second)));
    }
    ASSERT_TRUE(s->commit());
    ASSERT_EQ(scalar(*s, "SELECT count(*) FROM alloc_processes WHERE ended_wall_us IS NULL"), 4);
    ASSERT_TRUE(s->begin());
    ASSERT_TRUE(s->markAllocProcessEnded(ids[1], 4528, 5000, 50));
    ASSERT_TRUE(s->commit());
    auto ended = [&](int64_t id) {
        return scalar(*s,
                      fmt::format("SELECT count(*) FROM alloc_processes WHERE source_id = {} "
                                  "AND ended_wall_us = 5000 AND ended_mono_us = 50",
                                  id));
    };
    EXPECT_EQ(ended(ids[0]), 1);  // the earlier generation of the same process
    EXPECT_EQ(ended(ids[1]), 1);
    EXPECT_EQ(ended(ids[2]), 0);  // another process that had the pid
    EXPECT_EQ(ended(ids[3]), 0);  // no identity: only its own source's end marks it
}

// Hostile review 4 H: records of a process whose end gpufaultd stored, timed after that end (or,
// for the daemon, read after it), cannot be that process's: refused with a warning each.
TEST(Store, RecordsAfterTheStoredEndOfTheirProcessAreRefused) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    const std::string start =
        "gpufault.alloc 1 start pid=4528 ppid=1 wall_us=1000 mono_us=10 "
        "boot=0d5e9c1a-1111-4222-8333-944455556666 start_ticks=777 exe=/usr/bin/python3\n";
    auto alloc = [](uint64_t ptr, int64_t wall, int64_t mono) {
        return fmt::format(
            "gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size=4096 rc=0 wall_us={} "
            "mono_us={} pid=4528 tid=4528\n",
            ptr,
            wall,
            mono);
    };
    auto freeOf = [](uint64_t ptr, int64_t wall, int64_t mono) {
        return fmt::format(
            "gpufault.alloc 1 free api=hipFree ptr=0x{:x} size=0 rc=0 wall_us={} mono_us={} "
            "pid=4528 tid=4528\n",
            ptr,
            wall,
            mono);
    };
    auto a = s->source(SourceIdentity{"a/gpufault-alloc.4528.log", "alloc", 1, 10, "a"});
    ASSERT_TRUE(a);
    ASSERT_TRUE(s->begin());
    ASSERT_TRUE(s->appendAllocations(
        a->id, std::nullopt, alloclog::parse(start + alloc(0x1000, 2000, 20))));
    ASSERT_TRUE(s->markAllocProcessEnded(a->id, 4528, 5000, 50));
    ASSERT_TRUE(s->commit());
    // A copy with more records: the stored one (a duplicate), one before the end (stored), one
    // after it on both clocks (refused), one after it on the wall clock only (a clock stepped
    // back: stored), and the first one's free after the end (refused).
    auto b = s->source(SourceIdentity{"b/gpufault-alloc.4528.log", "alloc", 1, 11, "b"});
    ASSERT_TRUE(b);
    ASSERT_TRUE(s->begin());
    auto r =
        s->appendAllocations(b->id,
                             std::nullopt,
                             alloclog::parse(start + alloc(0x1000, 2000, 20) +
                                             alloc(0x2000, 4000, 40) + alloc(0x3000, 6000, 60) +
                                             alloc(0x4000, 6000, 45) + freeOf(0x1000, 7000, 70)));
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(s->commit());
    EXPECT_EQ(r->added, 2);
    EXPECT_EQ(r->duplicates, 1);
    EXPECT_EQ(r->after_end, 2);
    ASSERT_EQ(r->warnings.size(), 2u);
    EXPECT_EQ(r->warnings[0].line, 4u);
    EXPECT_EQ(r->warnings[0].message,
              "record of pid 4528 after the end of its process (gone by wall_us 5000): not stored");
    EXPECT_EQ(r->warnings[1].line, 6u);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM allocations"), 3);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM allocations WHERE ptr IN (4096, 8192, 16384)"), 3);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM allocations WHERE free_line IS NOT NULL"), 0);
    // The copy's process row took the stored end.
    EXPECT_EQ(scalar(*s,
                     fmt::format("SELECT count(*) FROM alloc_processes WHERE source_id = {} AND "
                                 "ended_wall_us = 5000",
                                 b->id)),
              1);
    // Read after the end was stored (gpufaultd): refused whatever its time says.
    ASSERT_TRUE(s->begin());
    r = s->appendAllocations(
        a->id, std::nullopt, alloclog::parse(start + alloc(0x5000, 3000, 30)), true);
    ASSERT_TRUE(r);
    ASSERT_TRUE(s->commit());
    EXPECT_EQ(r->after_end, 1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM allocations"), 3);
}

// A store of version 13 holding one recording's allocation twice (through two files, before
// recording keys): migration 015 keeps one row, with the free a copy had.
TEST(Store, MigrationKeepsOneRowOfEachRecordStoredTwice) {
    TempDir t;
    {
        auto d = db::Db::open(t.file("db"), false, true);
        ASSERT_TRUE(d);
        for (size_t v = 0; v < 13; ++v) ASSERT_TRUE(d->exec(migrations()[v])) << v;
        ASSERT_TRUE(d->exec(
            "PRAGMA user_version=13;"
            "INSERT INTO sources(id, path, kind, device, inode, fingerprint) VALUES"
            " (1, 'a/gpufault-alloc.7.log', 'alloc', 1, 10, 'a'),"
            " (2, 'b/gpufault-alloc.7.log', 'alloc', 1, 11, 'b');"
            "INSERT INTO alloc_processes(source_id, line, pid, boot_id, start_ticks, wall_us) "
            "VALUES"
            " (1, 1, 7, 'b00t', 42, 100), (2, 1, 7, 'b00t', 42, 100);"
            "INSERT INTO allocations(source_id, line, pid, kind, api, ptr, end, wall_us, mono_us,"
            " start_line, free_line, free_api) VALUES"
            " (1, 2, 7, 'alloc', 'hipMalloc', 4096, 8192, 200, 20, 1, NULL, NULL),"
            " (2, 2, 7, 'alloc', 'hipMalloc', 4096, 8192, 200, 20, 1, 3, 'hipFree'),"
            " (2, 4, 7, 'alloc', 'hipMalloc', 4096, 8192, 900, 90, 1, NULL, NULL);"));
    }
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(scalar(*s, "PRAGMA user_version"),
              static_cast<int64_t>(migrations().size()));
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM allocations"),
              2);  // the later one is another record
    EXPECT_EQ(scalar(*s,
                     "SELECT count(*) FROM allocations WHERE id = 1 AND free_line = 3 AND "
                     "free_source_id = 2"),
              1);
    EXPECT_EQ(scalar(*s, "SELECT count(DISTINCT recording) FROM alloc_processes"), 1);
}

TEST(Store, OperandsOfAnotherProcessAreNotCompared) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    auto src = s->source(SourceIdentity{"a.log", "file", 1, 2, "abc"});
    Operand o = operand(1, "other", 0x1000, 0x2000);
    o.pid = 11;
    ASSERT_TRUE(s->addOperand(src->id, o, std::nullopt));
    Evidence e = rocr(2, 0x1800);
    e.pid = 12;
    ASSERT_TRUE(s->addEvidence(src->id, e));
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM fault_operand_distance"), 0);
}

}  // namespace
}  // namespace gpufault

namespace gpufault {
namespace {

// Readers that cannot write the store's directory open it as immutable (no -shm needed).
TEST(Store, ImmutableOpenReadsACommittedStore) {
    TempDir t;
    {
        auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
        ASSERT_TRUE(s);
        auto src = s->source(SourceIdentity{"a.log", "file", 1, 2, "abc"});
        ASSERT_TRUE(s->addEvidence(src->id, rocr(3, 0x7f6459a00000)));
    }
    auto d = db::Db::openImmutable(t.file("db"));
    ASSERT_TRUE(d) << d.error().message;
    auto st = d->prepare("SELECT count(*) FROM evidence");
    ASSERT_TRUE(st && *st->step());
    EXPECT_EQ(st->i64(0), 1);
}

}  // namespace
}  // namespace gpufault

namespace gpufault {
namespace {

/// A source with `n` fault records, last written `age_s` seconds ago.
int64_t sourceWith(Store& s, const std::string& path, int n, int64_t age_s) {
    SourceIdentity id;
    id.path = path;
    id.fingerprint = path;
    auto src = s.source(id);
    EXPECT_TRUE(src);
    EXPECT_TRUE(s.begin());
    for (int i = 1; i <= n; ++i)
        EXPECT_TRUE(s.addEvidence(src->id, rocr(i, 0x7f0000000000 + i * 0x1000)));
    EXPECT_TRUE(
        s.addOperand(src->id, operand(1, "A", 0x7f0000000000, 0x7f0000100000), std::nullopt));
    EXPECT_TRUE(s.commit());
    auto st = s.db().prepare(
        "UPDATE sources SET ingested_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now', ?2) WHERE id = ?1");
    EXPECT_TRUE(st);
    st->bind(1, src->id).bind(2, fmt::format("-{} seconds", age_s));
    EXPECT_TRUE(st->run());
    return src->id;
}

TEST(Store, RetentionDropsOldSourcesWithEverythingTheyProduced) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    int64_t old = sourceWith(*s, "old.log", 3, 10 * 86400);
    int64_t followed = sourceWith(*s, "followed.log", 2, 20 * 86400);
    int64_t recent = sourceWith(*s, "recent.log", 4, 60);
    ASSERT_TRUE(recorrelate(*s));
    RunRecord run;
    run.command = "[\"x\"]";
    run.started = "2026-11-01T00:00:00.000000Z";
    run.source_id = old;
    ASSERT_TRUE(s->addRun(run));
    auto dropped = s->prune(7 * 86400, 0, {followed});
    ASSERT_TRUE(dropped) << dropped.error().message;
    EXPECT_EQ(*dropped, 1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM sources"), 2);
    EXPECT_EQ(scalar(*s, fmt::format("SELECT count(*) FROM evidence WHERE source_id={}", old)), 0);
    EXPECT_EQ(scalar(*s, fmt::format("SELECT count(*) FROM operands WHERE source_id={}", old)), 0);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM evidence"), 6);
    EXPECT_EQ(scalar(*s,
                     "SELECT count(*) FROM incident_evidence WHERE evidence_id NOT IN "
                     "(SELECT id FROM evidence)"),
              0);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM runs WHERE source_id IS NULL"), 1);
    EXPECT_EQ(scalar(*s, fmt::format("SELECT count(*) FROM sources WHERE id={}", recent)), 1);
}

TEST(Store, RetentionBySizeDropsTheLeastRecentlyWrittenFirst) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    int64_t a = sourceWith(*s, "a.log", 3000, 300);
    int64_t b = sourceWith(*s, "b.log", 3000, 200);
    int64_t c = sourceWith(*s, "c.log", 3000, 100);
    auto used = s->usedBytes();
    ASSERT_TRUE(used);
    // A limit a little above two sources' worth: the oldest one goes, the others stay.
    auto dropped = s->prune(0, *used * 3 / 4, {});
    ASSERT_TRUE(dropped) << dropped.error().message;
    EXPECT_EQ(*dropped, 1);
    EXPECT_EQ(scalar(*s, fmt::format("SELECT count(*) FROM sources WHERE id={}", a)), 0);
    EXPECT_EQ(scalar(*s, fmt::format("SELECT count(*) FROM sources WHERE id IN ({},{})", b, c)), 2);
    EXPECT_LE(*s->usedBytes(), *used * 3 / 4);
    // The freed pages went back to the file system.
    EXPECT_EQ(scalar(*s, "PRAGMA freelist_count"), 0);
}

TEST(Store, CoreWithThreadsAndFramesIsStoredOnceAndPruned) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_TRUE(s->begin());
    auto src = s->source({"core.1", "core", 1, 2, "core-x"});
    ASSERT_TRUE(src);
    Evidence e;
    e.kind = Kind::Coredump;
    e.line = 1;
    e.pid = 14046;
    e.raw = "core";
    ASSERT_TRUE(s->addEvidence(src->id, e));
    auto ev = s->evidenceIdOf(src->id, Kind::Coredump);
    ASSERT_TRUE(ev && *ev);
    CoreRecord c;
    c.path = "/var/crash/core.1";
    c.size = 4096;
    c.time = 1749127210;
    c.pid = 14046;
    c.signal = 11;
    c.signal_addr = 0x8a;
    c.e_machine = 62;
    c.signature = "80e226361c375067";
    coredump::Thread th;
    th.tid = 14046;
    th.crashed = true;
    coredump::Frame f0, f1;
    f0.pc = 0x7f5eb547916e;
    f0.module = "/tmp/crashfixture/libcrashlib.so";
    f0.build_id = "3d7e219e203cde2a23bc8764309cc2c58c95316f";
    f0.module_offset = 0x116e;
    f1.pc = 0x7f5eb547919b;
    f1.symbol = "(anonymous namespace)::ihip_launch_kernel_like(fakeamd::Symbol*, int)";
    f1.file = "./crashlib.cpp";
    f1.line = 19;
    th.frames = {f0, f1};
    coredump::Thread other;
    other.tid = 14047;
    other.error = "no matching address range";
    c.threads = {th, other};
    c.files = {{"/tmp/crashfixture/libcrashlib.so", 0x7f5eb5478000, 0x7f5eb547d000}};
    auto id = s->addCore(src->id, c, *ev);
    ASSERT_TRUE(id) << id.error().message;
    auto again = s->addCore(src->id, c, *ev);
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, *id);
    ASSERT_TRUE(s->commit());
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM frames"), 2);

    auto rows = queryCores(s->db());
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ(rows->front().core.signal_addr, 0x8au);
    EXPECT_EQ(rows->front().threads, 2);
    auto crashed = queryCoreThreads(s->db(), *id, false);
    ASSERT_TRUE(crashed);
    ASSERT_EQ(crashed->size(), 1u);
    ASSERT_EQ(crashed->front().frames.size(), 2u);
    EXPECT_EQ(crashed->front().frames[0].module_offset, 0x116eu);
    EXPECT_EQ(crashed->front().frames[1].line, 19);
    auto all = queryCoreThreads(s->db(), *id, true);
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ(all->back().error, "no matching address range");
    EXPECT_TRUE(all->back().frames.empty());

    auto dropped = s->prune(0, 1, {});  // everything is over one byte
    ASSERT_TRUE(dropped) << dropped.error().message;
    EXPECT_EQ(*dropped, 1);
    for (const char* table : {"cores", "threads", "frames", "core_files", "evidence"})
        EXPECT_EQ(scalar(*s, fmt::format("SELECT count(*) FROM {}", table)), 0) << table;
}

TEST(Store, DiagnosesAreReplacedReadPerIncidentAndPrunedWithTheirRecords) {
    TempDir t;
    auto s = Store::open(t.file("g.db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    SourceIdentity id{"run.log", "file", 1, 2, "ab"};
    auto src = s->source(id);
    ASSERT_TRUE(src);
    ASSERT_TRUE(s->begin());
    Evidence e;
    e.kind = Kind::MissingCodeObject;
    e.vendor = "amd";
    e.line = 12;
    e.reason = "hipErrorNoBinaryForGpu";
    e.raw = "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!";
    ASSERT_TRUE(s->addEvidence(src->id, e));
    ASSERT_TRUE(s->commit());
    auto ev = s->evidenceIdOf(src->id, Kind::MissingCodeObject);
    ASSERT_TRUE(ev && *ev);
    IncidentRecord inc;
    inc.kind = "missing_code_object";
    inc.signature = "x";
    inc.members = {{**ev, "member", "first"}};
    ASSERT_TRUE(s->replaceIncidents({inc}));

    Diagnosis dg;
    dg.evidence_id = **ev;
    dg.rule = "no_binary_for_gpu";
    dg.why = "hipErrorNoBinaryForGpu at run.log:12";
    dg.inputs = "1111";
    dg.created_at = "2026-11-30T10:00:00Z";
    DiagnosisFinding f;
    f.verdict = "no_code";
    f.module = "/srv/app/multi_plus_one";
    f.bundle = 4;
    f.offset = 0x12000;
    f.has = {"gfx906"};
    f.kernels = {"gpu_bench_kernel(float*, int)"};
    f.device_target = "gfx1030";
    dg.findings = {f, f};
    ASSERT_TRUE(replaceDiagnosis(s->db(), dg));
    dg.inputs = "2222";
    dg.findings = {f};  // recomputed: replaces, never appends
    ASSERT_TRUE(replaceDiagnosis(s->db(), dg));
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM diagnoses"), 1);
    EXPECT_EQ(diagnosisInputs(s->db(), **ev).value(), "2222");
    EXPECT_EQ(diagnosisInputs(s->db(), **ev + 1).value(), std::nullopt);
    auto rows = queryIncidentDiagnoses(s->db(), 1);
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 1u);
    ASSERT_EQ(rows->front().findings.size(), 1u);
    const auto& g = rows->front().findings.front();
    EXPECT_EQ(g.bundle, 4);
    EXPECT_EQ(g.offset, 0x12000u);
    EXPECT_EQ(g.has, std::vector<std::string>{"gfx906"});
    EXPECT_EQ(g.kernels, std::vector<std::string>{"gpu_bench_kernel(float*, int)"});

    // Retention drops the record's diagnosis with it (foreign keys are on).
    auto dropped = s->prune(0, 1, {});
    ASSERT_TRUE(dropped) << dropped.error().message;
    EXPECT_EQ(*dropped, 1);
    EXPECT_EQ(scalar(*s, "SELECT count(*) FROM diagnoses"), 0);
}

// The journal source's queue of cores for the worker: rows per journal in order, gone once
// removed.
TEST(Store, PendingCoresAreQueuedPerJournalUntilRemoved) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    ASSERT_TRUE(s->begin());
    auto a = s->addPendingCore({0, "/j", "s=1;i=2", R"({"COREDUMP_PID":"7"})"});
    auto b = s->addPendingCore({0, "/j", "s=1;i=3", "{}"});
    auto c = s->addPendingCore({0, "", "s=9;i=1", "{}"});
    ASSERT_TRUE(a && b && c);
    auto again = s->addPendingCore({0, "/j", "s=1;i=2", "{}"});  // the same entry: queued once
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(*again, *a);
    ASSERT_TRUE(s->commit());
    auto rows = s->pendingCores("/j");
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 2u);
    EXPECT_EQ(rows->front().id, *a);
    EXPECT_EQ(rows->front().cursor, "s=1;i=2");
    EXPECT_EQ(rows->front().fields, R"({"COREDUMP_PID":"7"})");
    EXPECT_EQ(rows->back().id, *b);
    ASSERT_TRUE(s->removePendingCore(*a));
    EXPECT_EQ(s->hasPendingCore(*a), false);
    EXPECT_EQ(s->hasPendingCore(*b), true);
    auto system = s->pendingCores("");
    ASSERT_TRUE(system);
    ASSERT_EQ(system->size(), 1u);
    EXPECT_EQ(system->front().id, *c);
}

}  // namespace
}  // namespace gpufault
