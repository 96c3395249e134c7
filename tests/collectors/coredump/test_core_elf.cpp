// The pure core reader on cores built in memory: notes, siginfo, NT_FILE, truncation, GPU cores.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <csignal>

#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/gpu_core.h"
#include "tests/collectors/coredump/core_builder.h"

namespace gpufault::coredump {
namespace {

using testing::CoreBuilder;

Result<CoreLayout> layoutOf(const std::string& f) {
    return readCoreLayout(
        [&f](uint64_t off, size_t n) { return off >= f.size() ? std::string() : f.substr(off, n); },
        f.size());
}

CoreBuilder crashCore() {
    CoreBuilder b;
    b.prstatus(4243, SIGSEGV);  // the crashing thread first
    b.prpsinfo(4242, "python3", "python3 train.py --token=SECRET");
    b.siginfo(SIGSEGV, 1, 0x8a);
    b.prstatus(4242, 0);
    b.files({{0x7f0000000000, 0x7f0000001000, 0, "/opt/rocm/lib/libamdhip64.so.6.2.60200"},
             {0x7f0000001000, 0x7f0000009000, 0x1000, "/opt/rocm/lib/libamdhip64.so.6.2.60200"},
             {0x7f1000000000, 0x7f1000001000, 0, "/usr/lib/libhsa-runtime64.so.1.14.60200"}});
    b.load_size = 4096;
    return b;
}

TEST(CoreElf, NotesGiveProcessThreadsSignalAndFiles) {
    auto c = layoutOf(crashCore().build());
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->kind, CoreKind::Cpu);
    const auto& n = c->notes;
    EXPECT_EQ(n.pid, 4242);
    EXPECT_EQ(n.ppid, 1);
    EXPECT_EQ(n.uid, 1000);
    EXPECT_EQ(n.comm, "python3");
    EXPECT_EQ(n.tids, (std::vector<int64_t>{4243, 4242}));
    EXPECT_EQ(n.cursig, SIGSEGV);
    ASSERT_TRUE(n.siginfo);
    EXPECT_EQ(n.siginfo->signo, SIGSEGV);
    EXPECT_EQ(n.siginfo->code, 1);
    EXPECT_EQ(n.siginfo->addr, 0x8au);
    ASSERT_EQ(n.files.size(), 3u);
    EXPECT_EQ(n.files[1].file_offset, 0x1000u);
    EXPECT_EQ(n.files[2].path, "/usr/lib/libhsa-runtime64.so.1.14.60200");
}

TEST(CoreElf, AbortHasASenderNotAnAddress) {
    CoreBuilder b;
    b.prstatus(10, SIGABRT);
    b.siginfo(SIGABRT, -6, 10);  // SI_TKILL from raise(): si_pid 10
    auto c = layoutOf(b.build());
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_FALSE(c->notes.siginfo->addr);
    EXPECT_EQ(c->notes.siginfo->sender, 10);
    EXPECT_EQ(signalName(SIGABRT), "SIGABRT");
    EXPECT_EQ(sigCodeName(SIGABRT, -6), "SI_TKILL");
    EXPECT_EQ(sigCodeName(SIGSEGV, 1), "SEGV_MAPERR");
    EXPECT_EQ(sigCodeName(SIGSEGV, 2), "SEGV_ACCERR");
    EXPECT_EQ(signalName(64), "signal 64");
}

// A general-protection fault (a read through 0xdead000000000000) is a SIGSEGV with si_code
// SI_KERNEL and si_addr 0: no address, where it was stored as an exact NULL pointer (hostile
// review 148, finding 5). A SIGILL keeps si_addr (the instruction's address).
TEST(CoreElf, AGeneralProtectionFaultHasNoAddress) {
    CoreBuilder b;
    b.prstatus(10, SIGSEGV);
    b.siginfo(SIGSEGV, 0x80, 0);
    auto c = layoutOf(b.build());
    ASSERT_TRUE(c) << c.error().message;
    ASSERT_TRUE(c->notes.siginfo);
    EXPECT_EQ(c->notes.siginfo->code, 0x80);
    EXPECT_FALSE(c->notes.siginfo->addr);
    EXPECT_EQ(sigCodeName(SIGSEGV, 0x80), "SI_KERNEL");
    CoreBuilder ill;
    ill.prstatus(10, SIGILL);
    ill.siginfo(SIGILL, 2, 0x401136);  // ILL_ILLOPN at the instruction
    auto i = layoutOf(ill.build());
    ASSERT_TRUE(i) << i.error().message;
    EXPECT_EQ(i->notes.siginfo->addr, 0x401136u);
}

// Notes whose numbers are no pid or signal (forged, or garbage) are not stored as one: pid −1,
// signal −7 and a tid of 5 000 000 were stored as they were (hostile review 148, LOW).
TEST(CoreElf, NumbersThatAreNoPidOrSignalAreLeftOut) {
    CoreBuilder b;
    b.prpsinfo(-1, "forged", "");
    b.prstatus(5000000, 7);
    b.prstatus(10, 11);
    b.siginfo(-7, 1, 0x8a);
    auto c = layoutOf(b.build());
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_FALSE(c->notes.pid);
    EXPECT_FALSE(c->notes.siginfo);
    ASSERT_EQ(c->notes.tids.size(), 1u);
    EXPECT_EQ(c->notes.tids[0], 10);
    // The first NT_PRSTATUS is the crashing thread's: with no pid, no thread is the crashing
    // one and no signal is taken from another (hostile review 151, LOW 4).
    EXPECT_EQ(c->notes.cursig, std::nullopt);
    EXPECT_EQ(c->notes.crashingTid(), std::nullopt);
    EXPECT_EQ(c->notes.comm, "forged");
}

// Hostile review 151, LOW 4: a first NT_PRSTATUS (the crashing thread's) whose pid is no pid
// made the next thread the crashing one, with its pr_cursig.
TEST(CoreElf, ADamagedFirstThreadNoteMakesNoOtherThreadTheCrashingOne) {
    CoreBuilder b;
    b.prstatus(0x80000000u, SIGSEGV);
    b.prstatus(6001, SIGABRT);
    b.prpsinfo(6000, "app", "app");
    auto c = layoutOf(b.build());
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_TRUE(c->notes.crashing_unknown);
    EXPECT_EQ(c->notes.tids, (std::vector<int64_t>{6001}));
    EXPECT_EQ(c->notes.crashingTid(), std::nullopt);
    EXPECT_EQ(c->notes.cursig, std::nullopt);
    CoreBuilder ok;
    ok.prstatus(6000, SIGSEGV);
    ok.prstatus(6001, 0);
    auto d = layoutOf(ok.build());
    ASSERT_TRUE(d);
    EXPECT_EQ(d->notes.crashingTid(), 6000);
    EXPECT_EQ(d->notes.cursig, SIGSEGV);
}

// Hostile review 148, MED: a 64 MiB NT_FILE note may list 2.8 million mappings (1.8 million
// took 480 MB through ingest); the first kMaxMappedFiles are kept and the count stated.
TEST(CoreElf, MappedFilesAreCappedAndTheirCountKept) {
    CoreBuilder b;
    b.prstatus(6000, SIGSEGV);
    std::vector<std::tuple<uint64_t, uint64_t, uint64_t, std::string>> f;
    for (uint64_t i = 0; i < kMaxMappedFiles + 6; ++i)
        f.emplace_back(0x10000 + i * 0x1000, 0x11000 + i * 0x1000, 0, "/l");
    b.files(f);
    auto c = layoutOf(b.build());
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->notes.files.size(), kMaxMappedFiles);
    EXPECT_EQ(c->notes.files_stated, kMaxMappedFiles + 6);
    EXPECT_EQ(c->notes.files.back().start, 0x10000 + (kMaxMappedFiles - 1) * 0x1000);
    EXPECT_EQ(c->notes.files.back().path, "/l");
}

TEST(CoreElf, SniffTellsCoresFromOtherFiles) {
    auto cpu = crashCore().build();
    EXPECT_EQ(sniffCore(cpu), CoreKind::Cpu);
    CoreBuilder exe;
    exe.type = 3;  // ET_DYN
    EXPECT_FALSE(sniffCore(exe.build()));
    EXPECT_FALSE(sniffCore("Memory access fault by GPU node-1 (Agent handle: 0x1) on address"));
    EXPECT_FALSE(sniffCore(""));
    auto r = layoutOf(exe.build());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "not a core file (ELF e_type 3)");
}

// A core cut after its notes (ulimit -c, a full disk) is read from its notes and says so; one
// cut inside them is an error.
TEST(CoreElf, ACoreCutAfterItsNotesIsReadAndMarkedTruncated) {
    auto f = crashCore().build();
    auto cut = f.substr(0, f.size() - 100);  // the PT_LOAD segment lost its end
    auto r = layoutOf(cut);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->truncated,
              fmt::format(
                  "truncated: its segments need {} bytes, the file has {}", f.size(), cut.size()));
    EXPECT_FALSE(r->notes.tids.empty());
    EXPECT_FALSE(layoutOf(f)->truncated);
    auto early = layoutOf(f.substr(0, 200));  // inside the notes
    ASSERT_FALSE(early);
    EXPECT_NE(early.error().message.find("truncated: PT_NOTE segment"), std::string::npos)
        << early.error().message;
    EXPECT_FALSE(layoutOf(f.substr(0, 40)));
}

TEST(CoreElf, HostileNotesNeverReadOutside) {
    // Note sizes pointing past the segment, a NT_FILE count larger than its data: parsed as far
    // as they are whole, nothing else.
    CoreNotes n;
    std::string notes;
    CoreBuilder::put(notes, 5, 4);
    CoreBuilder::put(notes, 0xffffff00u, 4);
    CoreBuilder::put(notes, 1, 4);
    notes += std::string("CORE\0\0\0\0", 8);
    parseNotes(notes, n);
    EXPECT_TRUE(n.tids.empty());
    std::string file;
    CoreBuilder::put(file, 1u << 30, 8);
    CoreBuilder::put(file, 4096, 8);
    CoreBuilder b;
    b.note("CORE", 0x46494c45, file);
    auto c = layoutOf(b.build());
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->notes.files.empty());
    for (size_t i = 0; i < 64; ++i) {  // every prefix of a note stream
        CoreNotes m;
        parseNotes(crashCore().build().substr(64 + 56 * 2, i * 13), m);
    }
}

TEST(GpuCore, RocrGpuCoreMetadata) {
    CoreBuilder b;
    b.machine = 224;
    b.flags = 0x3f | 0x300;  // gfx90a, xnack
    b.sections = {".note", "load0"};
    auto c = layoutOf(b.build());
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->kind, CoreKind::RocrGpu);
    auto m = gpuCoreMeta(*c, "gpucore.31337");
    EXPECT_EQ(m.pid, 31337);
    EXPECT_EQ(m.target, "gfx90a");
    EXPECT_EQ(m.sections, 4u);
    EXPECT_TRUE(m.cudbg_sections.empty());
    EXPECT_EQ(coreKindName(c->kind), "rocr_gpu");
    // ROCr's other names (FORMATS.md §2.3): the kernel's core_pattern with `.gpu` appended, and
    // `gpucore.<pid>.gpu` in containers; a `.gpu` name without a pid gives none.
    EXPECT_EQ(gpuCoreMeta(*c, "gpucore.31337.gpu").pid, 31337);
    EXPECT_EQ(gpuCoreMeta(*c, "core.4321.gpu").pid, 4321);
    EXPECT_EQ(gpuCoreMeta(*c, "core.gpu").pid, std::nullopt);
    EXPECT_EQ(gpuCoreMeta(*c, "gpucore.12x.gpu").pid, std::nullopt);
}

TEST(GpuCore, CudaGpuCoreSections) {
    CoreBuilder b;
    b.machine = 190;
    b.sections = {".cudbg.devtbl", ".cudbg.smtbl.dev0", ".cudbg.warptbl.dev0.sm0", ".text"};
    auto c = layoutOf(b.build());
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ(c->kind, CoreKind::CudaGpu);
    // CUDA's default name core_%t_%h_%p.nvcudmp gives the pid and the time.
    auto m = gpuCoreMeta(*c, "core_1700000000_host_4242.nvcudmp");
    EXPECT_EQ(m.pid, 4242);
    EXPECT_EQ(m.time, 1700000000);
    auto n = parseCudaCoreName("core_1700000000_gpu_node_7_99.nvcudmp");
    ASSERT_TRUE(n);
    EXPECT_EQ(n->host, "gpu_node_7");
    EXPECT_EQ(n->pid, 99);
    EXPECT_FALSE(parseCudaCoreName("core_x_host_1.nvcudmp"));
    EXPECT_FALSE(parseCudaCoreName("gpucore.illegal_probe.nvcudmp"));
    EXPECT_FALSE(m.target);
    EXPECT_EQ(m.cudbg_sections,
              (std::vector<std::string>{
                  ".cudbg.devtbl", ".cudbg.smtbl.dev0", ".cudbg.warptbl.dev0.sm0"}));
}

// Hostile review 151, HIGH: every section name was copied up to the next NUL of the names'
// table: 2 000 sections naming one 4 MiB run without a NUL needed 8 GB and aborted gpufaultd.
TEST(GpuCore, ANameLongerThanAnySectionNameIsRefusedNamingTheSection) {
    CoreBuilder b;
    b.machine = 190;
    b.sections = {".cudbg.devtbl", std::string(kMaxSectionNameBytes + 1, 'a')};
    auto c = layoutOf(b.build());
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().message.find("section 2: its name at offset 15 of the section names"),
              std::string::npos)
        << c.error().message;
    EXPECT_NE(c.error().message.find("is longer than 4096 bytes"), std::string::npos);
    b.sections[1].pop_back();  // 4 096 bytes: a name
    EXPECT_TRUE(layoutOf(b.build()));
}

TEST(GpuCore, NamesThatAllNameOneLongRunAreRefusedPastTheirSum) {
    CoreBuilder b;
    b.machine = 190;
    b.sections.assign(17001, "x");
    b.sections[0] = std::string(4000, 'a');
    auto f = b.build();
    uint64_t shoff = 0;
    for (int i = 7; i >= 0; --i) shoff = (shoff << 8) | static_cast<unsigned char>(f[40 + i]);
    auto renamed = [&](size_t sections) {  // the first `sections` "x" named like section 1
        auto g = f;
        for (size_t i = 2; i < 2 + sections; ++i) CoreBuilder::at(g, shoff + 64 * i, 1, 4);
        return layoutOf(g);
    };
    // 16 000 names of 4 000 bytes: 64 MB, under the bound (4 × the table + 64 MiB); the names
    // are read as written.
    auto fits = renamed(16000);
    ASSERT_TRUE(fits) << fits.error().message;
    EXPECT_EQ(fits->sections[16001], std::string(4000, 'a'));
    EXPECT_EQ(fits->sections[16002], "x");
    auto c = renamed(17000);
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().message.find("brings the names past"), std::string::npos)
        << c.error().message;
}

}  // namespace
}  // namespace gpufault::coredump
