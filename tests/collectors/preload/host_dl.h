// dlopen and dlsym for the preload tests' host programs (preload_host, reload_host,
// two_runtimes_host): a failure ends the host with exit status 2 and dlerror() on stderr.
#pragma once

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace gpufault::testing::host {

/// dlopen(`path`, RTLD_NOW | RTLD_LOCAL | `extra`); exits 2 when it fails.
inline void* open(const char* path, int extra) {
    void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL | extra);
    if (!h) {
        std::fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        std::exit(2);
    }
    return h;
}

/// The symbol `name` of the object `h` as an `F`; exits 2 when it is missing.
template <class F>
F sym(void* h, const char* name) {
    void* p = dlsym(h, name);
    if (!p) {
        std::fprintf(stderr, "dlsym %s: %s\n", name, dlerror());
        std::exit(2);
    }
    return reinterpret_cast<F>(p);
}

}  // namespace gpufault::testing::host
