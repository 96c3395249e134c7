// CUDA allocation hooks: the runtime (cudaMalloc, …: used when libcudart is shared, as in
// PyTorch) and the driver API (cuMemAlloc_v2, …: what a statically linked cudart calls). cudart
// finds the driver through dlsym(libcuda, "cuGetProcAddress[_v2]") and then asks
// cuGetProcAddress for every entry point: both answers are handed back as our wrappers.
// Signatures from cuda.h / cuda_runtime_api.h (CUDA 12/13); CUresult and cudaError_t are ints
// (0 = success, 999 = unknown); CUdeviceptr is a 64-bit integer.
#include <cstdint>
#include <cstring>

#include "collectors/preload/shim.h"

namespace gpufault::preload {
namespace {

using Err = int;
using DevPtr = unsigned long long;
constexpr Err kUnknown = 999;
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

int64_t runtimeDevice() {
    auto f = reinterpret_cast<Err (*)(int*)>(r_cudaGetDevice.get());
    int d = -1;
    return f && f(&d) == 0 ? d : -1;
}
int64_t driverDevice() {
    auto f = reinterpret_cast<Err (*)(int*)>(r_cuCtxGetDevice.get());
    int d = -1;
    return f && f(&d) == 0 ? d : -1;
}

enum class Dev { None, Runtime, Driver };

void record(const char* kind,
            const char* api,
            const char* mem,
            uint64_t ptr,
            uint64_t size,
            Err rc,
            Dev dev) {
    Event e;
    e.kind = kind;
    e.api = api;
    e.mem = mem;
    e.ptr = ptr;
    e.size = size;
    e.rc = rc;
    e.device = dev == Dev::Runtime ? runtimeDevice() : dev == Dev::Driver ? driverDevice() : -1;
    emit(e);
}

void recordHandle(const char* kind,
                  const char* api,
                  uint64_t ptr,
                  uint64_t size,
                  uint64_t handle,
                  int64_t device,
                  Err rc) {
    Event e;
    e.kind = kind;
    e.api = api;
    e.mem = std::strcmp(kind, "map") == 0 ? "device" : nullptr;
    e.ptr = ptr;
    e.size = size;
    e.handle = handle;
    e.has_handle = true;
    e.device = device;
    e.rc = rc;
    emit(e);
}

template <class F>
F real(Real& r) {
    return reinterpret_cast<F>(r.get());
}

/// An allocation returning a pointer through `out` (void** or CUdeviceptr*).
template <class Out, class... A>
Err allocCall(Real& r, const char* api, const char* mem, Dev dev, uint64_t size, Out* out, A... a) {
    auto f = real<Err (*)(Out*, A...)>(r);
    if (!f) return kUnknown;
    Scope s;
    Err rc = f(out, a...);
    if (s.outer()) {
        uint64_t p = 0;
        if (rc == 0 && out) std::memcpy(&p, out, sizeof p);
        record("alloc", api, mem, p, size, rc, dev);
    }
    return rc;
}

/// A free taking the pointer first.
template <class P, class... A>
Err freeCall(Real& r, const char* api, P ptr, A... a) {
    auto f = real<Err (*)(P, A...)>(r);
    if (!f) return kUnknown;
    Scope s;
    Err rc = f(ptr, a...);
    uint64_t p = 0;
    std::memcpy(&p, &ptr, sizeof p);
    if (s.outer() && p) record("free", api, nullptr, p, 0, rc, Dev::None);
    return rc;
}

void* driverWrapper(const char* sym, int version, uint64_t flags, void* realFn);

}  // namespace
}  // namespace gpufault::preload

using namespace gpufault::preload;

extern "C" {

// ---- runtime ----
Err cudaMalloc(void** p, size_t n) {
    return allocCall(r_cudaMalloc, "cudaMalloc", "device", Dev::Runtime, n, p, n);
}
Err cudaFree(void* p) {
    return freeCall(r_cudaFree, "cudaFree", p);
}
Err cudaMallocAsync(void** p, size_t n, void* st) {
    return allocCall(r_cudaMallocAsync, "cudaMallocAsync", "device", Dev::Runtime, n, p, n, st);
}
Err cudaFreeAsync(void* p, void* st) {
    return freeCall(r_cudaFreeAsync, "cudaFreeAsync", p, st);
}
Err cudaMallocManaged(void** p, size_t n, unsigned fl) {
    return allocCall(r_cudaManaged, "cudaMallocManaged", "managed", Dev::Runtime, n, p, n, fl);
}
Err cudaMallocHost(void** p, size_t n) {
    return allocCall(r_cudaMallocHost, "cudaMallocHost", "host", Dev::Runtime, n, p, n);
}
Err cudaHostAlloc(void** p, size_t n, unsigned fl) {
    return allocCall(r_cudaHostAlloc, "cudaHostAlloc", "host", Dev::Runtime, n, p, n, fl);
}
Err cudaFreeHost(void* p) {
    return freeCall(r_cudaFreeHost, "cudaFreeHost", p);
}

// ---- driver ----
Err cuMemAlloc_v2(DevPtr* p, size_t n) {
    return allocCall(r_alloc, "cuMemAlloc_v2", "device", Dev::Driver, n, p, n);
}
Err cuMemFree_v2(DevPtr p) {
    return freeCall(r_free, "cuMemFree_v2", p);
}
Err cuMemAllocAsync(DevPtr* p, size_t n, void* st) {
    return allocCall(r_allocAsync, "cuMemAllocAsync", "device", Dev::Driver, n, p, n, st);
}
Err cuMemAllocAsync_ptsz(DevPtr* p, size_t n, void* st) {
    return allocCall(r_allocAsyncP, "cuMemAllocAsync", "device", Dev::Driver, n, p, n, st);
}
Err cuMemFreeAsync(DevPtr p, void* st) {
    return freeCall(r_freeAsync, "cuMemFreeAsync", p, st);
}
Err cuMemFreeAsync_ptsz(DevPtr p, void* st) {
    return freeCall(r_freeAsyncP, "cuMemFreeAsync", p, st);
}
Err cuMemAllocFromPoolAsync(DevPtr* p, size_t n, void* pool, void* st) {
    return allocCall(r_pool, "cuMemAllocFromPoolAsync", "device", Dev::Driver, n, p, n, pool, st);
}
Err cuMemAllocFromPoolAsync_ptsz(DevPtr* p, size_t n, void* pool, void* st) {
    return allocCall(r_poolP, "cuMemAllocFromPoolAsync", "device", Dev::Driver, n, p, n, pool, st);
}
Err cuMemAllocManaged(DevPtr* p, size_t n, unsigned fl) {
    return allocCall(r_managed, "cuMemAllocManaged", "managed", Dev::Driver, n, p, n, fl);
}
Err cuMemAllocPitch_v2(DevPtr* p, size_t* pitch, size_t w, size_t h, unsigned elem) {
    auto f = real<Err (*)(DevPtr*, size_t*, size_t, size_t, unsigned)>(r_pitch);
    if (!f) return kUnknown;
    Scope s;
    Err rc = f(p, pitch, w, h, elem);
    bool ok = rc == 0 && p && pitch;
    if (s.outer())
        record("alloc",
               "cuMemAllocPitch_v2",
               "device",
               ok ? *p : 0,
               ok ? *pitch * h : 0,
               rc,
               Dev::Driver);
    return rc;
}
Err cuMemAllocHost_v2(void** p, size_t n) {
    return allocCall(r_allocHost, "cuMemAllocHost_v2", "host", Dev::Driver, n, p, n);
}
Err cuMemHostAlloc(void** p, size_t n, unsigned fl) {
    return allocCall(r_hostAlloc, "cuMemHostAlloc", "host", Dev::Driver, n, p, n, fl);
}
Err cuMemFreeHost(void* p) {
    return freeCall(r_freeHost, "cuMemFreeHost", p);
}

Err cuMemCreate(uint64_t* handle, size_t n, const void* prop, unsigned long long fl) {
    auto f = real<Err (*)(uint64_t*, size_t, const void*, unsigned long long)>(r_create);
    if (!f) return kUnknown;
    Scope s;
    Err rc = f(handle, n, prop, fl);
    if (s.outer()) {
        int id = -1;  // CUmemAllocationProp: type, handle types, location {type, id}
        if (prop) std::memcpy(&id, static_cast<const char*>(prop) + 12, sizeof id);
        recordHandle("create", "cuMemCreate", 0, n, rc == 0 && handle ? *handle : 0, id, rc);
    }
    return rc;
}
Err cuMemRelease(uint64_t handle) {
    auto f = real<Err (*)(uint64_t)>(r_release);
    if (!f) return kUnknown;
    Scope s;
    Err rc = f(handle);
    if (s.outer()) recordHandle("release", "cuMemRelease", 0, 0, handle, -1, rc);
    return rc;
}
Err cuMemMap(DevPtr p, size_t n, size_t off, uint64_t handle, unsigned long long fl) {
    auto f = real<Err (*)(DevPtr, size_t, size_t, uint64_t, unsigned long long)>(r_map);
    if (!f) return kUnknown;
    Scope s;
    Err rc = f(p, n, off, handle, fl);
    if (s.outer()) recordHandle("map", "cuMemMap", p, n, handle, -1, rc);
    return rc;
}
Err cuMemUnmap(DevPtr p, size_t n) {
    auto f = real<Err (*)(DevPtr, size_t)>(r_unmap);
    if (!f) return kUnknown;
    Scope s;
    Err rc = f(p, n);
    if (s.outer()) record("unmap", "cuMemUnmap", nullptr, p, n, rc, Dev::None);
    return rc;
}
Err cuMemAddressReserve(DevPtr* p, size_t n, size_t align, DevPtr addr, unsigned long long fl) {
    auto f = real<Err (*)(DevPtr*, size_t, size_t, DevPtr, unsigned long long)>(r_reserve);
    if (!f) return kUnknown;
    Scope s;
    Err rc = f(p, n, align, addr, fl);
    if (s.outer())
        record("reserve", "cuMemAddressReserve", "va", rc == 0 && p ? *p : 0, n, rc, Dev::None);
    return rc;
}
Err cuMemAddressFree(DevPtr p, size_t n) {
    auto f = real<Err (*)(DevPtr, size_t)>(r_addressFree);
    if (!f) return kUnknown;
    Scope s;
    Err rc = f(p, n);
    if (s.outer()) record("unreserve", "cuMemAddressFree", nullptr, p, n, rc, Dev::None);
    return rc;
}

// ---- cuGetProcAddress: the allocation entry points come back as our wrappers ----
Err cuGetProcAddress(const char* sym, void** pfn, int version, uint64_t flags) {
    auto f = real<Err (*)(const char*, void**, int, uint64_t)>(r_gpa);
    if (!f) return kUnknown;
    Err rc = f(sym, pfn, version, flags);
    if (rc == 0 && sym && pfn && *pfn)
        if (void* w = driverWrapper(sym, version, flags, *pfn)) *pfn = w;
    return rc;
}
Err cuGetProcAddress_v2(const char* sym, void** pfn, int version, uint64_t flags, int* status) {
    auto f = real<Err (*)(const char*, void**, int, uint64_t, int*)>(r_gpa2);
    if (!f) return kUnknown;
    Err rc = f(sym, pfn, version, flags, status);
    if (rc == 0 && sym && pfn && *pfn)
        if (void* w = driverWrapper(sym, version, flags, *pfn)) *pfn = w;
    return rc;
}

}  // extern "C"

namespace gpufault::preload {
namespace {

struct Entry {
    const char* name;  ///< exported name
    void* wrapper;
    Real* real;
};

#define GPUFAULT_ENTRY(fn, r) \
    { #fn, reinterpret_cast < void*>(&fn), &r }
const Entry kEntries[] = {
    GPUFAULT_ENTRY(cudaMalloc, r_cudaMalloc),
    GPUFAULT_ENTRY(cudaFree, r_cudaFree),
    GPUFAULT_ENTRY(cudaMallocAsync, r_cudaMallocAsync),
    GPUFAULT_ENTRY(cudaFreeAsync, r_cudaFreeAsync),
    GPUFAULT_ENTRY(cudaMallocManaged, r_cudaManaged),
    GPUFAULT_ENTRY(cudaMallocHost, r_cudaMallocHost),
    GPUFAULT_ENTRY(cudaHostAlloc, r_cudaHostAlloc),
    GPUFAULT_ENTRY(cudaFreeHost, r_cudaFreeHost),
    GPUFAULT_ENTRY(cuMemAlloc_v2, r_alloc),
    GPUFAULT_ENTRY(cuMemFree_v2, r_free),
    GPUFAULT_ENTRY(cuMemAllocAsync, r_allocAsync),
    GPUFAULT_ENTRY(cuMemAllocAsync_ptsz, r_allocAsyncP),
    GPUFAULT_ENTRY(cuMemFreeAsync, r_freeAsync),
    GPUFAULT_ENTRY(cuMemFreeAsync_ptsz, r_freeAsyncP),
    GPUFAULT_ENTRY(cuMemAllocFromPoolAsync, r_pool),
    GPUFAULT_ENTRY(cuMemAllocFromPoolAsync_ptsz, r_poolP),
    GPUFAULT_ENTRY(cuMemAllocManaged, r_managed),
    GPUFAULT_ENTRY(cuMemAllocPitch_v2, r_pitch),
    GPUFAULT_ENTRY(cuMemAllocHost_v2, r_allocHost),
    GPUFAULT_ENTRY(cuMemHostAlloc, r_hostAlloc),
    GPUFAULT_ENTRY(cuMemFreeHost, r_freeHost),
    GPUFAULT_ENTRY(cuMemCreate, r_create),
    GPUFAULT_ENTRY(cuMemRelease, r_release),
    GPUFAULT_ENTRY(cuMemMap, r_map),
    GPUFAULT_ENTRY(cuMemUnmap, r_unmap),
    GPUFAULT_ENTRY(cuMemAddressReserve, r_reserve),
    GPUFAULT_ENTRY(cuMemAddressFree, r_addressFree),
    GPUFAULT_ENTRY(cuGetProcAddress, r_gpa),
    GPUFAULT_ENTRY(cuGetProcAddress_v2, r_gpa2),
};
#undef GPUFAULT_ENTRY

const Entry* byName(const char* name) {
    for (const auto& e : kEntries)
        if (std::strcmp(e.name, name) == 0) return &e;
    return nullptr;
}

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
    const Entry* e = byName(pick);
    if (!e) return nullptr;
    e->real->offer(realFn);
    return e->wrapper;
}

}  // namespace

void* cudaWrapperFor(const char* name, void* realFn) {
    const Entry* e = byName(name);
    if (!e) return nullptr;
    if (realFn) e->real->offer(realFn);
    return e->wrapper;
}

}  // namespace gpufault::preload
