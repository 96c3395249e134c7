// Two crashes of forked siblings (tests/tools/fork_crash): real cores of the same size whose
// first 4 KiB are the same program headers, which differ past it (pid, si_addr 0x7000 and
// 0xe000). Both are stored; a copy or a `.zst` copy of the second is the second
// (cores.content_fingerprint `core2-`, ingest/core_fingerprint.h). Through the built binary.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "schema/store.h"
#include "tests/support/crash_files.h"
#include "tests/support/fixture_check.h"
#include "tests/support/core_run.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

/// Runs fork_crash in `t` (its children crash in `t`/w0 and `t`/w1) with cores enabled; false
/// when the kernel wrote no `core` there (kernel.core_pattern is not a plain file name).
bool forkCrashCores(const TempDir& t) {
    std::filesystem::create_directories(t.file("w0"));
    std::filesystem::create_directories(t.file("w1"));
    auto r = runWithCores(t.path(), {FORK_CRASH, "w0", "w1"});
    EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) << r.status;
    return std::filesystem::exists(t.file("w0/core")) && std::filesystem::exists(t.file("w1/core"));
}

TEST(CoreForks, TwoSiblingsWithTheSameFirstPagesAreTwoCores) {
    TempDir t;
    if (!forkCrashCores(t))
        GTEST_SKIP() << "1 test skipped: no core written (kernel.core_pattern is not 'core')";
    std::string a = t.file("w0/core"), b = t.file("w1/core"), db = t.file("db");
    // What makes them hard: the same size and the same first 4 KiB, other bytes past it.
    const std::string ca = readFile(a), cb = readFile(b);
    ASSERT_EQ(ca.size(), cb.size());
    ASSERT_GT(ca.size(), 4096u);
    ASSERT_EQ(ca.substr(0, 4096), cb.substr(0, 4096));
    ASSERT_NE(ca, cb);
    for (const auto& core : {a, b}) {
        auto r = run({GPUFAULT_BIN, "--db", db, "ingest", core});
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_EQ(r.out.find("already stored"), std::string::npos) << r.out;
    }
    auto js = run({GPUFAULT_BIN, "--db", db, "cores", "--json"});
    ASSERT_EQ(js.status, 0) << js.err;
    auto cores = parseJsonLines(js.out);
    ASSERT_EQ(cores.size(), 2u) << js.out;
    EXPECT_NE(cores[0]["pid"], cores[1]["pid"]);
    auto q = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "query",
                  "SELECT id, signal, printf('0x%x', si_addr) AS addr, "
                  "content_fingerprint LIKE 'core2-%-" +
                      std::to_string(ca.size()) + "' AS fp FROM cores ORDER BY id"});
    ASSERT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(q.out, "id\tsignal\taddr\tfp\n1\t11\t0x7000\t1\n2\t11\t0xe000\t1\n");
    // A copy and a zstd copy of the second are the second.
    std::string copy = t.file("copy.core"), zst = t.file("w1.core.zst");
    writeFile(copy, cb);
    writeFile(zst, zstdCompress(cb));
    for (const auto& again : {copy, zst}) {
        auto r = run({GPUFAULT_BIN, "--db", db, "ingest", again});
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_NE(r.out.find(again + ": core already stored as core 2 from " + b),
                  std::string::npos)
            << r.out;
    }
}

// A `.zst` core larger than the cap once decompressed keeps what fits (systemd-coredump's way):
// the sibling's 1.1 MiB core under a cap of 1 MiB is cut after its notes, so it is stored from
// them (pid, signal, si_addr) with the cap and the cut named in its note and the warnings.
TEST(CoreForks, AZstCoreOverTheCapIsStoredFromWhatFits) {
    TempDir t;
    if (!forkCrashCores(t))
        GTEST_SKIP() << "1 test skipped: no core written (kernel.core_pattern is not 'core')";
    const std::string core = readFile(t.file("w1/core"));
    ASSERT_GT(core.size(), 1u << 20);
    std::string zst = t.file("w1.core.zst"), db = t.file("db");
    writeFile(zst, zstdCompress(core));
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", "--max-unpacked-mib", "1", zst});
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string kept =
        "core larger than the cap of 1 MiB once decompressed (--max-unpacked-mib, "
        "cores.max_unpacked_mib): its first 1 MiB kept";
    EXPECT_NE(r.err.find("gpufault: warning: " + zst + ": " + kept + "\n"), std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("gpufault: warning: " + zst + ": core file truncated"), std::string::npos)
        << r.err;
    auto q = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "query",
                  "SELECT signal, printf('0x%x', si_addr) AS addr, note LIKE '" + kept +
                      "; core file truncated%' AS note FROM cores"});
    ASSERT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(q.out, "signal\taddr\tnote\n11\t0xe000\t1\n");
}

// A new crash written over the path of a stored core (same inode: the file system may give the
// new core the old one's number) with the same size and first 4 KiB is another core; the same
// file read again is unchanged, and touched only, the same core.
TEST(CoreForks, ACrashWrittenOverAStoredCoresPathIsAnotherCore) {
    TempDir t;
    if (!forkCrashCores(t))
        GTEST_SKIP() << "1 test skipped: no core written (kernel.core_pattern is not 'core')";
    std::string path = t.file("w0/core"), db = t.file("db");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", path}).status, 0);
    auto same = run({GPUFAULT_BIN, "--db", db, "ingest", path});
    EXPECT_NE(same.out.find(path + ": core already ingested, unchanged"), std::string::npos)
        << same.out;
    struct stat before {};
    ASSERT_EQ(::stat(path.c_str(), &before), 0);
    writeFile(path, readFile(t.file("w1/core")));  // in place: the same inode
    struct stat after {};
    ASSERT_EQ(::stat(path.c_str(), &after), 0);
    ASSERT_EQ(before.st_ino, after.st_ino);
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", path});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(path + ": core 2, 1 thread"), std::string::npos) << r.out;
    ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), nullptr, 0), 0);  // touched: now
    auto touched = run({GPUFAULT_BIN, "--db", db, "ingest", path});
    EXPECT_NE(touched.out.find(path + ": core already stored as core 2 from " + path),
              std::string::npos)
        << touched.out;
}

// hostile12c HIGH 3: in a store from before content fingerprints (020), a core is known by its
// first 4 KiB and size; forked siblings share both. The stored core's file, overwritten by the
// sibling's crash, would read as "the same" again: the notes' pid and crashing thread tell.
TEST(CoreForks, AnOldStoresCoreOverwrittenByASiblingsCrashIsAnotherCore) {
    TempDir t;
    if (!forkCrashCores(t))
        GTEST_SKIP() << "1 test skipped: no core written (kernel.core_pattern is not 'core')";
    std::string path = t.file("w0/core"), db = t.file("db");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", path}).status, 0);
    {  // as 020 stored it: `core-H-S` for the source and the content, no mtime
        auto s = Store::open(db, Store::Mode::ReadWrite);
        ASSERT_TRUE(s) << s.error().message;
        ASSERT_TRUE(s->db().exec(
            "UPDATE sources SET fingerprint = substr(fingerprint, 1, instr(fingerprint, '-m') - 1) "
            "WHERE kind = 'core' AND instr(fingerprint, '-m') > 0; "
            "UPDATE cores SET content_fingerprint = (SELECT fingerprint FROM sources WHERE "
            "sources.id = cores.source_id)"));
    }
    writeFile(path, readFile(t.file("w1/core")));  // the sibling's crash, in place
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", path});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(path + ": core 2, 1 thread"), std::string::npos) << r.out;
    auto c = parseJsonLines(run({GPUFAULT_BIN, "--db", db, "cores", "--json"}).out);
    ASSERT_EQ(c.size(), 2u);
    EXPECT_NE(c[0]["pid"], c[1]["pid"]);
}

}  // namespace
}  // namespace gpufault::testing
