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

/// The current device of the runtime that served a call (`served`: the real function called;
/// `get` is hipGetDevice, cudaGetDevice or cuCtxGetDevice: `int (int*)`, 0 = success, as that
/// runtime's object sees it); -1 when the call fails or no such function is loaded.
inline int64_t askDevice(Real& get, const void* served) {
    auto f = reinterpret_cast<int (*)(int*)>(get.inObject(served));
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

/// Records one call served by `fn`. `device`: the function that tells the device, asked now
/// (after the call); nullptr: device -1 (frees, virtual address ranges).
inline void record(const char* kind,
                   const char* api,
                   const char* mem,
                   uint64_t ptr,
                   uint64_t size,
                   int rc,
                   Real* device,
                   const void* fn) {
    Event e = event(kind, api, ptr, size, rc);
    e.mem = mem;
    e.device = device && !Scope::nested() ? askDevice(*device, fn) : -1;
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

/// Calls the real function `fn.fn` with `a…` (its exact parameter types) inside a Scope, then
/// `after(rc)` when the Scope says the call is recorded (not the runtime's own nested call).
/// kUnknownError when no real function is loaded (`fn.fn` null).
template <class After, class... A>
int hooked(Target fn, After after, A... a) {
    auto f = reinterpret_cast<int (*)(A...)>(fn.fn);
    if (!f) return kUnknownError;
    Scope s(fn);
    int rc = f(a...);
    if (s.recorded()) after(rc);
    return rc;
}

/// An allocation (kind "alloc") or reservation ("reserve") of `size` bytes that returns its
/// pointer through `out` (void** or CUdeviceptr*), the first argument.
template <class Out, class... A>
int allocCall(Target fn,
              const char* kind,
              const char* api,
              const char* mem,
              Real* device,
              uint64_t size,
              Out* out,
              A... a) {
    return hooked(
        fn,
        [&](int rc) {
            uint64_t p = 0;
            if (rc == 0 && out) std::memcpy(&p, out, sizeof p);
            record(kind, api, mem, p, size, rc, device, fn.fn);
        },
        out,
        a...);
}

/// A free taking the pointer first; a null pointer is not recorded.
template <class P, class... A>
int freeCall(Target fn, const char* api, P ptr, A... a) {
    return hooked(
        fn,
        [&](int rc) {
            if (bits(ptr)) record("free", api, nullptr, bits(ptr), 0, rc, nullptr, fn.fn);
        },
        ptr,
        a...);
}

/// A pitched allocation (`out`, `pitch`, width in bytes, height in rows, …) on `device`:
/// recorded as pitch × height bytes.
template <class Out, class... A>
int pitchCall(
    Target fn, const char* api, Real* device, Out* out, size_t* pitch, size_t w, size_t h, A... a) {
    return hooked(
        fn,
        [&](int rc) {
            bool ok = rc == 0 && out && pitch;
            uint64_t p = 0;
            if (ok) std::memcpy(&p, out, sizeof p);
            record("alloc", api, "device", p, ok ? *pitch * h : 0, rc, device, fn.fn);
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
int rangeCall(Target fn, const char* kind, const char* api, P ptr, size_t size) {
    return hooked(
        fn,
        [&](int rc) { record(kind, api, nullptr, bits(ptr), size, rc, nullptr, fn.fn); },
        ptr,
        size);
}

/// hipMemCreate/cuMemCreate(handle*, size, prop, flags): the handle made and the device of
/// the allocation properties (type, handle types, location {type, id}, …: the id at byte 12).
template <class F>
int createCall(
    Target fn, const char* api, uint64_t* handle, size_t size, const void* prop, F flags) {
    return hooked(
        fn,
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
inline int releaseCall(Target fn, const char* api, uint64_t handle) {
    return hooked(
        fn, [&](int rc) { recordHandle("release", api, 0, 0, handle, -1, rc); }, handle);
}

/// hipMemMap/cuMemMap(ptr, size, offset, handle, flags).
template <class P, class F>
int mapCall(
    Target fn, const char* api, P ptr, size_t size, size_t offset, uint64_t handle, F flags) {
    return hooked(
        fn,
        [&](int rc) { recordHandle("map", api, bits(ptr), size, handle, -1, rc); },
        ptr,
        size,
        offset,
        handle,
        flags);
}

/// The return address of the hooked function this appears in: who called it.
#define GPUFAULT_CALLER __builtin_return_address(0)

/// Slot wrappers of one hook: `Via(t, a…)` is the hook's body calling real function `t.fn`;
/// wrapper K calls it with slot K of `R` (what dlsym(handle, …) or cuGetProcAddress returned:
/// Real::slotOf), so each runtime's function handed out keeps its own wrapper.
template <auto Via, Real& R>
struct Slots;
template <class... A, int (*Via)(Target, A...), Real& R>
struct Slots<Via, R> {
    template <int K>
    static int call(A... a) {
        return Via(Target{R.atSlot(K), GPUFAULT_CALLER}, a...);
    }
    /// The wrapper of slot `k` (0 ≤ k < kSlots).
    static void* at(int k) {
        static_assert(kSlots == 8);
        static constexpr int (*kTable[kSlots])(A...) = {
            &call<0>, &call<1>, &call<2>, &call<3>, &call<4>, &call<5>, &call<6>, &call<7>};
        return reinterpret_cast<void*>(kTable[k]);
    }
};

/// One hooked function: its exported name, our exported wrapper (routed by its caller), the
/// real functions' slots and the slot wrappers.
struct HookEntry {
    const char* name;
    void* wrapper;
    Real* real;
    void* (*slot)(int k);
};

/// The entry of exported hook `fn`, whose body is `via` and whose real functions are `real`.
// clang-format off
#define GPUFAULT_HOOK(fn, via, real) \
    { #fn, reinterpret_cast<void*>(&fn), &real, &Slots<via, real>::at }
// clang-format on

/// The entry named `name` in `entries`; nullptr when none is.
template <size_t N>
const HookEntry* findHook(const HookEntry (&entries)[N], const char* name) {
    for (const auto& e : entries)
        if (std::strcmp(e.name, name) == 0) return &e;
    return nullptr;
}

/// What to hand out for the real function `real` of hook `e` (nullptr: not hooked): its slot
/// wrapper; `real` itself when it is ours (our exported wrapper) or every slot is taken (then
/// not recorded, never misrouted); our exported wrapper when `real` is null (a check only).
inline void* wrap(const HookEntry* e, void* real) {
    if (!e) return nullptr;
    if (!real) return e->wrapper;
    int k = e->real->slotOf(real);
    return k < 0 ? real : e->slot(k);
}

}  // namespace gpufault::preload
