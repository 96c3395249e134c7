// libgpufault-preload.so internals: the record writer, real-function lookup and the guard
// shared by the hook files. Nothing here is exported (exports.map lists what is).
//
// Records are the line format of docs/preload.md ("gpufault.alloc 1 KIND key=value …"),
// written with one write(2) each to ${GPUFAULT_ALLOC_DIR:-.}/gpufault-alloc.<pid>.log.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpufault::preload {

/// One allocation-API event. Sizes in bytes; `ptr`/`handle` as the API returned them.
struct Event {
    const char* kind =
        "alloc";           ///< alloc | free | reserve | unreserve | create | release | map | unmap
    const char* api = "";  ///< the hooked function (`hipMalloc`, `cuMemAlloc_v2`, …)
    const char* mem = nullptr;  ///< device | host | managed | va (nullptr: not printed)
    uint64_t ptr = 0;
    uint64_t size = 0;    ///< 0: not known at this call (frees)
    int64_t device = -1;  ///< ordinal; -1: unknown
    uint64_t handle = 0;  ///< hipMemCreate/cuMemCreate handles (0: none)
    bool has_handle = false;
    int rc = 0;  ///< the API's return code (0 = success)
};

/// Writes one record with time, pid, tid and a short native stack. Never allocates after the
/// first call; a write error disables recording for this process.
void emit(const Event& e);

/// The real `name` for our wrapper `self`: dlsym(RTLD_NEXT), else every loaded object by
/// handle (dlopen(path, RTLD_NOLOAD|RTLD_LAZY)), so a runtime loaded RTLD_LOCAL is found too.
/// nullptr when no object other than this library defines it.
void* findReal(const char* name);

/// dlsym that is not our interposed one.
void* realDlsym(void* handle, const char* name);

/// True for the outermost hooked call on this thread: calls the runtime makes to hooked
/// functions from inside a hooked call (cudaMalloc → cuMemAlloc_v2) are not recorded twice.
class Scope {
  public:
    Scope();
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    bool outer() const { return outer_; }

  private:
    bool outer_;
};

/// One hooked function: its name and the real function, looked up once.
struct Real {
    const char* name;
    void* fn = nullptr;
    /// The real function (cached; nullptr when none is loaded).
    void* get();
    /// Sets the real function when it is not set yet (cuGetProcAddress, dlsym by handle).
    void offer(void* f);
};

/// Our wrapper for a symbol asked for by dlsym(handle, name) or cuGetProcAddress: `real` is
/// what the runtime returned (recorded as the function the wrapper calls). nullptr: not hooked.
void* wrapperFor(const char* name, void* real);
void* hipWrapperFor(const char* name, void* real);
void* cudaWrapperFor(const char* name, void* real);

}  // namespace gpufault::preload
