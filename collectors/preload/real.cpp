// libgpufault-preload.so: which real function a hooked call goes to. Without the shim a call
// from library L binds to the first definition in L's scope: the global scope, then L's own
// dependencies (an RTLD_LOCAL group). Two runtimes of different names loaded RTLD_LOCAL (torch
// and jax wheels each bundling libamdhip64-<hash>.so) therefore serve their own callers; so
// must the shim's wrappers. docs/preload.md "Which runtime a call goes to". Also the dlsym
// interposition (dlsym_hook.S), which hands out wrappers bound to the runtime asked.
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

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
/// one), for this library, and when the scope has none but ours. Call with g_lookup_mu held.
void* inScopeOf(struct link_map* lm, const char* name) {
    if (!lm || !lm->l_name || !*lm->l_name) return nullptr;
    void* h = dlopen(lm->l_name, RTLD_NOLOAD | RTLD_LAZY);
    if (!h) return nullptr;
    void* f = realDlsym(h, name);
    dlclose(h);
    return f && !isOurs(f) ? f : nullptr;
}

/// The function remembered for `key` in `r`; nullptr when none is.
void* cached(const Real& r, const void* key) {
    for (const auto& s : r.scoped) {
        const void* k = __atomic_load_n(&s.key, __ATOMIC_ACQUIRE);
        if (!k) return nullptr;
        if (k == key) return s.fn;
    }
    return nullptr;
}

/// Remembers `f` for `key` (first free entry; nothing when all are taken). g_lookup_mu held.
void remember(Real& r, const void* key, void* f) {
    for (auto& s : r.scoped) {
        if (s.key == key) return;
        if (s.key) continue;
        s.fn = f;
        __atomic_store_n(&s.key, key, __ATOMIC_RELEASE);
        return;
    }
}

/// Object names of every loaded object, collected without allocating (dl_iterate_phdr).
struct Names {
    const char* name[1024];
    int n = 0;
};

Names g_names;  // guarded by g_lookup_mu

int collectName(struct dl_phdr_info* info, size_t, void* data) {
    auto* names = static_cast<Names*>(data);
    if (info->dlpi_name && *info->dlpi_name && names->n < 1024)
        names->name[names->n++] = info->dlpi_name;
    return 0;
}

/// The scoped lookup of `r` for `key` (a link_map, tagged +1 for `object`): remembered, else
/// looked up once (`global` first when asked) and remembered; get() when neither finds one.
void* scopedLookup(Real& r, struct link_map* lm, bool object) {
    if (!lm) return r.get();
    const void* key = reinterpret_cast<const char*>(lm) + (object ? 1 : 0);
    if (void* f = cached(r, key)) return f;
    // A signal handler while this thread holds our lock (or is inside dlopen for it): no
    // lookup now; the process-wide function when there is one.
    if (Busy::held())
        if (void* f = __atomic_load_n(&r.fn, __ATOMIC_ACQUIRE)) return f;
    void* f = nullptr;
    if (!object) {
        f = realDlsym(RTLD_NEXT, r.name);  // the global scope (the shim is preloaded: first)
        if (f && isOurs(f)) f = nullptr;
    }
    if (!f) {
        Busy busy;
        pthread_mutex_lock(&g_lookup_mu);
        f = inScopeOf(lm, r.name);
        pthread_mutex_unlock(&g_lookup_mu);
    }
    if (!f) f = r.get();  // the main program (its scope is the global one), or none in scope
    if (f) {
        Busy busy;
        pthread_mutex_lock(&g_lookup_mu);
        remember(r, key, f);
        pthread_mutex_unlock(&g_lookup_mu);
    }
    return f;
}

}  // namespace

void* findReal(const char* name) {
    void* f = realDlsym(RTLD_NEXT, name);
    if (f && !isOurs(f)) return f;
    // RTLD_LOCAL runtimes are not in the global scope: ask each loaded object by handle.
    Busy busy;
    pthread_mutex_lock(&g_lookup_mu);
    Names& names = g_names;
    names.n = 0;
    dl_iterate_phdr(collectName, &names);
    f = nullptr;
    for (int k = 0; k < names.n && !f; ++k) {
        void* h = dlopen(names.name[k], RTLD_NOLOAD | RTLD_LAZY);
        if (!h) continue;
        void* g = realDlsym(h, name);
        if (g && !isOurs(g)) f = g;
        dlclose(h);
    }
    pthread_mutex_unlock(&g_lookup_mu);
    return f;
}

void* Real::get() {
    void* f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (f) return f;
    f = findReal(name);
    void* expected = nullptr;
    if (f)
        __atomic_compare_exchange_n(&fn, &expected, f, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
}

const void* objectOf(const void* p) {
    return mapOf(p);
}

void* Real::forCaller(const void* ret) {
    return scopedLookup(*this, mapOf(ret), false);
}

void* Real::inObject(const void* served) {
    return scopedLookup(*this, mapOf(served), true);
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
