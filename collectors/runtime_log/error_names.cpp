#include "collectors/runtime_log/error_names.h"

#include <array>
#include <utility>

namespace gpufault::errnames {

namespace {

struct Entry {
    long code;
    std::string_view name;
    std::string_view text;
};

// FORMATS.md §9.6 (ROCm/clr hipamd/src/hip_error.cpp).
constexpr std::array<Entry, 26> kHip{{
    {1, "hipErrorInvalidValue", "invalid argument"},
    {2, "hipErrorOutOfMemory", "out of memory"},
    {35, "hipErrorInsufficientDriver", "driver version is insufficient for runtime version"},
    {98, "hipErrorInvalidDeviceFunction", "invalid device function"},
    {100, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {200, "hipErrorInvalidImage", "device kernel image is invalid"},
    {209, "hipErrorNoBinaryForGpu", "no kernel image is available for execution on the device"},
    {214, "hipErrorECCNotCorrectable", "uncorrectable ECC error encountered"},
    {218, "hipErrorInvalidKernelFile", "invalid kernel file"},
    {303, "hipErrorSharedObjectInitFailed", "shared object initialization failed"},
    {304, "hipErrorOperatingSystem", "OS call failed or operation not supported on this OS"},
    {400, "hipErrorInvalidHandle", "invalid resource handle"},
    {401, "hipErrorIllegalState", "the operation cannot be performed in the present state"},
    {500, "hipErrorNotFound", "named symbol not found"},
    {600, "hipErrorNotReady", "device not ready"},
    {700, "hipErrorIllegalAddress", "an illegal memory access was encountered"},
    {701, "hipErrorLaunchOutOfResources", "too many resources requested for launch"},
    {702, "hipErrorLaunchTimeOut", "the launch timed out and was terminated"},
    {704, "hipErrorPeerAccessAlreadyEnabled", "peer access is already enabled"},
    {709, "hipErrorContextIsDestroyed", "context is destroyed"},
    {710, "hipErrorAssert", "device-side assert triggered"},
    {719, "hipErrorLaunchFailure", "unspecified launch failure"},
    {801, "hipErrorNotSupported", "operation not supported"},
    {999, "hipErrorUnknown", "unknown error"},
    {1052, "hipErrorRuntimeMemory", "runtime memory call returned error"},
    {1053, "hipErrorRuntimeOther", "runtime call other than memory returned error"},
}};

// FORMATS.md §9.5 (driver_types.h numbers; cudaGetErrorString texts).
constexpr std::array<Entry, 28> kCuda{{
    {1, "cudaErrorInvalidValue", "invalid argument"},
    {2, "cudaErrorMemoryAllocation", "out of memory"},
    {46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"},
    {98, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {200, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
    {209,
     "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {214, "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered"},
    {218, "cudaErrorInvalidPtx", "a PTX JIT compilation failed"},
    {220,
     "cudaErrorNvlinkUncorrectable",
     "uncorrectable NVLink error detected during the execution"},
    {222,
     "cudaErrorUnsupportedPtxVersion",
     "the provided PTX was compiled with an unsupported toolchain."},
    {304, "cudaErrorOperatingSystem", "OS call failed or operation not supported on this OS"},
    {400, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {401, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {600, "cudaErrorNotReady", "device not ready"},
    {700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {701, "cudaErrorLaunchOutOfResources", "too many resources requested for launch"},
    {702, "cudaErrorLaunchTimeout", "the launch timed out and was terminated"},
    {709, "cudaErrorContextIsDestroyed", "context is destroyed"},
    {710, "cudaErrorAssert", "device-side assert triggered"},
    {714, "cudaErrorHardwareStackError", "hardware stack error"},
    {715, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
    {716, "cudaErrorMisalignedAddress", "misaligned address"},
    {717, "cudaErrorInvalidAddressSpace", "operation not supported on global/shared address space"},
    {718, "cudaErrorInvalidPc", "invalid program counter"},
    {719, "cudaErrorLaunchFailure", "unspecified launch failure"},
    {720, "cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch"},
    {801, "cudaErrorNotSupported", "operation not supported"},
    {999, "cudaErrorUnknown", "unknown error"},
}};

template <size_t N>
std::optional<std::string_view> byText(const std::array<Entry, N>& table, std::string_view text) {
    const Entry* best = nullptr;
    for (auto& e : table) {
        if (text.substr(0, e.text.size()) != e.text) continue;
        // Word boundary: the string must not run on into a longer word.
        char next = text.size() > e.text.size() ? text[e.text.size()] : ' ';
        bool boundary = !((next >= 'a' && next <= 'z') || (next >= 'A' && next <= 'Z') ||
                          (next >= '0' && next <= '9') || next == '_');
        if (boundary && (!best || e.text.size() > best->text.size())) best = &e;
    }
    if (!best) return std::nullopt;
    return best->name;
}

template <size_t N>
std::optional<std::string_view> byCode(const std::array<Entry, N>& table, long code) {
    for (auto& e : table)
        if (e.code == code) return e.name;
    return std::nullopt;
}

bool endsWith(std::string_view s, std::string_view p) {
    return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace

std::optional<std::string_view> nameForText(std::string_view text, bool hip) {
    auto n = hip ? byText(kHip, text) : byText(kCuda, text);
    return n ? n : (hip ? byText(kCuda, text) : byText(kHip, text));
}

std::optional<std::string_view> nameForCode(long code, bool hip) {
    return hip ? byCode(kHip, code) : byCode(kCuda, code);
}

bool isBenign(std::string_view n) {
    return n == "hipSuccess" || n == "cudaSuccess" || n == "CUDA_SUCCESS" ||
           endsWith(n, "ErrorNotReady") || endsWith(n, "ErrorPeerAccessAlreadyEnabled") ||
           endsWith(n, "ErrorPeerAccessNotEnabled") ||
           endsWith(n, "ErrorHostMemoryAlreadyRegistered") ||
           endsWith(n, "ErrorHostMemoryNotRegistered") || n == "CUDA_ERROR_NOT_READY" ||
           n == "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED" ||
           n == "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED" ||
           n == "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED" ||
           n == "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED";
}

bool isProbeResult(std::string_view n) {
    return endsWith(n, "ErrorNotFound") || endsWith(n, "ErrorSymbolNotFound") ||
           endsWith(n, "ErrorNotSupported") || n == "CUDA_ERROR_NOT_FOUND" ||
           n == "CUDA_ERROR_NOT_SUPPORTED";
}

bool isDriverName(std::string_view n) {
    static constexpr std::string_view kNames[] = {"CUDA_ERROR_ASSERT",
                                                  "CUDA_ERROR_CONTEXT_IS_DESTROYED",
                                                  "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
                                                  "CUDA_ERROR_ECC_UNCORRECTABLE",
                                                  "CUDA_ERROR_HARDWARE_STACK_ERROR",
                                                  "CUDA_ERROR_ILLEGAL_ADDRESS",
                                                  "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                                                  "CUDA_ERROR_ILLEGAL_STATE",
                                                  "CUDA_ERROR_INVALID_ADDRESS_SPACE",
                                                  "CUDA_ERROR_INVALID_HANDLE",
                                                  "CUDA_ERROR_INVALID_IMAGE",
                                                  "CUDA_ERROR_INVALID_PC",
                                                  "CUDA_ERROR_INVALID_PTX",
                                                  "CUDA_ERROR_INVALID_VALUE",
                                                  "CUDA_ERROR_LAUNCH_FAILED",
                                                  "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                                                  "CUDA_ERROR_LAUNCH_TIMEOUT",
                                                  "CUDA_ERROR_MISALIGNED_ADDRESS",
                                                  "CUDA_ERROR_NOT_FOUND",
                                                  "CUDA_ERROR_NOT_SUPPORTED",
                                                  "CUDA_ERROR_NO_BINARY_FOR_GPU",
                                                  "CUDA_ERROR_NVLINK_UNCORRECTABLE",
                                                  "CUDA_ERROR_OPERATING_SYSTEM",
                                                  "CUDA_ERROR_OUT_OF_MEMORY",
                                                  "CUDA_ERROR_UNKNOWN",
                                                  "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"};
    for (auto k : kNames)
        if (n == k) return true;
    return false;
}

bool isMissingCodeObject(std::string_view n) {
    return n == "hipErrorNoBinaryForGpu" || n == "cudaErrorNoKernelImageForDevice" ||
           n == "CUDA_ERROR_NO_BINARY_FOR_GPU" || n == "hipErrorInvalidDeviceFunction" ||
           n == "cudaErrorInvalidDeviceFunction";
}

std::optional<std::string_view> hsaStatusName(uint64_t code) {
    // hsa.h's hsa_status_t (ROCR-Runtime inc/hsa.h) and hsa_ext_amd.h's AMD statuses
    static constexpr std::pair<uint64_t, std::string_view> kStatus[] = {
        {0x1000, "HSA_STATUS_ERROR"},
        {0x1001, "HSA_STATUS_ERROR_INVALID_ARGUMENT"},
        {0x1002, "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION"},
        {0x1003, "HSA_STATUS_ERROR_INVALID_ALLOCATION"},
        {0x1004, "HSA_STATUS_ERROR_INVALID_AGENT"},
        {0x1005, "HSA_STATUS_ERROR_INVALID_REGION"},
        {0x1006, "HSA_STATUS_ERROR_INVALID_SIGNAL"},
        {0x1007, "HSA_STATUS_ERROR_INVALID_QUEUE"},
        {0x1008, "HSA_STATUS_ERROR_OUT_OF_RESOURCES"},
        {0x1009, "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT"},
        {0x100a, "HSA_STATUS_ERROR_RESOURCE_FREE"},
        {0x100b, "HSA_STATUS_ERROR_NOT_INITIALIZED"},
        {0x100c, "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW"},
        {0x100d, "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS"},
        {0x100e, "HSA_STATUS_ERROR_INVALID_INDEX"},
        {0x100f, "HSA_STATUS_ERROR_INVALID_ISA"},
        {0x1010, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT"},
        {0x1011, "HSA_STATUS_ERROR_INVALID_EXECUTABLE"},
        {0x1012, "HSA_STATUS_ERROR_FROZEN_EXECUTABLE"},
        {0x1013, "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME"},
        {0x1014, "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED"},
        {0x1015, "HSA_STATUS_ERROR_VARIABLE_UNDEFINED"},
        {0x1016, "HSA_STATUS_ERROR_EXCEPTION"},
        {0x1017, "HSA_STATUS_ERROR_INVALID_ISA_NAME"},
        {0x1018, "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL"},
        {0x1019, "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL"},
        {0x1020, "HSA_STATUS_ERROR_INVALID_FILE"},
        {0x1021, "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER"},
        {0x1022, "HSA_STATUS_ERROR_INVALID_CACHE"},
        {0x1023, "HSA_STATUS_ERROR_INVALID_WAVEFRONT"},
        {0x1024, "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP"},
        {0x1025, "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE"},
        {0x1026, "HSA_STATUS_ERROR_FATAL"},
        {0x28, "HSA_STATUS_ERROR_INVALID_MEMORY_POOL"},
        {0x29, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION"},
        {0x2a, "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION"},
        {0x2b, "HSA_STATUS_ERROR_MEMORY_FAULT"},
        {0x2d, "HSA_STATUS_ERROR_OUT_OF_REGISTERS"},
    };
    for (const auto& [c, name] : kStatus)
        if (c == code) return name;
    return std::nullopt;
}

const char* vendorOfName(std::string_view n) {
    if (n.starts_with("hip") || n.starts_with("HSA_")) return "amd";
    if (n.starts_with("cuda") || n.starts_with("CUDA_")) return "nvidia";
    return nullptr;
}

}  // namespace gpufault::errnames
