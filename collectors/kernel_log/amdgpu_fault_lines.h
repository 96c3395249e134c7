// The lines of an amdgpu page-fault block, one parser per producer format string
// (FORMATS.md §1.1–1.4, 1.8; gmc_v6/v7/v8_0.c, gmc_v9_0.c, gmc_v10_0.c … gmc_v12_0.c,
// gfxhub_v*/mmhub_v* print_l2_protection_fault_status, amdgpu_vm_print_task_info).
#pragma once

#include <cstdint>
#include <string_view>

#include "collectors/common/evidence.h"

namespace gpufault::amdgpu {

/// Which line of a block a message is, in the order the kernel prints them. gmc v6–v8 blocks use
/// Header (`GPU fault detected`), Address (`VM_CONTEXT1_PROTECTION_FAULT_ADDR`), Status
/// (`VM_CONTEXT1_PROTECTION_FAULT_STATUS`) and Client (`VM fault (…) at page …`).
enum class FaultStage : uint8_t {
    Header = 0,        ///< `[gfxhub0] no-retry page fault (src_id:… ring:… vmid:… pasid:…`
    Task,              ///< ` Process X pid N thread Y pid M` and its variants
    Address,           ///< `  in page starting at address 0x… from (IH )client …`
    Cookie,            ///< `  cookie node_id N fault from die AID0.XCD1` (MI300)
    Status,            ///< `(VM|GCVM|MMVM)_L2_PROTECTION_FAULT_STATUS:0x…`
    Client,            ///< `\t Faulty UTCL2 client ID: TCP (0x8)`
    MoreFaults,        ///< `\t MORE_FAULTS: 0x1`
    WalkerError,       ///< `\t WALKER_ERROR: 0x0`
    PermissionFaults,  ///< `\t PERMISSION_FAULTS: 0x3`
    MappingError,      ///< `\t MAPPING_ERROR: 0x0`
    Rw,                ///< `\t RW: 0x1`
    None,              ///< not a line of a fault block
};

/// The stage of `body` (the message after the device prefix, see splitDeviceLine), or None.
/// Cheap: a few prefix comparisons.
FaultStage classifyFaultLine(std::string_view body);

/// Copies what the line of that stage states into `e` (hub, retry, vmid, pasid, task, address,
/// client, status, access, attrs `src_id`, `ring`, `ih_client`, `ih_client_name`, `node_id`,
/// `die`, `client_id`, `more_faults`, `walker_error`, `permission_faults`, `mapping_error`, and
/// for gmc v6–v8 `src_data`, `protections`, `mc_client`, `mc_id`). Numbers cut by the end of the
/// line are left out. Returns false when the line states nothing usable.
bool applyFaultLine(FaultStage stage, std::string_view body, Evidence& e);

}  // namespace gpufault::amdgpu
