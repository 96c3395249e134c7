// A new store is built from freshSchema() (schema_squash's script) instead of the migrations:
// both ways must give the same store, object for object and row for row.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "schema/migrations.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using testing::TempDir;

/// Every row of a query, each as its columns' text joined by '|'.
std::vector<std::string> rows(db::Db& d, const std::string& sql) {
    std::vector<std::string> out;
    auto st = d.prepare(sql);
    EXPECT_TRUE(st) << sql;
    if (!st) return out;
    while (st->step().value_or(false)) {
        std::string r;
        for (int c = 0; c < st->columns(); ++c) r += (c ? "|" : "") + st->str(c);
        out.push_back(r);
    }
    return out;
}

/// The schema objects, then each table's rows (in a stated order: objects by type and name).
std::vector<std::string> content(db::Db& d) {
    auto out = rows(d, "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name");
    for (const auto& t :
         rows(d, "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")) {
        out.push_back("table " + t);
        for (auto& r : rows(d, "SELECT * FROM \"" + t + "\" ORDER BY 1")) out.push_back(r);
    }
    out.push_back("user_version " + rows(d, "PRAGMA user_version").at(0));
    return out;
}

TEST(FreshSchema, ANewStoreEqualsOneBuiltByEveryMigration) {
    TempDir t;
    // By the migrations, as a store created by an older gpufault and upgraded: each script
    // and its user_version, then Store::open (its upgrade steps).
    const std::string migrated = t.file("migrated.db");
    {
        auto d = db::Db::open(migrated, false, true);
        ASSERT_TRUE(d) << d.error().message;
        ASSERT_TRUE(d->exec("PRAGMA auto_vacuum=INCREMENTAL"));
        const auto& m = migrations();
        for (size_t v = 0; v < m.size(); ++v) {
            ASSERT_TRUE(d->exec(m[v])) << v + 1;
            ASSERT_TRUE(d->exec("PRAGMA user_version=" + std::to_string(v + 1)));
        }
    }
    auto a = Store::open(migrated, Store::Mode::ReadWrite);
    ASSERT_TRUE(a) << a.error().message;
    // A new file: the fresh path.
    auto b = Store::open(t.file("fresh.db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(b) << b.error().message;

    EXPECT_EQ(freshSchemaVersion(), migrations().size());
    const auto want = content(a->db());
    const auto got = content(b->db());
    EXPECT_GT(want.size(), 80u);  // 90 tables, indexes, views and rows of 25 migrations
    EXPECT_EQ(got, want);
    // The upgrade step queued by migration 017 ran and left its table empty in both.
    EXPECT_EQ(rows(b->db(), "SELECT count(*) FROM upgrade_steps"), std::vector<std::string>{"0"});
    EXPECT_EQ(rows(b->db(), "PRAGMA integrity_check"), std::vector<std::string>{"ok"});
    EXPECT_TRUE(rows(b->db(), "PRAGMA foreign_key_check").empty());
}

TEST(FreshSchema, AFileWithATableOfItsOwnIsNotTakenForANewStore) {
    TempDir t;
    const std::string path = t.file("db");
    {
        auto d = db::Db::open(path, false, true);
        ASSERT_TRUE(d) << d.error().message;
        ASSERT_TRUE(d->exec("CREATE TABLE sources(x)"));  // clashes with migration 001
    }
    auto s = Store::open(path, Store::Mode::ReadWrite);
    ASSERT_FALSE(s);
    EXPECT_NE(s.error().message.find("migration 1:"), std::string::npos) << s.error().message;
}

}  // namespace
}  // namespace gpufault
