// Unpacking stops at the end a core's ELF headers state (coreExtent(), TempFile::append()):
// hostile review 148's zstd bomb, 16 GiB of data behind a small core, wrote up to the cap to
// TMPDIR; now the core is written and the rest is not decompressed. And extended numbering
// (e_phnum PN_XNUM, the count in section header 0, as Linux writes cores of 65 535 segments or
// more), which readCoreLayout() rejected as "program headers beyond the file". The real fixture
// core (462 848 bytes, 30 program headers), re-laid here as the kernel would.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <string>

#include "collectors/coredump/core_elf.h"
#include "ingest/core_unpack.h"
#include "tests/support/crash_files.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kCore = GPUFAULT_SOURCE_DIR "/tests/data/cores/core";

void put(std::string& b, size_t off, uint64_t v, size_t n) {
    for (size_t i = 0; i < n; ++i) b[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

/// `core` with extended numbering: e_phnum PN_XNUM, one SHT_NULL section header appended
/// (8-aligned) whose sh_info holds the real count, as binfmt_elf.c fill_extnum_info() does.
std::string withExtendedNumbering(std::string core) {
    uint16_t phnum = static_cast<uint8_t>(core[56]) | (static_cast<uint8_t>(core[57]) << 8);
    core.resize((core.size() + 7) & ~size_t{7}, '\0');
    size_t shoff = core.size();
    core.append(64, '\0');
    put(core, shoff + 44, phnum, 4);  // sh_info
    put(core, 40, shoff, 8);          // e_shoff
    put(core, 56, 0xffff, 2);         // e_phnum = PN_XNUM
    put(core, 58, 64, 2);             // e_shentsize
    put(core, 60, 1, 2);              // e_shnum
    return core;
}

coredump::ReadAt readerOf(const std::string& b) {
    return
        [&b](uint64_t off, size_t n) { return off >= b.size() ? std::string() : b.substr(off, n); };
}

UnpackLimits limitsIn(const TempDir& t) {
    UnpackLimits lim;
    lim.dir = t.path();
    lim.max_bytes = 1ull << 30;
    return lim;
}

TEST(CoreUnpackEnd, AZstdBombBehindACoreStopsAtTheCoresEnd) {
    TempDir t;
    const std::string core = readFile(kCore);
    // 256 MiB of non-zero bytes (no holes) behind the core: before, all of it was written.
    std::string z = zstdCompress(core + std::string(256u << 20, '\xab'));
    writeFile(t.file("core.zst"), z);
    auto f = unzstdToTemp(t.file("core.zst"), limitsIn(t));
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->size(), 462848u);
    EXPECT_TRUE(f->pastEnd());
    EXPECT_FALSE(f->cut());
    EXPECT_EQ(readFile(f->path()), core);
}

TEST(CoreUnpackEnd, AWholeCoreIsNotPastItsEnd) {
    TempDir t;
    const std::string core = readFile(kCore);
    writeFile(t.file("core.zst"), zstdCompress(core));
    auto f = unzstdToTemp(t.file("core.zst"), limitsIn(t));
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->size(), core.size());
    EXPECT_FALSE(f->pastEnd());
    EXPECT_EQ(readFile(f->path()), core);
}

TEST(CoreUnpackEnd, ACapBelowTheCoresEndStillCutsIt) {
    TempDir t;
    const std::string core = readFile(kCore);
    writeFile(t.file("core.zst"), zstdCompress(core + std::string(1u << 20, '\xab')));
    auto lim = limitsIn(t);
    lim.max_bytes = 200000;
    auto f = unzstdToTemp(t.file("core.zst"), lim);
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->size(), 200000u);
    EXPECT_TRUE(f->cut());
    EXPECT_FALSE(f->pastEnd());
}

TEST(CoreUnpackEnd, AnInflatedCoreDumpStopsAtTheCoresEnd) {
    TempDir t;
    const std::string core = readFile(kCore);
    std::string plain = core + std::string(64u << 20, '\x5a');
    uLongf n = compressBound(plain.size());
    std::string z(n, '\0');
    ASSERT_EQ(compress2(reinterpret_cast<Bytef*>(z.data()),
                        &n,
                        reinterpret_cast<const Bytef*>(plain.data()),
                        plain.size(),
                        6),
              Z_OK);
    z.resize(n);
    auto in = InflateToTemp::create(limitsIn(t));
    ASSERT_TRUE(in) << in.error().message;
    // In pieces, as apport's base64 lines come.
    for (size_t at = 0; at < z.size(); at += 65536)
        ASSERT_TRUE(in->feed(std::string_view(z).substr(at, 65536)));
    auto f = in->finish();
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->size(), core.size());
    EXPECT_TRUE(f->pastEnd());
    EXPECT_EQ(readFile(f->path()), core);
}

// Hostile review 152, MED: headers that state no end (a bad e_phentsize, section header 0 at
// 1 TiB with e_shstrndx SHN_XINDEX) let the bomb behind them decompress to the cap (4 GiB in
// 27 s for a 155 KB file). The core reader refuses such headers: nothing past them is written.
TEST(CoreUnpackEnd, HeadersThatStateNoEndStopTheDecompression) {
    TempDir t;
    const std::string core = readFile(kCore);
    std::string badEntry = core, farTable = core;
    put(badEntry, 54, 57, 2);          // e_phentsize 57
    put(farTable, 40, 1ull << 40, 8);  // e_shoff 1 TiB
    put(farTable, 62, 0xffff, 2);      // e_shstrndx SHN_XINDEX: section header 0 is needed
    for (const auto& bad : {badEntry, farTable}) {
        writeFile(t.file("core.zst"), zstdCompress(bad + std::string(64u << 20, '\x01')));
        auto f = unzstdToTemp(t.file("core.zst"), limitsIn(t));
        ASSERT_TRUE(f) << f.error().message;
        EXPECT_EQ(f->size(), 64u);  // the ELF header, where the decompression stopped
        EXPECT_FALSE(f->cut());
        EXPECT_FALSE(f->pastEnd());
    }
}

TEST(CoreUnpackEnd, TheEndOfACoreWithExtendedNumberingIncludesItsSectionHeader) {
    const std::string x = withExtendedNumbering(readFile(kCore));
    ASSERT_EQ(x.size(), 462848u + 64);
    // Before its section header is there, the end cannot be known: look again at its end.
    auto early = coredump::coreExtent(readerOf(x), 4096);
    EXPECT_FALSE(early.end);
    EXPECT_EQ(early.retry_at, 462848u + 64);
    auto whole = coredump::coreExtent(readerOf(x), x.size());
    ASSERT_TRUE(whole.end);
    EXPECT_EQ(*whole.end, x.size());

    TempDir t;
    writeFile(t.file("core.zst"), zstdCompress(x + std::string(8u << 20, '\x11')));
    auto f = unzstdToTemp(t.file("core.zst"), limitsIn(t));
    ASSERT_TRUE(f) << f.error().message;
    EXPECT_EQ(f->size(), x.size());
    EXPECT_TRUE(f->pastEnd());
}

TEST(CoreUnpackEnd, ACoreWithExtendedNumberingIsReadLikeTheCoreItWasMadeFrom) {
    const std::string core = readFile(kCore);
    const std::string x = withExtendedNumbering(core);
    auto a = coredump::readCoreLayout(readerOf(core), core.size());
    auto b = coredump::readCoreLayout(readerOf(x), x.size());
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_TRUE(b) << b.error().message;
    EXPECT_EQ(b->head.phnum, 30u);
    EXPECT_EQ(b->needed_size, a->needed_size);
    EXPECT_FALSE(b->truncated);
    EXPECT_EQ(b->notes.pid, a->notes.pid);
    EXPECT_EQ(b->notes.tids, a->notes.tids);
    EXPECT_EQ(b->notes.files.size(), a->notes.files.size());
    ASSERT_TRUE(b->notes.siginfo);
    EXPECT_EQ(b->notes.siginfo->addr, 0x8au);

    // Section header 0 cut off: an error naming it, not a wrong count.
    auto cut = coredump::readCoreLayout(readerOf(x), x.size() - 10);
    ASSERT_FALSE(cut);
    EXPECT_NE(cut.error().message.find("section header 0 (extended numbering)"), std::string::npos)
        << cut.error().message;
}

}  // namespace
}  // namespace gpufault::testing
