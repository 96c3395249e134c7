// libgpufault-preload.so must never harm the host (hostile review of issue 4, round 4b): a
// program that closes every descriptor and opens a file of its own gets no records in it; two
// runtimes loaded RTLD_LOCAL under different sonames each keep their own callers; a record
// whose stack does not fit keeps its newline; a signal handler that allocates while the thread
// is inside a hooked call is recorded. Real processes under LD_PRELOAD, the records read back
// with the parser gpufault ingest uses.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "collectors/preload/alloc_log.h"
#include "tests/collectors/preload/shim_file.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
namespace al = gpufault::alloclog;

namespace {

/// Runs `argv` with the shim preloaded, recording into `dir` (and `env`, "K=V" each).
ProcessResult runShim(const std::string& dir,
                      std::vector<std::string> argv,
                      const std::vector<std::string>& env = {}) {
    std::vector<std::string> full = {
        "/usr/bin/env", "LD_PRELOAD=" PRELOAD_SHIM, "GPUFAULT_ALLOC_DIR=" + dir};
    full.insert(full.end(), env.begin(), env.end());
    full.insert(full.end(), argv.begin(), argv.end());
    return run(full);
}

/// "KEY ptr=0x… size=N[ owner=X]" lines: KEY → {ptr, size, owner}.
struct Printed {
    uint64_t ptr = 0, size = 0;
    std::string owner;
};
std::multimap<std::string, Printed> printed(const std::string& out) {
    std::multimap<std::string, Printed> m;
    std::istringstream in(out);
    std::string line;
    static const std::regex re(R"(^(\S+) ptr=(0x[0-9a-f]+|\(nil\)) size=(\d+)(?:.* owner=(\w+))?)");
    while (std::getline(in, line)) {
        std::smatch s;
        if (!std::regex_search(line, s, re)) continue;
        uint64_t p = s[2] == "(nil)" ? 0 : std::stoull(s[2], nullptr, 16);
        m.emplace(s[1], Printed{p, std::stoull(s[3]), s[4]});
    }
    return m;
}

/// The only file the shim wrote in `dir` ("" when there is none or several).
std::string onlyFile(const std::string& dir) {
    std::string found;
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().filename().string().starts_with("gpufault-alloc.")) {
            found = e.path().string();
            ++n;
        }
    return n == 1 ? found : "";
}

const al::Allocation* find(const al::Log& log, uint64_t ptr) {
    for (const auto& a : log.allocations)
        if (a.ptr == ptr) return &a;
    return nullptr;
}

}  // namespace

// Finding 1: the shim kept its descriptor in a global; a program that closed every descriptor
// and opened a file got that number, and the shim appended its records to the program's file.
TEST(PreloadHostile, NeverWritesIntoAFileTheProgramOpenedAfterClosingOurDescriptor) {
    TempDir dir;
    std::string victim = dir.file("victim.txt");
    auto r = runShim(dir.path(), {FD_HOST, victim, "close"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("victim fd=3\n"), std::string::npos) << r.out;  // the number reused
    EXPECT_EQ(readFile(victim), "USERDATA1\nUSERDATA2\n");
    EXPECT_EQ(r.err, "");
    // The shim reopened its own file by name and went on recording there.
    auto log = al::parse(readFile(onlyFile(dir.path())));
    EXPECT_TRUE(log.warnings.empty()) << log.warnings.front().message;
    ASSERT_EQ(log.processes.size(), 1u);  // no second `start` record: one recording
    auto p = printed(r.out);
    ASSERT_EQ(p.count("alloc"), 2u) << r.out;
    auto it = p.find("alloc");
    const auto* first = find(log, it->second.ptr);
    const auto* second = find(log, std::next(it)->second.ptr);
    ASSERT_TRUE(first && second) << readFile(onlyFile(dir.path()));
    EXPECT_EQ(first->end - first->ptr, 100u << 10);
    EXPECT_FALSE(first->free_api);
    EXPECT_EQ(second->end - second->ptr, 200u << 10);
    EXPECT_EQ(second->free_api, "hipFree");
}

TEST(PreloadHostile, StopsRecordingWithOneLineWhenItsFileIsGoneToo) {
    TempDir dir;
    std::string victim = dir.file("victim.txt");
    auto r = runShim(dir.path(), {FD_HOST, victim, "unlink"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(readFile(victim), "USERDATA1\nUSERDATA2\n");
    // One line on stderr (two calls after the loss: the second says nothing), no file made.
    EXPECT_TRUE(
        r.err.starts_with("gpufault-preload: the program closed the record file's "
                          "descriptor and the file is gone or replaced: "))
        << r.err;
    EXPECT_NE(r.err.find(": allocation recording stopped for this process\n"), std::string::npos);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(onlyFile(dir.path()), "");
}

// Finding 3: a record longer than its 1536-byte buffer lost its newline, and the next record
// was glued to it (refused: "repeated key 'ptr'"), so the free never met its allocation.
TEST(PreloadHostile, ARecordWhoseFramesDoNotFitKeepsItsNewlineAndWholeFrames) {
    TempDir dir;
    auto r =
        runShim(dir.path(), {FD_HOST, LONG_FRAMES, "deep", "20"}, {"GPUFAULT_ALLOC_FRAMES=16"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    std::string text = readFile(onlyFile(dir.path()));
    ASSERT_TRUE(text.ends_with("\n"));
    std::istringstream in(text);
    std::string line;
    int cutLines = 0;
    std::string libName = std::filesystem::path(LONG_FRAMES).filename().string();
    ASSERT_GT(libName.size(), 190u);
    while (std::getline(in, line)) {
        ASSERT_LE(line.size(), 1535u) << line;
        if (line.find(" alloc ") == std::string::npos && line.find(" free ") == std::string::npos)
            continue;
        auto at = line.find(" stack_cut=");
        if (line.find(" alloc ") == std::string::npos) continue;
        ASSERT_NE(at, std::string::npos) << line;
        ++cutLines;
        int cut = std::stoi(line.substr(at + 11));
        auto stack = line.substr(line.find(" stack=") + 7, at - line.find(" stack=") - 7);
        int frames = 1;
        for (char c : stack) frames += c == ';';
        EXPECT_EQ(frames + cut, 16) << line;  // what was not written is counted
        EXPECT_GE(cut, 1);
        // Only whole frames: each "module+0xoffset", the module's full name.
        std::istringstream fs(stack);
        std::string frame;
        static const std::regex whole(R"(^[^;+ ]+\+0x[0-9a-f]+$)");
        while (std::getline(fs, frame, ';')) {
            EXPECT_TRUE(std::regex_match(frame, whole)) << frame;
            EXPECT_TRUE(frame.starts_with(libName + "+0x")) << frame;
        }
    }
    EXPECT_EQ(cutLines, 2);
    auto log = al::parse(text);
    EXPECT_TRUE(log.warnings.empty()) << log.warnings.front().message;
    auto p = printed(r.out);
    ASSERT_EQ(p.count("alloc"), 2u) << r.out;
    auto it = p.find("alloc");
    const auto* first = find(log, it->second.ptr);
    const auto* second = find(log, std::next(it)->second.ptr);
    ASSERT_TRUE(first && second) << text;
    EXPECT_EQ(first->free_api, "hipFree");  // the free after the long record was read
    EXPECT_EQ(second->end - second->ptr, 2u << 20);
}

// Finding 2: torch and jax wheels each bundle libamdhip64-<hash>.so, loaded RTLD_LOCAL; the
// shim filled one process-wide real function from the first runtime found, so the second
// framework (and even dlsym(second runtime, "hipMalloc")) got the first runtime's memory.
TEST(PreloadHostile, TwoRuntimesLoadedLocallyEachServeTheirOwnCallers) {
    std::vector<std::string> argv = {
        TWO_RUNTIMES_HOST, STANDIN_FW_A, STANDIN_FW_B, STANDIN_RT_A, STANDIN_RT_B};
    auto plain = run(argv);
    ASSERT_EQ(plain.status, 0) << plain.err;
    TempDir dir;
    auto r = runShim(dir.path(), argv);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    for (const auto* out : {&plain.out, &r.out}) {
        auto p = printed(*out);
        ASSERT_EQ(p.size(), 6u) << *out;
        for (const auto& [key, v] : p) {
            EXPECT_EQ(v.owner, key.substr(key.size() - 1)) << key << " in\n" << *out;
            EXPECT_NE(v.ptr, 0u) << key;
        }
    }
    // Each call recorded, with the device its own runtime reports (b's hipGetDevice says 5;
    // the driver's cuCtxGetDevice 2).
    auto log = al::parse(readFile(onlyFile(dir.path())));
    EXPECT_TRUE(log.warnings.empty()) << log.warnings.front().message;
    ASSERT_EQ(log.allocations.size(), 6u);
    const std::map<std::string, std::pair<std::string, int64_t>> want = {
        {"fw-a", {"hipMalloc", 3}},
        {"fw-b", {"hipMalloc", 5}},
        {"dlsym-a", {"hipMalloc", 3}},
        {"dlsym-b", {"hipMalloc", 5}},
        {"driver-a", {"cuMemAlloc_v2", 2}},
        {"driver-b", {"cuMemAlloc_v2", 2}}};
    for (const auto& [key, v] : printed(r.out)) {
        const auto* a = find(log, v.ptr);
        ASSERT_TRUE(a) << key;
        EXPECT_EQ(a->api, want.at(key).first) << key;
        EXPECT_EQ(a->device, want.at(key).second) << key;
        EXPECT_EQ(a->end - a->ptr, v.size) << key;
    }
}

// Finding 4: a signal handler that allocates while its thread is inside a hooked call was not
// recorded (the nesting guard took it for the runtime's own call), and its free neither. (The
// hostile `storm` program — 8 threads, SIGALRM every 0.5 ms — is not a test: it asserts on
// timing; docs/preload.md gives its figures.)
TEST(PreloadHostile, ASignalHandlerAllocatingInsideAHookedCallIsRecorded) {
    TempDir dir;
    auto r = runShim(dir.path(), {FD_HOST, "-", "signal"});
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    auto p = printed(r.out);
    ASSERT_EQ(p.count("handler"), 1u) << r.out;
    auto log = al::parse(readFile(onlyFile(dir.path())));
    EXPECT_TRUE(log.warnings.empty()) << log.warnings.front().message;
    ASSERT_EQ(log.allocations.size(), 2u);
    const auto* inHandler = find(log, p.find("handler")->second.ptr);
    ASSERT_TRUE(inHandler);
    EXPECT_EQ(inHandler->end - inHandler->ptr, 4096u);
    EXPECT_EQ(inHandler->free_api, "hipFree");
    // A nested record: no stack walk and no device asked inside the handler (the interrupted
    // thread may hold the loader's, libunwind's or the runtime's locks).
    EXPECT_EQ(inHandler->stack, "");
    EXPECT_FALSE(inHandler->device);
    const auto* outer = find(log, p.find("alloc")->second.ptr);
    ASSERT_TRUE(outer);
    EXPECT_EQ(outer->end - outer->ptr, 0x5151u);
    EXPECT_EQ(outer->device, 3);
    EXPECT_TRUE(outer->stack.starts_with("gpufault_fd_host+0x")) << outer->stack;
    EXPECT_EQ(log.dropped, 0u);
}

// What the shim writes when it had to drop calls (a signal handler while the thread held the
// shim's lock): the parser counts them and says the recording is incomplete.
TEST(PreloadHostile, ADroppedRecordMakesTheRecordingIncomplete) {
    std::string text =
        "gpufault.alloc 1 start pid=7 ppid=1 wall_us=1 mono_us=1 pidns=5 start_ticks=9 exe=/x\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x1000 size=16 mem=device device=0 rc=0 "
        "wall_us=2 mono_us=2 pid=7 tid=7 pidns=5 start_ticks=9 stack=-\n"
        "gpufault.alloc 1 dropped count=3 wall_us=3 mono_us=3 pid=7 tid=8 pidns=5 "
        "start_ticks=9\n"
        "gpufault.alloc 1 dropped wall_us=4 mono_us=4 pid=7 tid=8\n"
        // hostile9c 6: forged counts are refused, not summed
        "gpufault.alloc 1 dropped count=0 wall_us=5 mono_us=5 pid=7 tid=8\n"
        "gpufault.alloc 1 dropped count=18446744073709551615 wall_us=6 mono_us=6 pid=7 tid=8\n";
    auto log = al::parse(text);
    EXPECT_EQ(log.dropped, 3u);
    EXPECT_EQ(log.allocations.size(), 1u);
    ASSERT_EQ(log.warnings.size(), 4u);
    EXPECT_EQ(log.warnings[2].message, "dropped record with count 0: refused");
    EXPECT_EQ(log.warnings[3].message,
              "dropped record with count 18446744073709551615: refused");
    EXPECT_EQ(log.warnings[0].line, 3u);
    EXPECT_EQ(log.warnings[0].message,
              "3 call(s) of pid 7 not recorded (made in a signal handler while the shim held a "
              "lock): the recording is incomplete, a block whose free was not recorded stays "
              "live");
    EXPECT_EQ(log.warnings[1].message, "dropped record without count");
}

// Review 9c, finding 1: the per-caller cache was keyed by link_map address; after dlclose of
// one framework (and its runtime) and dlopen of another that got the same link_map, a call
// went to the first runtime's unmapped hipMalloc (SIGSEGV). Entries now belong to the loader
// generation they were looked up in.
TEST(PreloadHostile, AFrameworkLoadedAfterAnotherWasClosedReachesItsOwnRuntime) {
    std::vector<std::string> argv = {
        RELOAD_HOST, "reload", STANDIN_FW_A, STANDIN_FW_B, STANDIN_RT_A, STANDIN_RT_B};
    auto plain = run(argv);
    ASSERT_EQ(plain.status, 0) << plain.err;
    TempDir dir;
    auto r = runShim(dir.path(), argv);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    for (const auto* out : {&plain.out, &r.out}) {
        EXPECT_NE(out->find("unloaded-a yes\n"), std::string::npos) << *out;
        auto p = printed(*out);
        ASSERT_EQ(p.count("alloc-a"), 1u) << *out;
        ASSERT_EQ(p.count("alloc-b"), 1u) << *out;
        EXPECT_EQ(p.find("alloc-a")->second.owner, "a") << *out;
        EXPECT_EQ(p.find("alloc-b")->second.owner, "b") << *out;
    }
    // Both recorded, each with its own runtime's device (a's hipGetDevice says 3, b's 5).
    auto log = al::parse(readFile(onlyFile(dir.path())));
    EXPECT_TRUE(log.warnings.empty()) << log.warnings.front().message;
    auto p = printed(r.out);
    const auto* a = find(log, p.find("alloc-a")->second.ptr);
    const auto* b = find(log, p.find("alloc-b")->second.ptr);
    ASSERT_TRUE(a && b) << r.out;
    EXPECT_EQ(a->device, 3);
    EXPECT_EQ(b->device, 5) << r.out;  // "same-link-map yes": the case the review hit
    EXPECT_EQ(b->end - b->ptr, 2u << 20);
}

// Review 9c, finding 2: a thread calling hipMalloc from 40 calling objects (more than the
// cache holds) looked up by handle while holding the shim's lock and waited for the loader's;
// the main thread, in dlopen of a library whose constructor calls hipMalloc, held the
// loader's lock and waited for the shim's: both hung (and SIGTERM stayed blocked). The shim
// now never calls into the loader while holding a lock of its own. A hang is caught by the
// child's timeout (SIGKILL: status 137).
TEST(PreloadHostile, ConstructorsCallingHooksWhileAnotherThreadLooksUpDoNotDeadlock) {
    TempDir dir;
    for (int i = 1; i <= 41; ++i) {
        std::string name = i <= 40 ? "caller" + std::to_string(i) + ".so" : "ctor.so";
        std::filesystem::copy_file(CALLER_LIB, dir.file(name));
    }
    auto r = runShim(dir.path(),
                     {RELOAD_HOST, "ctor-loop", dir.path(), "1000"},
                     {"GPUFAULT_ALLOC_DIR=" + dir.file("none")});  // not recording: hooks only
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(r.out, "done\n");
}
