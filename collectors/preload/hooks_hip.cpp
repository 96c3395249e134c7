// HIP allocation hooks: hipMalloc and friends, PyTorch's expandable segments
// (hipMemCreate/hipMemMap/hipMemAddressReserve and their inverses). Signatures from
// hip_runtime_api.h (ROCm 6); hipError_t is an int enum (hipSuccess = 0, hipErrorUnknown = 999).
// The bodies are the shared ones of hook_calls.h.
#include "collectors/preload/hook_calls.h"

namespace gpufault::preload {
namespace {

using hipError = int;

Real r_getDevice{"hipGetDevice"};
Real r_malloc{"hipMalloc"}, r_free{"hipFree"}, r_mallocAsync{"hipMallocAsync"},
    r_freeAsync{"hipFreeAsync"}, r_managed{"hipMallocManaged"}, r_ext{"hipExtMallocWithFlags"},
    r_pitch{"hipMallocPitch"}, r_hostMalloc{"hipHostMalloc"}, r_hostFree{"hipHostFree"},
    r_memCreate{"hipMemCreate"}, r_memRelease{"hipMemRelease"}, r_memMap{"hipMemMap"},
    r_memUnmap{"hipMemUnmap"}, r_reserve{"hipMemAddressReserve"},
    r_addressFree{"hipMemAddressFree"};

/// An allocation on the current device (hipGetDevice).
template <class... A>
hipError alloc(Real& r, const char* api, const char* mem, void** ptr, size_t size, A... a) {
    return allocCall(r, "alloc", api, mem, &r_getDevice, size, ptr, a...);
}

}  // namespace
}  // namespace gpufault::preload

using namespace gpufault::preload;

extern "C" {

hipError hipMalloc(void** ptr, size_t size) {
    return alloc(r_malloc, "hipMalloc", "device", ptr, size, size);
}

hipError hipFree(void* ptr) {
    return freeCall(r_free, "hipFree", ptr);
}

hipError hipMallocAsync(void** ptr, size_t size, void* stream) {
    return alloc(r_mallocAsync, "hipMallocAsync", "device", ptr, size, size, stream);
}

hipError hipFreeAsync(void* ptr, void* stream) {
    return freeCall(r_freeAsync, "hipFreeAsync", ptr, stream);
}

hipError hipMallocManaged(void** ptr, size_t size, unsigned flags) {
    return alloc(r_managed, "hipMallocManaged", "managed", ptr, size, size, flags);
}

hipError hipExtMallocWithFlags(void** ptr, size_t size, unsigned flags) {
    return alloc(r_ext, "hipExtMallocWithFlags", "device", ptr, size, size, flags);
}

hipError hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
    return pitchCall(r_pitch, "hipMallocPitch", &r_getDevice, ptr, pitch, width, height);
}

hipError hipHostMalloc(void** ptr, size_t size, unsigned flags) {
    return alloc(r_hostMalloc, "hipHostMalloc", "host", ptr, size, size, flags);
}

hipError hipHostFree(void* ptr) {
    return freeCall(r_hostFree, "hipHostFree", ptr);
}

hipError hipMemCreate(uint64_t* handle, size_t size, const void* prop, unsigned long long flags) {
    return createCall(r_memCreate, "hipMemCreate", handle, size, prop, flags);
}

hipError hipMemRelease(uint64_t handle) {
    return releaseCall(r_memRelease, "hipMemRelease", handle);
}

hipError hipMemMap(void* ptr, size_t size, size_t offset, uint64_t handle, unsigned long long fl) {
    return mapCall(r_memMap, "hipMemMap", ptr, size, offset, handle, fl);
}

hipError hipMemUnmap(void* ptr, size_t size) {
    return rangeCall(r_memUnmap, "unmap", "hipMemUnmap", ptr, size);
}

hipError hipMemAddressReserve(
    void** ptr, size_t size, size_t align, void* addr, unsigned long long flags) {
    return allocCall(r_reserve,
                     "reserve",
                     "hipMemAddressReserve",
                     "va",
                     nullptr,
                     size,
                     ptr,
                     size,
                     align,
                     addr,
                     flags);
}

hipError hipMemAddressFree(void* ptr, size_t size) {
    return rangeCall(r_addressFree, "unreserve", "hipMemAddressFree", ptr, size);
}

}  // extern "C"

namespace gpufault::preload {

void* hipWrapperFor(const char* name, void* realFn) {
    static constinit const HookEntry kEntries[] = {
        GPUFAULT_HOOK(hipMalloc, r_malloc),
        GPUFAULT_HOOK(hipFree, r_free),
        GPUFAULT_HOOK(hipMallocAsync, r_mallocAsync),
        GPUFAULT_HOOK(hipFreeAsync, r_freeAsync),
        GPUFAULT_HOOK(hipMallocManaged, r_managed),
        GPUFAULT_HOOK(hipExtMallocWithFlags, r_ext),
        GPUFAULT_HOOK(hipMallocPitch, r_pitch),
        GPUFAULT_HOOK(hipHostMalloc, r_hostMalloc),
        GPUFAULT_HOOK(hipHostFree, r_hostFree),
        GPUFAULT_HOOK(hipMemCreate, r_memCreate),
        GPUFAULT_HOOK(hipMemRelease, r_memRelease),
        GPUFAULT_HOOK(hipMemMap, r_memMap),
        GPUFAULT_HOOK(hipMemUnmap, r_memUnmap),
        GPUFAULT_HOOK(hipMemAddressReserve, r_reserve),
        GPUFAULT_HOOK(hipMemAddressFree, r_addressFree),
    };
    return offerHook(findHook(kEntries, name), realFn);
}

}  // namespace gpufault::preload
