// Does code built for one target run on a device? One table of rules, first match decides.
// Sources: AMD — clang OffloadBundler.cpp isCodeObjectCompatible and the HIP runtime's
// isCodeObjectCompatibleWithDevice (processor equal; a feature the code states must have the
// device's sign), the generic processor table of LLVM AMDGPUUsage (llvmorg-20.1.0), ROCr's
// HSA_OVERRIDE_GFX_VERSION (major.minor.stepping, stepping in hex: 9.0.10 = gfx90a).
// CUDA — the CUDA C++ Programming Guide "Binary Compatibility" / "Application Compatibility":
// a cubin runs on the same major with an equal or newer minor; `a` (arch-specific) code only
// on that exact arch; PTX is JIT-compiled for the device when it is at least the PTX's arch.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "collectors/code_object/bytes.h"
#include "collectors/code_object/target_id.h"

namespace gpufault::codeobj {

/// A code or device target: `gfx90a:xnack+`, `gfx10-3-generic`, `sm_86`, `sm_90a`,
/// `compute_90` (PTX).
struct Target {
    enum class Kind : uint8_t { Amd, CudaSass, CudaPtx } kind = Kind::Amd;
    TargetId amd;                ///< Amd: processor and features
    uint32_t sm = 0;             ///< CUDA: 86 for sm_86, 120 for sm_120
    bool arch_specific = false;  ///< CUDA: the `a` suffix (sm_90a)
    std::string text() const;
};

/// Parses a target as written on the command line or derived from a bundle/fatbin entry.
Result<Target> parseTarget(std::string_view s);

/// `11.0.0` → `gfx1100`, `9.0.10` → `gfx90a` (ROCr: gfx + major + minor + stepping in hex).
std::optional<std::string> processorFromHsaOverride(std::string_view version);

struct Verdict {
    bool runs = false;
    std::string_view rule;  ///< the rule that decided, for messages and tests
};

/// Whether `code` runs on `device`. A device feature left `Any` (not given) accepts code of
/// either sign. `hsa_override_gfx_version` (the environment variable's value, "" = unset)
/// replaces an AMD device's processor first.
Verdict compatible(const Target& code,
                   const Target& device,
                   std::string_view hsa_override_gfx_version = {});

}  // namespace gpufault::codeobj
