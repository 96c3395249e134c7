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
Err runtimeAlloc(Real& r, const char* api, const char* mem, uint64_t size, Out* out, A... a) {
    return allocCall(r, "alloc", api, mem, &r_cudaGetDevice, size, out, a...);
}

/// An allocation by the driver API (its device: cuCtxGetDevice) returning its pointer in `out`.
template <class Out, class... A>
Err driverAlloc(Real& r, const char* api, const char* mem, uint64_t size, Out* out, A... a) {
    return allocCall(r, "alloc", api, mem, &r_cuCtxGetDevice, size, out, a...);
}

void* driverWrapper(const char* sym, int version, uint64_t flags, void* realFn);

}  // namespace
}  // namespace gpufault::preload

using namespace gpufault::preload;

extern "C" {

// ---- runtime ----
Err cudaMalloc(void** p, size_t n) {
    return runtimeAlloc(r_cudaMalloc, "cudaMalloc", "device", n, p, n);
}
Err cudaFree(void* p) {
    return freeCall(r_cudaFree, "cudaFree", p);
}
Err cudaMallocAsync(void** p, size_t n, void* st) {
    return runtimeAlloc(r_cudaMallocAsync, "cudaMallocAsync", "device", n, p, n, st);
}
Err cudaFreeAsync(void* p, void* st) {
    return freeCall(r_cudaFreeAsync, "cudaFreeAsync", p, st);
}
Err cudaMallocManaged(void** p, size_t n, unsigned fl) {
    return runtimeAlloc(r_cudaManaged, "cudaMallocManaged", "managed", n, p, n, fl);
}
Err cudaMallocHost(void** p, size_t n) {
    return runtimeAlloc(r_cudaMallocHost, "cudaMallocHost", "host", n, p, n);
}
Err cudaHostAlloc(void** p, size_t n, unsigned fl) {
    return runtimeAlloc(r_cudaHostAlloc, "cudaHostAlloc", "host", n, p, n, fl);
}
Err cudaFreeHost(void* p) {
    return freeCall(r_cudaFreeHost, "cudaFreeHost", p);
}

// ---- driver ----
Err cuMemAlloc_v2(DevPtr* p, size_t n) {
    return driverAlloc(r_alloc, "cuMemAlloc_v2", "device", n, p, n);
}
Err cuMemFree_v2(DevPtr p) {
    return freeCall(r_free, "cuMemFree_v2", p);
}
Err cuMemAllocAsync(DevPtr* p, size_t n, void* st) {
    return driverAlloc(r_allocAsync, "cuMemAllocAsync", "device", n, p, n, st);
}
Err cuMemAllocAsync_ptsz(DevPtr* p, size_t n, void* st) {
    return driverAlloc(r_allocAsyncP, "cuMemAllocAsync", "device", n, p, n, st);
}
Err cuMemFreeAsync(DevPtr p, void* st) {
    return freeCall(r_freeAsync, "cuMemFreeAsync", p, st);
}
Err cuMemFreeAsync_ptsz(DevPtr p, void* st) {
    return freeCall(r_freeAsyncP, "cuMemFreeAsync", p, st);
}
Err cuMemAllocFromPoolAsync(DevPtr* p, size_t n, void* pool, void* st) {
    return driverAlloc(r_pool, "cuMemAllocFromPoolAsync", "device", n, p, n, pool, st);
}
Err cuMemAllocFromPoolAsync_ptsz(DevPtr* p, size_t n, void* pool, void* st) {
    return driverAlloc(r_poolP, "cuMemAllocFromPoolAsync", "device", n, p, n, pool, st);
}
Err cuMemAllocManaged(DevPtr* p, size_t n, unsigned fl) {
    return driverAlloc(r_managed, "cuMemAllocManaged", "managed", n, p, n, fl);
}
Err cuMemAllocPitch_v2(DevPtr* p, size_t* pitch, size_t w, size_t h, unsigned elem) {
    return pitchCall(r_pitch, "cuMemAllocPitch_v2", &r_cuCtxGetDevice, p, pitch, w, h, elem);
}
Err cuMemAllocHost_v2(void** p, size_t n) {
    return driverAlloc(r_allocHost, "cuMemAllocHost_v2", "host", n, p, n);
}
Err cuMemHostAlloc(void** p, size_t n, unsigned fl) {
    return driverAlloc(r_hostAlloc, "cuMemHostAlloc", "host", n, p, n, fl);
}
Err cuMemFreeHost(void* p) {
    return freeCall(r_freeHost, "cuMemFreeHost", p);
}

Err cuMemCreate(uint64_t* handle, size_t n, const void* prop, unsigned long long fl) {
    return createCall(r_create, "cuMemCreate", handle, n, prop, fl);
}
Err cuMemRelease(uint64_t handle) {
    return releaseCall(r_release, "cuMemRelease", handle);
}
Err cuMemMap(DevPtr p, size_t n, size_t off, uint64_t handle, unsigned long long fl) {
    return mapCall(r_map, "cuMemMap", p, n, off, handle, fl);
}
Err cuMemUnmap(DevPtr p, size_t n) {
    return rangeCall(r_unmap, "unmap", "cuMemUnmap", p, n);
}
Err cuMemAddressReserve(DevPtr* p, size_t n, size_t align, DevPtr addr, unsigned long long fl) {
    return allocCall(
        r_reserve, "reserve", "cuMemAddressReserve", "va", nullptr, n, p, n, align, addr, fl);
}
Err cuMemAddressFree(DevPtr p, size_t n) {
    return rangeCall(r_addressFree, "unreserve", "cuMemAddressFree", p, n);
}

// ---- cuGetProcAddress: the allocation entry points come back as our wrappers ----
Err cuGetProcAddress(const char* sym, void** pfn, int version, uint64_t flags) {
    auto f = reinterpret_cast<Err (*)(const char*, void**, int, uint64_t)>(r_gpa.get());
    if (!f) return kUnknownError;
    Err rc = f(sym, pfn, version, flags);
    if (rc == 0 && sym && pfn && *pfn)
        if (void* w = driverWrapper(sym, version, flags, *pfn)) *pfn = w;
    return rc;
}
Err cuGetProcAddress_v2(const char* sym, void** pfn, int version, uint64_t flags, int* status) {
    auto f = reinterpret_cast<Err (*)(const char*, void**, int, uint64_t, int*)>(r_gpa2.get());
    if (!f) return kUnknownError;
    Err rc = f(sym, pfn, version, flags, status);
    if (rc == 0 && sym && pfn && *pfn)
        if (void* w = driverWrapper(sym, version, flags, *pfn)) *pfn = w;
    return rc;
}

}  // extern "C"

namespace gpufault::preload {
namespace {

constinit const HookEntry kEntries[] = {
    GPUFAULT_HOOK(cudaMalloc, r_cudaMalloc),
    GPUFAULT_HOOK(cudaFree, r_cudaFree),
    GPUFAULT_HOOK(cudaMallocAsync, r_cudaMallocAsync),
    GPUFAULT_HOOK(cudaFreeAsync, r_cudaFreeAsync),
    GPUFAULT_HOOK(cudaMallocManaged, r_cudaManaged),
    GPUFAULT_HOOK(cudaMallocHost, r_cudaMallocHost),
    GPUFAULT_HOOK(cudaHostAlloc, r_cudaHostAlloc),
    GPUFAULT_HOOK(cudaFreeHost, r_cudaFreeHost),
    GPUFAULT_HOOK(cuMemAlloc_v2, r_alloc),
    GPUFAULT_HOOK(cuMemFree_v2, r_free),
    GPUFAULT_HOOK(cuMemAllocAsync, r_allocAsync),
    GPUFAULT_HOOK(cuMemAllocAsync_ptsz, r_allocAsyncP),
    GPUFAULT_HOOK(cuMemFreeAsync, r_freeAsync),
    GPUFAULT_HOOK(cuMemFreeAsync_ptsz, r_freeAsyncP),
    GPUFAULT_HOOK(cuMemAllocFromPoolAsync, r_pool),
    GPUFAULT_HOOK(cuMemAllocFromPoolAsync_ptsz, r_poolP),
    GPUFAULT_HOOK(cuMemAllocManaged, r_managed),
    GPUFAULT_HOOK(cuMemAllocPitch_v2, r_pitch),
    GPUFAULT_HOOK(cuMemAllocHost_v2, r_allocHost),
    GPUFAULT_HOOK(cuMemHostAlloc, r_hostAlloc),
    GPUFAULT_HOOK(cuMemFreeHost, r_freeHost),
    GPUFAULT_HOOK(cuMemCreate, r_create),
    GPUFAULT_HOOK(cuMemRelease, r_release),
    GPUFAULT_HOOK(cuMemMap, r_map),
    GPUFAULT_HOOK(cuMemUnmap, r_unmap),
    GPUFAULT_HOOK(cuMemAddressReserve, r_reserve),
    GPUFAULT_HOOK(cuMemAddressFree, r_addressFree),
    GPUFAULT_HOOK(cuGetProcAddress, r_gpa),
    GPUFAULT_HOOK(cuGetProcAddress_v2, r_gpa2),
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
    return offerHook(findHook(kEntries, pick), realFn);
}

}  // namespace

void* cudaWrapperFor(const char* name, void* realFn) {
    return offerHook(findHook(kEntries, name), realFn);
}

}  // namespace gpufault::preload
