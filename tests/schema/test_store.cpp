// The store on a real SQLite file: migrations, pragmas, idempotent inserts, the distance view.
#include <gtest/gtest.h>

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

TEST(Store, NewFileIsMigratedWithIncrementalVacuumAndWal) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    EXPECT_EQ(scalar(*s, "PRAGMA user_version"), 1);
    EXPECT_EQ(scalar(*s, "PRAGMA auto_vacuum"), 2);  // 2 = INCREMENTAL
    auto mode = s->db().prepare("PRAGMA journal_mode");
    ASSERT_TRUE(mode && *mode->step());
    EXPECT_EQ(mode->str(0), "wal");
    // Reopening does not migrate again.
    s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s);
    EXPECT_EQ(scalar(*s, "PRAGMA user_version"), 1);
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
