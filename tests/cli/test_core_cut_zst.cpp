// A cut systemd-coredump `.zst` (its zstd data end in mid-frame: `head -c` of the file, a full
// disk) is read like a cut raw core: what decompresses is kept, the core stored from its notes
// with a warning naming the compressed offset where the data end; cut inside its notes it is an
// error that stores nothing. A cut core and the whole core of the same crash are one core, the
// whole one's frames. The real fixture core (tests/data/cores), compressed here by libzstd,
// through the built binary.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli/core_ingest.h"
#include "tests/support/crash_files.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kZstName =
    "core.crashmain.0.0123456789abcdef0123456789abcdef.14046."
    "1764491498000000.zst";

std::vector<nlohmann::json> coresOf(const std::string& db) {
    return parseJsonLines(run({GPUFAULT_BIN, "--db", db, "cores", "--json"}).out);
}

/// The frames `gpufault stack 1` prints for the crashing thread ("#N" lines).
size_t framesOfCore1(const std::string& db) {
    auto s = run({GPUFAULT_BIN, "--db", db, "stack", "1"}).out;
    size_t n = 0;
    for (size_t at = s.find("\n#"); at != std::string::npos; at = s.find("\n#", at + 1)) ++n;
    return n;
}

TEST(CoreCutZst, ACutZstIsStoredFromItsNotesNamingWhereTheDataEnd) {
    TempDir t;
    auto z = zstdCompress(readFile(kCoreDir + "core"));
    std::string cut = t.file(kZstName);
    writeFile(cut, z.substr(0, z.size() / 2));
    auto r = run(coreIngestArgs(t.file("db"), {cut}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(fmt::format("gpufault: warning: {}: zstd: the data end in mid-frame at "
                                     "compressed offset {} (cut file)",
                                     cut,
                                     z.size() / 2)),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("core file truncated: its segments need 462848 bytes"), std::string::npos)
        << r.err;
    auto c = coresOf(t.file("db"));
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0]["pid"], 14046);
    EXPECT_EQ(c[0]["signal"], 11);
    EXPECT_EQ(c[0]["si_addr"], "0x8a");
    EXPECT_NE(c[0].value("note", "").find("zstd: the data end in mid-frame"), std::string::npos)
        << c[0].dump();
}

// The notes (0x6d0..0x1ba0) in a first frame of 4 KiB, the rest in a second frame cut 50 bytes
// in: 4096 bytes decompress, the notes do not fit.
TEST(CoreCutZst, ACutZstWhoseNotesAreCutIsAnErrorAndStoresNothing) {
    TempDir t;
    auto whole = readFile(kCoreDir + "core");
    auto first = zstdCompress(whole.substr(0, 4096));
    auto z = first + zstdCompress(whole.substr(4096));
    std::string cut = t.file(kZstName);
    writeFile(cut, z.substr(0, first.size() + 50));
    auto r = run(coreIngestArgs(t.file("db"), {cut}));
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(cut + ": truncated: PT_NOTE segment"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(fmt::format("compressed offset {}", first.size() + 50)), std::string::npos)
        << r.err;
    EXPECT_EQ(coresOf(t.file("db")).size(), 0u);
}

TEST(CoreCutZst, ACutZstThenItsRawCoreAreOneCoreWithTheRawFrames) {
    TempDir t;
    auto whole = readFile(kCoreDir + "core");
    auto z = zstdCompress(whole);
    std::string cut = t.file(kZstName), raw = t.file("core");
    writeFile(cut, z.substr(0, z.size() / 2));
    writeFile(raw, whole);
    std::string db = t.file("db");
    ASSERT_EQ(run(coreIngestArgs(db, {cut})).status, 0);
    EXPECT_EQ(framesOfCore1(db), 1u);  // the cut core: its stack memory is not there
    auto r = run(coreIngestArgs(db, {raw}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("the same crash as core 1 from " + cut + ", which was cut"),
              std::string::npos)
        << r.err;
    auto c = coresOf(db);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0]["path"], raw);
    EXPECT_EQ(framesOfCore1(db), 8u);
    EXPECT_EQ(parseJsonLines(run({GPUFAULT_BIN, "--db", db, "events", "--json"}).out).size(), 1u);
}

TEST(CoreCutZst, ARawCoreThenItsCutZstAreOneCore) {
    TempDir t;
    auto whole = readFile(kCoreDir + "core");
    auto z = zstdCompress(whole);
    std::string cut = t.file(kZstName), raw = t.file("core");
    writeFile(cut, z.substr(0, z.size() / 2));
    writeFile(raw, whole);
    std::string db = t.file("db");
    auto r = run(coreIngestArgs(db, {raw, cut}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(cut + ": core already stored as core 1 from " + raw +
                         ", of which this cut core is a prefix"),
              std::string::npos)
        << r.out;
    ASSERT_EQ(coresOf(db).size(), 1u);
    EXPECT_EQ(framesOfCore1(db), 8u);
}

// The same notes but other bytes before the cut (byte 250000 changed): not a prefix, another
// core.
TEST(CoreCutZst, ACutCoreWhoseBytesDifferIsAnotherCore) {
    TempDir t;
    auto whole = readFile(kCoreDir + "core");
    auto other = whole.substr(0, 300000);
    other[250000] = static_cast<char>(other[250000] ^ 0x5a);
    std::string raw = t.file("core"), cut = t.file("core.cut");
    writeFile(raw, whole);
    writeFile(cut, other);
    std::string db = t.file("db");
    ASSERT_EQ(run(coreIngestArgs(db, {raw, cut})).status, 0);
    EXPECT_EQ(coresOf(db).size(), 2u);
    // Cut at the same place with the bytes unchanged: the stored core.
    writeFile(t.file("core.cut2"), whole.substr(0, 300000));
    auto r = run(coreIngestArgs(db, {t.file("core.cut2")}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("of which this cut core is a prefix"), std::string::npos) << r.out;
    EXPECT_EQ(coresOf(db).size(), 2u);
}

// Hostile review 148 (MED): data behind the core's end (as its ELF headers state: the last
// segment) are not decompressed; the core is the raw core's bytes, so the two are one core.
TEST(CoreCutZst, DataPastTheCoresEndAreNotDecompressedAndTheCoreIsTheRawOne) {
    TempDir t;
    auto whole = readFile(kCoreDir + "core");
    std::string zst = t.file(kZstName), raw = t.file("core");
    writeFile(zst, zstdCompress(whole + std::string(64u << 20, '\xab')));
    writeFile(raw, whole);
    std::string db = t.file("db");
    auto r = run(coreIngestArgs(db, {zst}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(zst + ": zstd data go on past the core's end (byte 462848, as its ELF "
                               "headers state): not decompressed"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(framesOfCore1(db), 8u);
    auto c = coresOf(db);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_NE(c[0].value("note", "").find("past the core's end"), std::string::npos) << c[0];
    r = run(coreIngestArgs(db, {raw}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(raw + ": core already stored as core 1 from " + zst), std::string::npos)
        << r.out;
    EXPECT_EQ(coresOf(db).size(), 1u);
}

// A zstd file may start with a skippable frame (magic 0x184D2A50..5F, a 32-bit size, data):
// libzstd skips it; the core after it is read (it was refused as "not a zstd frame").
TEST(CoreCutZst, ASkippableFrameFirstIsSkipped) {
    TempDir t;
    std::string skip(
        "\x50\x2a\x4d\x18\x08\x00\x00\x00"
        "12345678",
        16);
    std::string zst = t.file(kZstName);
    writeFile(zst, skip + zstdCompress(readFile(kCoreDir + "core")));
    auto r = run(coreIngestArgs(t.file("db"), {zst}));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(zst + ": core 1, 1 thread, 8 frames"), std::string::npos) << r.out;
    auto c = coresOf(t.file("db"));
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0]["si_addr"], "0x8a");
}

}  // namespace
}  // namespace gpufault::testing
