// libgpufault-preload.so internals: the record writer, real-function lookup and the guard
// shared by the hook files. Nothing here is exported (exports.map lists what is).
//
// Records are the line format of docs/preload.md ("gpufault.alloc 1 KIND key=value …"),
// written with one write(2) each to ${GPUFAULT_ALLOC_DIR:-.}/gpufault-alloc.<pid>.log.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>

// The hooks are built with -fexceptions so that a C++ exception thrown by the runtime through a
// hook runs the Scope's destructor (the thread is not left marked inside a hooked call). The
// two symbols the unwinding tables need are weak: they bind to the host's libstdc++ and
// libgcc_s when those are in the global scope (a C++ host), and the shim still needs only libc
// (where they are not, no exception can pass the hooks with a C++ personality, and none runs).
asm(".weak __gxx_personality_v0\n.weak _Unwind_Resume");

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

/// The real `name` in the process-wide sense: dlsym(RTLD_NEXT) (the global scope), else the
/// first loaded object that defines it, by handle (dlopen(path, RTLD_NOLOAD|RTLD_LAZY)), so a
/// runtime loaded RTLD_LOCAL is found too. nullptr when no object other than this library
/// defines it. The fallback of Real (below).
void* findReal(const char* name);

/// dlsym that is not our interposed one.
void* realDlsym(void* handle, const char* name);

/// Our load address; true when `p` lies in this library.
void* selfBase();
bool isOurs(const void* p);

/// Taken only to publish a looked-up function into a Real's cache (never waited for there:
/// pthread_mutex_trylock) and across fork(): never held while calling into the loader.
extern pthread_mutex_t g_lookup_mu;

/// Takes the shim's lock `a` (and `b`): asynchronous signals are blocked while it is held (Busy)
/// but never while waiting for it (tries, yielding between tries with the signals unblocked),
/// so a thread waiting for it still takes SIGTERM. unlockShim releases in reverse.
void lockShim(pthread_mutex_t* a, pthread_mutex_t* b = nullptr);
void unlockShim(pthread_mutex_t* a, pthread_mutex_t* b = nullptr);

/// Real functions handed out through dlsym(handle, …) or cuGetProcAddress per hooked function:
/// each gets a wrapper of its own (Slots in hook_calls.h); a ninth is handed out unwrapped.
constexpr int kSlots = 8;
/// Calling libraries (and runtimes asked for a device) remembered per hooked function and
/// loader generation; a call from a further one looks its function up again each time
/// (correct, some µs slower).
constexpr int kScopes = 32;

/// One hooked function: its name and the real functions a call may go to. Two runtimes loaded
/// RTLD_LOCAL under different names (torch and jax wheels each bundling
/// `libamdhip64-<hash>.so`) each keep their callers: a call goes where the caller would have
/// gone without the shim (docs/preload.md "Which runtime a call goes to").
///
/// What was looked up is remembered per calling object (its link_map) for the loader's
/// generation it was looked up in (dl_iterate_phdr's adds + subs): after any dlopen that maps
/// or dlclose that unmaps an object every entry is stale, so a link_map address reused by
/// another library never reaches an unmapped function.
struct Real {
    const char* name;
    unsigned seq = 0;  ///< odd while the entries are written (a seqlock; writers: g_lookup_mu)
    uint64_t gen = 0;  ///< the loader generation the entries belong to
    struct Scoped {
        const void* key = nullptr;  ///< a link_map; +1: looked up in that object (inObject);
                                    ///< the Real itself: the process-wide function (get())
        void* fn = nullptr;         ///< nullptr: none loaded
    };
    Scoped scoped[kScopes] = {};  ///< appended under g_lookup_mu, read without it
    void* slot[kSlots] = {};      ///< real functions of the slot wrappers

    /// The process-wide function: the global scope, else any loaded object (findReal);
    /// nullptr when none is loaded (remembered like the others, per loader generation).
    void* get();
    /// What a call returning to `ret` would have reached without the shim: the global scope
    /// (which every object searches first), else the dependencies of the calling object (its
    /// RTLD_LOCAL runtime), else get().
    void* forCaller(const void* ret);
    /// This name as the object defining `served` sees it (its own and its dependencies'
    /// definitions first): the device query of the runtime that served a call. get() when
    /// `served` is null or the object has none.
    void* inObject(const void* served);
    /// The slot whose wrapper calls `real` (taken now when new); -1 when all are taken.
    int slotOf(void* real);
    /// The real function of slot `k`.
    void* atSlot(int k) const { return __atomic_load_n(&slot[k], __ATOMIC_ACQUIRE); }
};

/// A hooked call: the real function it goes to (nullptr: none loaded) and the address it
/// returns to (its caller).
struct Target {
    void* fn;
    const void* ret;
};

/// The Target of a call of an exported hook of `r` returning to `ret`.
inline Target callerTarget(Real& r, const void* ret) {
    return {r.forCaller(ret), ret};
}

/// The link_map of the object holding code address `p` (an opaque key); nullptr when none.
const void* objectOf(const void* p);

/// The nesting of hooked calls on a thread. The outermost call is recorded. A call made while
/// another runs on the thread is the runtime's own (cudaMalloc → cuMemAlloc_v2: its caller is
/// the object of the running call's real function) and not recorded again; any other (a signal
/// handler that allocates) is recorded as a nested record: no stack and no device asked (the
/// interrupted thread may hold the loader's or libunwind's locks, or the runtime's), `nested=1`.
/// One made while the thread holds a lock of the shim (Busy: signals are blocked then, so only
/// a fault's handler could) is dropped, counted, and a `dropped` record says how many were.
class Scope {
  public:
    explicit Scope(const Target& t);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    bool recorded() const { return recorded_; }
    /// True while the innermost recorded call on this thread is a nested one (emit writes a
    /// nested record).
    static bool nested();

  private:
    bool recorded_;
    bool prevNested_;
    void* prev_;  ///< the real function of the recorded call around this one
};

/// Marks this thread as holding a lock of the shim (g_open_mu; g_lookup_mu across fork) while
/// it lives; asynchronous signals are blocked meanwhile (a handler runs once the lock is
/// released). Never held while waiting for a lock (lockShim).
class Busy {
  public:
    Busy();
    ~Busy();
    Busy(const Busy&) = delete;
    Busy& operator=(const Busy&) = delete;
    /// True when this thread holds one.
    static bool held();
    /// Without an object (pthread_atfork's prepare, then parent or child).
    static void enter();
    static void leave();
};

/// Calls dropped (Scope) since the last call, which resets the count (a `dropped` record).
uint64_t takeDropped();
/// True when calls were dropped since the last takeDropped().
bool hasDropped();

/// What to hand out for hooked `name` asked of dlsym(handle, name) or cuGetProcAddress:
/// `real` is what the runtime returned; our wrapper bound to it (a slot of its own, so a
/// second runtime's function gets another wrapper), or `real` itself when all slots are taken.
/// nullptr: `name` is not hooked (with `real` null: only that check).
void* wrapperFor(const char* name, void* real);
void* hipWrapperFor(const char* name, void* real);
void* cudaWrapperFor(const char* name, void* real);

}  // namespace gpufault::preload
