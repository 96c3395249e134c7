// The fixture core (tests/data/cores/README.md) read for real: libdwfl in the limited child,
// with and without the build-id tree; truncated and damaged copies.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "collectors/coredump/core_reader.h"
#include "tests/support/process.h"

namespace gpufault::coredump {
namespace {

std::string data(const std::string& name) {
    const char* d = std::getenv("GPUFAULT_TEST_DATA");
    return std::string(d ? d : "tests/data") + "/cores/" + name;
}

constexpr const char* kLibBuildId = "3d7e219e203cde2a23bc8764309cc2c58c95316f";

ReadOptions symbolized() {
    ReadOptions o;
    o.unwind.exe = data("crashmain");
    o.unwind.debuginfo_path = {data("buildid")};
    return o;
}

TEST(Unwind, FixtureCoreNotesAndSiginfo) {
    auto r = readCore(data("core"));
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->layout.kind, CoreKind::Cpu);
    const auto& n = r->layout.notes;
    EXPECT_EQ(n.pid, 14046);
    EXPECT_EQ(n.comm, "crashmain");
    EXPECT_EQ(n.tids, std::vector<int64_t>{14046});
    ASSERT_TRUE(n.siginfo);
    EXPECT_EQ(n.siginfo->signo, 11);  // SIGSEGV
    EXPECT_EQ(sigCodeName(11, n.siginfo->code), "SEGV_MAPERR");
    EXPECT_EQ(n.siginfo->addr, 0x8au);
    EXPECT_EQ(n.files.size(), 20u);
    EXPECT_EQ(n.files[10].path, "/tmp/crashfixture/libcrashlib.so");
    EXPECT_EQ(n.files[10].start, 0x7f5eb5478000u);
    EXPECT_TRUE(r->runtimes.empty());
}

TEST(Unwind, WithBuildIdTreeFramesHaveSymbolsAndLines) {
    auto r = readCore(data("core"), symbolized());
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_TRUE(r->stack);
    ASSERT_EQ(r->stack->threads.size(), 1u);
    const auto& t = r->stack->threads[0];
    EXPECT_TRUE(t.crashed);
    EXPECT_EQ(t.tid, 14046);
    ASSERT_GE(t.frames.size(), 6u);
    struct Want {
        uint64_t pc, offset;
        const char* module;
        const char* symbol;
        const char* file;
        int line;
    };
    const Want want[] = {
        {0x7f5eb547916e,
         0x116e,
         "libcrashlib.so",
         "fakeamd::Symbol::getDeviceKernel(int) const",
         "./crashlib.cpp",
         13},
        {0x7f5eb547919b,
         0x119b,
         "libcrashlib.so",
         "(anonymous namespace)::ihip_launch_kernel_like(fakeamd::Symbol*, int)",
         "./crashlib.cpp",
         19},
        {0x7f5eb54791d6, 0x11d6, "libcrashlib.so", "fake_launch_kernel", "./crashlib.cpp", 27},
        {0x5628408d5178, 0x1178, "crashmain", "run_benchmark(int)", "./crashmain.cpp", 6},
        {0x5628408d51b1, 0x11b1, "crashmain", "main", "./crashmain.cpp", 12},
    };
    for (size_t i = 0; i < std::size(want); ++i) {
        const auto& f = t.frames[i];
        SCOPED_TRACE(i);
        EXPECT_EQ(f.pc, want[i].pc);
        EXPECT_EQ(f.activation, i == 0);
        EXPECT_EQ(f.module_offset, want[i].offset);
        ASSERT_TRUE(f.module);
        EXPECT_EQ(std::filesystem::path(*f.module).filename(), want[i].module);
        EXPECT_EQ(f.symbol, want[i].symbol);
        EXPECT_EQ(f.file, want[i].file);
        EXPECT_EQ(f.line, want[i].line);
    }
    EXPECT_EQ(t.frames[0].build_id, kLibBuildId);
    EXPECT_EQ(t.frames[0].symbol_offset, 0x54u);  // gdb: getDeviceKernel+84
    EXPECT_EQ(t.frames[1].symbol_offset, 0x20u);  // the return address, as gdb's frame #1 shows
    EXPECT_EQ(t.frames[3].build_id, "f3fd0fa19b387315a62730e7781520419a4ece0f");
    EXPECT_TRUE(r->stack->modules_without_file.empty());
    // Build-ids known: module + offset, symbols not hashed (signature.h, frameKey).
    EXPECT_EQ(r->signature.keys.front(), "libcrashlib.so+0x116e");
    EXPECT_EQ(r->signature.keys.size(), 5u);
    EXPECT_EQ(r->signature.keys.back(), "crashmain+0x11b1");
}

TEST(Unwind, MissingLibraryGivesBuildIdAndOffsetAndGoesOn) {
    auto r = readCore(data("core"));
    ASSERT_TRUE(r) << r.error().message;
    const auto& t = r->stack->threads.at(0);
    ASSERT_GE(t.frames.size(), 6u);  // unwinding continues past the unnamed frames to libc
    const uint64_t offsets[] = {0x116e, 0x119b, 0x11d6};
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_FALSE(t.frames[i].symbol);
        EXPECT_FALSE(t.frames[i].line);
        EXPECT_EQ(t.frames[i].build_id, kLibBuildId);
        EXPECT_EQ(t.frames[i].module_offset, offsets[i]);
        EXPECT_EQ(t.frames[i].module, "/tmp/crashfixture/libcrashlib.so");
    }
    EXPECT_EQ(describeFrame(t.frames[0]),
              std::string("n/a (libcrashlib.so + 0x116e) [") + kLibBuildId + "]");
    EXPECT_NE(std::find(r->stack->modules_without_file.begin(),
                        r->stack->modules_without_file.end(),
                        "/tmp/crashfixture/libcrashlib.so"),
              r->stack->modules_without_file.end());
    EXPECT_EQ(r->signature.keys.front(), "libcrashlib.so+0x116e");
}

TEST(Unwind, SignatureIsTheSameForTwoRuns) {
    auto a = readCore(data("core"), symbolized());
    auto b = readCore(data("core"), symbolized());
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->signature.hash, b->signature.hash);
    EXPECT_EQ(a->signature.hash.size(), 16u);
    auto c = readCore(data("core"));
    auto d = readCore(data("core"));
    ASSERT_TRUE(c && d);
    EXPECT_EQ(c->signature.hash, d->signature.hash);
    EXPECT_EQ(a->signature.hash, c->signature.hash);  // symbols or not: the same crash
}

TEST(Unwind, SignatureIsTheSameWithAndWithoutDebuginfo) {
    // The fixture core read four ways: the library gone (build-id + offset), its stripped copy
    // (.dynsym only), the stripped copy with its separate debug file, and the whole library.
    testing::TempDir t;
    std::string dir = t.file("strip/.build-id/3d/");
    std::filesystem::create_directories(dir);
    std::string rest = std::string(kLibBuildId).substr(2);
    testing::writeFile(dir + rest, testing::readFile(data("libcrashlib.stripped.so")));
    ReadOptions stripped;
    stripped.unwind.debuginfo_path = {t.file("strip")};
    auto bare = readCore(data("core"));
    auto dyn = readCore(data("core"), stripped);
    testing::writeFile(dir + rest + ".debug", testing::readFile(data("libcrashlib.so.debug")));
    auto split = readCore(data("core"), stripped);
    auto full = readCore(data("core"), symbolized());
    ASSERT_TRUE(bare && dyn && split && full);
    auto f0 = [](const CoreReport& r) -> const Frame& {
        return r.stack->threads.at(0).frames.at(0);
    };
    EXPECT_FALSE(f0(*bare).symbol);
    EXPECT_FALSE(f0(*dyn).line);  // no DWARF in the stripped copy
    EXPECT_EQ(f0(*split).symbol, "fakeamd::Symbol::getDeviceKernel(int) const");
    EXPECT_EQ(f0(*split).line, 13);
    EXPECT_EQ(f0(*full).line, 13);
    EXPECT_EQ(bare->signature.hash.size(), 16u);
    for (const auto* r : {&*dyn, &*split, &*full}) {
        EXPECT_EQ(r->signature.keys, bare->signature.keys);
        EXPECT_EQ(r->signature.hash, bare->signature.hash);
    }
}

// A core cut inside its headers or notes is an error naming the file; one cut after them is
// read from its notes (pid, signal), marked truncated, with the frames its memory still holds.
TEST(Unwind, TruncatedCoreIsAClearErrorOrReadFromItsNotes) {
    testing::TempDir t;
    auto whole = testing::readFile(data("core"));
    ASSERT_EQ(whole.size(), 462848u);
    for (size_t cut : {size_t{100}, size_t{3000}}) {
        auto path = t.file("core.cut");
        testing::writeFile(path, whole.substr(0, cut));
        auto r = readCore(path);
        ASSERT_FALSE(r) << cut;
        EXPECT_EQ(r.error().message.rfind(path + ": ", 0), 0u) << r.error().message;
        EXPECT_NE(r.error().message.find("truncated"), std::string::npos) << r.error().message;
    }
    for (size_t cut : {whole.size() / 2, whole.size() - 1}) {
        auto path = t.file("core.cut");
        testing::writeFile(path, whole.substr(0, cut));
        auto r = readCore(path);
        ASSERT_TRUE(r) << cut << ": " << r.error().message;
        EXPECT_EQ(r->layout.truncated,
                  fmt::format("truncated: its segments need 462848 bytes, the file has {}", cut));
        EXPECT_EQ(r->layout.notes.pid, 14046);
        ASSERT_TRUE(r->layout.notes.siginfo);
        EXPECT_EQ(r->layout.notes.siginfo->addr, 0x8au);
    }
}

TEST(Unwind, DamagedMemoryNeverCrashesOrHangs) {
    testing::TempDir t;
    auto whole = testing::readFile(data("core"));
    // Keep the headers and notes, fill every memory segment with 0xff or with a pattern.
    for (char fill : {'\xff', '\x41', '\0'}) {
        auto bad = whole;
        for (size_t i = 0x2000; i < bad.size(); ++i) bad[i] = fill;
        auto path = t.file("core.bad");
        testing::writeFile(path, bad);
        ReadOptions o;
        o.limits.seconds = 20;
        auto r = readCore(path, o);
        if (r) {
            ASSERT_TRUE(r->stack);
            EXPECT_EQ(r->layout.notes.siginfo->addr, 0x8au);
        } else {
            EXPECT_EQ(r.error().message.rfind(path + ": ", 0), 0u);
        }
    }
    auto junk = t.file("junk");
    testing::writeFile(junk,
                       std::string("\x7f"
                                   "ELF\x02\x01\x01",
                                   7) +
                           std::string(2000, '\x04'));
    auto r = readCore(junk);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message.rfind(junk + ": ", 0), 0u);
}

TEST(Unwind, DebuginfoPathKeepsTheDefaults) {
    EXPECT_EQ(debuginfoSearchPath({}), ":.debug:/usr/lib/debug");
    EXPECT_EQ(debuginfoSearchPath({"/srv/dbg:/opt/x"}), "/srv/dbg:/opt/x::.debug:/usr/lib/debug");
    auto rel = debuginfoSearchPath({"buildid"});
    EXPECT_EQ(rel,
              (std::filesystem::current_path() / "buildid").string() + "::.debug:/usr/lib/debug");
}

}  // namespace
}  // namespace gpufault::coredump
