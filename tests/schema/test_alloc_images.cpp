// Hostile review of issue 4, finding 1: exec() keeps the pid and the start ticks, so a process
// that exec()s under the shim writes a second `start` record with the same boot, pid and start
// ticks. Each image is a recording of its own, the image before the exec ends at the exec, and a
// fault is measured against the image that ran at its time, never the one whose address space
// is gone. A real store (SQLite file), records parsed by the shim's parser.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "collectors/preload/alloc_log.h"
#include "schema/migrations.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using testing::TempDir;

const std::string kBoot = "0d5e9c1a-1111-4222-8333-944455556666";
constexpr uint64_t kP = 0x7f0000000000, kQ = 0x7f0000400000;  // before, after the exec

std::string text(Store& s, const std::string& sql) {
    auto st = s.db().prepare(sql);
    EXPECT_TRUE(st.has_value());
    if (!st) return "";
    auto row = st->step();
    EXPECT_TRUE(row.has_value() && *row) << sql;
    return st->isNull(0) ? "NULL" : st->str(0);
}

/// One process (pid 4528, start ticks 777): image 1 starts at 1 s and allocates P at 2 s; it
/// exec()s, and image 2 starts at 5 s and allocates Q at 6 s (wall and mono, µs).
std::string twoImages() {
    auto start = [](int sec, const char* exe) {
        return fmt::format(
            "gpufault.alloc 1 start pid=4528 ppid=1 wall_us={} mono_us={} boot={} "
            "start_ticks=777 pidns=4026531836 exe={}\n",
            sec * 1000000,
            sec * 1000000,
            kBoot,
            exe);
    };
    auto alloc = [](uint64_t ptr, int sec) {
        return fmt::format(
            "gpufault.alloc 1 alloc api=hipMalloc ptr=0x{:x} size=1048576 rc=0 wall_us={} "
            "mono_us={} pid=4528 tid=4528\n",
            ptr,
            sec * 1000000,
            sec * 1000000);
    };
    return start(1, "/usr/bin/launcher") + alloc(kP, 2) + start(5, "/usr/bin/python3") +
           alloc(kQ, 6);
}

/// A fault of pid 4528 at `sec` (a stated wall time) at `address`, and gpufaultd's /proc
/// snapshot of its process (boot, start ticks 777).
int64_t faultAt(Store& s, int64_t source_id, uint64_t line, int sec, uint64_t address) {
    Evidence e;
    e.kind = Kind::RocrMemoryFault;
    e.vendor = "amd";
    e.line = line;
    e.address = address;
    e.address_exact = true;
    e.raw = "Memory access fault by GPU node-1 ...";
    e.pid = 4528;
    e.time.wall = "1970-01-01T00:00:00";
    e.time.wall_utc_s = sec;
    EXPECT_TRUE(s.addEvidence(source_id, e));
    auto id = s.db().prepare("SELECT max(id) FROM evidence");
    EXPECT_TRUE(id && id->step().value_or(false));
    int64_t evidence = id->i64(0);
    ProcessRecord p;
    p.pid = 4528;
    p.boot_id = kBoot;
    p.taken_at = "1970-01-01T00:00:09Z";
    p.start_ticks = 777;
    p.name = "python3";
    p.evidence_id = evidence;
    EXPECT_TRUE(s.addProcess(p));
    return evidence;
}

}  // namespace

TEST(AllocImages, EachImageIsARecordingAndTheOneBeforeTheExecEndsAtIt) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    auto src = s->source(SourceIdentity{"gpufault-alloc.4528.log", "alloc", 1, 3, "alloc"});
    ASSERT_TRUE(src);
    ASSERT_TRUE(s->begin());
    auto r = s->appendAllocations(src->id, std::nullopt, alloclog::parse(twoImages()), true);
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(s->commit());
    EXPECT_EQ(r->added, 2);
    EXPECT_EQ(text(*s, "SELECT count(DISTINCT recording) FROM alloc_processes"), "2");
    EXPECT_EQ(text(*s,
                   "SELECT group_concat(line || ' ' || ifnull(ended_by, '-') || ' ' || "
                   "ifnull(ended_wall_us, '-') || ' ' || ifnull(ended_mono_us, '-') || ' ' || "
                   "pidns, '; ') FROM (SELECT * FROM alloc_processes ORDER BY line)"),
              "1 exec 5000000 5000000 4026531836; 3 - - - 4026531836");

    // A fault at 9 s inside P (image 1's buffer, whose address space the exec replaced): it is
    // measured against image 2's allocation only; a fault at 3 s (before the exec) against
    // image 1's. Each in a store of its own (one /proc snapshot per process).
    auto measured = [&](int sec) {
        auto other = Store::open(t.file(fmt::format("db{}", sec)), Store::Mode::ReadWrite);
        EXPECT_TRUE(other);
        auto a = other->source(SourceIdentity{"gpufault-alloc.4528.log", "alloc", 1, 3, "a"});
        EXPECT_TRUE(other->begin());
        EXPECT_TRUE(
            other->appendAllocations(a->id, std::nullopt, alloclog::parse(twoImages()), true));
        auto k = other->source(SourceIdentity{"kern.log", "file", 1, 4, "kern"});
        int64_t fault = faultAt(*other, k->id, 1, sec, kP + 0x10);
        EXPECT_TRUE(other->commit());
        return text(*other,
                    fmt::format("SELECT group_concat(printf('%x', ptr) || ' ' || how || ' ' || "
                                "inside, '; ') FROM fault_allocation_distance WHERE "
                                "evidence_id = {}",
                                fault));
    };
    EXPECT_EQ(measured(9), "7f0000400000 process 0");
    EXPECT_EQ(measured(3), "7f0000000000 process 1");
    // Read again (gpufaultd after a restart): image 1's records are not refused, nothing doubles.
    ASSERT_TRUE(s->begin());
    r = s->replaceAllocations(src->id, std::nullopt, alloclog::parse(twoImages()));
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(s->commit());
    EXPECT_EQ(r->after_end, 0);
    EXPECT_EQ(text(*s, "SELECT count(*) FROM allocations"), "2");
}

// A store written before 017 keyed both images as one recording ('boot B pid P ticks T'): the
// upgrade splits them and ends the first at the exec.
TEST(AllocImages, TheUpgradeSplitsTheImagesOfOneProcess) {
    TempDir t;
    const std::string path = t.file("db");
    {
        auto d = db::Db::open(path, false, true);
        ASSERT_TRUE(d) << d.error().message;
        for (size_t v = 0; v < 16; ++v) ASSERT_TRUE(d->exec(migrations()[v])) << v + 1;
        ASSERT_TRUE(d->exec("PRAGMA user_version=16"));
        const std::string key = "boot " + kBoot + " pid 4528 ticks 777";
        ASSERT_TRUE(d->exec(fmt::format(
            "INSERT INTO sources(id, path, kind, fingerprint, device, inode) VALUES(1, "
            "'gpufault-alloc.4528.log', 'alloc', 'x', 1, 3);"
            "INSERT INTO alloc_processes(source_id, line, pid, boot_id, start_ticks, wall_us, "
            "mono_us, recording) VALUES(1, 1, 4528, '{0}', 777, 1000000, 1000000, '{1}'), (1, 3, "
            "4528, '{0}', 777, 5000000, 5000000, '{1}');"
            "INSERT INTO allocations(source_id, line, pid, kind, api, ptr, end, wall_us, mono_us, "
            "start_line) VALUES(1, 2, 4528, 'alloc', 'hipMalloc', {2}, {3}, 2000000, 2000000, 1), "
            "(1, 4, 4528, 'alloc', 'hipMalloc', {4}, {5}, 6000000, 6000000, 3)",
            kBoot,
            key,
            kP,
            kP + 1048576,
            kQ,
            kQ + 1048576)));
    }
    auto s = Store::open(path, Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(text(*s,
                   "SELECT group_concat(line || ' ' || ifnull(ended_by, '-') || ' ' || "
                   "ifnull(ended_mono_us, '-') || ' ' || recording, '; ') FROM (SELECT * FROM "
                   "alloc_processes ORDER BY line)"),
              fmt::format("1 exec 5000000 boot {0} pid 4528 ticks 777 wall 1000000 mono 1000000; "
                          "3 - - boot {0} pid 4528 ticks 777 wall 5000000 mono 5000000",
                          kBoot));
}

}  // namespace gpufault
