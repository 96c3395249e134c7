// db::Error carries SQLite's result code (schema/sqlite.h): callers decide on SQLITE_BUSY,
// SQLITE_FULL or SQLITE_IOERR by the code, never by the message text. Real SQLite files.
#include <gtest/gtest.h>

#include "schema/sqlite.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using testing::TempDir;

TEST(SqliteError, ALockHeldByAnotherConnectionIsBusyByItsCode) {
    TempDir t;
    auto a = db::Db::open(t.file("db"), false, true);
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_TRUE(a->exec("CREATE TABLE x (id INTEGER PRIMARY KEY)"));
    ASSERT_TRUE(a->exec("BEGIN EXCLUSIVE"));
    auto b = db::Db::open(t.file("db"), false, false);
    ASSERT_TRUE(b) << b.error().message;
    sqlite3_busy_timeout(b->handle(), 0);  // answer at once
    auto r = b->exec("INSERT INTO x VALUES (1)");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().primary(), SQLITE_BUSY) << r.error().message;
    EXPECT_TRUE(r.error().busy());
    ASSERT_TRUE(a->exec("COMMIT"));
    EXPECT_TRUE(b->exec("INSERT INTO x VALUES (1)"));
}

TEST(SqliteError, StatementErrorsCarryTheExtendedCode) {
    TempDir t;
    auto d = db::Db::open(t.file("db"), false, true);
    ASSERT_TRUE(d) << d.error().message;
    ASSERT_TRUE(d->exec("CREATE TABLE x (id INTEGER PRIMARY KEY, v TEXT NOT NULL)"));
    auto ins = d->prepare("INSERT INTO x VALUES (?1, ?2)");
    ASSERT_TRUE(ins);
    ASSERT_TRUE(ins->bind(1, 1).bind(2, "a").run());
    auto dup = ins->bind(1, 1).bind(2, "b").run();  // step(): the primary key again
    ASSERT_FALSE(dup);
    EXPECT_EQ(dup.error().code, SQLITE_CONSTRAINT_PRIMARYKEY) << dup.error().message;
    EXPECT_EQ(dup.error().primary(), SQLITE_CONSTRAINT);
    EXPECT_FALSE(dup.error().busy());
    auto bad = d->prepare("SELECT nope FROM x");  // prepare()
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code, SQLITE_ERROR) << bad.error().message;
    auto ro = db::Db::open(t.file("db"), true, false);
    ASSERT_TRUE(ro);
    auto w = ro->exec("DELETE FROM x");  // exec() on a read-only connection
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().primary(), SQLITE_READONLY) << w.error().message;
    auto missing = db::Db::open(t.file("none/db"), false, true);  // open()
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().primary(), SQLITE_CANTOPEN) << missing.error().message;
    EXPECT_EQ(db::Error{"the store's own"}.code, 0);
}

TEST(SqliteError, StoreOpenKeepsTheCodeOfAStoreItCannotSwitchToWal) {
    // Store::open's WAL switch gives up on anything but SQLITE_BUSY at once, code kept: a file
    // that is not a database is SQLITE_NOTADB.
    TempDir t;
    {
        std::FILE* f = std::fopen(t.file("db").c_str(), "w");
        ASSERT_TRUE(f);
        std::fputs(std::string(4096, 'x').c_str(), f);
        std::fclose(f);
    }
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().primary(), SQLITE_NOTADB) << s.error().message;
    EXPECT_NE(s.error().message.find(t.file("db")), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace gpufault
