// The exceptions of a CUDA GPU core: which warps stopped, with what, where. Layouts from
// cuda-gdb's cudacoredump.h (CudbgSmTableEntry, CudbgCTATableEntry, CudbgWarpTableEntry,
// CudbgThreadTableEntry; each table's row size is its sh_entsize, which grows with the driver),
// exception codes from cudadebugger.h (CUDBGException_t). Pure.
#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "collectors/coredump/gpu_core.h"
#include "collectors/coredump/le_field.h"

namespace gpufault::coredump {

namespace {

constexpr uint32_t kUnknown = 0xffffffffu;   ///< CUDBG_EXCEPTION_UNKNOWN
constexpr uint64_t kLaneRowMin = 36;         ///< through `exception` (offset 32)
constexpr uint64_t kWarpRowMin = 28;         ///< through `errorPCValid` (offset 24)
constexpr uint64_t kCtaRowMin = 20;          ///< through blockIdxZ (offset 16)
constexpr uint64_t kSmRowExceptionMin = 24;  ///< through errorPC (r555 and later)
constexpr size_t kMaxLaneTables = 1u << 16;
constexpr size_t kMaxSmTables = 256;  ///< one per device
/// Bytes of lane and SM tables read in all (a hostile core may name one blob 65,536 times).
constexpr uint64_t kTableBytesBudget = 64ull << 20;
constexpr uint32_t kMaxCode = 255;  ///< cudadebugger.h names 1–19; larger values are garbage

/// Row `row` of table section `t` (empty when the index, the row or its size is out of range).
std::string rowOf(const CoreLayout& c, const ReadAt& read, uint64_t t, uint64_t row, uint64_t min) {
    if (t == 0 || t >= c.places.size()) return {};
    const auto& p = c.places[t];
    if (!p.hasBytes()) return {};
    if (p.entsize < min || p.entsize > 4096 || row >= p.size / p.entsize) return {};
    return read(p.offset + row * p.entsize, static_cast<size_t>(p.entsize));
}

bool isException(uint32_t code) {
    return code != 0 && code != kUnknown && code <= kMaxCode;
}

}  // namespace

std::string_view cudaExceptionName(uint32_t code) {
    static constexpr std::array<std::string_view, 20> kNames = {
        "",
        "Lane Illegal Address",
        "Lane User Stack Overflow",
        "Device Hardware Stack Overflow",
        "Warp Illegal Instruction",
        "Warp Out-of-range Address",
        "Warp Misaligned Address",
        "Warp Invalid Address Space",
        "Warp Invalid PC",
        "Warp Hardware Stack Overflow",
        "Device Illegal Address",
        "Lane Misaligned Address",
        "Warp Assert",
        "Lane Syscall Error",
        "Warp Illegal Address",
        "Lane Nonmigratable Atomsys",
        "Lane Invalid Atomsys",
        "Cluster Out-of-range Address",
        "Cluster Block Not Present",
        "Warp Stack Canary",
    };
    return code < kNames.size() ? kNames[code] : std::string_view{};
}

void readCudaExceptions(const CoreLayout& c, const ReadAt& read, GpuCoreMeta& m) {
    const size_t n = std::min(c.sections.size(), c.places.size());
    std::map<std::pair<int, uint32_t>, bool> smWithWarp;  // (dev, smId) with a warp row kept
    auto keep = [&](CudaException e) {
        ++m.exceptions_total;
        if (m.exceptions.size() < kMaxExceptions) m.exceptions.push_back(e);
    };
    size_t tables = 0;
    uint64_t budget = kTableBytesBudget;
    for (size_t i = 0; i < n; ++i) {
        if (!c.sections[i].starts_with(".cudbg.lntbl.")) continue;
        const auto& p = c.places[i];
        if (!p.hasBytes() || p.entsize < kLaneRowMin || p.entsize > 4096 || p.size > budget ||
            ++tables > kMaxLaneTables)
            continue;
        budget -= p.size;
        auto rows = read(p.offset, static_cast<size_t>(p.size));
        // One row per exception code in the warp (lanes of one warp can stop with different
        // ones: a Lane Illegal Address beside a Lane Misaligned Address), in order of the
        // first lane with each.
        std::vector<CudaException> codes;
        for (uint64_t r = 0; r + p.entsize <= rows.size(); r += p.entsize) {
            auto row = std::string_view(rows).substr(r, p.entsize);
            uint32_t code = leField<uint32_t>(row, 32);
            if (!isException(code)) continue;
            auto it = std::find_if(
                codes.begin(), codes.end(), [&](const auto& x) { return x.code == code; });
            if (it == codes.end()) {
                CudaException e;
                e.code = code;
                for (int k = 0; k < 3; ++k) e.thread[k] = leField<uint32_t>(row, 20 + 4 * k);
                it = codes.insert(codes.end(), e);
            }
            ++it->lanes;
        }
        if (codes.empty()) continue;
        // lane table → warp row → block row → SM row, each by the table's sh_link/sh_info
        CudaException at;
        auto warp = rowOf(c, read, p.link, p.info, kWarpRowMin);
        if (!warp.empty()) {
            at.warp_known = true;
            at.warp = leField<uint32_t>(warp, 8);
            if (leField<uint32_t>(warp, 24)) at.pc = leField<uint64_t>(warp, 0);
            const auto& wt = c.places[p.link];
            auto cta = rowOf(c, read, wt.link, wt.info, kCtaRowMin);
            if (!cta.empty()) {
                at.block_known = true;
                at.grid_id = leField<uint64_t>(cta, 0);
                for (int k = 0; k < 3; ++k) at.block[k] = leField<uint32_t>(cta, 8 + 4 * k);
                const auto& ct = c.places[wt.link];
                auto sm = rowOf(c, read, ct.link, ct.info, 4);
                if (!sm.empty()) {
                    at.sm_known = true;
                    at.sm = leField<uint32_t>(sm, 0);
                    at.dev = static_cast<int>(c.places[ct.link].info);
                }
            }
        }
        if (at.sm_known) smWithWarp[{at.dev, at.sm}] = true;
        ++m.exception_warps;  // a lane table is one warp's lanes
        for (const auto& x : codes) {
            CudaException e = at;
            e.code = x.code;
            e.lanes = x.lanes;
            std::copy(std::begin(x.thread), std::end(x.thread), std::begin(e.thread));
            keep(e);
        }
    }
    // SMs whose faulted warps had all exited: only the SM row holds the exception (each SM of
    // a device once, however many tables name it).
    size_t smTables = 0;
    for (size_t i = 0; i < n; ++i) {
        if (!c.sections[i].starts_with(".cudbg.smtbl.")) continue;
        const auto& p = c.places[i];
        if (!p.hasBytes() || p.entsize < kSmRowExceptionMin || p.entsize > 4096 ||
            p.size > (1u << 20) || p.size > budget || ++smTables > kMaxSmTables)
            continue;
        budget -= p.size;
        auto rows = read(p.offset, static_cast<size_t>(p.size));
        for (uint64_t r = 0; r + p.entsize <= rows.size(); r += p.entsize) {
            auto row = std::string_view(rows).substr(r, p.entsize);
            uint32_t code = leField<uint32_t>(row, 8);
            if (!isException(code)) continue;
            CudaException e;
            e.dev = static_cast<int>(p.info);
            e.sm = leField<uint32_t>(row, 0);
            e.sm_known = true;
            if (smWithWarp.contains({e.dev, e.sm})) continue;
            smWithWarp[{e.dev, e.sm}] = true;
            e.code = code;
            if (leField<uint32_t>(row, 12)) e.pc = leField<uint64_t>(row, 16);
            ++m.exception_warps;
            keep(e);
        }
    }
}

}  // namespace gpufault::coredump
