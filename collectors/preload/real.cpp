// libgpufault-preload.so: which real function a hooked call goes to. Without the shim a call
// from library L binds to the first definition in L's scope: the global scope, then L's own
// dependencies (an RTLD_LOCAL group). Two runtimes of different names loaded RTLD_LOCAL (torch
// and jax wheels each bundling libamdhip64-<hash>.so) therefore serve their own callers; so
// must the shim's wrappers. docs/preload.md "Which runtime a call goes to". Also the dlsym
// interposition (dlsym_hook.S), which hands out wrappers bound to the runtime asked.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "collectors/preload/shim.h"

namespace gpufault::preload {

pthread_mutex_t g_lookup_mu = PTHREAD_MUTEX_INITIALIZER;

namespace {

/// glibc's _dl_find_object (2.35 and later: lock-free), looked up at run time so the shim
/// still loads with an older glibc (dladdr1 then).
using FindObjectFn = int (*)(void*, struct dl_find_object*);
void* g_find_object = nullptr;  // _dl_find_object; &g_find_object: looked up, none

FindObjectFn findObjectFn() {
    void* f = __atomic_load_n(&g_find_object, __ATOMIC_ACQUIRE);
    if (!f) {
        f = realDlsym(RTLD_DEFAULT, "_dl_find_object");
        if (!f) f = &g_find_object;
        __atomic_store_n(&g_find_object, f, __ATOMIC_RELEASE);
    }
    return f == &g_find_object ? nullptr : reinterpret_cast<FindObjectFn>(f);
}

/// The link_map of the object holding code address `p`; nullptr when none does.
struct link_map* mapOf(const void* p) {
    if (!p) return nullptr;
    if (FindObjectFn f = findObjectFn()) {
        struct dl_find_object r {};
        return f(const_cast<void*>(p), &r) == 0 ? r.dlfo_link_map : nullptr;
    }
    Dl_info info{};
    struct link_map* lm = nullptr;
    if (dladdr1(p, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) == 0) return nullptr;
    return lm;
}

/// `name` in the scope of object `lm` (itself, then its dependencies, breadth first): what
/// dlsym(handle of lm, name) answers; nullptr for the main program (its scope is the global
/// one), for this library, and when the scope has none but ours. Holds no lock of the shim:
/// dlopen/dlsym wait for the loader's lock, which a thread running a constructor holds while
/// it calls a hook.
void* inScopeOf(struct link_map* lm, const char* name) {
    if (!lm || !lm->l_name || !*lm->l_name) return nullptr;
    void* h = dlopen(lm->l_name, RTLD_NOLOAD | RTLD_LAZY);
    if (!h) return nullptr;
    void* f = realDlsym(h, name);
    dlclose(h);
    return f && !isOurs(f) ? f : nullptr;
}

/// The loader's generation: the objects it has added plus those it has removed
/// (dl_iterate_phdr's dlpi_adds + dlpi_subs, read from the first object only). Any dlopen that
/// maps an object or dlclose that unmaps one changes it. kNoGeneration when this glibc does not
/// say (nothing is remembered then).
constexpr uint64_t kNoGeneration = ~uint64_t{0};

int firstGeneration(struct dl_phdr_info* info, size_t size, void* data) {
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs)
        *static_cast<uint64_t*>(data) = info->dlpi_adds + info->dlpi_subs;
    return 1;  // the first object tells
}

uint64_t loaderGeneration() {
    uint64_t g = kNoGeneration;
    dl_iterate_phdr(firstGeneration, &g);
    return g;
}

/// The function remembered for `key` in `r` in loader generation `gen`, in *f (nullptr: none
/// is loaded); false when nothing is remembered for it (or a writer is busy). Lock-free: the
/// entries are read between two reads of r.seq, and used only when it did not change.
bool cached(const Real& r, const void* key, uint64_t gen, void** f) {
    unsigned s = __atomic_load_n(&r.seq, __ATOMIC_ACQUIRE);
    if (s & 1) return false;
    bool found = false;
    void* fn = nullptr;
    if (__atomic_load_n(&r.gen, __ATOMIC_RELAXED) == gen) {
        for (const auto& e : r.scoped) {
            const void* k = __atomic_load_n(&e.key, __ATOMIC_RELAXED);
            if (!k) break;
            if (k == key) {
                fn = __atomic_load_n(&e.fn, __ATOMIC_RELAXED);
                found = true;
                break;
            }
        }
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&r.seq, __ATOMIC_RELAXED) != s) return false;
    *f = fn;
    return found;
}

/// Remembers `f` for `key`, looked up in loader generation `gen` (read before the lookup, so a
/// dlopen or dlclose during it makes the entry stale at once). A newer generation empties the
/// cache first; an older one is not remembered, nor anything when all entries are taken or
/// another thread is writing (no wait: the answer is still used, only not remembered). The
/// only thing done under g_lookup_mu: no call into the loader, no wait.
void remember(Real& r, const void* key, void* f, uint64_t gen) {
    if (gen == kNoGeneration) return;
    if (pthread_mutex_trylock(&g_lookup_mu) != 0) return;
    if (gen >= r.gen) {
        unsigned s = r.seq;
        __atomic_store_n(&r.seq, s + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        if (gen != r.gen) {
            for (auto& e : r.scoped) {
                __atomic_store_n(&e.key, nullptr, __ATOMIC_RELAXED);
                __atomic_store_n(&e.fn, nullptr, __ATOMIC_RELAXED);
            }
            __atomic_store_n(&r.gen, gen, __ATOMIC_RELAXED);
        }
        for (auto& e : r.scoped) {
            if (e.key == key) break;
            if (e.key) continue;
            __atomic_store_n(&e.fn, f, __ATOMIC_RELAXED);
            __atomic_store_n(&e.key, key, __ATOMIC_RELAXED);
            break;
        }
        __atomic_store_n(&r.seq, s + 2, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_lookup_mu);
}

/// Object names of loaded objects, a chunk at a time (dl_iterate_phdr; no allocation, a
/// bounded stack): the `skip` first named objects are passed over.
struct Names {
    static constexpr int kChunk = 64;
    const char* name[kChunk];
    int skip = 0, seen = 0, n = 0;
};

int collectName(struct dl_phdr_info* info, size_t, void* data) {
    auto* names = static_cast<Names*>(data);
    if (!info->dlpi_name || !*info->dlpi_name) return 0;
    if (names->seen++ < names->skip) return 0;
    names->name[names->n++] = info->dlpi_name;
    return names->n == Names::kChunk ? 1 : 0;
}

/// The process-wide function of `r` (findReal) in loader generation `gen`: remembered under
/// the key `&r` (no link_map has that address), nullptr remembered too.
void* processWide(Real& r, uint64_t gen) {
    void* f = nullptr;
    if (cached(r, &r, gen, &f)) return f;
    f = findReal(r.name);
    remember(r, &r, f, gen);
    return f;
}

/// The scoped lookup of `r` for `key` (a link_map, tagged +1 for `object`): remembered for the
/// loader's current generation, else looked up (`global` first when asked; then the object's
/// scope, then processWide) and remembered. No lock of the shim is held while looking up.
void* scopedLookup(Real& r, struct link_map* lm, uint64_t gen, bool object) {
    if (!lm) return processWide(r, gen);
    const void* key = reinterpret_cast<const char*>(lm) + (object ? 1 : 0);
    void* f = nullptr;
    if (cached(r, key, gen, &f)) return f;
    if (!object) {
        f = realDlsym(RTLD_NEXT, r.name);  // the global scope (the shim is preloaded: first)
        if (f && isOurs(f)) f = nullptr;
    }
    if (!f) f = inScopeOf(lm, r.name);
    if (!f) f = processWide(r, gen);  // the main program's scope is the global one, or none
    remember(r, key, f, gen);
    return f;
}

}  // namespace

void* findReal(const char* name) {
    void* f = realDlsym(RTLD_NEXT, name);
    if (f && !isOurs(f)) return f;
    // RTLD_LOCAL runtimes are not in the global scope: ask each loaded object by handle.
    Names names;
    for (;;) {
        names.seen = names.n = 0;
        dl_iterate_phdr(collectName, &names);
        for (int k = 0; k < names.n; ++k) {
            void* h = dlopen(names.name[k], RTLD_NOLOAD | RTLD_LAZY);
            if (!h) continue;
            void* g = realDlsym(h, name);
            dlclose(h);
            if (g && !isOurs(g)) return g;
        }
        if (names.n < Names::kChunk) return nullptr;
        names.skip += names.n;
    }
}

void* Real::get() {
    return processWide(*this, loaderGeneration());
}

const void* objectOf(const void* p) {
    return mapOf(p);
}

void* Real::forCaller(const void* ret) {
    uint64_t gen = loaderGeneration();  // first: a change during the lookup is seen next time
    return scopedLookup(*this, mapOf(ret), gen, false);
}

void* Real::inObject(const void* served) {
    uint64_t gen = loaderGeneration();
    return scopedLookup(*this, mapOf(served), gen, true);
}

int Real::slotOf(void* real) {
    if (!real || isOurs(real)) return -1;
    for (int k = 0; k < kSlots; ++k) {
        void* expected = nullptr;
        if (__atomic_compare_exchange_n(
                &slot[k], &expected, real, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
            expected == real)
            return k;
    }
    return -1;
}

}  // namespace gpufault::preload

// ---- dlsym interposition (dlsym_hook.S jumps here first, then to the real dlsym) ----

extern "C" {
/// The real dlsym; dlsym_hook.S tail-jumps to it so the caller's return address (which
/// dlsym uses for RTLD_NEXT and RTLD_DEFAULT scopes) is the original caller's.
__attribute__((visibility("hidden"))) void* gpufault_real_dlsym = nullptr;

__attribute__((visibility("hidden"))) void gpufault_init_dlsym() {
    if (__atomic_load_n(&gpufault_real_dlsym, __ATOMIC_ACQUIRE)) return;
    void* f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!f) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    __atomic_store_n(&gpufault_real_dlsym, f, __ATOMIC_RELEASE);
}

/// Our wrapper for `name` asked of `handle`, or nullptr (the real dlsym answers).
__attribute__((visibility("hidden"))) void* gpufault_dlsym_pick(void* handle, const char* name) {
    gpufault_init_dlsym();
    if (!name || handle == RTLD_NEXT || (name[0] != 'h' && name[0] != 'c')) return nullptr;
    if (std::strncmp(name, "hip", 3) != 0 && std::strncmp(name, "cu", 2) != 0) return nullptr;
    if (!gpufault::preload::wrapperFor(name, nullptr)) return nullptr;  // not one we hook
    void* real = gpufault::preload::realDlsym(handle, name);
    return real ? gpufault::preload::wrapperFor(name, real) : nullptr;
}
}

namespace gpufault::preload {

void* realDlsym(void* handle, const char* name) {
    gpufault_init_dlsym();
    auto f = reinterpret_cast<void* (*)(void*, const char*)>(gpufault_real_dlsym);
    return f ? f(handle, name) : nullptr;
}

void* wrapperFor(const char* name, void* real) {
    if (void* w = hipWrapperFor(name, real)) return w;
    return cudaWrapperFor(name, real);
}

}  // namespace gpufault::preload
