// Offload bundle entry IDs and AMD target IDs. Source: clang's OffloadBundler.cpp
// (OffloadTargetInfo, LLVM 17–20) and LLVM AMDGPUUsage "Target ID" (llvmorg-20.1.0).
//   entry ID:  <kind>-<arch>-<vendor>-<os>-<env>[-<target ID>]
//   hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+ target ID: <processor>(:<feature>(+|-))* features:
//   sramecc, xnack
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "collectors/code_object/bytes.h"

namespace gpufault::codeobj {

/// A target feature's setting: absent from the target ID (= any), `+` or `-`.
enum class Feature : uint8_t { Any, On, Off };

/// `gfx90a:xnack+`: a processor and its xnack/sramecc settings.
struct TargetId {
    std::string processor;
    Feature xnack = Feature::Any, sramecc = Feature::Any;
    std::vector<std::string> other;  ///< unknown features, as written (`foo+`)

    /// The canonical text: processor, then `sramecc`, then `xnack` (LLVM's order), then others.
    std::string text() const;
    bool operator==(const TargetId&) const = default;
};

/// Parses `gfx90a:sramecc-:xnack+`; an error (offset 0 = start of `s`) when a feature has no
/// `+`/`-` or the processor is empty.
Result<TargetId> parseTargetId(std::string_view s);

/// A bundle entry ID split into its parts.
struct BundleEntryId {
    std::string kind;    ///< host, hip, hipv4, openmp, cuda, …
    std::string triple;  ///< amdgcn-amd-amdhsa, x86_64-unknown-linux-gnu, …
    std::string target;  ///< the target ID text (`gfx906:xnack-`), "" for host entries
    bool isHost() const { return kind == "host"; }
};

/// Splits `id` on `-` into at most six parts (the sixth, the target ID, may itself hold `-`:
/// `gfx10-3-generic`). Old five-part IDs (`hip-amdgcn-amd-amdhsa-gfx906`) are accepted.
BundleEntryId parseBundleEntryId(std::string_view id);

}  // namespace gpufault::codeobj
