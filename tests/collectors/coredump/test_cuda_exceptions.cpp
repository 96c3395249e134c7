// readCudaExceptions on CUDA GPU core tables laid out in memory as cudacoredump.h describes
// them (rows of sh_entsize bytes, each table linked to its parent row by sh_link/sh_info), and
// on forged links. The real H200 core is checked through the CLI (tests/cli).
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "collectors/coredump/gpu_core.h"

namespace gpufault::coredump {
namespace {

constexpr uint32_t kShtLouser = 0x80000000;  ///< CUDA's table types are SHT_LOUSER + n

/// A core image of tables: each add() appends a section of rows and returns its index.
struct Tables {
    CoreLayout c;
    std::string bytes;
    Tables() {
        c.sections.push_back("");  // the null section
        c.places.push_back({});
    }
    uint32_t add(const std::string& name,
                 uint64_t entsize,
                 const std::string& rows,
                 uint32_t link,
                 uint32_t info) {
        c.sections.push_back(name);
        c.places.push_back({0, bytes.size(), rows.size(), info, link, entsize, kShtLouser});
        bytes += rows;
        return static_cast<uint32_t>(c.sections.size() - 1);
    }
    GpuCoreMeta read() const {
        GpuCoreMeta m;
        readCudaExceptions(
            c,
            [this](uint64_t off, size_t n) {
                return off >= bytes.size() ? std::string() : bytes.substr(off, n);
            },
            m);
        return m;
    }
};

template <class T>
void put(std::string& row, size_t off, T v) {
    std::memcpy(row.data() + off, &v, sizeof v);
}

std::string smRow(uint32_t smId, uint32_t exception, uint64_t pc) {
    std::string r(0x30, '\0');
    put(r, 0, smId);
    put(r, 8, exception);
    put(r, 12, uint32_t{pc != 0});
    put(r, 16, pc);
    return r;
}

std::string ctaRow(uint64_t grid, uint32_t x) {
    std::string r(0x38, '\0');
    put(r, 0, grid);
    put(r, 8, x);
    return r;
}

std::string warpRow(uint32_t warpId, uint64_t pc) {
    std::string r(0x40, '\0');
    put(r, 0, pc);
    put(r, 8, warpId);
    put(r, 24, uint32_t{1});
    return r;
}

std::string laneRow(uint32_t tid, uint32_t exception) {
    std::string r(0x38, '\0');
    put(r, 16, tid % 32);
    put(r, 20, tid);
    put(r, 32, exception);
    return r;
}

TEST(CudaExceptions, LaneWarpBlockAndSmAreJoinedThroughTheirLinks) {
    Tables t;
    auto dev = t.add(".cudbg.devtbl", 0x58, std::string(0x58, '\0'), 0, 0);
    // SM rows 0..2: SM 7 faulted with warps still there, SM 9's warps had exited (r555 row).
    auto sm = t.add(".cudbg.smtbl.dev0",
                    0x30,
                    smRow(5, 0, 0) + smRow(7, 14, 0x7000150) + smRow(9, 6, 0x7000200),
                    dev,
                    0);
    auto cta = t.add(".cudbg.ctatbl.dev0.sm1", 0x38, ctaRow(1, 2), sm, 1);
    auto wp =
        t.add(".cudbg.wptbl.dev0.sm1.cta0", 0x40, warpRow(0, 0) + warpRow(3, 0x7000150), cta, 0);
    t.add(".cudbg.lntbl.dev0.sm1.cta0.wp0", 0x38, laneRow(0, 0) + laneRow(1, 0), wp, 0);
    std::string lanes;
    for (uint32_t l = 0; l < 32; ++l) lanes += laneRow(96 + l, l < 4 ? 0 : 14);
    t.add(".cudbg.lntbl.dev0.sm1.cta0.wp1", 0x38, lanes, wp, 1);
    auto m = t.read();
    ASSERT_EQ(m.exceptions.size(), 2u);
    EXPECT_EQ(m.exceptions_total, 2u);
    const auto& w = m.exceptions[0];
    EXPECT_EQ(w.code, 14u);
    EXPECT_EQ(cudaExceptionName(w.code), "Warp Illegal Address");
    EXPECT_EQ(w.sm, 7u);
    EXPECT_EQ(w.warp, 3u);
    EXPECT_EQ(w.lanes, 28u);
    EXPECT_EQ(w.thread[0], 100u);  // the first lane with the exception
    EXPECT_EQ(w.block[0], 2u);
    EXPECT_EQ(w.grid_id, 1u);
    EXPECT_EQ(w.pc, 0x7000150u);
    EXPECT_TRUE(w.warp_known);
    EXPECT_TRUE(w.sm_known);
    // SM 9: only its SM row says so.
    const auto& s = m.exceptions[1];
    EXPECT_EQ(s.sm, 9u);
    EXPECT_EQ(s.code, 6u);
    EXPECT_EQ(s.lanes, 0u);
    EXPECT_EQ(s.pc, 0x7000200u);
    EXPECT_FALSE(s.grid_id);
}

// Lanes of one warp stopped by two different exceptions: a row for each code, with its own
// lane count and first lane, the warp's place shared (before, the second code's 8 lanes were
// dropped and counted nowhere).
TEST(CudaExceptions, LanesOfOneWarpWithTwoCodesGiveARowEach) {
    Tables t;
    auto dev = t.add(".cudbg.devtbl", 0x58, std::string(0x58, '\0'), 0, 0);
    auto sm = t.add(".cudbg.smtbl.dev0", 0x30, smRow(4, 0, 0), dev, 0);
    auto cta = t.add(".cudbg.ctatbl.dev0.sm0", 0x38, ctaRow(5, 1), sm, 0);
    auto wp = t.add(".cudbg.wptbl.dev0.sm0.cta0", 0x40, warpRow(2, 0x7000300), cta, 0);
    std::string lanes;
    for (uint32_t l = 0; l < 32; ++l) lanes += laneRow(64 + l, l < 8 ? 0 : l < 16 ? 11 : 1);
    t.add(".cudbg.lntbl.dev0.sm0.cta0.wp0", 0x38, lanes, wp, 0);
    auto m = t.read();
    ASSERT_EQ(m.exceptions.size(), 2u);
    EXPECT_EQ(m.exceptions_total, 2u);
    EXPECT_EQ(m.exception_warps, 1u);  // one warp, two codes (hostile review 151 LOW: "2 warps")
    EXPECT_EQ(m.exceptions[0].code, 11u);  // Lane Misaligned Address, lanes 8–15
    EXPECT_EQ(m.exceptions[0].lanes, 8u);
    EXPECT_EQ(m.exceptions[0].thread[0], 72u);
    EXPECT_EQ(m.exceptions[1].code, 1u);  // Lane Illegal Address, lanes 16–31
    EXPECT_EQ(m.exceptions[1].lanes, 16u);
    EXPECT_EQ(m.exceptions[1].thread[0], 80u);
    for (const auto& e : m.exceptions) {
        EXPECT_EQ(e.sm, 4u);
        EXPECT_EQ(e.warp, 2u);
        EXPECT_EQ(e.pc, 0x7000300u);
        EXPECT_EQ(e.grid_id, 5u);
        EXPECT_EQ(e.block[0], 1u);
    }
}

// A warp row found but its block row not (the warp table's link leads nowhere): the warp is
// stated, the block is not (hostile review 151: `block (0,0,0)` and `SM 0` were shown).
TEST(CudaExceptions, AWarpWhoseBlockIsUnknownStatesNoBlock) {
    Tables t;
    auto wp = t.add(".cudbg.wptbl.dev0.sm0.cta0", 0x40, warpRow(12, 0x7fff0010), 4000000, 3);
    t.add(".cudbg.lntbl.dev0.sm0.cta0.wp0", 0x38, laneRow(5, 14), wp, 0);
    auto m = t.read();
    ASSERT_EQ(m.exceptions.size(), 1u);
    const auto& e = m.exceptions[0];
    EXPECT_TRUE(e.warp_known);
    EXPECT_FALSE(e.block_known);
    EXPECT_FALSE(e.sm_known);
    EXPECT_EQ(e.warp, 12u);
    auto x = toJson(m)["exceptions"][0];
    EXPECT_EQ(x["warp"], 12);
    EXPECT_FALSE(x.contains("block")) << x.dump();
    EXPECT_FALSE(x.contains("sm")) << x.dump();
    EXPECT_EQ(toJson(m)["exception_warps"], 1);
}

TEST(CudaExceptions, ForgedLinksAndRowSizesReadNothingOutside) {
    Tables t;
    std::string lanes = laneRow(0, 14) + laneRow(1, 14);
    // A link to itself, past the table, to the null section; a row size of 0 and of 1 byte.
    t.add(".cudbg.lntbl.dev0.sm0.cta0.wp0", 0x38, lanes, 1, 0);
    t.add(".cudbg.lntbl.dev0.sm0.cta0.wp1", 0x38, lanes, 4000000, 7);
    t.add(".cudbg.lntbl.dev0.sm0.cta0.wp2", 0x38, lanes, 0, 0);
    t.add(".cudbg.lntbl.dev0.sm0.cta0.wp3", 0, lanes, 0, 0);
    t.add(".cudbg.lntbl.dev0.sm0.cta0.wp4", 1, lanes, 0, 0);
    t.add(".cudbg.smtbl.dev0", 0x30, smRow(0, 0xffffffffu, 0), 0, 0);  // UNKNOWN: not one
    auto m = t.read();
    ASSERT_EQ(m.exceptions.size(), 3u);  // the three with a readable row size
    for (const auto& e : m.exceptions) {
        EXPECT_EQ(e.code, 14u);
        EXPECT_EQ(e.lanes, 2u);
        EXPECT_FALSE(e.pc);  // the self-linked one reads its own rows: errorPCValid 0
    }
    EXPECT_FALSE(m.exceptions[1].grid_id);  // no warp row: nothing above it either
    EXPECT_FALSE(m.exceptions[2].grid_id);
    // Links that lead nowhere state no place: no "SM 0 warp 0 block (0,0,0)" in `cores --json`
    // and `show` (hostile review 148), where zeros looked like a real location.
    for (size_t i : {1, 2}) {
        EXPECT_FALSE(m.exceptions[i].warp_known);
        EXPECT_FALSE(m.exceptions[i].sm_known);
        auto x = toJson(m)["exceptions"][i];
        EXPECT_FALSE(x.contains("sm")) << x.dump();
        EXPECT_FALSE(x.contains("warp")) << x.dump();
        EXPECT_EQ(x["lanes"], 2);
    }
    EXPECT_EQ(cudaExceptionName(0), "");
    EXPECT_EQ(cudaExceptionName(20), "");
    EXPECT_EQ(cudaExceptionName(0xffffffffu), "");
}

TEST(CudaExceptions, NobitsTablesFloodsAndGarbageCodesAreNotExceptions) {
    // Hostile review 143: a NOBITS table's offset and size are anything (its "rows" were the
    // file's own headers); one SM table named 1000 times counted each SM 1000 times; a code
    // cudadebugger.h cannot hold (1651797363) is no exception.
    Tables t;
    t.add(".cudbg.lntbl.dev0.sm0.cta0.wp0", 0x38, laneRow(0, 14), 0, 0);
    t.c.places.back().type = 8;  // SHT_NOBITS
    std::string sm = smRow(3, 6, 0x7000200) + smRow(4, 1651797363u, 0);
    for (int i = 0; i < 1000; ++i) t.add(".cudbg.smtbl.dev0", 0x30, sm, 0, 0);
    auto m = t.read();
    ASSERT_EQ(m.exceptions.size(), 1u);
    EXPECT_EQ(m.exceptions_total, 1u);
    EXPECT_EQ(m.exceptions[0].sm, 3u);
    EXPECT_EQ(m.exceptions[0].code, 6u);
}

TEST(CudaExceptions, KeepsTheFirstSixtyFourAndCountsAll) {
    Tables t;
    for (int w = 0; w < 100; ++w)
        t.add(".cudbg.lntbl.dev0.sm0.cta0.wp" + std::to_string(w), 0x38, laneRow(0, 1), 0, 0);
    auto m = t.read();
    EXPECT_EQ(m.exceptions.size(), kMaxExceptions);
    EXPECT_EQ(m.exceptions_total, 100u);
    EXPECT_EQ(cudaExceptionName(m.exceptions[0].code), "Lane Illegal Address");
}

// Hostile review 148, HIGH 1: 2 000 module tables naming one grid's handle, each pointing to the
// same junk cubin (no symbols: the kernel stays unnamed). The cubin was read and parsed again
// for every table (65 000 tables and a 256 MiB cubin: hours in the parent); now each cubin is
// read once, whatever the number of tables that name it.
TEST(CudaGridKernels, ACubinNamedByManyModuleTablesIsReadOnce) {
    Tables t;
    t.c.kind = CoreKind::CudaGpu;
    std::string grid(0x88, '\0');
    put(grid, 0x18, uint64_t{0x7000000});  // function entry
    put(grid, 0x20, uint64_t{0xabcd});     // module handle
    t.add(".cudbg.gridtbl.dev0", 0, grid, 0, 0);
    std::string handle(8, '\0');
    put(handle, 0, uint64_t{0xabcd});
    for (int i = 0; i < 2000; ++i) t.add(".cudbg.modtbl.dev0.ctx0", 8, handle, 0, 0);
    const uint32_t img = t.add(".cudbg.relfimg.dev0.ctx0", 0, std::string(1 << 20, 'j'), 0, 0);
    uint64_t imageBytes = 0, reads = 0;
    const ReadAt read = [&](uint64_t off, size_t n) {
        ++reads;
        if (off == t.c.places[img].offset) imageBytes += n;
        return off >= t.bytes.size() ? std::string() : t.bytes.substr(off, n);
    };
    auto m = gpuCoreMeta(t.c, "core_1_h_42.nvcudmp", &read);
    ASSERT_EQ(m.grids.size(), 1u);
    EXPECT_EQ(m.grids[0].kernel, "");  // junk: no symbol
    EXPECT_EQ(imageBytes, 1u << 20);   // once (before: 2 000 times, 2 GB)
    EXPECT_LT(reads, 2100u);
}

}  // namespace
}  // namespace gpufault::coredump
