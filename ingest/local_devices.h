// This machine's GPUs from sysfs and /proc, no vendor tools needed: `gpufault devices`,
// `codeobj`, `preflight`, the diagnoses of `ingest`/`diagnose` and gpufaultd's worker.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpufault {

/// A GPU of this machine (sysfs, /proc). `node`: the KFD topology node (amdgpu; ROCr's
/// "GPU node-N" when the process sees every node) or the NVIDIA device minor.
struct Device {
    std::string vendor;  ///< amd | nvidia
    std::optional<int> node;
    std::string pci, target, name, uuid, vbios, driver;
    std::optional<int> render_minor;
    std::optional<uint64_t> vram_total, vram_used;  ///< bytes
    std::optional<uint64_t> gpu_id;  ///< KFD's gpu_id (names vram_<gpu_id> in kfd/proc)
};
/// GPUs under `sysfs_root` (KFD topology, PCI attributes) and `proc_root` (NVIDIA module).
std::vector<Device> listDevices(const std::string& sysfs_root, const std::string& proc_root);

}  // namespace gpufault
