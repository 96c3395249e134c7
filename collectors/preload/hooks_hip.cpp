// HIP allocation hooks: hipMalloc and friends, PyTorch's expandable segments
// (hipMemCreate/hipMemMap/hipMemAddressReserve and their inverses). Signatures from
// hip_runtime_api.h (ROCm 6); hipError_t is an int enum (hipSuccess = 0, hipErrorUnknown = 999).
#include <cstring>

#include "collectors/preload/shim.h"

namespace gpufault::preload {
namespace {

using hipError = int;
constexpr hipError kUnknown = 999;

Real r_getDevice{"hipGetDevice"};
Real r_malloc{"hipMalloc"}, r_free{"hipFree"}, r_mallocAsync{"hipMallocAsync"},
    r_freeAsync{"hipFreeAsync"}, r_managed{"hipMallocManaged"}, r_ext{"hipExtMallocWithFlags"},
    r_pitch{"hipMallocPitch"}, r_hostMalloc{"hipHostMalloc"}, r_hostFree{"hipHostFree"},
    r_memCreate{"hipMemCreate"}, r_memRelease{"hipMemRelease"}, r_memMap{"hipMemMap"},
    r_memUnmap{"hipMemUnmap"}, r_reserve{"hipMemAddressReserve"},
    r_addressFree{"hipMemAddressFree"};

int64_t device() {
    auto f = reinterpret_cast<hipError (*)(int*)>(r_getDevice.get());
    int d = -1;
    return f && f(&d) == 0 ? d : -1;
}

uint64_t u(const void* p) {
    return reinterpret_cast<uint64_t>(p);
}

void record(const char* kind,
            const char* api,
            const char* mem,
            uint64_t ptr,
            uint64_t size,
            hipError rc,
            bool withDevice = true) {
    Event e;
    e.kind = kind;
    e.api = api;
    e.mem = mem;
    e.ptr = ptr;
    e.size = size;
    e.rc = rc;
    e.device = withDevice ? device() : -1;
    emit(e);
}

/// The location id of a hipMemAllocationProp (type, handle type, {location type, id}, …).
int64_t propDevice(const void* prop) {
    if (!prop) return -1;
    int id = 0;
    std::memcpy(&id, static_cast<const char*>(prop) + 12, sizeof id);
    return id;
}

template <class F>
F real(Real& r) {
    return reinterpret_cast<F>(r.get());
}

}  // namespace
}  // namespace gpufault::preload

using namespace gpufault::preload;

extern "C" {

hipError hipMalloc(void** ptr, size_t size) {
    auto f = real<hipError (*)(void**, size_t)>(r_malloc);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, size);
    if (s.outer()) record("alloc", "hipMalloc", "device", rc == 0 && ptr ? u(*ptr) : 0, size, rc);
    return rc;
}

hipError hipFree(void* ptr) {
    auto f = real<hipError (*)(void*)>(r_free);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr);
    if (s.outer() && ptr) record("free", "hipFree", nullptr, u(ptr), 0, rc, false);
    return rc;
}

hipError hipMallocAsync(void** ptr, size_t size, void* stream) {
    auto f = real<hipError (*)(void**, size_t, void*)>(r_mallocAsync);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, size, stream);
    if (s.outer())
        record("alloc", "hipMallocAsync", "device", rc == 0 && ptr ? u(*ptr) : 0, size, rc);
    return rc;
}

hipError hipFreeAsync(void* ptr, void* stream) {
    auto f = real<hipError (*)(void*, void*)>(r_freeAsync);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, stream);
    if (s.outer() && ptr) record("free", "hipFreeAsync", nullptr, u(ptr), 0, rc, false);
    return rc;
}

hipError hipMallocManaged(void** ptr, size_t size, unsigned flags) {
    auto f = real<hipError (*)(void**, size_t, unsigned)>(r_managed);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, size, flags);
    if (s.outer())
        record("alloc", "hipMallocManaged", "managed", rc == 0 && ptr ? u(*ptr) : 0, size, rc);
    return rc;
}

hipError hipExtMallocWithFlags(void** ptr, size_t size, unsigned flags) {
    auto f = real<hipError (*)(void**, size_t, unsigned)>(r_ext);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, size, flags);
    if (s.outer())
        record("alloc", "hipExtMallocWithFlags", "device", rc == 0 && ptr ? u(*ptr) : 0, size, rc);
    return rc;
}

hipError hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
    auto f = real<hipError (*)(void**, size_t*, size_t, size_t)>(r_pitch);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, pitch, width, height);
    bool ok = rc == 0 && ptr && pitch;
    if (s.outer())
        record("alloc", "hipMallocPitch", "device", ok ? u(*ptr) : 0, ok ? *pitch * height : 0, rc);
    return rc;
}

hipError hipHostMalloc(void** ptr, size_t size, unsigned flags) {
    auto f = real<hipError (*)(void**, size_t, unsigned)>(r_hostMalloc);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, size, flags);
    if (s.outer()) record("alloc", "hipHostMalloc", "host", rc == 0 && ptr ? u(*ptr) : 0, size, rc);
    return rc;
}

hipError hipHostFree(void* ptr) {
    auto f = real<hipError (*)(void*)>(r_hostFree);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr);
    if (s.outer() && ptr) record("free", "hipHostFree", nullptr, u(ptr), 0, rc, false);
    return rc;
}

hipError hipMemCreate(uint64_t* handle, size_t size, const void* prop, unsigned long long flags) {
    auto f = real<hipError (*)(uint64_t*, size_t, const void*, unsigned long long)>(r_memCreate);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(handle, size, prop, flags);
    if (s.outer()) {
        Event e;
        e.kind = "create";
        e.api = "hipMemCreate";
        e.size = size;
        e.handle = rc == 0 && handle ? *handle : 0;
        e.has_handle = true;
        e.device = propDevice(prop);
        e.rc = rc;
        emit(e);
    }
    return rc;
}

hipError hipMemRelease(uint64_t handle) {
    auto f = real<hipError (*)(uint64_t)>(r_memRelease);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(handle);
    if (s.outer()) {
        Event e;
        e.kind = "release";
        e.api = "hipMemRelease";
        e.handle = handle;
        e.has_handle = true;
        e.rc = rc;
        emit(e);
    }
    return rc;
}

hipError hipMemMap(void* ptr, size_t size, size_t offset, uint64_t handle, unsigned long long fl) {
    auto f = real<hipError (*)(void*, size_t, size_t, uint64_t, unsigned long long)>(r_memMap);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, size, offset, handle, fl);
    if (s.outer()) {
        Event e;
        e.kind = "map";
        e.api = "hipMemMap";
        e.mem = "device";
        e.ptr = u(ptr);
        e.size = size;
        e.handle = handle;
        e.has_handle = true;
        e.rc = rc;
        emit(e);
    }
    return rc;
}

hipError hipMemUnmap(void* ptr, size_t size) {
    auto f = real<hipError (*)(void*, size_t)>(r_memUnmap);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, size);
    if (s.outer()) record("unmap", "hipMemUnmap", nullptr, u(ptr), size, rc, false);
    return rc;
}

hipError hipMemAddressReserve(
    void** ptr, size_t size, size_t align, void* addr, unsigned long long flags) {
    auto f = real<hipError (*)(void**, size_t, size_t, void*, unsigned long long)>(r_reserve);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, size, align, addr, flags);
    if (s.outer())
        record(
            "reserve", "hipMemAddressReserve", "va", rc == 0 && ptr ? u(*ptr) : 0, size, rc, false);
    return rc;
}

hipError hipMemAddressFree(void* ptr, size_t size) {
    auto f = real<hipError (*)(void*, size_t)>(r_addressFree);
    if (!f) return kUnknown;
    Scope s;
    hipError rc = f(ptr, size);
    if (s.outer()) record("unreserve", "hipMemAddressFree", nullptr, u(ptr), size, rc, false);
    return rc;
}

}  // extern "C"

namespace gpufault::preload {

void* hipWrapperFor(const char* name, void* realFn) {
    struct Entry {
        const char* name;
        void* wrapper;
        Real* real;
    };
    static constinit const Entry kEntries[] = {
        {"hipMalloc", reinterpret_cast<void*>(&hipMalloc), &r_malloc},
        {"hipFree", reinterpret_cast<void*>(&hipFree), &r_free},
        {"hipMallocAsync", reinterpret_cast<void*>(&hipMallocAsync), &r_mallocAsync},
        {"hipFreeAsync", reinterpret_cast<void*>(&hipFreeAsync), &r_freeAsync},
        {"hipMallocManaged", reinterpret_cast<void*>(&hipMallocManaged), &r_managed},
        {"hipExtMallocWithFlags", reinterpret_cast<void*>(&hipExtMallocWithFlags), &r_ext},
        {"hipMallocPitch", reinterpret_cast<void*>(&hipMallocPitch), &r_pitch},
        {"hipHostMalloc", reinterpret_cast<void*>(&hipHostMalloc), &r_hostMalloc},
        {"hipHostFree", reinterpret_cast<void*>(&hipHostFree), &r_hostFree},
        {"hipMemCreate", reinterpret_cast<void*>(&hipMemCreate), &r_memCreate},
        {"hipMemRelease", reinterpret_cast<void*>(&hipMemRelease), &r_memRelease},
        {"hipMemMap", reinterpret_cast<void*>(&hipMemMap), &r_memMap},
        {"hipMemUnmap", reinterpret_cast<void*>(&hipMemUnmap), &r_memUnmap},
        {"hipMemAddressReserve", reinterpret_cast<void*>(&hipMemAddressReserve), &r_reserve},
        {"hipMemAddressFree", reinterpret_cast<void*>(&hipMemAddressFree), &r_addressFree},
    };
    for (const auto& e : kEntries)
        if (std::strcmp(e.name, name) == 0) {
            if (realFn) e.real->offer(realFn);
            return e.wrapper;
        }
    return nullptr;
}

}  // namespace gpufault::preload
