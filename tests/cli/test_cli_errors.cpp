// Bad input and exit codes through the built binary: missing files leave the store untouched,
// junk never crashes, re-ingesting never duplicates, unknown ids exit 1.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kCase013 =
    GPUFAULT_SOURCE_DIR "/tests/data/real/013-comfyui-journal-coredump-interleaved.txt";

TEST(CliErrors, MissingFileExits2AndLeavesStoreUntouched) {
    TempDir t;
    auto first = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kCase013});
    ASSERT_EQ(first.status, 0) << first.err;
    std::string before = run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json"}).out;
    struct stat st1 {};
    ASSERT_EQ(::stat(t.file("db").c_str(), &st1), 0);
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kCase013, t.file("nope.log")});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("nope.log: No such file or directory"), std::string::npos) << r.err;
    EXPECT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json"}).out, before);
}

// Hostile review 154, LOW 1: only a directory named created an empty store and said "0
// incidents" while exiting 2.
TEST(CliErrors, OnlyDirectoriesNamedExit2AndCreateNoStore) {
    TempDir t;
    ASSERT_EQ(::mkdir(t.file("logs").c_str(), 0755), 0);
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("logs")});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(t.file("logs") + ": is a directory: skipped"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
    struct stat st {};
    EXPECT_NE(::stat(t.file("db").c_str(), &st), 0) << "a store was created";
}

TEST(CliErrors, ACharacterDeviceIsRefusedNotReadForever) {
    TempDir t;
    // /dev/null everywhere; /dev/kmsg (root) would block at the end of the ring buffer.
    for (std::string dev : {"/dev/null", "/dev/kmsg"}) {
        if (::access(dev.c_str(), R_OK) != 0) continue;
        auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", dev});
        EXPECT_EQ(r.status, 2) << dev;
        EXPECT_NE(r.err.find(dev + ": a character device, not a file"), std::string::npos)
            << r.err;
    }
}

TEST(CliErrors, AUtf8ByteOrderMarkCostsNoLineAndUtf16IsNamed) {
    TempDir t;
    const std::string lines =
        "[probe] name=X ptr=0x7a5895000000 end=0x7a5895227000\n"
        "Memory access fault by GPU node-1 (Agent handle: 0x59aef28eb440) on address "
        "0x7a5895227000. Reason: Page not present or supervisor privilege.\n";
    writeFile(t.file("bom.log"), "\xEF\xBB\xBF" + lines);
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("bom.log")}).status, 0);
    auto ops = run({GPUFAULT_BIN, "--db", t.file("db"), "query",
                    "SELECT name, ptr FROM operands", "--csv"});
    EXPECT_NE(ops.out.find("X,134520875515904"), std::string::npos) << ops.out;  // 0x7a5895000000
    // The same text as UTF-16 (PowerShell's `>`): every other byte NUL; named, nothing stored.
    std::string u16 = "\xFF\xFE";
    for (char c : lines) u16 += std::string{c, '\0'};
    writeFile(t.file("u16.log"), u16);
    auto r = run({GPUFAULT_BIN, "--db", t.file("db2"), "ingest", t.file("u16.log")});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(t.file("u16.log") + ": UTF-16 text: convert it first"), std::string::npos)
        << r.err;
}

TEST(CliErrors, CompressedInputIsNamedNotReadAsText) {
    TempDir t;
    std::string gz = std::string(GPUFAULT_SOURCE_DIR) +
                     "/tests/data/cores/cuda-h200/gpucore.illegal_probe.nvcudmp.gz";
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", gz});
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(gz + ": gzip-compressed: decompress it first"), std::string::npos)
        << r.err;
}

TEST(CliErrors, ReingestAddsNoDuplicates) {
    TempDir t;
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kCase013}).status, 0);
    auto once = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json"}).out);
    auto again = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kCase013});
    ASSERT_EQ(again.status, 0);
    EXPECT_NE(again.out.find("already ingested"), std::string::npos) << again.out;
    auto twice = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json"}).out);
    EXPECT_EQ(once.size(), twice.size());
    EXPECT_EQ(once.size(), 2u);
}

TEST(CliErrors, JunkEmptyAndNulInputDoNotCrash) {
    TempDir t;
    std::string junk;
    for (int i = 0; i < 100000; ++i) junk += static_cast<char>((i * 7919) & 0xff);
    writeFile(t.file("junk.bin"), junk);
    writeFile(t.file("empty.log"), "");
    writeFile(t.file("nul.log"),
              std::string(5000, '\0') +
                  "\nMemory access fault by GPU node-1 (Agent handle: 0x1) on address 0x1000. "
                  "Reason: Unknown.\n");
    std::string longLine(3 << 20, 'x');
    writeFile(t.file("long.log"),
              longLine +
                  "\nMemory access fault by GPU node-2 (Agent handle: 0x1) on address 0x2000. "
                  "Reason: Unknown.\n");
    auto r = run({GPUFAULT_BIN,
                  "--db",
                  t.file("db"),
                  "ingest",
                  t.file("junk.bin"),
                  t.file("empty.log"),
                  t.file("nul.log"),
                  t.file("long.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    auto ev = parseJsonLines(
        run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json", "--kind", "rocr_memory_fault"})
            .out);
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0]["address"], "0x1000");
    EXPECT_EQ(ev[1]["address"], "0x2000");
    EXPECT_EQ(ev[1]["line"], 2);
    auto w = run({GPUFAULT_BIN, "--db", t.file("db"), "query", "SELECT message FROM warnings"});
    EXPECT_NE(w.out.find("parsed and stored cut to 1048576 bytes; a record past them is not read"),
              std::string::npos)
        << w.out;
    // A record on an over-long line carries the flag.
    std::string tail(2 << 20, 'y');
    writeFile(t.file("longfault.log"),
              tail +
                  " Memory access fault by GPU node-3 (Agent handle: 0x1) on address 0x3000. "
                  "Reason: Unknown.\n" +
                  "Memory access fault by GPU node-4 (Agent handle: 0x1) on address 0x4000. "
                  "Reason: Unknown." +
                  std::string(2 << 20, ' ') + "\n");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db2"), "ingest", t.file("longfault.log")}).status,
              0);
    auto lf = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db2"), "events", "--json"}).out);
    ASSERT_EQ(lf.size(), 1u);  // the first fault lies beyond the 1 MiB kept of line 1
    EXPECT_EQ(lf[0]["address"], "0x4000");
    EXPECT_EQ(lf[0]["attrs"]["truncated"], "1");
}

TEST(CliErrors, ExitCodes) {
    TempDir t;
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kCase013}).status, 0);
    EXPECT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "show", "99"}).status, 1);
    EXPECT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "show", "1"}).status, 0);
    EXPECT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--kind", "nvidia_xid"}).status,
              0);
    auto bogus = run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--kind", "bogus"});
    EXPECT_EQ(bogus.status, 2);
    // The message lists the kinds there are, first to last.
    EXPECT_NE(bogus.err.find("(kinds: amdgpu_page_fault, rocr_memory_fault,"), std::string::npos)
        << bogus.err;
    EXPECT_NE(bogus.err.find(", coredump)"), std::string::npos) << bogus.err;
    EXPECT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "frobnicate"}).status, 2);
    EXPECT_EQ(run({GPUFAULT_BIN, "--db", t.file("missing.db"), "events"}).status, 2);
    auto q = run({GPUFAULT_BIN, "--db", t.file("db"), "query", "DELETE FROM evidence"});
    EXPECT_EQ(q.status, 2);
    EXPECT_NE(q.err.find("would write"), std::string::npos) << q.err;
    auto unwritable = run({GPUFAULT_BIN, "--db", "/proc/gpufault.db", "ingest", kCase013});
    EXPECT_EQ(unwritable.status, 2);
    EXPECT_NE(unwritable.err.find("--db"), std::string::npos) << unwritable.err;
}

}  // namespace
}  // namespace gpufault::testing

namespace gpufault::testing {
namespace {

TEST(CliIngest, StdinAndSourceFilter) {
    TempDir t;
    std::string sh =
        std::string("exec ") + GPUFAULT_BIN + " --db " + t.file("db") + " ingest - < " + kCase013;
    auto r = run({"/bin/sh", "-c", sh});
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kCase013}).status, 0);
    auto fromStdin = parseJsonLines(
        run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json", "--source", "-"}).out);
    auto fromFile = parseJsonLines(
        run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json", "--source", kCase013}).out);
    ASSERT_EQ(fromStdin.size(), 2u);
    ASSERT_EQ(fromFile.size(), 2u);
    EXPECT_EQ(fromStdin[0]["address"], fromFile[0]["address"]);
    EXPECT_EQ(fromStdin[0]["source"], "-#1");  // each `ingest -` a stream of its own
}

}  // namespace
}  // namespace gpufault::testing

namespace gpufault::testing {
namespace {

TEST(CliHostile, QueryRefusesWritesAndRunaways) {
    TempDir t;
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kCase013}).status, 0);
    auto vac = run(
        {GPUFAULT_BIN, "--db", t.file("db"), "query", "VACUUM INTO '" + t.file("copy.db") + "'"});
    EXPECT_EQ(vac.status, 2);
    EXPECT_NE(vac.err.find("would write"), std::string::npos) << vac.err;
    EXPECT_TRUE(readFile(t.file("copy.db")).empty());
    auto two = run({GPUFAULT_BIN, "--db", t.file("db"), "query", "SELECT 1; SELECT 2"});
    EXPECT_EQ(two.status, 2);
    // fts3_tokenizer('simple') would print the address of a module inside the SQLite library.
    auto ptr =
        run({GPUFAULT_BIN, "--db", t.file("db"), "query", "SELECT fts3_tokenizer('simple')"});
    EXPECT_EQ(ptr.status, 2);
    EXPECT_NE(ptr.err.find("not authorized"), std::string::npos) << ptr.err;
    EXPECT_TRUE(ptr.out.empty()) << ptr.out;
    auto slow = run(
        {GPUFAULT_BIN,
         "--db",
         t.file("db"),
         "query",
         "--timeout",
         "0.3",
         "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"},
        20);
    EXPECT_EQ(slow.status, 2);
    EXPECT_NE(slow.err.find("interrupted"), std::string::npos) << slow.err;
}

// A join's repeated column names (`e.id, o.id`) keep every value in --json: the later ones
// under `name:2` … (hostile review 16, i2 M5); the table and CSV keep the names as given.
TEST(CliQuery, JsonKeepsRepeatedColumnNames) {
    TempDir t;
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "-q", kCase013}).status, 0);
    auto q = run({GPUFAULT_BIN,
                  "--db",
                  t.file("db"),
                  "query",
                  "--json",
                  "SELECT 1 AS id, 2 AS id, 3 AS \"id:2\", 4 AS id"});
    ASSERT_EQ(q.status, 0) << q.err;
    EXPECT_EQ(q.out, "{\"id\":1,\"id:2\":3,\"id:3\":2,\"id:4\":4}\n");
    EXPECT_NE(q.err.find("column name id repeats: its value is under \"id:3\""),
              std::string::npos)
        << q.err;
}

TEST(CliHostile, TerminalEscapesInLogsAreNeutralised) {
    TempDir t;
    writeFile(t.file("esc.log"),
              "[ 1.0] e\x1b]0;pwned\x07\x1b[2J[1]: segfault at 10 ip 1 sp 2 error 4\n");
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("esc.log")}).status, 0);
    for (const char* cmd : {"show", "report"}) {
        auto r = run({GPUFAULT_BIN, "--db", t.file("db"), cmd, "1"});
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << cmd;
        EXPECT_NE(r.out.find("\\x1b]0;pwned"), std::string::npos) << r.out;
    }
    auto ev = run({GPUFAULT_BIN, "--db", t.file("db"), "events"});
    EXPECT_EQ(ev.out.find('\x1b'), std::string::npos);
}

// Error messages quoted the user's arguments raw (hostile review 16, i2): an id, a store path or
// a query holding ESC drove the terminal of whoever read the error.
TEST(CliHostile, ArgumentsQuotedInErrorsAreNeutralised) {
    TempDir t;
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "-q", kCase013}).status, 0);
    struct Case {
        std::vector<std::string> args;
        std::string shown;
    };
    const Case cases[] = {
        {{"--db", t.file("db"), "show", "1\x1b[31mX"}, "id 1\\x1b[31mX"},
        {{"--db", t.file("nope") + "/\x1b[2J.db", "events"}, "/\\x1b[2J.db"},
        {{"--db", t.file("db"), "query", "select \x1b[2J"}, "\"\\x1b\""},
        {{"--db", t.file("db"), "ingest", t.file("\x1b]0;t\x07.log")}, "\\x1b]0;t\\x07.log"},
        {{"--db", t.file("db"), "\x1b]0;t\x07"}, "unknown command '\\x1b]0;t\\x07'"},
    };
    for (const auto& c : cases) {
        std::vector<std::string> argv{GPUFAULT_BIN};
        argv.insert(argv.end(), c.args.begin(), c.args.end());
        auto r = run(argv);
        EXPECT_NE(r.status, 0) << c.args.back();
        EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(c.shown), std::string::npos) << r.err;
    }
}

TEST(CliHostile, FifoIsReadNotProbed) {
    TempDir t;
    std::string fifo = t.file("fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::string sh = "(sleep 0.3; cat '" + std::string(kCase013) + "' > '" + fifo + "') & exec " +
                     GPUFAULT_BIN + " --db " + t.file("db") + " ingest " + fifo;
    auto r = run({"/bin/sh", "-c", sh}, 20);
    ASSERT_EQ(r.status, 0) << r.err;
    auto ev = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json"}).out);
    EXPECT_EQ(ev.size(), 2u);
}

/// The line of `help` that describes `option` ("" when none does).
std::string helpLine(const std::string& help, const std::string& option) {
    size_t at = help.find("  " + option + " ");
    if (at == std::string::npos) return "";
    size_t end = help.find('\n', at);
    return help.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// `--help` shows each option's default (`=64`, CLI11's form); `--version` answers and the man page
// documents it.
TEST(CliErrors, HelpShowsDefaultsAndVersionIsDocumented) {
    auto ingest = run({GPUFAULT_BIN, "ingest", "--help"});
    EXPECT_EQ(ingest.status, 0) << ingest.err;
    EXPECT_NE(helpLine(ingest.out, "--window").find("=64"), std::string::npos) << ingest.out;
    EXPECT_NE(helpLine(ingest.out, "--unwind-seconds").find("=60"), std::string::npos)
        << ingest.out;
    EXPECT_NE(helpLine(ingest.out, "--max-unpacked-mib").find("=16384"), std::string::npos)
        << ingest.out;
    auto show = run({GPUFAULT_BIN, "show", "--help"});
    EXPECT_NE(helpLine(show.out, "--dispatches").find("=16"), std::string::npos) << show.out;
    auto report = run({GPUFAULT_BIN, "report", "--help"});
    EXPECT_NE(helpLine(report.out, "--format").find("=md"), std::string::npos) << report.out;
    auto query = run({GPUFAULT_BIN, "query", "--help"});
    EXPECT_NE(helpLine(query.out, "--timeout").find("=60"), std::string::npos) << query.out;
    auto codeobj = run({GPUFAULT_BIN, "codeobj", "--help"});
    EXPECT_NE(helpLine(codeobj.out, "--max-decompressed").find("=1073741824"), std::string::npos)
        << codeobj.out;

    auto v = run({GPUFAULT_BIN, "--version"});
    EXPECT_EQ(v.status, 0);
    ASSERT_EQ(v.out.rfind("gpufault ", 0), 0u) << v.out;
    std::string man = readFile(GPUFAULT_SOURCE_DIR "/packaging/man/gpufault.1");
    EXPECT_NE(man.find(".B \\-\\-version\n"), std::string::npos);
    EXPECT_NE(man.find("\\fB\\-\\-version\\fR"), std::string::npos);  // in the synopsis
}

}  // namespace
}  // namespace gpufault::testing
