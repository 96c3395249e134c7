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

/// An allocation on the current device (hipGetDevice) by `fn`.
template <class... A>
hipError alloc(Target fn, const char* api, const char* mem, void** ptr, size_t size, A... a) {
    return allocCall(fn, "alloc", api, mem, &r_getDevice, size, ptr, a...);
}

// The hooks' bodies, calling the real function `fn` (the caller's runtime, or a slot's).
hipError mallocVia(Target fn, void** ptr, size_t size) {
    return alloc(fn, "hipMalloc", "device", ptr, size, size);
}
hipError freeVia(Target fn, void* ptr) {
    return freeCall(fn, "hipFree", ptr);
}
hipError mallocAsyncVia(Target fn, void** ptr, size_t size, void* stream) {
    return alloc(fn, "hipMallocAsync", "device", ptr, size, size, stream);
}
hipError freeAsyncVia(Target fn, void* ptr, void* stream) {
    return freeCall(fn, "hipFreeAsync", ptr, stream);
}
hipError managedVia(Target fn, void** ptr, size_t size, unsigned flags) {
    return alloc(fn, "hipMallocManaged", "managed", ptr, size, size, flags);
}
hipError extVia(Target fn, void** ptr, size_t size, unsigned flags) {
    return alloc(fn, "hipExtMallocWithFlags", "device", ptr, size, size, flags);
}
hipError pitchVia(Target fn, void** ptr, size_t* pitch, size_t width, size_t height) {
    return pitchCall(fn, "hipMallocPitch", &r_getDevice, ptr, pitch, width, height);
}
hipError hostMallocVia(Target fn, void** ptr, size_t size, unsigned flags) {
    return alloc(fn, "hipHostMalloc", "host", ptr, size, size, flags);
}
hipError hostFreeVia(Target fn, void* ptr) {
    return freeCall(fn, "hipHostFree", ptr);
}
hipError memCreateVia(
    Target fn, uint64_t* handle, size_t size, const void* prop, unsigned long long flags) {
    return createCall(fn, "hipMemCreate", handle, size, prop, flags);
}
hipError memReleaseVia(Target fn, uint64_t handle) {
    return releaseCall(fn, "hipMemRelease", handle);
}
hipError memMapVia(
    Target fn, void* ptr, size_t size, size_t offset, uint64_t handle, unsigned long long fl) {
    return mapCall(fn, "hipMemMap", ptr, size, offset, handle, fl);
}
hipError memUnmapVia(Target fn, void* ptr, size_t size) {
    return rangeCall(fn, "unmap", "hipMemUnmap", ptr, size);
}
hipError reserveVia(
    Target fn, void** ptr, size_t size, size_t align, void* addr, unsigned long long flags) {
    return allocCall(
        fn, "reserve", "hipMemAddressReserve", "va", nullptr, size, ptr, size, align, addr, flags);
}
hipError addressFreeVia(Target fn, void* ptr, size_t size) {
    return rangeCall(fn, "unreserve", "hipMemAddressFree", ptr, size);
}

}  // namespace
}  // namespace gpufault::preload

using namespace gpufault::preload;

// The exported hooks: each calls the runtime its caller would have reached (Real::forCaller).
extern "C" {

hipError hipMalloc(void** ptr, size_t size) {
    return mallocVia(callerTarget(r_malloc, GPUFAULT_CALLER), ptr, size);
}
hipError hipFree(void* ptr) {
    return freeVia(callerTarget(r_free, GPUFAULT_CALLER), ptr);
}
hipError hipMallocAsync(void** ptr, size_t size, void* stream) {
    return mallocAsyncVia(callerTarget(r_mallocAsync, GPUFAULT_CALLER), ptr, size, stream);
}
hipError hipFreeAsync(void* ptr, void* stream) {
    return freeAsyncVia(callerTarget(r_freeAsync, GPUFAULT_CALLER), ptr, stream);
}
hipError hipMallocManaged(void** ptr, size_t size, unsigned flags) {
    return managedVia(callerTarget(r_managed, GPUFAULT_CALLER), ptr, size, flags);
}
hipError hipExtMallocWithFlags(void** ptr, size_t size, unsigned flags) {
    return extVia(callerTarget(r_ext, GPUFAULT_CALLER), ptr, size, flags);
}
hipError hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
    return pitchVia(callerTarget(r_pitch, GPUFAULT_CALLER), ptr, pitch, width, height);
}
hipError hipHostMalloc(void** ptr, size_t size, unsigned flags) {
    return hostMallocVia(callerTarget(r_hostMalloc, GPUFAULT_CALLER), ptr, size, flags);
}
hipError hipHostFree(void* ptr) {
    return hostFreeVia(callerTarget(r_hostFree, GPUFAULT_CALLER), ptr);
}
hipError hipMemCreate(uint64_t* handle, size_t size, const void* prop, unsigned long long flags) {
    return memCreateVia(callerTarget(r_memCreate, GPUFAULT_CALLER), handle, size, prop, flags);
}
hipError hipMemRelease(uint64_t handle) {
    return memReleaseVia(callerTarget(r_memRelease, GPUFAULT_CALLER), handle);
}
hipError hipMemMap(void* ptr, size_t size, size_t offset, uint64_t handle, unsigned long long fl) {
    return memMapVia(callerTarget(r_memMap, GPUFAULT_CALLER), ptr, size, offset, handle, fl);
}
hipError hipMemUnmap(void* ptr, size_t size) {
    return memUnmapVia(callerTarget(r_memUnmap, GPUFAULT_CALLER), ptr, size);
}
hipError hipMemAddressReserve(
    void** ptr, size_t size, size_t align, void* addr, unsigned long long flags) {
    return reserveVia(callerTarget(r_reserve, GPUFAULT_CALLER), ptr, size, align, addr, flags);
}
hipError hipMemAddressFree(void* ptr, size_t size) {
    return addressFreeVia(callerTarget(r_addressFree, GPUFAULT_CALLER), ptr, size);
}

}  // extern "C"

namespace gpufault::preload {

void* hipWrapperFor(const char* name, void* realFn) {
    static constinit const HookEntry kEntries[] = {
        GPUFAULT_HOOK(hipMalloc, mallocVia, r_malloc),
        GPUFAULT_HOOK(hipFree, freeVia, r_free),
        GPUFAULT_HOOK(hipMallocAsync, mallocAsyncVia, r_mallocAsync),
        GPUFAULT_HOOK(hipFreeAsync, freeAsyncVia, r_freeAsync),
        GPUFAULT_HOOK(hipMallocManaged, managedVia, r_managed),
        GPUFAULT_HOOK(hipExtMallocWithFlags, extVia, r_ext),
        GPUFAULT_HOOK(hipMallocPitch, pitchVia, r_pitch),
        GPUFAULT_HOOK(hipHostMalloc, hostMallocVia, r_hostMalloc),
        GPUFAULT_HOOK(hipHostFree, hostFreeVia, r_hostFree),
        GPUFAULT_HOOK(hipMemCreate, memCreateVia, r_memCreate),
        GPUFAULT_HOOK(hipMemRelease, memReleaseVia, r_memRelease),
        GPUFAULT_HOOK(hipMemMap, memMapVia, r_memMap),
        GPUFAULT_HOOK(hipMemUnmap, memUnmapVia, r_memUnmap),
        GPUFAULT_HOOK(hipMemAddressReserve, reserveVia, r_reserve),
        GPUFAULT_HOOK(hipMemAddressFree, addressFreeVia, r_addressFree),
    };
    return wrap(findHook(kEntries, name), realFn);
}

}  // namespace gpufault::preload
