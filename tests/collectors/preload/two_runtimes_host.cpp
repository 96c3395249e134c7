// Host program for the preload shim's two-runtime test (torch and jax wheels each bundling a
// libamdhip64-<hash>.so, loaded RTLD_LOCAL by Python): two framework libraries, each linked to
// its own stand-in runtime (different sonames), loaded RTLD_LOCAL. Allocates through each
// framework, through dlsym(runtime handle, "hipMalloc") and through each runtime's
// cuGetProcAddress_v2, and prints which runtime's memory each call got:
//   two_runtimes_host FW_A.so FW_B.so RT_A.so RT_B.so
// Lines "KEY ptr=0x… size=N owner=a|b|none".
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "host_dl.h"

namespace {

using gpufault::testing::host::open;
using gpufault::testing::host::sym;

using Owns = int (*)(const void*);
Owns ownsA, ownsB;

void print(const char* key, const void* p, size_t n) {
    const char* owner = ownsA(p) ? (ownsB(p) ? "both" : "a") : ownsB(p) ? "b" : "none";
    std::printf("%s ptr=%p size=%zu owner=%s\n", key, p, n, owner);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s FW_A.so FW_B.so RT_A.so RT_B.so\n", argv[0]);
        return 2;
    }
    void* fw[2] = {open(argv[1], 0), open(argv[2], 0)};
    void* rt[2] = {open(argv[3], RTLD_NOLOAD), open(argv[4], RTLD_NOLOAD)};  // the frameworks'
    ownsA = sym<Owns>(rt[0], "standin_owns");
    ownsB = sym<Owns>(rt[1], "standin_owns");
    const char* names[2] = {"a", "b"};
    for (int i = 0; i < 2; ++i) {
        char key[32];
        int rc = 0;
        // A direct call from the framework (its PLT: the shim's hipMalloc).
        auto alloc = sym<void* (*)(size_t, int*)>(fw[i], "fw_hip_alloc");
        size_t n = (1u << 20) * (i + 1);
        std::snprintf(key, sizeof key, "fw-%s", names[i]);
        print(key, alloc(n, &rc), n);
        // hipMalloc asked of the runtime's handle.
        auto hm = sym<int (*)(void**, size_t)>(rt[i], "hipMalloc");
        void* p = nullptr;
        n = (3u << 20) * (i + 1);
        rc = hm(&p, n);
        std::snprintf(key, sizeof key, "dlsym-%s", names[i]);
        print(key, p, n);
        // The driver entry point that runtime's cuGetProcAddress_v2 hands out.
        auto gpa =
            sym<int (*)(const char*, void**, int, uint64_t, int*)>(rt[i], "cuGetProcAddress_v2");
        void* fn = nullptr;
        int status = 0;
        rc = gpa("cuMemAlloc", &fn, 12000, 0, &status);
        unsigned long long d = 0;
        n = (5u << 20) * (i + 1);
        if (rc == 0 && fn) reinterpret_cast<int (*)(unsigned long long*, size_t)>(fn)(&d, n);
        std::snprintf(key, sizeof key, "driver-%s", names[i]);
        print(key, reinterpret_cast<void*>(static_cast<uintptr_t>(d)), n);
    }
    return 0;
}
