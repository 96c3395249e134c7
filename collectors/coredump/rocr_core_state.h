// The KFD snapshot in a ROCr GPU core: the descriptor of its "AMDGPU" note of type
// NT_AMDGPU_CORE_STATE (33). Pure: it decodes the bytes readCoreLayout kept
// (CoreNotes::amdgpu_core_state), read like every note through the core's ReadAt.
//
// Layout, as ROCr writes it (NoteSegmentBuilder::Collect, PushInfo pads each part to 8 bytes):
//   ROCm/ROCR-Runtime runtime/hsa-runtime/libamdhsacode/lnx/amd_core_dump.cpp
//     @ 0b299b31dedc6acb100d8dd9ccd5f11612d745ae (rows from hsaKmtDbgGetDeviceData and
//     hsaKmtDbgGetQueueData, KFD's own snapshot, exception_status included), the same header in
//     runtime/hsa-runtime/libamdhsacode/amd_core_dump.cpp before the lnx/ split;
//   ROCm/rocm-systems projects/rocr-runtime/runtime/hsa-runtime/libamdhsacode/lnx/amd_core_dump.cpp
//     @ 2d4834a44a809e8254401dc74cff9d7f82220b26 (the same header; rows filled by the runtime,
//     KFD version written as 1.18, entry sizes 16/120/64, and exception_status written as 0,
//     "Placeholder until exception caching is implemented": a core from that writer states no
//     exception, which is not evidence that none was raised).
//
//   u64 note version (1)  u32 KFD major  u32 KFD minor  u64 runtime_info_size
//   u32 n_agents  u32 agent entry size  u32 n_queues  u32 queue entry size        (40 bytes)
//   kfd_runtime_info (runtime_info_size bytes)                 padded to 8
//   n_agents × kfd_dbg_device_info_entry (entry size each)     padded to 8
//   n_queues × kfd_queue_snapshot_entry (entry size each)      padded to 8
//
// Row layouts and exception codes: linux include/uapi/linux/kfd_ioctl.h (torvalds/linux
// @ 100c85421b52e41269ada88f7d71a6b8a06c7a11, KFD ioctl 1.15): kfd_runtime_info, kfd_dbg_device_
// info_entry, kfd_queue_snapshot_entry, enum kfd_dbg_trap_exception_code, KFD_EC_MASK(ecode) =
// 1ULL << (ecode - 1), KFD_IOC_QUEUE_TYPE_*. The snapshot ioctls document that the entry size
// strides the rows and may exceed the struct (fields added at the end): it is honoured here.
// location_id is KFD's node_props.location_id = pci_dev_id() = bus << 8 | devfn
// (drivers/gpu/drm/amd/amdkfd/kfd_topology.c, torvalds/linux
// @ d7ab8e67aa52e27837aefdc0d67af93ae0931abc: PCI_DEVID(bus, devfn)); on multi-partition GPUs
// newer kernels put the partition's node id in bits 28–31 (an amd-gfx patch: "On
// multi-partition nodes, node id = location_id[31:28]"; not found in a stored tree). The PCI
// domain is not in the row (KFD keeps it apart, node_props.domain): the address is written with
// domain 0000. gfx_target_version is major·10000 + minor·100 + stepping (kfd_device.c:
// 90010 Aldebaran = gfx90a, 90402 = gfx942, 100300 = gfx1030).
//
// Not in the note: the kernel (it needs the waves' state, read by amd-dbgapi from the context
// save area) and the code-object list (ROCr's _amdgpu_r_debug, whose host address is
// kfd_runtime_info.r_debug, lies in host memory; the GPU core holds only /dev/dri/renderD*
// mappings).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufault::coredump {

/// One GPU of the snapshot: a kfd_dbg_device_info_entry row.
struct RocrAgent {
    uint32_t gpu_id = 0;                ///< KFD's gpu_id (topology `nodes/N/gpu_id`)
    uint32_t location_id = 0;           ///< bus << 8 | devfn, partition node id in bits 28–31
    std::string pci;                    ///< `0000:BB:DD.F` from location_id (domain not in the row)
    std::optional<uint32_t> partition;  ///< location_id bits 28–31 when set
    uint32_t vendor_id = 0, device_id = 0;
    uint32_t gfx_target_version = 0;      ///< 90402
    std::string target;                   ///< `gfx942`; "" when the version names none
    uint64_t exception_status = 0;        ///< KFD_EC_MASK bits
    std::vector<std::string> exceptions;  ///< names of the bits set (`EC_DEVICE_MEMORY_VIOLATION`)
};

/// One queue of the snapshot: a kfd_queue_snapshot_entry row.
struct RocrQueue {
    uint32_t queue_id = 0, gpu_id = 0;
    uint32_t queue_type = 0;  ///< KFD_IOC_QUEUE_TYPE_*: 2 compute_aql
    uint64_t ring_base_address = 0;
    uint32_t ring_size = 0;  ///< bytes
    uint64_t exception_status = 0;
    std::vector<std::string> exceptions;  ///< `EC_QUEUE_WAVE_MEMORY_VIOLATION` …
};

/// The decoded NT_AMDGPU_CORE_STATE note. What could not be read is said in `warnings` (the
/// note is never trusted: counts, sizes and versions are checked against its size).
struct RocrCoreState {
    uint64_t note_version = 0;
    uint32_t kfd_major = 0, kfd_minor = 0;  ///< the KFD ioctl version the writer states
    std::optional<uint64_t> r_debug;        ///< kfd_runtime_info: host address of _amdgpu_r_debug
    std::optional<uint32_t> runtime_state;  ///< kfd_dbg_runtime_state: 1 enabled …
    std::vector<RocrAgent> agents;          ///< the first kMaxRocrAgents rows
    std::vector<RocrQueue> queues;          ///< the first kMaxRocrQueues rows
    uint32_t agents_stated = 0, queues_stated = 0;  ///< n_agents, n_queues as written
    std::vector<std::string> warnings;
};

inline constexpr size_t kMaxRocrAgents = 256;        ///< agent rows kept (KFD: 128 GPUs at most)
inline constexpr size_t kMaxRocrQueues = 1024;       ///< queue rows kept
inline constexpr uint32_t kMaxRocrEntrySize = 4096;  ///< a larger row size is refused (bytes)

/// Decodes the descriptor of an NT_AMDGPU_CORE_STATE note (bytes after the note's name).
/// Never reads outside `desc`; a note version other than 1 is not read past its header.
/// `file_offset`: where `desc` starts in the core file (warnings name both offsets).
RocrCoreState readRocrCoreState(std::string_view desc, uint64_t file_offset = 0);

/// KFD's name of an exception code (kfd_dbg_trap_exception_code): 5 →
/// "EC_QUEUE_WAVE_MEMORY_VIOLATION"; "" for 0 and codes the header does not list.
std::string_view kfdExceptionName(uint32_t code);

/// Names of the exceptions set in a KFD exception_status (bit ecode − 1 for code ecode), in code
/// order; an unlisted code is `EC_<code>`.
std::vector<std::string> kfdExceptionNames(uint64_t status);

/// The exception of `status` that says most about a fault (memory violations first, queue
/// before device; informational codes such as EC_QUEUE_NEW never), with words for a reason
/// ("queue memory violation"); nullopt when none.
struct KfdCause {
    uint32_t code = 0;
    std::string_view name, words;
};
std::optional<KfdCause> kfdMostSpecific(uint64_t status);

/// What a ROCr GPU core says about its fault: the queue (row order) whose exceptions hold the
/// most specific cause (kfdMostSpecific), else such an agent; its agent (by gpu_id). With no
/// exception: the only agent, if there is one.
struct RocrFault {
    std::optional<KfdCause> cause;
    const RocrQueue* queue = nullptr;
    const RocrAgent* agent = nullptr;
};
RocrFault rocrFault(const RocrCoreState& s);

/// `gfx942` for 90402 (major·10000 + minor·100 + stepping, minor and stepping in hex digits
/// as ROCr names ISAs); "" when the version is 0 or names no target.
std::string gfxTargetName(uint32_t gfx_target_version);

/// KFD_IOC_QUEUE_TYPE_* name: 0 compute, 1 sdma, 2 compute_aql, 3 sdma_xgmi; "type N" else.
std::string queueTypeName(uint32_t type);

}  // namespace gpufault::coredump
