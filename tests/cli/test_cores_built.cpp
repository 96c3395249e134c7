// Cores of a program built with the tests (tests/data/cores/crashlib.cpp and crashmain.cpp,
// tests/CMakeLists.txt): a function in a shared library reads nullptr + 0x8a. The program runs
// with RLIMIT_CORE raised (core_pattern `core`), its core is ingested, and gpufault's stack of
// the crashing thread is compared frame by frame with eu-stack's of the same core; then the
// library is removed and the same core gives build-id + offset frames.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/core_run.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kSrc = GPUFAULT_SOURCE_DIR "/tests/data/cores/";

/// One frame as eu-stack -a -m -s -b prints it.
struct EuFrame {
    uint64_t pc = 0;
    bool caller = false;  ///< `- 1`: eu-stack printed pc - 1's symbol and offset
    std::string symbol, module, build_id, file;
    uint64_t offset = 0;
    int line = 0;
};

/// The frames of thread `tid` in eu-stack's output (test code: std::regex is fine here).
std::vector<EuFrame> euFrames(const std::string& out, int64_t tid) {
    std::vector<EuFrame> frames;
    std::istringstream in(out);
    std::string l;
    bool mine = false;
    static const std::regex head(R"(^#\d+\s+0x([0-9a-f]+)( - 1)?\s+(.*) - (\S+)$)");
    static const std::regex where(R"(^\s+\[([0-9a-f]+)\]@0x[0-9a-f]+\+0x([0-9a-f]+)$)");
    static const std::regex src(R"(^\s+([^:\s]+):(\d+)(:\d+)?$)");
    std::smatch m;
    while (std::getline(in, l)) {
        if (l.starts_with("TID ")) {
            mine = l == "TID " + std::to_string(tid) + ":";
            continue;
        }
        if (!mine) continue;
        if (std::regex_match(l, m, head)) {
            EuFrame f;
            f.pc = std::stoull(m[1].str(), nullptr, 16);
            f.caller = m[2].matched;
            f.symbol = m[3].str();
            f.module = m[4].str();
            frames.push_back(f);
        } else if (!frames.empty() && std::regex_match(l, m, where)) {
            frames.back().build_id = m[1].str();
            frames.back().offset = std::stoull(m[2].str(), nullptr, 16);
        } else if (!frames.empty() && std::regex_match(l, m, src)) {
            frames.back().file = m[1].str();
            frames.back().line = std::stoi(m[2].str());
        }
    }
    return frames;
}

/// The 1-based line of `needle` in `file`.
int lineOf(const std::string& file, const std::string& needle) {
    std::istringstream in(readFile(file));
    std::string l;
    for (int n = 1; std::getline(in, l); ++n)
        if (l.find(needle) != std::string::npos) return n;
    return 0;
}

uint64_t hexOf(const nlohmann::json& j) {
    return j.is_string() ? std::stoull(j.get<std::string>(), nullptr, 16) : 0;
}

/// The crashing thread of core 1 in `db`, as `gpufault stack 1 --json` gives it.
nlohmann::json crashedStack(const TempDir& t, const std::string& db, nlohmann::json* core) {
    auto s = run({GPUFAULT_BIN, "--db", t.file(db), "stack", "1", "--json"});
    EXPECT_EQ(s.status, 0) << s.err;
    auto j = nlohmann::json::parse(s.out.substr(0, s.out.find('\n')), nullptr, false);
    if (core) *core = j;
    if (!j.is_object()) return {};
    for (const auto& st : j["stacks"])
        if (st["crashed"] == true) return st;
    return {};
}

TEST(BuiltCore, ALibraryNullReadMatchesEuStackFrameByFrame) {
    TempDir t;
    // Run from copies in the test's directory ($ORIGIN runpath), so the library can go later.
    for (const char* f : {BUILT_CRASHMAIN, BUILT_CRASHLIB})
        std::filesystem::copy_file(f, t.file(std::filesystem::path(f).filename()));
    std::string exe = t.file(std::filesystem::path(BUILT_CRASHMAIN).filename());
    std::string lib = t.file(std::filesystem::path(BUILT_CRASHLIB).filename());
    std::filesystem::permissions(exe, std::filesystem::perms::owner_all);
    auto crashed = runWithCores(t.path(), {exe}, {"PATH=/usr/bin:/bin"});
    ASSERT_TRUE(WIFSIGNALED(crashed.status) && WTERMSIG(crashed.status) == SIGSEGV)
        << crashed.status;
    std::string core = crashed.coreIn(t.path());
    if (core.empty()) GTEST_SKIP() << "1 test skipped: no core written (core_pattern is not 'core')";

    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", core});
    ASSERT_EQ(r.status, 0) << r.err;
    nlohmann::json c;
    auto mine = crashedStack(t, "db", &c);
    EXPECT_EQ(c["si_addr"], "0x8a");
    EXPECT_EQ(c["signal"], 11);
    EXPECT_EQ(c["pid"], crashed.pid);
    ASSERT_TRUE(mine.is_object()) << c.dump();
    const auto& frames = mine["frames"];
    ASSERT_GE(frames.size(), 5u) << mine.dump();

    // Source lines, from the sources themselves.
    const int read = lineOf(kSrc + "crashlib.cpp", "return *p + device;");
    const int call = lineOf(kSrc + "crashlib.cpp", "return sym->getDeviceKernel(device);");
    ASSERT_GT(read, 0);
    EXPECT_EQ(frames[0]["symbol"], "fakeamd::Symbol::getDeviceKernel(int) const");
    EXPECT_EQ(frames[0]["line"], read);
    EXPECT_EQ(frames[1]["line"], call);
    EXPECT_EQ(frames[3]["symbol"], "run_benchmark(int)");
    EXPECT_EQ(frames[4]["symbol"], "main");

    auto eu = run({"/usr/bin/eu-stack", "-a", "-m", "-s", "-b", "--core", core, "-e", exe});
    ASSERT_NE(eu.status, 2) << eu.err;  // 1: some frames had errors (libc's end), still shown
    auto theirs = euFrames(eu.out, crashed.pid);
    ASSERT_GE(theirs.size(), 5u) << eu.out;
    // The five frames of the program: same pc, symbol, module, build-id, offset, line. Caller
    // frames: both name pc - 1's symbol and line; gpufault prints the return address and its
    // offset (systemd-coredump's convention), eu-stack `-b` pc - 1's offset.
    for (size_t i = 0; i < 5; ++i) {
        SCOPED_TRACE("frame " + std::to_string(i));
        const auto& f = frames[i];
        const auto& e = theirs[i];
        EXPECT_EQ(hexOf(f["pc"]), e.pc);
        EXPECT_EQ(e.caller, i > 0);
        EXPECT_EQ(f["symbol"], e.symbol);
        EXPECT_EQ(std::filesystem::path(f["module"].get<std::string>()).filename(), e.module);
        EXPECT_EQ(f["build_id"], e.build_id);
        EXPECT_EQ(hexOf(f["module_offset"]), e.offset + (i > 0 ? 1 : 0));
        EXPECT_EQ(f["line"], e.line);
        EXPECT_EQ(std::filesystem::path(f["file"].get<std::string>()).filename(),
                  std::filesystem::path(e.file).filename());
    }

    // The library removed: its frames keep build-id + offset, unwinding goes on to main.
    std::filesystem::remove(lib);
    auto bare = run({GPUFAULT_BIN, "--db", t.file("db2"), "ingest", core});
    ASSERT_EQ(bare.status, 0) << bare.err;
    auto gone = crashedStack(t, "db2", nullptr);
    ASSERT_TRUE(gone.is_object());
    ASSERT_GE(gone["frames"].size(), 5u) << gone.dump();
    for (size_t i = 0; i < 3; ++i) {
        SCOPED_TRACE("frame " + std::to_string(i));
        EXPECT_TRUE(gone["frames"][i]["symbol"].is_null());
        EXPECT_EQ(gone["frames"][i]["build_id"], frames[i]["build_id"]);
        EXPECT_EQ(gone["frames"][i]["module_offset"], frames[i]["module_offset"]);
    }
    EXPECT_EQ(gone["frames"][4]["symbol"], "main");
}

}  // namespace
}  // namespace gpufault::testing
