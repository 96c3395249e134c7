// `--exe` for a core that keeps no build-id of its executable (dumped with coredump_filter 0x03,
// tests/data/cores/nobuildid): the file is checked against the core's file mappings, used with a
// warning when they fit, refused when they do not (hostile4b F4).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/core_ingest.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kDir = kCoreDir + "nobuildid/";

ProcessResult ingestWithExe(const TempDir& t, const std::string& exe) {
    return run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "--exe", exe, kDir + "core"});
}

TEST(CliCoresExe, AFittingExeIsUsedButMarkedUnverified) {
    TempDir t;
    auto r = ingestWithExe(t, kDir + "nbmain");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("--exe " + kDir +
                         "nbmain used unverified: the core keeps no build-id of its executable "
                         "/tmp/nbfixture/nbmain (its 5 file mappings fit the file's segments)"),
              std::string::npos)
        << r.err;
    auto w = run({GPUFAULT_BIN, "--db", t.file("db"), "query",
                  "select count(*) from warnings where message like '%used unverified%'"});
    ASSERT_EQ(w.status, 0) << w.err;
    EXPECT_NE(w.out.find("\n1\n"), std::string::npos) << w.out;
    auto s = run({GPUFAULT_BIN, "--db", t.file("db"), "stack", "1"});
    ASSERT_EQ(s.status, 0) << s.err;
    EXPECT_NE(s.out.find("read_handle"), std::string::npos) << s.out;
}

// gpufault itself has more and larger segments than nbmain's five mappings.
TEST(CliCoresExe, AnExeWhoseSegmentsDoNotFitTheMappingsIsRefused) {
    TempDir t;
    auto r = ingestWithExe(t, GPUFAULT_BIN);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(std::string("--exe ") + GPUFAULT_BIN +
                         " does not fit the core's executable /tmp/nbfixture/nbmain: the core maps "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("which none of its segments holds: not used"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("used unverified"), std::string::npos) << r.err;
}

// The limit: another build with the same page layout cannot be told apart without a build-id;
// it is used, and the warning says so.
TEST(CliCoresExe, AnotherBuildOfTheSameLayoutIsOnlyMarkedUnverified) {
    TempDir t;
    auto r = ingestWithExe(t, kDir + "nbmain.other");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("nbmain.other used unverified"), std::string::npos) << r.err;
    // `stack` and `show` say so beside the exe, with the path the core names (hostile9c F3).
    const std::string line = "exe        " + kDir +
                             "nbmain.other (unverified: the core keeps no build-id; it names "
                             "/tmp/nbfixture/nbmain)";
    for (const char* cmd : {"stack", "show"}) {
        auto s = run({GPUFAULT_BIN, "--db", t.file("db"), cmd, "1"});
        ASSERT_EQ(s.status, 0) << s.err;
        EXPECT_NE(s.out.find(line), std::string::npos) << cmd << "\n" << s.out;
    }
}

// Hostile review 17, i4 H1: without --exe, a core that keeps no build-id of its executable had
// every frame a bare address (`n/a (n/a)`) and a signature of raw addresses (two runs of one
// crash: two signatures under ASLR), though the file sat at the path the core names. That file is
// now checked and used as --exe is.
//
// Hostile review 17 (re-check), i4 H4: with no file at that path, libdwfl reports no module at
// all (the core keeps no ELF header): every frame was `n/a (n/a)` and the signature held raw
// addresses, another under each ASLR layout. The core's file mappings still name them. (One
// test: the two cases need /tmp/nbfixture/nbmain absent, then present.)
TEST(CliCoresExe, TheFileAtTheCoresExecutablePathIsUsedWithoutExe) {
    const std::string dir = "/tmp/nbfixture", at = dir + "/nbmain";  // the path the core names
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) {
        TempDir t;
        auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kDir + "core"});
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_NE(r.out.find("3 frames in the crashing thread, top n/a (nbmain + 0x1135)"),
                  std::string::npos)
            << r.out;
        auto s = run({GPUFAULT_BIN, "--db", t.file("db"), "stack", "1"});
        ASSERT_EQ(s.status, 0) << s.err;
        EXPECT_NE(s.out.find("n/a (nbmain + 0x1155)"), std::string::npos) << s.out;
        EXPECT_NE(s.out.find("n/a (libc.so.6 + 0x2724a)"), std::string::npos) << s.out;
    }
    bool made_dir = ::mkdir(dir.c_str(), 0755) == 0;
    bool made_file = ::stat(at.c_str(), &st) != 0;
    if (made_file) writeFile(at, readFile(kDir + "nbmain"));
    TempDir t;
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kDir + "core"});
    if (made_file) ::unlink(at.c_str());
    if (made_dir) ::rmdir(dir.c_str());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("top read_handle (nbmain + 0x1135), stack 10d161d2ea244a4d"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.err.find("the file at the core's executable path /tmp/nbfixture/nbmain used "
                         "unverified: the core keeps no build-id of its executable "
                         "/tmp/nbfixture/nbmain (its 5 file mappings fit the file's segments)"),
              std::string::npos)
        << r.err;
}

TEST(CliCoresExe, ANonElfExeIsRefused) {
    TempDir t;
    auto r = ingestWithExe(t, kDir + "nbmain.c");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("--exe " + kDir + "nbmain.c: not an ELF file: not used"),
              std::string::npos)
        << r.err;
    // Hostile review of issue 4 (MEDIUM 3): a refused --exe is not stored as the executable
    // (cores.exe NULL, so diagnoses do not inventory it); `stack` and `show` say it was refused
    // and the frames did not use it.
    auto c = parseJsonLines(run({GPUFAULT_BIN, "--db", t.file("db"), "cores", "--json"}).out);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_TRUE(c[0]["exe"].is_null()) << c[0].dump();
    const std::string line = "exe        refused: --exe " + kDir +
                             "nbmain.c: not an ELF file: not used (the frames did not use it)";
    for (const char* cmd : {"stack", "show"}) {
        auto s = run({GPUFAULT_BIN, "--db", t.file("db"), cmd, "1"});
        ASSERT_EQ(s.status, 0) << s.err;
        EXPECT_NE(s.out.find(line), std::string::npos) << cmd << "\n" << s.out;
        EXPECT_EQ(s.out.find("exe        " + kDir + "nbmain.c"), std::string::npos) << s.out;
    }
}

}  // namespace
}  // namespace gpufault::testing
