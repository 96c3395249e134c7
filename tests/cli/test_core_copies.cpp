// A zstd-compressed copy of a core (`core.X.zst`, systemd-coredump's form) is the core already
// stored from the uncompressed file, and the other way round: one core, recognised by the
// fingerprint of the uncompressed content (cores.content_fingerprint, migration 020). The real
// fixture core (tests/data/cores), compressed here by libzstd, through the built binary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "schema/store.h"
#include "tests/cli/core_ingest.h"
#include "tests/support/crash_files.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kZstName =
    "core.crashmain.0.0123456789abcdef0123456789abcdef.14046."
    "1764491498000000.zst";

std::string cores(const std::string& db) {
    auto q = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "query",
                  "SELECT c.id, c.content_fingerprint = (SELECT content_fingerprint FROM cores "
                  "WHERE id = 1) AS same_content FROM cores c ORDER BY c.id"});
    EXPECT_EQ(q.status, 0) << q.err;
    return q.out;
}

TEST(CoreCopies, AZstCopyOfAStoredCoreIsThatCore) {
    TempDir t;
    std::string raw = t.file("core"), zst = t.file(kZstName), plain = t.file("copy.zst");
    writeFile(raw, readFile(kCoreDir + "core"));
    writeFile(zst, zstdCompress(readFile(kCoreDir + "core")));
    writeFile(plain, readFile(zst));
    std::string db = t.file("db");
    auto first = run(coreIngestArgs(db, {raw}));
    ASSERT_EQ(first.status, 0) << first.err;
    EXPECT_NE(first.out.find(raw + ": core 1, 1 thread"), std::string::npos) << first.out;
    // systemd-coredump's name, and a copy of it under another name: both the stored core
    auto second = run(coreIngestArgs(db, {zst, plain}));
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_NE(second.out.find(zst + ": core already stored as core 1 from " + raw),
              std::string::npos)
        << second.out;
    EXPECT_NE(second.out.find(plain + ": core already stored as core 1 from " + raw),
              std::string::npos)
        << second.out;
    EXPECT_EQ(cores(db), "id\tsame_content\n1\t1\n");
}

TEST(CoreCopies, TheUncompressedCoreOfAStoredZstIsThatCore) {
    TempDir t;
    std::string raw = t.file("core"), zst = t.file(kZstName);
    writeFile(raw, readFile(kCoreDir + "core"));
    writeFile(zst, zstdCompress(readFile(kCoreDir + "core")));
    std::string db = t.file("db");
    // Both in one command, the compressed one first.
    auto r = run(coreIngestArgs(db, {zst, raw}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(zst + ": core 1, 1 thread"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(raw + ": core already stored as core 1 from " + zst), std::string::npos)
        << r.out;
    EXPECT_EQ(cores(db), "id\tsame_content\n1\t1\n");
    auto c = parseJsonLines(run({GPUFAULT_BIN, "--db", db, "cores", "--json"}).out);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0]["origin"], "systemd-coredump");
}

// Hostile review of 020, finding 1: two crashes whose first 4 KiB and size are the same (forked
// siblings with many program headers; here the fixture core with bytes 0x2000..0x2100 flipped,
// past its headers and notes) are two cores, raw or compressed; the content fingerprint covers
// every byte.
TEST(CoreCopies, AnotherCrashWithTheSameFirstPagesIsStored) {
    TempDir t;
    std::string bytes = readFile(kCoreDir + "core");
    ASSERT_GT(bytes.size(), 0x2100u);
    std::string other = bytes;
    for (size_t i = 0x2000; i < 0x2100; ++i) other[i] = static_cast<char>(~other[i]);
    std::string raw = t.file("core"), b = t.file("coreB"), bz = t.file("coreB.zst");
    writeFile(raw, bytes);
    writeFile(b, other);
    writeFile(bz, zstdCompress(other));
    std::string db = t.file("db");
    auto r = run(coreIngestArgs(db, {raw, b}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(b + ": core 2, 1 thread"), std::string::npos) << r.out;
    EXPECT_EQ(cores(db), "id\tsame_content\n1\t1\n2\t0\n");
    // The compressed copy of the second is the second.
    auto z = run(coreIngestArgs(db, {bz}));
    ASSERT_EQ(z.status, 0) << z.err;
    EXPECT_NE(z.out.find(bz + ": core already stored as core 2 from " + b), std::string::npos)
        << z.out;
    auto fp = run({GPUFAULT_BIN,
                   "--db",
                   db,
                   "query",
                   "SELECT count(*) FROM cores WHERE content_fingerprint LIKE 'core2-%-" +
                       std::to_string(bytes.size()) + "'"});
    EXPECT_EQ(fp.out, "count(*)\n2\n");
}

// A store written before `core2-` fingerprints (cores.content_fingerprint the head's): a copy of
// its core is still that core (its file read again), another crash with the same head is not.
TEST(CoreCopies, AnOldStoresCoreIsComparedByItsFileReadAgain) {
    TempDir t;
    std::string bytes = readFile(kCoreDir + "core");
    std::string other = bytes;
    for (size_t i = 0x2000; i < 0x2100; ++i) other[i] = static_cast<char>(~other[i]);
    std::string raw = t.file("core"), copy = t.file("copy"), b = t.file("coreB");
    writeFile(raw, bytes);
    writeFile(copy, bytes);
    writeFile(b, other);
    std::string db = t.file("db");
    ASSERT_EQ(run(coreIngestArgs(db, {raw})).status, 0);
    // As 020 stored it: the source's fingerprint and the content's are the first 4 KiB and the
    // size (`core-H-S`, no `-m<mtime>`).
    {
        auto s = Store::open(db, Store::Mode::ReadWrite);
        ASSERT_TRUE(s) << s.error().message;
        ASSERT_TRUE(s->db().exec(
            "UPDATE sources SET fingerprint = substr(fingerprint, 1, instr(fingerprint, '-m') - 1) "
            "WHERE kind = 'core' AND instr(fingerprint, '-m') > 0; "
            "UPDATE cores SET content_fingerprint = (SELECT fingerprint FROM sources WHERE "
            "sources.id = cores.source_id)"));
    }
    auto r = run(coreIngestArgs(db, {copy, b, raw}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(copy + ": core already stored as core 1 from " + raw), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(b + ": core 2, 1 thread"), std::string::npos) << r.out;
    // The old store's own file, its source no longer found by its identity: read again, the same.
    EXPECT_NE(r.out.find(raw + ": core already stored as core 1 from " + raw), std::string::npos)
        << r.out;
}

}  // namespace
}  // namespace gpufault::testing
