// big_core DIR NLIBS NTHREADS: makes the large core of bench/core_vs_eustack.sh. It dlopen()s
// DIR/libbench_0.so … DIR/libbench_{NLIBS-1}.so (each exports `bench_enter_N(int depth, hop*)`,
// built by the script), starts NTHREADS threads that each descend through four of those
// libraries and park there, then sets RLIMIT_CORE unlimited and abort()s from the main thread:
// a core with NTHREADS + 1 threads and NLIBS + libc/libstdc++/… modules, written where
// kernel.core_pattern says (`core` in the cwd on these machines). Exit 2: bad usage or a
// library that does not load.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// What a library function calls next: the entry point of the next library, or park().
struct Hop {
    std::vector<int (*)(int, void*)>* entries;
    int index;
};

std::atomic<int> parked{0};
std::vector<int (*)(int, void*)> entries;

}  // namespace

/// Called by the libraries (`extern "C"`, found through the executable's dynamic symbols): the
/// next library's entry, or park when `depth` is 0.
extern "C" __attribute__((visibility("default"), noinline)) int bench_next(int depth, void* arg) {
    auto* hop = static_cast<Hop*>(arg);
    if (depth == 0) {
        parked.fetch_add(1);
        for (;;) ::pause();
    }
    hop->index = (hop->index + 7) % static_cast<int>(hop->entries->size());
    return (*hop->entries)[static_cast<size_t>(hop->index)](depth - 1, arg);
}

namespace {

void* threadMain(void* arg) {
    auto* hop = static_cast<Hop*>(arg);
    bench_next(4, hop);
    return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: big_core DIR NLIBS NTHREADS\n");
        return 2;
    }
    std::string dir = argv[1];
    int nlibs = std::atoi(argv[2]), nthreads = std::atoi(argv[3]);
    if (nlibs < 1 || nthreads < 1) {
        std::fprintf(stderr, "big_core: NLIBS and NTHREADS must be positive\n");
        return 2;
    }
    for (int i = 0; i < nlibs; ++i) {
        auto path = dir + "/libbench_" + std::to_string(i) + ".so";
        void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        auto name = "bench_enter_" + std::to_string(i);
        void* f = h ? ::dlsym(h, name.c_str()) : nullptr;
        if (!f) {
            std::fprintf(stderr, "big_core: %s: %s\n", path.c_str(), ::dlerror());
            return 2;
        }
        entries.push_back(reinterpret_cast<int (*)(int, void*)>(f));
    }
    std::vector<Hop> hops(static_cast<size_t>(nthreads));
    for (int i = 0; i < nthreads; ++i) {
        hops[static_cast<size_t>(i)] = Hop{&entries, i % nlibs};
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 256 << 10);
        if (pthread_create(&t, &a, threadMain, &hops[static_cast<size_t>(i)]) != 0) {
            std::fprintf(stderr, "big_core: pthread_create failed\n");
            return 2;
        }
        pthread_attr_destroy(&a);
    }
    while (parked.load() < nthreads) ::usleep(1000);
    struct rlimit rl {
        RLIM_INFINITY, RLIM_INFINITY
    };
    ::setrlimit(RLIMIT_CORE, &rl);
    std::abort();
}
