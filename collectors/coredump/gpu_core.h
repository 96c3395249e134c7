// GPU cores: ROCr's `gpucore.<pid>` (ELF e_machine EM_AMDGPU, 224) and CUDA's GPU core dumps
// (ELF e_machine EM_CUDA, 190, with `.cudbg.*` sections). Only their metadata is read; they are
// not unwound. Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/coredump/core_elf.h"
#include "collectors/coredump/rocr_core_state.h"

namespace gpufault::coredump {

/// One kernel parameter (EIATTR_KPARAM_INFO of the cubin's `.nv.info.<kernel>`), with its type
/// from the demangled kernel name when there is one.
struct CudaParamInfo {
    uint32_t ordinal = 0, offset = 0, size = 0;  ///< offset and size in bytes
    std::string type;                            ///< `float*`; "" for extern "C" kernels
};

/// A CUDA kernel argument that points into device memory the core holds: an 8-byte word of
/// `.cudbg.param.devD.gridG` whose value lies in a `.cudbg.global.N` section (device memory,
/// dumped unless CUDA_COREDUMP_GENERATION_FLAGS has skip_global_memory). [lo, hi) is the
/// dumped region holding it (adjacent sections merged): the allocation lies inside it.
struct CudaParamPointer {
    int dev = 0, grid = 0;
    uint64_t offset = 0;  ///< bytes into the kernel's parameter block
    uint64_t value = 0;   ///< the pointer
    uint64_t lo = 0, hi = 0;
    std::optional<uint32_t> ordinal;  ///< the parameter holding it (KPARAM_INFO), when known
    uint64_t in_param = 0;            ///< bytes into that parameter (a struct's member)
};

/// The launch of a grid (CudbgGridTableEntry of cuda-gdb's cudacoredump.h).
struct CudaGrid {
    int dev = 0, grid = 0;
    uint64_t grid_id = 0;  ///< gridId64, as the block table names it
    uint64_t function_entry = 0;
    uint32_t grid_dim[3] = {0, 0, 0}, block_dim[3] = {0, 0, 0};
    uint32_t host_tid = 0;  ///< the host thread that launched it
    std::string kernel;     ///< the function at function_entry (relocated cubin's symbols)
    std::vector<CudaParamInfo> params;  ///< by ordinal
};

/// A warp a CUDA exception stopped (one per exception code its lanes hold): lane table rows
/// (CudbgThreadTableEntry, `.cudbg.lntbl.*`) whose `exception` is set, with their warp
/// (`.cudbg.wptbl.*`: errorPC), block
/// (`.cudbg.ctatbl.*`: grid, blockIdx) and SM (`.cudbg.smtbl.devD`), found through each table's
/// sh_link/sh_info (cuda-gdb's cudacoredump.h). An SM table row's own exception (CUDA driver
/// ≥ r555: its faulted warps had exited) gives a row with `lanes` 0.
struct CudaException {
    int dev = 0;
    uint32_t sm = 0;             ///< the SM's smId
    uint32_t warp = 0;           ///< warpId
    uint32_t code = 0;           ///< CUDBGException_t (cudadebugger.h): 14 Warp Illegal Address …
    std::optional<uint64_t> pc;  ///< errorPC (device address), when marked valid
    std::optional<uint64_t> grid_id;  ///< the block's gridId64
    uint32_t block[3] = {0, 0, 0};    ///< blockIdx
    uint32_t thread[3] = {0, 0, 0};   ///< threadIdx of the first lane with the exception
    uint32_t lanes = 0;               ///< lanes of the warp with this exception
    /// The lane table's links led to its warp row (warp, pc), on to its block row (block,
    /// grid_id) and on to its SM row (sm, dev): false for a forged or cut core, whose zeros are
    /// no place.
    bool warp_known = false, block_known = false, sm_known = false;
};

/// cuda-gdb's words for a CUDBGException_t: 14 → "Warp Illegal Address"; "" for 0 and codes
/// cudadebugger.h does not list.
std::string_view cudaExceptionName(uint32_t code);

struct GpuCoreMeta {
    /// from the file name `gpucore.<pid>`, `…core.<pid>` or CUDA's
    /// `core_<time>_<host>_<pid>.nvcudmp`
    std::optional<int64_t> pid;
    std::optional<int64_t> time;  ///< CUDA's `%t` in the file name: UTC seconds
    uint32_t e_flags = 0;
    /// AMDGPU: the processor of the snapshot's faulting (or only) agent, else of e_flags
    /// (`gfx90a`; ROCr writes e_flags 0)
    std::optional<std::string> target;
    size_t sections = 0;
    std::vector<std::string> cudbg_sections;  ///< CUDA: distinct `.cudbg.*` section names
    std::vector<CudaGrid> grids;              ///< CUDA: `.cudbg.gridtbl.devD` rows
    std::vector<CudaParamPointer> params;     ///< CUDA: pointer arguments of the grids
    std::vector<CudaException> exceptions;    ///< CUDA: the first kMaxExceptions, table order
    size_t exceptions_total = 0;  ///< CUDA: exception rows (a warp's codes, SMs), all of them
    size_t exception_warps = 0;   ///< CUDA: warps (and SMs whose warps exited) with one
    /// ROCr: the KFD snapshot of its NT_AMDGPU_CORE_STATE note (agents, queues, exceptions),
    /// when the core has one (rocr_core_state.h)
    std::optional<RocrCoreState> rocr;
};

/// Exceptions kept per CUDA core (a grid of faulting warps can have thousands).
inline constexpr size_t kMaxExceptions = 64;

/// The metadata a GPU core's structure states. `file_name` is the core's base name. With
/// `read` (the core's bytes), a CUDA core's grid table and parameter blocks are read too.
GpuCoreMeta gpuCoreMeta(const CoreLayout& c,
                        std::string_view file_name,
                        const ReadAt* read = nullptr);

/// Fills m.exceptions and m.exceptions_total from a CUDA GPU core's lane, warp, block and SM
/// tables (at most kMaxExceptions rows kept; lane tables read capped at 65,536 and 64 MiB).
void readCudaExceptions(const CoreLayout& c, const ReadAt& read, GpuCoreMeta& m);

/// The pid and time of CUDA's default core name `core_<time>_<host>_<pid>.nvcudmp`
/// (CUDA_COREDUMP_FILE's default pattern `core_%t_%h_%p.nvcudmp`); nullopt for other names.
struct CudaCoreName {
    int64_t time = 0;
    std::string host;
    int64_t pid = 0;
};
std::optional<CudaCoreName> parseCudaCoreName(std::string_view file_name);

/// `cores --json` meta: pid, target, CUDA grids/params/exceptions, ROCr `rocr` (toJson below).
nlohmann::json toJson(const GpuCoreMeta& m);
/// A ROCr snapshot as meta `rocr`: note_version, kfd_version (`1.13`), r_debug, runtime_state,
/// agents (gpu_id, pci, partition, location_id, vendor_id, device_id, gfx_target_version,
/// target, exception_status, exceptions), queues (queue_id, gpu_id, type, ring_base_address,
/// ring_size in bytes, exception_status, exceptions), agents_stated / queues_stated when other
/// than the rows kept, warnings. Addresses, masks and PCI ids as `0x` hex strings.
nlohmann::json toJson(const RocrCoreState& s);

}  // namespace gpufault::coredump
