// CUDA allocation hooks: the runtime (cudaMalloc, …: used when libcudart is shared, as in
// PyTorch) and the driver API (cuMemAlloc_v2, …: what a statically linked cudart calls). cudart
// finds the driver through dlsym(libcuda, "cuGetProcAddress[_v2]") and then asks
// cuGetProcAddress for every entry point: both answers are handed back as our wrappers.
// Signatures from cuda.h / cuda_runtime_api.h (CUDA 12/13); CUresult and cudaError_t are ints
// (0 = success, 999 = unknown); CUdeviceptr is a 64-bit integer.
#include <cstdint>
#include <cstring>

#include "collectors/preload/hook_calls.h"

namespace gpufault::preload {
namespace {

using Err = int;
using DevPtr = unsigned long long;
constexpr uint64_t kPerThreadStream = 2;  ///< CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

Real r_cudaGetDevice{"cudaGetDevice"}, r_cuCtxGetDevice{"cuCtxGetDevice"};
Real r_cudaMalloc{"cudaMalloc"}, r_cudaFree{"cudaFree"}, r_cudaMallocAsync{"cudaMallocAsync"},
    r_cudaFreeAsync{"cudaFreeAsync"}, r_cudaManaged{"cudaMallocManaged"},
    r_cudaMallocHost{"cudaMallocHost"}, r_cudaHostAlloc{"cudaHostAlloc"},
    r_cudaFreeHost{"cudaFreeHost"};
Real r_alloc{"cuMemAlloc_v2"}, r_free{"cuMemFree_v2"}, r_allocAsync{"cuMemAllocAsync"},
    r_allocAsyncP{"cuMemAllocAsync_ptsz"}, r_freeAsync{"cuMemFreeAsync"},
    r_freeAsyncP{"cuMemFreeAsync_ptsz"}, r_pool{"cuMemAllocFromPoolAsync"},
    r_poolP{"cuMemAllocFromPoolAsync_ptsz"}, r_managed{"cuMemAllocManaged"},
    r_pitch{"cuMemAllocPitch_v2"}, r_allocHost{"cuMemAllocHost_v2"}, r_hostAlloc{"cuMemHostAlloc"},
    r_freeHost{"cuMemFreeHost"}, r_create{"cuMemCreate"}, r_release{"cuMemRelease"},
    r_map{"cuMemMap"}, r_unmap{"cuMemUnmap"}, r_reserve{"cuMemAddressReserve"},
    r_addressFree{"cuMemAddressFree"}, r_gpa{"cuGetProcAddress"}, r_gpa2{"cuGetProcAddress_v2"};

/// An allocation by the runtime API (its device: cudaGetDevice) returning its pointer in `out`.
template <class Out, class... A>
Err runtimeAlloc(Target fn, const char* api, const char* mem, uint64_t size, Out* out, A... a) {
    return allocCall(fn, "alloc", api, mem, &r_cudaGetDevice, size, out, a...);
}

/// An allocation by the driver API (its device: cuCtxGetDevice) returning its pointer in `out`.
template <class Out, class... A>
Err driverAlloc(Target fn, const char* api, const char* mem, uint64_t size, Out* out, A... a) {
    return allocCall(fn, "alloc", api, mem, &r_cuCtxGetDevice, size, out, a...);
}

void* driverWrapper(const char* sym, int version, uint64_t flags, void* realFn);

// The hooks' bodies, calling the real function `fn` (the caller's runtime, or a slot's).
// ---- runtime ----
Err cudaMallocVia(Target fn, void** p, size_t n) {
    return runtimeAlloc(fn, "cudaMalloc", "device", n, p, n);
}
Err cudaFreeVia(Target fn, void* p) {
    return freeCall(fn, "cudaFree", p);
}
Err cudaMallocAsyncVia(Target fn, void** p, size_t n, void* st) {
    return runtimeAlloc(fn, "cudaMallocAsync", "device", n, p, n, st);
}
Err cudaFreeAsyncVia(Target fn, void* p, void* st) {
    return freeCall(fn, "cudaFreeAsync", p, st);
}
Err cudaManagedVia(Target fn, void** p, size_t n, unsigned fl) {
    return runtimeAlloc(fn, "cudaMallocManaged", "managed", n, p, n, fl);
}
Err cudaMallocHostVia(Target fn, void** p, size_t n) {
    return runtimeAlloc(fn, "cudaMallocHost", "host", n, p, n);
}
Err cudaHostAllocVia(Target fn, void** p, size_t n, unsigned fl) {
    return runtimeAlloc(fn, "cudaHostAlloc", "host", n, p, n, fl);
}
Err cudaFreeHostVia(Target fn, void* p) {
    return freeCall(fn, "cudaFreeHost", p);
}

// ---- driver ----
Err allocVia(Target fn, DevPtr* p, size_t n) {
    return driverAlloc(fn, "cuMemAlloc_v2", "device", n, p, n);
}
Err freeVia(Target fn, DevPtr p) {
    return freeCall(fn, "cuMemFree_v2", p);
}
Err allocAsyncVia(Target fn, DevPtr* p, size_t n, void* st) {
    return driverAlloc(fn, "cuMemAllocAsync", "device", n, p, n, st);
}
Err freeAsyncVia(Target fn, DevPtr p, void* st) {
    return freeCall(fn, "cuMemFreeAsync", p, st);
}
Err poolVia(Target fn, DevPtr* p, size_t n, void* pool, void* st) {
    return driverAlloc(fn, "cuMemAllocFromPoolAsync", "device", n, p, n, pool, st);
}
Err managedVia(Target fn, DevPtr* p, size_t n, unsigned fl) {
    return driverAlloc(fn, "cuMemAllocManaged", "managed", n, p, n, fl);
}
Err pitchVia(Target fn, DevPtr* p, size_t* pitch, size_t w, size_t h, unsigned elem) {
    return pitchCall(fn, "cuMemAllocPitch_v2", &r_cuCtxGetDevice, p, pitch, w, h, elem);
}
Err allocHostVia(Target fn, void** p, size_t n) {
    return driverAlloc(fn, "cuMemAllocHost_v2", "host", n, p, n);
}
Err hostAllocVia(Target fn, void** p, size_t n, unsigned fl) {
    return driverAlloc(fn, "cuMemHostAlloc", "host", n, p, n, fl);
}
Err freeHostVia(Target fn, void* p) {
    return freeCall(fn, "cuMemFreeHost", p);
}
Err createVia(Target fn, uint64_t* handle, size_t n, const void* prop, unsigned long long fl) {
    return createCall(fn, "cuMemCreate", handle, n, prop, fl);
}
Err releaseVia(Target fn, uint64_t handle) {
    return releaseCall(fn, "cuMemRelease", handle);
}
Err mapVia(Target fn, DevPtr p, size_t n, size_t off, uint64_t handle, unsigned long long fl) {
    return mapCall(fn, "cuMemMap", p, n, off, handle, fl);
}
Err unmapVia(Target fn, DevPtr p, size_t n) {
    return rangeCall(fn, "unmap", "cuMemUnmap", p, n);
}
Err reserveVia(Target fn, DevPtr* p, size_t n, size_t align, DevPtr addr, unsigned long long fl) {
    return allocCall(fn, "reserve", "cuMemAddressReserve", "va", nullptr, n, p, n, align, addr, fl);
}
Err addressFreeVia(Target fn, DevPtr p, size_t n) {
    return rangeCall(fn, "unreserve", "cuMemAddressFree", p, n);
}

// ---- cuGetProcAddress: the allocation entry points come back as our wrappers ----
Err gpaVia(Target fn, const char* sym, void** pfn, int version, uint64_t flags) {
    auto f = reinterpret_cast<Err (*)(const char*, void**, int, uint64_t)>(fn.fn);
    if (!f) return kUnknownError;
    Err rc = f(sym, pfn, version, flags);
    if (rc == 0 && sym && pfn && *pfn)
        if (void* w = driverWrapper(sym, version, flags, *pfn)) *pfn = w;
    return rc;
}
Err gpa2Via(Target fn, const char* sym, void** pfn, int version, uint64_t flags, int* status) {
    auto f = reinterpret_cast<Err (*)(const char*, void**, int, uint64_t, int*)>(fn.fn);
    if (!f) return kUnknownError;
    Err rc = f(sym, pfn, version, flags, status);
    if (rc == 0 && sym && pfn && *pfn)
        if (void* w = driverWrapper(sym, version, flags, *pfn)) *pfn = w;
    return rc;
}

}  // namespace
}  // namespace gpufault::preload

using namespace gpufault::preload;

// The exported hooks: each calls the runtime its caller would have reached (Real::forCaller).
#define GPUFAULT_VIA(real, via, ...) via(callerTarget(real, GPUFAULT_CALLER), __VA_ARGS__)

extern "C" {

// ---- runtime ----
Err cudaMalloc(void** p, size_t n) {
    return GPUFAULT_VIA(r_cudaMalloc, cudaMallocVia, p, n);
}
Err cudaFree(void* p) {
    return GPUFAULT_VIA(r_cudaFree, cudaFreeVia, p);
}
Err cudaMallocAsync(void** p, size_t n, void* st) {
    return GPUFAULT_VIA(r_cudaMallocAsync, cudaMallocAsyncVia, p, n, st);
}
Err cudaFreeAsync(void* p, void* st) {
    return GPUFAULT_VIA(r_cudaFreeAsync, cudaFreeAsyncVia, p, st);
}
Err cudaMallocManaged(void** p, size_t n, unsigned fl) {
    return GPUFAULT_VIA(r_cudaManaged, cudaManagedVia, p, n, fl);
}
Err cudaMallocHost(void** p, size_t n) {
    return GPUFAULT_VIA(r_cudaMallocHost, cudaMallocHostVia, p, n);
}
Err cudaHostAlloc(void** p, size_t n, unsigned fl) {
    return GPUFAULT_VIA(r_cudaHostAlloc, cudaHostAllocVia, p, n, fl);
}
Err cudaFreeHost(void* p) {
    return GPUFAULT_VIA(r_cudaFreeHost, cudaFreeHostVia, p);
}

// ---- driver ----
Err cuMemAlloc_v2(DevPtr* p, size_t n) {
    return GPUFAULT_VIA(r_alloc, allocVia, p, n);
}
Err cuMemFree_v2(DevPtr p) {
    return GPUFAULT_VIA(r_free, freeVia, p);
}
Err cuMemAllocAsync(DevPtr* p, size_t n, void* st) {
    return GPUFAULT_VIA(r_allocAsync, allocAsyncVia, p, n, st);
}
Err cuMemAllocAsync_ptsz(DevPtr* p, size_t n, void* st) {
    return GPUFAULT_VIA(r_allocAsyncP, allocAsyncVia, p, n, st);
}
Err cuMemFreeAsync(DevPtr p, void* st) {
    return GPUFAULT_VIA(r_freeAsync, freeAsyncVia, p, st);
}
Err cuMemFreeAsync_ptsz(DevPtr p, void* st) {
    return GPUFAULT_VIA(r_freeAsyncP, freeAsyncVia, p, st);
}
Err cuMemAllocFromPoolAsync(DevPtr* p, size_t n, void* pool, void* st) {
    return GPUFAULT_VIA(r_pool, poolVia, p, n, pool, st);
}
Err cuMemAllocFromPoolAsync_ptsz(DevPtr* p, size_t n, void* pool, void* st) {
    return GPUFAULT_VIA(r_poolP, poolVia, p, n, pool, st);
}
Err cuMemAllocManaged(DevPtr* p, size_t n, unsigned fl) {
    return GPUFAULT_VIA(r_managed, managedVia, p, n, fl);
}
Err cuMemAllocPitch_v2(DevPtr* p, size_t* pitch, size_t w, size_t h, unsigned elem) {
    return GPUFAULT_VIA(r_pitch, pitchVia, p, pitch, w, h, elem);
}
Err cuMemAllocHost_v2(void** p, size_t n) {
    return GPUFAULT_VIA(r_allocHost, allocHostVia, p, n);
}
Err cuMemHostAlloc(void** p, size_t n, unsigned fl) {
    return GPUFAULT_VIA(r_hostAlloc, hostAllocVia, p, n, fl);
}
Err cuMemFreeHost(void* p) {
    return GPUFAULT_VIA(r_freeHost, freeHostVia, p);
}
Err cuMemCreate(uint64_t* handle, size_t n, const void* prop, unsigned long long fl) {
    return GPUFAULT_VIA(r_create, createVia, handle, n, prop, fl);
}
Err cuMemRelease(uint64_t handle) {
    return GPUFAULT_VIA(r_release, releaseVia, handle);
}
Err cuMemMap(DevPtr p, size_t n, size_t off, uint64_t handle, unsigned long long fl) {
    return GPUFAULT_VIA(r_map, mapVia, p, n, off, handle, fl);
}
Err cuMemUnmap(DevPtr p, size_t n) {
    return GPUFAULT_VIA(r_unmap, unmapVia, p, n);
}
Err cuMemAddressReserve(DevPtr* p, size_t n, size_t align, DevPtr addr, unsigned long long fl) {
    return GPUFAULT_VIA(r_reserve, reserveVia, p, n, align, addr, fl);
}
Err cuMemAddressFree(DevPtr p, size_t n) {
    return GPUFAULT_VIA(r_addressFree, addressFreeVia, p, n);
}
Err cuGetProcAddress(const char* sym, void** pfn, int version, uint64_t flags) {
    return GPUFAULT_VIA(r_gpa, gpaVia, sym, pfn, version, flags);
}
Err cuGetProcAddress_v2(const char* sym, void** pfn, int version, uint64_t flags, int* status) {
    return GPUFAULT_VIA(r_gpa2, gpa2Via, sym, pfn, version, flags, status);
}

}  // extern "C"

namespace gpufault::preload {
namespace {

constinit const HookEntry kEntries[] = {
    GPUFAULT_HOOK(cudaMalloc, cudaMallocVia, r_cudaMalloc),
    GPUFAULT_HOOK(cudaFree, cudaFreeVia, r_cudaFree),
    GPUFAULT_HOOK(cudaMallocAsync, cudaMallocAsyncVia, r_cudaMallocAsync),
    GPUFAULT_HOOK(cudaFreeAsync, cudaFreeAsyncVia, r_cudaFreeAsync),
    GPUFAULT_HOOK(cudaMallocManaged, cudaManagedVia, r_cudaManaged),
    GPUFAULT_HOOK(cudaMallocHost, cudaMallocHostVia, r_cudaMallocHost),
    GPUFAULT_HOOK(cudaHostAlloc, cudaHostAllocVia, r_cudaHostAlloc),
    GPUFAULT_HOOK(cudaFreeHost, cudaFreeHostVia, r_cudaFreeHost),
    GPUFAULT_HOOK(cuMemAlloc_v2, allocVia, r_alloc),
    GPUFAULT_HOOK(cuMemFree_v2, freeVia, r_free),
    GPUFAULT_HOOK(cuMemAllocAsync, allocAsyncVia, r_allocAsync),
    GPUFAULT_HOOK(cuMemAllocAsync_ptsz, allocAsyncVia, r_allocAsyncP),
    GPUFAULT_HOOK(cuMemFreeAsync, freeAsyncVia, r_freeAsync),
    GPUFAULT_HOOK(cuMemFreeAsync_ptsz, freeAsyncVia, r_freeAsyncP),
    GPUFAULT_HOOK(cuMemAllocFromPoolAsync, poolVia, r_pool),
    GPUFAULT_HOOK(cuMemAllocFromPoolAsync_ptsz, poolVia, r_poolP),
    GPUFAULT_HOOK(cuMemAllocManaged, managedVia, r_managed),
    GPUFAULT_HOOK(cuMemAllocPitch_v2, pitchVia, r_pitch),
    GPUFAULT_HOOK(cuMemAllocHost_v2, allocHostVia, r_allocHost),
    GPUFAULT_HOOK(cuMemHostAlloc, hostAllocVia, r_hostAlloc),
    GPUFAULT_HOOK(cuMemFreeHost, freeHostVia, r_freeHost),
    GPUFAULT_HOOK(cuMemCreate, createVia, r_create),
    GPUFAULT_HOOK(cuMemRelease, releaseVia, r_release),
    GPUFAULT_HOOK(cuMemMap, mapVia, r_map),
    GPUFAULT_HOOK(cuMemUnmap, unmapVia, r_unmap),
    GPUFAULT_HOOK(cuMemAddressReserve, reserveVia, r_reserve),
    GPUFAULT_HOOK(cuMemAddressFree, addressFreeVia, r_addressFree),
    GPUFAULT_HOOK(cuGetProcAddress, gpaVia, r_gpa),
    GPUFAULT_HOOK(cuGetProcAddress_v2, gpa2Via, r_gpa2),
};

/// cuGetProcAddress names are the base names ("cuMemAlloc"); the version and the per-thread
/// stream flag pick the variant (_v2 from 3.2, cuGetProcAddress_v2 from 12.0, _ptsz).
void* driverWrapper(const char* sym, int version, uint64_t flags, void* realFn) {
    static const struct {
        const char* base;
        const char* v2;  ///< the name from version 3020 (or 12000 for cuGetProcAddress)
        int since;
    } kVersioned[] = {{"cuMemAlloc", "cuMemAlloc_v2", 3020},
                      {"cuMemFree", "cuMemFree_v2", 3020},
                      {"cuMemAllocPitch", "cuMemAllocPitch_v2", 3020},
                      {"cuMemAllocHost", "cuMemAllocHost_v2", 3020},
                      {"cuGetProcAddress", "cuGetProcAddress_v2", 12000}};
    char name[64];
    const char* pick = sym;
    for (const auto& v : kVersioned)
        if (std::strcmp(sym, v.base) == 0) {
            if (version < v.since && std::strcmp(sym, "cuGetProcAddress") != 0) return nullptr;
            pick = version >= v.since ? v.v2 : v.base;
        }
    if ((flags & kPerThreadStream) && std::strstr(sym, "Async") && std::strlen(sym) < 50) {
        std::strcpy(name, sym);
        std::strcat(name, "_ptsz");
        pick = name;
    }
    return wrap(findHook(kEntries, pick), realFn);
}

}  // namespace

void* cudaWrapperFor(const char* name, void* realFn) {
    return wrap(findHook(kEntries, name), realFn);
}

}  // namespace gpufault::preload
