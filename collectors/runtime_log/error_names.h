// HIP and CUDA error names, numbers and strings (FORMATS.md §9.5 CUDA table, §9.6 HIP table:
// hipGetErrorName/hipGetErrorString of ROCm/clr hip_error.cpp, cudaGetErrorName/String).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpufault::errnames {

/// The runtime name whose error string starts `text` (longest match, at a word boundary):
/// `an illegal memory access was encountered` → `hipErrorIllegalAddress` (hip) or
/// `cudaErrorIllegalAddress` (!hip). Falls back to the other vendor's table. nullopt if none.
std::optional<std::string_view> nameForText(std::string_view text, bool hip);
/// The name for an error number (`719` → `cudaErrorLaunchFailure` / `hipErrorLaunchFailure`).
std::optional<std::string_view> nameForCode(long code, bool hip);
/// Statuses that programs poll for and that are never evidence (EVIDENCE.md "Benign statuses"):
/// `hipErrorNotReady`, `cudaErrorNotReady`, `…PeerAccessAlreadyEnabled`, `…PeerAccessNotEnabled`,
/// `…HostMemoryAlreadyRegistered`/`NotRegistered`, `hipSuccess`/`cudaSuccess`, and CUDA_ERROR_
/// forms.
bool isBenign(std::string_view name);
/// Results that programs probe for and that are routine, not faults (FORMATS.md §9.5/§9.6 tables):
/// 500 "named symbol not found" (`hipErrorNotFound`, `cudaErrorSymbolNotFound`,
/// `CUDA_ERROR_NOT_FOUND`: cuGetProcAddress, cuModuleGetFunction, cuMemGetAddressRange of a
/// pointer the driver does not own) and 801 "operation not supported" (`…ErrorNotSupported`,
/// `CUDA_ERROR_NOT_SUPPORTED`: attribute and feature queries). They are records, but context of a
/// later fault of their stream, never an incident of their own (docs/correlation.md).
bool isProbeResult(std::string_view name);
/// cuGetErrorName()'s names of the errors FORMATS.md §9.5 lists (`CUDA_ERROR_ILLEGAL_ADDRESS` …:
/// a fault, a launch, a missing code object, the allocator): other `CUDA_ERROR_…` words (an
/// enum, a variable named so) are no error names.
bool isDriverName(std::string_view name);
/// Names that mean "no code object for this GPU": hipErrorNoBinaryForGpu,
/// cudaErrorNoKernelImageForDevice, CUDA_ERROR_NO_BINARY_FOR_GPU, …InvalidDeviceFunction.
bool isMissingCodeObject(std::string_view name);
/// The hsa_status_t name of an HSA status code (hsa.h and hsa_ext_amd.h: `0x100f` →
/// `HSA_STATUS_ERROR_INVALID_ISA`, `0x29` → `HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION`), for
/// HIP's queue callback lines that print only the code. nullopt for codes no header defines.
std::optional<std::string_view> hsaStatusName(uint64_t code);
/// "amd" for `hip…`/`HSA_…` names, "nvidia" for `cuda…`/`CUDA_ERROR_…`, nullptr otherwise.
const char* vendorOfName(std::string_view name);

}  // namespace gpufault::errnames
