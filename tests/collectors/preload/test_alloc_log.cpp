// The allocation-record parser (collectors/preload/alloc_log): lines as the shim writes them
// (the stand-in runtime's values), pairing of
// frees, and bad input by line.
#include <gtest/gtest.h>

#include "collectors/preload/alloc_log.h"

using namespace gpufault::alloclog;

namespace {
// Records in the shim's format with the values the stand-in runtime hands out.
constexpr std::string_view kLog =
    "gpufault.alloc 1 start pid=81234 ppid=81230 wall_us=1796032475123456 mono_us=5123456789 "
    "exe=/work/build/tests/collectors/preload/gpufault_preload_host\n"
    "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f3a40000000 size=1048576 mem=device device=3 "
    "rc=0 wall_us=1796032475123500 mono_us=5123456833 pid=81234 tid=81234 "
    "stack=libgpufault_standin_fw.so+0x1139;gpufault_preload_host+0x3a2f\n"
    "gpufault.alloc 1 alloc api=hipMalloc ptr=0x0 size=0 mem=device device=3 rc=1 "
    "wall_us=1796032475123600 mono_us=5123456933 pid=81234 tid=81234 stack=-\n"
    "gpufault.alloc 1 alloc api=cuMemAlloc_v2 ptr=0x7f3a40600000 size=5242880 mem=device "
    "device=2 rc=0 wall_us=1796032475123700 mono_us=5123457033 pid=81234 tid=81234 "
    "stack=gpufault_preload_host+0x3b10\n"
    "gpufault.alloc 1 free api=hipFree ptr=0x7f3a40000000 size=0 device=-1 rc=0 "
    "wall_us=1796032475124000 mono_us=5123457333 pid=81234 tid=81234 "
    "stack=libgpufault_standin_fw.so+0x1180\n"
    "gpufault.alloc 1 free api=hipFree ptr=0x7f3a50000000 size=0 device=-1 rc=0 "
    "wall_us=1796032475124100 mono_us=5123457433 pid=81234 tid=81234 stack=-\n";
}  // namespace

TEST(AllocLog, RecognisesItsFiles) {
    EXPECT_TRUE(looksLikeAllocLog(kLog));
    EXPECT_FALSE(looksLikeAllocLog("Memory access fault by GPU node-1 on address 0x0"));
    EXPECT_FALSE(looksLikeAllocLog("gpufault.operand name=A ptr=0x1 end=0x2"));
}

TEST(AllocLog, PairsAllocationsWithTheirFrees) {
    auto log = parse(kLog);
    ASSERT_EQ(log.warnings.size(), 1u);  // the free of a pointer never allocated
    EXPECT_EQ(log.warnings[0].line, 6u);
    EXPECT_EQ(log.warnings[0].message,
              "free of 0x7f3a50000000 with no open allocation in this file");
    EXPECT_EQ(log.lines, 6u);
    EXPECT_EQ(log.events, 6u);
    EXPECT_EQ(log.failed, 1u);
    EXPECT_EQ(log.unmatched_frees, 1u);
    ASSERT_EQ(log.processes.size(), 1u);
    EXPECT_EQ(log.processes[0].pid, 81234);
    EXPECT_EQ(log.processes[0].ppid, 81230);
    EXPECT_EQ(log.processes[0].exe, "/work/build/tests/collectors/preload/gpufault_preload_host");
    ASSERT_EQ(log.allocations.size(), 2u);
    const auto& a = log.allocations[0];
    EXPECT_EQ(a.line, 2u);
    EXPECT_EQ(a.api, "hipMalloc");
    EXPECT_EQ(a.ptr, 0x7f3a40000000u);
    EXPECT_EQ(a.end, 0x7f3a40100000u);
    EXPECT_EQ(a.device, 3);
    EXPECT_EQ(a.mem, "device");
    EXPECT_EQ(a.tid, 81234);
    EXPECT_EQ(a.wall_us, 1796032475123500);
    EXPECT_EQ(a.mono_us, 5123456833);
    EXPECT_EQ(a.stack, "libgpufault_standin_fw.so+0x1139;gpufault_preload_host+0x3a2f");
    EXPECT_EQ(a.free_line, 5u);
    EXPECT_EQ(a.free_api, "hipFree");
    EXPECT_EQ(a.freed_wall_us, 1796032475124000);
    const auto& b = log.allocations[1];
    EXPECT_EQ(b.api, "cuMemAlloc_v2");
    EXPECT_EQ(b.end - b.ptr, 5242880u);
    EXPECT_FALSE(b.free_line);
}

TEST(AllocLog, ReusedPointerOpensANewAllocationAndMapsPairWithUnmaps) {
    auto log = parse(
        "gpufault.alloc 1 reserve api=cuMemAddressReserve ptr=0x7f0000000000 size=1073741824 "
        "mem=va device=-1 rc=0 pid=7 tid=7\n"
        "gpufault.alloc 1 create api=cuMemCreate ptr=0x0 size=2097152 handle=0x55aa device=0 "
        "rc=0 pid=7 tid=7\n"
        "gpufault.alloc 1 map api=cuMemMap ptr=0x7f0000000000 size=2097152 handle=0x55aa "
        "mem=device device=-1 rc=0 pid=7 tid=7\n"
        "gpufault.alloc 1 unmap api=cuMemUnmap ptr=0x7f0000000000 size=2097152 device=-1 rc=0 "
        "pid=7 tid=7\n"
        "gpufault.alloc 1 map api=cuMemMap ptr=0x7f0000000000 size=4194304 handle=0x55ab "
        "mem=device device=-1 rc=0 pid=7 tid=7\n");
    EXPECT_TRUE(log.warnings.empty());
    ASSERT_EQ(log.allocations.size(), 3u);
    EXPECT_EQ(log.allocations[0].kind, "reserve");
    EXPECT_FALSE(log.allocations[0].free_line);  // an unmap does not free the reservation
    EXPECT_EQ(log.allocations[1].kind, "map");
    EXPECT_EQ(log.allocations[1].handle, 0x55aau);
    EXPECT_EQ(log.allocations[1].device, 0);  // the create record's
    EXPECT_EQ(log.allocations[1].free_line, 4u);
    EXPECT_EQ(log.allocations[2].end - log.allocations[2].ptr, 4194304u);
    EXPECT_FALSE(log.allocations[2].free_line);
    EXPECT_EQ(log.handles, 1u);
}

// Hostile review 4, D and Q: an end of exactly 2^64 is refused saying so (it does not wrap,
// but the store keeps [ptr, end) in 64 bits); the last representable end is stored; a NUL
// byte refuses its record.
TEST(AllocLog, AnEndOf2To64AndANulByteAreRefusedAsTheyAre) {
    auto log = parse(
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0xffffffffffff0000 size=65536 rc=0 pid=5\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0xffffffffffff0000 size=65535 rc=0 pid=5\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x1000 size=4096 mem=device" +
        std::string(1, '\0') + " rc=0 pid=5\n");
    ASSERT_EQ(log.warnings.size(), 2u);
    EXPECT_EQ(log.warnings[0].line, 1u);
    EXPECT_EQ(log.warnings[0].message,
              "ptr + size = 2^64: the end is not a 64-bit address (the store keeps [ptr, end) in "
              "64 bits): not stored");
    EXPECT_EQ(log.warnings[1].line, 3u);
    EXPECT_EQ(log.warnings[1].message, "NUL byte at column 69: record refused");
    ASSERT_EQ(log.allocations.size(), 1u);
    EXPECT_EQ(log.allocations[0].end, 0xffffffffffffffffu);
}

TEST(AllocLog, BadLinesAreWarningsByLineNumber) {
    auto log = parse(
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x1000 size=4096 rc=0 pid=5\n"
        "gpufault.alloc 2 alloc api=hipMalloc ptr=0x1000 size=4096 rc=0 pid=5\n"
        "gpufault.alloc 1 launch api=x ptr=0x1 size=1 pid=5\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0xzz size=4096 pid=5\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x2000 size=4096\n"
        "some other text\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0xffffffffffffff00 size=4096 pid=5\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x9000 si");
    ASSERT_EQ(log.warnings.size(), 7u);
    EXPECT_EQ(log.warnings[0].line, 2u);
    EXPECT_EQ(log.warnings[0].message, "unsupported record version '2' (this build reads 1)");
    EXPECT_EQ(log.warnings[1].message, "unknown record kind 'launch'");
    EXPECT_EQ(log.warnings[2].line, 4u);
    EXPECT_EQ(log.warnings[2].message, "bad value for ptr: '0xzz'");
    EXPECT_EQ(log.warnings[3].message, "record without pid");
    EXPECT_EQ(log.warnings[4].message, "not a gpufault.alloc record");
    EXPECT_EQ(log.warnings[5].line, 7u);
    EXPECT_EQ(log.warnings[5].message, "ptr + size wraps around 2^64: not stored");
    EXPECT_EQ(log.warnings[6].line, 8u);
    EXPECT_EQ(log.warnings[6].message, "record cut short (no newline at the end of the file)");
    ASSERT_EQ(log.allocations.size(), 1u);
    EXPECT_EQ(log.allocations[0].ptr, 0x1000u);
}

TEST(AllocLog, RepeatedKeysRefuseTheRecordAndNullPointersAreWarned) {
    auto log = parse(
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7a5895200000 size=100 rc=0 pid=4528 "
        "ptr=0x1 pid=1\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x0 size=4096 rc=0 pid=4528\n"
        "gpufault.alloc 1 free api=hipFree ptr=0x0 size=0 rc=0 pid=4528\n");
    EXPECT_TRUE(log.allocations.empty());
    ASSERT_EQ(log.warnings.size(), 2u);
    EXPECT_EQ(log.warnings[0].line, 1u);
    EXPECT_EQ(log.warnings[0].message, "repeated key 'ptr': record refused");
    EXPECT_EQ(log.warnings[1].line, 2u);
    EXPECT_EQ(log.warnings[1].message, "alloc record with ptr=0 and rc=0: no allocation stored");
    EXPECT_EQ(log.null_allocations, 1u);
    EXPECT_EQ(log.unmatched_frees, 0u);  // a free of ptr=0 is a no-op
}

// gpufaultd feeds a growing file piece by piece (Parser::drain): a free of an allocation
// handed out before the last drain comes back as a late free naming the allocation's line, and
// the pieces together hold what one parse of the whole text holds.
TEST(AllocLog, DrainedPiecesKeepOpenAllocationsForLaterFrees) {
    Parser p;
    uint64_t n = 0;
    std::string_view text = kLog;
    std::vector<Log> pieces;
    size_t pos = 0;
    while (pos < text.size()) {
        size_t nl = text.find('\n', pos);
        p.feed(++n, text.substr(pos, nl - pos));
        pos = nl + 1;
        if (n == 2 || n == 4) pieces.push_back(p.drain());  // after the hipMalloc, the cuMemAlloc
    }
    pieces.push_back(p.drain());
    ASSERT_EQ(pieces.size(), 3u);
    ASSERT_EQ(pieces[0].allocations.size(), 1u);
    EXPECT_FALSE(pieces[0].allocations[0].free_line);  // freed only in the third piece
    EXPECT_EQ(pieces[0].processes.size(), 1u);
    EXPECT_EQ(pieces[1].allocations.size(), 1u);
    EXPECT_EQ(pieces[1].failed, 1u);
    ASSERT_EQ(pieces[2].late_frees.size(), 2u);
    EXPECT_EQ(pieces[2].late_frees[0].alloc_line, 2u);
    EXPECT_EQ(pieces[2].late_frees[0].free_line, 5u);
    EXPECT_EQ(pieces[2].late_frees[0].free_api, "hipFree");
    EXPECT_EQ(pieces[2].late_frees[0].freed_wall_us, 1796032475124000);
    EXPECT_EQ(pieces[2].late_frees[0].start_line, 1u);
    EXPECT_EQ(pieces[2].late_frees[0].kind, "alloc");
    EXPECT_EQ(pieces[2].late_frees[0].ptr, 0x7f3a40000000u);
    // The free of a pointer never allocated in the file: handed on too (the store looks for its
    // allocation in other files of the recording), with its warning.
    EXPECT_EQ(pieces[2].late_frees[1].alloc_line, 0u);
    EXPECT_EQ(pieces[2].late_frees[1].free_line, 6u);
    EXPECT_EQ(pieces[2].late_frees[1].start_line, 1u);
    EXPECT_TRUE(pieces[2].allocations.empty());
    ASSERT_EQ(pieces[2].warnings.size(), 1u);  // the free of a pointer never allocated
    EXPECT_EQ(pieces[2].warnings[0].line, 6u);
    EXPECT_EQ(pieces[0].lines + pieces[1].lines + pieces[2].lines, 6u);
    EXPECT_EQ(p.openCount(), 1u);  // the cuMemAlloc, never freed
}

// A start record names its process (boot, /proc start ticks) and ends the open allocations of
// an earlier process of the same pid appending to the same file (a reused pid): that process's
// pointer freed by the new one is not a free of the old allocation.
TEST(AllocLog, StartRecordCarriesIdentityAndEndsTheOldProcessesAllocations) {
    auto log = parse(
        "gpufault.alloc 1 start pid=7 ppid=1 wall_us=10 mono_us=10 exe=/old\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=4096 mem=device device=0 "
        "rc=0 wall_us=11 mono_us=11 pid=7 tid=7 stack=-\n"
        "gpufault.alloc 1 start pid=7 ppid=1 wall_us=20 mono_us=20 "
        "boot=0d5e9c1a-1111-4222-8333-944455556666 start_ticks=4242 exe=/usr/bin/new job\n"
        "gpufault.alloc 1 free api=hipFree ptr=0x7f0000000000 size=0 device=-1 rc=0 wall_us=21 "
        "mono_us=21 pid=7 tid=7 stack=-\n"
        "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=8192 mem=device device=0 "
        "rc=0 wall_us=22 mono_us=22 pid=7 tid=7 stack=-\n"
        "gpufault.alloc 1 start pid=8 ppid=1 wall_us=30 mono_us=30 boot=NOT-HEX exe=/x\n");
    ASSERT_EQ(log.processes.size(), 2u);
    EXPECT_FALSE(log.processes[0].boot_id);
    EXPECT_FALSE(log.processes[0].start_ticks);
    EXPECT_EQ(log.processes[1].boot_id, "0d5e9c1a-1111-4222-8333-944455556666");
    EXPECT_EQ(log.processes[1].start_ticks, 4242);
    EXPECT_EQ(log.processes[1].exe, "/usr/bin/new job");
    ASSERT_EQ(log.allocations.size(), 2u);
    EXPECT_EQ(log.allocations[0].start_line, 1u);
    EXPECT_FALSE(log.allocations[0].free_line);  // the old process's: never freed by it
    EXPECT_EQ(log.allocations[1].start_line, 3u);
    ASSERT_EQ(log.warnings.size(), 2u);
    EXPECT_EQ(log.warnings[0].line, 4u);
    EXPECT_EQ(log.warnings[0].message,
              "free of 0x7f0000000000 with no open allocation in this file");
    EXPECT_EQ(log.warnings[1].line, 6u);
    EXPECT_EQ(log.warnings[1].message, "bad value for boot: 'NOT-HEX'");
}

// Two processes of pid 1 (containers with pid namespaces of their own) in one file, their
// records interleaved (shims that named files by pid alone): each record names its process, so
// each goes to its own `start` record, and a free pairs with its own process's allocation; a
// record of a process that wrote no `start` before it is refused, never merged (hostile review
// of issue 4, second round, finding 2).
TEST(AllocLog, InterleavedProcessesOfOnePidStayApart) {
    auto start = [](uint64_t ns, int ticks) {
        return "gpufault.alloc 1 start pid=1 ppid=0 wall_us=1 mono_us=1 pidns=" +
               std::to_string(ns) + " start_ticks=" + std::to_string(ticks) + " exe=/job\n";
    };
    auto rec = [](const char* kind, const char* ptr, uint64_t ns, int ticks) {
        return std::string("gpufault.alloc 1 ") + kind + " api=hipMalloc ptr=" + ptr +
               " size=4096 mem=device device=0 rc=0 wall_us=2 mono_us=2 pid=1 tid=1 pidns=" +
               std::to_string(ns) + " start_ticks=" + std::to_string(ticks) + " stack=-\n";
    };
    std::string text = start(11, 100) + rec("alloc", "0x1000", 11, 100) + start(22, 200) +
                       rec("alloc", "0x2000", 22, 200) + rec("alloc", "0x3000", 11, 100) +
                       rec("free", "0x1000", 11, 100) + rec("alloc", "0x4000", 33, 300);
    auto log = parse(text);
    ASSERT_EQ(log.allocations.size(), 3u);
    EXPECT_EQ(log.allocations[0].start_line, 1u);
    EXPECT_EQ(log.allocations[0].free_line, 6u);  // its own process's free, after the other start
    EXPECT_EQ(log.allocations[1].start_line, 3u);
    EXPECT_EQ(log.allocations[2].ptr, 0x3000u);
    EXPECT_EQ(log.allocations[2].start_line, 1u);
    ASSERT_EQ(log.warnings.size(), 2u);
    EXPECT_EQ(log.warnings[0].line, 5u);
    EXPECT_NE(log.warnings[0].message.find("interleave"), std::string::npos)
        << log.warnings[0].message;
    EXPECT_EQ(log.warnings[1].line, 7u);
    EXPECT_NE(log.warnings[1].message.find("refused"), std::string::npos)
        << log.warnings[1].message;
}
