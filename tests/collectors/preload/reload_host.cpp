// Host program for the preload shim's reload tests (hostile review 9c):
//   reload_host reload FW_A.so FW_B.so RT_A.so RT_B.so
//     dlopen FW_A (RTLD_LOCAL, its runtime RT_A), hipMalloc through it, dlclose it (RT_A goes
//     too), dlopen FW_B (its runtime RT_B; glibc tends to give it FW_A's link_map address) and
//     hipMalloc through it. Lines "KEY ptr=0x… size=N owner=a|b|none", "unloaded-a yes|no",
//     "same-link-map yes|no".
//   reload_host ctor-loop DIR N
//     a thread calls caller_call() of DIR/caller1.so … caller40.so (each loaded RTLD_LOCAL, 40
//     calling objects) in a loop while the main thread dlopens and dlcloses DIR/ctor.so N times
//     (its constructor calls hipMalloc with the loader's lock held). Prints "done".
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "host_dl.h"

namespace {

using gpufault::testing::host::open;
using gpufault::testing::host::sym;

using Owns = int (*)(const void*);
using Alloc = void* (*)(size_t, int*);
using Free = int (*)(void*);

/// Allocates `n` bytes through framework `fw` and prints which runtime owns the memory.
void allocThrough(void* fw, const char* rtPath, const char* key, size_t n) {
    void* rt = open(rtPath, RTLD_NOLOAD);
    auto owns = sym<Owns>(rt, "standin_owns");
    int rc = 0;
    void* p = sym<Alloc>(fw, "fw_hip_alloc")(n, &rc);
    std::printf("%s ptr=%p size=%zu rc=%d owner=%s\n", key, p, n, rc, owns(p) ? key + 6 : "none");
    std::fflush(stdout);
    dlclose(rt);
}

struct link_map* mapOf(void* h) {
    struct link_map* lm = nullptr;
    dlinfo(h, RTLD_DI_LINKMAP, &lm);
    return lm;
}

int reload(char** argv) {
    void* a = open(argv[2], 0);
    struct link_map* la = mapOf(a);
    allocThrough(a, argv[4], "alloc-a", 1u << 20);
    dlclose(a);
    void* still = dlopen(argv[4], RTLD_NOW | RTLD_NOLOAD);
    std::printf("unloaded-a %s\n", still ? "no" : "yes");
    void* b = open(argv[3], 0);
    std::printf("same-link-map %s\n", mapOf(b) == la ? "yes" : "no");
    std::fflush(stdout);
    allocThrough(b, argv[5], "alloc-b", 2u << 20);
    return 0;
}

std::atomic<bool> g_stop{false};
int (*g_calls[40])();

void* callLoop(void*) {
    while (!g_stop.load())
        for (auto* call : g_calls) call();
    return nullptr;
}

int ctorLoop(char** argv) {
    std::string dir = argv[2];
    for (int i = 0; i < 40; ++i) {
        std::string path = dir + "/caller" + std::to_string(i + 1) + ".so";
        g_calls[i] = sym<int (*)()>(open(path.c_str(), 0), "caller_call");
    }
    pthread_t t;
    pthread_create(&t, nullptr, callLoop, nullptr);
    std::string ctor = dir + "/ctor.so";
    int n = std::atoi(argv[3]);
    for (int k = 0; k < n; ++k) dlclose(open(ctor.c_str(), 0));
    g_stop = true;
    pthread_join(t, nullptr);
    std::printf("done\n");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 6 && std::strcmp(argv[1], "reload") == 0) return reload(argv);
    if (argc == 4 && std::strcmp(argv[1], "ctor-loop") == 0) return ctorLoop(argv);
    std::fprintf(stderr,
                 "usage: %s reload FW_A FW_B RT_A RT_B | %s ctor-loop DIR N\n",
                 argv[0],
                 argv[0]);
    return 2;
}
