// GPUs as the kernel describes them: KFD topology nodes (amdgpu) and /proc/driver/nvidia.
// Pure parsers: file contents in, structs out.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpufault {

/// A KFD topology node's `properties` file (drivers/gpu/drm/amd/amdkfd/kfd_topology.c,
/// `node_show`: one `name value` pair per line, decimal). CPU nodes have simd_count 0.
struct KfdNode {
    std::map<std::string, uint64_t> props;
    /// The value of `key`, nullopt when absent.
    std::optional<uint64_t> get(const std::string& key) const;
    bool isGpu() const { return get("simd_count").value_or(0) > 0; }
    /// `gfx_target_version` as an LLVM processor name: major*10000 + minor*100 + stepping,
    /// minor and stepping printed in hex (90010 → gfx90a, 110501 → gfx1151, 90402 → gfx942).
    std::optional<std::string> target() const;
    /// The PCI address `DDDD:BB:DD.F` from `domain` and `location_id` (bus << 8 | dev << 3 |
    /// fn), nullopt for CPU nodes.
    std::optional<std::string> pci() const;
};
/// Parses a properties file; malformed lines are skipped.
KfdNode parseKfdProperties(std::string_view text);

/// `/proc/driver/nvidia/gpus/<pci>/information` (NVIDIA kernel module): `Key: \t value` lines
/// (`Model`, `GPU UUID`, `Video BIOS`, `Bus Location`, `Device Minor`, `GPU Firmware`, …).
std::map<std::string, std::string> parseNvidiaInformation(std::string_view text);

/// The CUDA target (`sm_90`) of an NVIDIA GPU from its model name as that file prints it
/// (`NVIDIA H200`), by a table of datacenter, workstation and GeForce models (NVIDIA's "CUDA
/// GPUs – Compute Capability" list); nullopt for a model not in it. /proc does not state the
/// compute capability itself.
std::optional<std::string> nvidiaTargetOfModel(std::string_view model);

}  // namespace gpufault
