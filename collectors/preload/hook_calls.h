// The body that every allocation hook shares, HIP and CUDA alike: find the real function, call
// it inside a Scope, record the outermost call. Inline functions and templates internal to the
// shim: exports.map keeps their instances out of the dynamic symbol table, and nothing here
// allocates (records go through emit()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "collectors/preload/shim.h"

namespace gpufault::preload {

/// What a hook returns when no real function is loaded: hipErrorUnknown, cudaErrorUnknown and
/// CUDA_ERROR_UNKNOWN are all 999 (every API's success is 0).
constexpr int kUnknownError = 999;

/// The runtime's current device (`get` is hipGetDevice, cudaGetDevice or cuCtxGetDevice:
/// `int (int*)`, 0 = success); -1 when the call fails or no such function is loaded.
inline int64_t askDevice(Real& get) {
    auto f = reinterpret_cast<int (*)(int*)>(get.get());
    int d = -1;
    return f && f(&d) == 0 ? d : -1;
}

/// The 64 bits of a pointer or CUdeviceptr argument.
template <class P>
uint64_t bits(P p) {
    static_assert(sizeof(P) == sizeof(uint64_t));
    uint64_t v = 0;
    std::memcpy(&v, &p, sizeof v);
    return v;
}

/// The event of one call (kind, api, range, return code); the rest as Event's defaults.
inline Event event(const char* kind, const char* api, uint64_t ptr, uint64_t size, int rc) {
    Event e;
    e.kind = kind;
    e.api = api;
    e.ptr = ptr;
    e.size = size;
    e.rc = rc;
    return e;
}

/// Records one call. `device`: the function that tells the device, asked now (after the call);
/// nullptr: device -1 (frees, virtual address ranges).
inline void record(const char* kind,
                   const char* api,
                   const char* mem,
                   uint64_t ptr,
                   uint64_t size,
                   int rc,
                   Real* device) {
    Event e = event(kind, api, ptr, size, rc);
    e.mem = mem;
    e.device = device ? askDevice(*device) : -1;
    emit(e);
}

/// Records one call on a physical-memory handle (create, release, map); a map is of device
/// memory.
inline void recordHandle(const char* kind,
                         const char* api,
                         uint64_t ptr,
                         uint64_t size,
                         uint64_t handle,
                         int64_t device,
                         int rc) {
    Event e = event(kind, api, ptr, size, rc);
    e.mem = std::strcmp(kind, "map") == 0 ? "device" : nullptr;
    e.handle = handle;
    e.has_handle = true;
    e.device = device;
    emit(e);
}

/// Calls the real function of `r` with `a…` (its exact parameter types) inside a Scope, then
/// `after(rc)` when this is the outermost hooked call on the thread. kUnknownError when no real
/// function is loaded.
template <class After, class... A>
int hooked(Real& r, After after, A... a) {
    auto f = reinterpret_cast<int (*)(A...)>(r.get());
    if (!f) return kUnknownError;
    Scope s;
    int rc = f(a...);
    if (s.outer()) after(rc);
    return rc;
}

/// An allocation (kind "alloc") or reservation ("reserve") of `size` bytes that returns its
/// pointer through `out` (void** or CUdeviceptr*), the first argument.
template <class Out, class... A>
int allocCall(Real& r,
              const char* kind,
              const char* api,
              const char* mem,
              Real* device,
              uint64_t size,
              Out* out,
              A... a) {
    return hooked(
        r,
        [&](int rc) {
            uint64_t p = 0;
            if (rc == 0 && out) std::memcpy(&p, out, sizeof p);
            record(kind, api, mem, p, size, rc, device);
        },
        out,
        a...);
}

/// A free taking the pointer first; a null pointer is not recorded.
template <class P, class... A>
int freeCall(Real& r, const char* api, P ptr, A... a) {
    return hooked(
        r,
        [&](int rc) {
            if (bits(ptr)) record("free", api, nullptr, bits(ptr), 0, rc, nullptr);
        },
        ptr,
        a...);
}

/// A pitched allocation (`out`, `pitch`, width in bytes, height in rows, …) on `device`:
/// recorded as pitch × height bytes.
template <class Out, class... A>
int pitchCall(
    Real& r, const char* api, Real* device, Out* out, size_t* pitch, size_t w, size_t h, A... a) {
    return hooked(
        r,
        [&](int rc) {
            bool ok = rc == 0 && out && pitch;
            uint64_t p = 0;
            if (ok) std::memcpy(&p, out, sizeof p);
            record("alloc", api, "device", p, ok ? *pitch * h : 0, rc, device);
        },
        out,
        pitch,
        w,
        h,
        a...);
}

/// A call on the range [`ptr`, `ptr` + `size`) known before it: an unmap ("unmap") or the
/// release of a virtual address range ("unreserve").
template <class P>
int rangeCall(Real& r, const char* kind, const char* api, P ptr, size_t size) {
    return hooked(
        r, [&](int rc) { record(kind, api, nullptr, bits(ptr), size, rc, nullptr); }, ptr, size);
}

/// hipMemCreate/cuMemCreate(handle*, size, prop, flags): the handle made and the device of
/// the allocation properties (type, handle types, location {type, id}, …: the id at byte 12).
template <class F>
int createCall(Real& r, const char* api, uint64_t* handle, size_t size, const void* prop, F flags) {
    return hooked(
        r,
        [&](int rc) {
            int id = -1;
            if (prop) std::memcpy(&id, static_cast<const char*>(prop) + 12, sizeof id);
            recordHandle("create", api, 0, size, rc == 0 && handle ? *handle : 0, id, rc);
        },
        handle,
        size,
        prop,
        flags);
}

/// hipMemRelease/cuMemRelease(handle).
inline int releaseCall(Real& r, const char* api, uint64_t handle) {
    return hooked(
        r, [&](int rc) { recordHandle("release", api, 0, 0, handle, -1, rc); }, handle);
}

/// hipMemMap/cuMemMap(ptr, size, offset, handle, flags).
template <class P, class F>
int mapCall(Real& r, const char* api, P ptr, size_t size, size_t offset, uint64_t handle, F flags) {
    return hooked(
        r,
        [&](int rc) { recordHandle("map", api, bits(ptr), size, handle, -1, rc); },
        ptr,
        size,
        offset,
        handle,
        flags);
}

/// One hooked function: its exported name, our wrapper and the real function's slot.
struct HookEntry {
    const char* name;
    void* wrapper;
    Real* real;
};

/// The entry of hook `fn` (an exported wrapper) whose real function is `real`.
#define GPUFAULT_HOOK(fn, real) \
    { #fn, reinterpret_cast < void*>(&fn), &real }

/// The entry named `name` in `entries`; nullptr when none is.
template <size_t N>
const HookEntry* findHook(const HookEntry (&entries)[N], const char* name) {
    for (const auto& e : entries)
        if (std::strcmp(e.name, name) == 0) return &e;
    return nullptr;
}

/// The wrapper of `e` (nullptr for none), offering `real` (when not null) as its real function.
inline void* offerHook(const HookEntry* e, void* real) {
    if (!e) return nullptr;
    if (real) e->real->offer(real);
    return e->wrapper;
}

}  // namespace gpufault::preload
