// Host program for the preload shim's tests. Loads the stand-in framework with
// dlopen(RTLD_LOCAL), allocates through it (and through the driver's cuGetProcAddress and a
// dlsym by handle), throws C++ exceptions through the framework's frames, allocates from
// threads and from a forked child, and prints every pointer it got:
//   preload_host FRAMEWORK.so RUNTIME.so records
//   preload_host FRAMEWORK.so RUNTIME.so fault    (prints a ROCr fault line 4 KiB past an
//                                                  allocation's end and exits 1)
//   preload_host FRAMEWORK.so RUNTIME.so puts     (one line through puts)
//   preload_host FRAMEWORK.so RUNTIME.so hold     (allocates 1 MiB, prints its pid and pointer,
//                                                  then waits for its stdin to close: a job
//                                                  that is still running)
//   preload_host FRAMEWORK.so RUNTIME.so exec     (allocates 1 MiB, then exec()s itself as
//                                                  `after-exec`, which allocates 2 MiB and
//                                                  prints a ROCr fault inside the first
//                                                  buffer: one process, two program images)
//   preload_host FRAMEWORK.so RUNTIME.so exec-sh  (allocates 1 MiB, then exec()s /bin/sh, which
//                                                  allocates nothing and prints a ROCr fault
//                                                  inside that buffer)
//   preload_host FRAMEWORK.so RUNTIME.so thread   (allocates 1 MiB, then a second thread
//                                                  allocates 2 MiB; prints pid, tid, pointers)
#include <dlfcn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "host_dl.h"

namespace {

using Alloc = void* (*)(size_t, int*);
using Free = int (*)(void*);
using Call = int (*)(void (*)(int), int);
Alloc hipAlloc, cudaAlloc;
Free hipFreeFn;
Call fwCall;

using gpufault::testing::host::sym;

void thrower(int i) {
    int rc = 0;
    if (i % 100 == 0) hipAlloc(4096, &rc);  // an allocation (and a stack walk) mid-unwind test
    throw std::runtime_error("thrown " + std::to_string(i));
}

int records(void* rt) {
    std::printf("pid=%d\n", getpid());
    int rc = 0;
    void* a = hipAlloc(1 << 20, &rc);
    std::printf("hipMalloc ptr=%p size=%d rc=%d\n", a, 1 << 20, rc);
    void* b = cudaAlloc((3 << 20) + 123, &rc);
    std::printf("cudaMalloc ptr=%p size=%d rc=%d\n", b, (3 << 20) + 123, rc);
    void* z = hipAlloc(0, &rc);
    std::printf("hipMalloc-failed ptr=%p rc=%d\n", z, rc);

    // Who unwinds C++ exceptions in this process (the shim must not have taken it over).
    Dl_info info{};
    void* raise = dlsym(RTLD_DEFAULT, "_Unwind_RaiseException");
    const char* mod = raise && dladdr(raise, &info) && info.dli_fname ? info.dli_fname : "none";
    std::printf("unwinder %s\n", std::strrchr(mod, '/') ? std::strrchr(mod, '/') + 1 : mod);

    int caught = 0;
    for (int i = 0; i < 1000; ++i) {
        try {
            fwCall(thrower, i);
        } catch (const std::runtime_error& e) {
            if (std::strcmp(e.what(), ("thrown " + std::to_string(i)).c_str()) == 0) ++caught;
        }
    }
    std::printf("caught %d\n", caught);

    // The runtime's hipMalloc throws through the shim's hook; the next call on this thread is
    // recorded as any other (not as a nested one).
    try {
        hipAlloc(0x7707, &rc);  // the stand-in runtime's kThrowSize
    } catch (const std::runtime_error& e) {
        std::printf("%s\n", e.what());
    }
    void* afterThrow = hipAlloc(6 << 20, &rc);
    std::printf("after-throw ptr=%p size=%d rc=%d\n", afterThrow, 6 << 20, rc);

    // The driver: cuGetProcAddress_v2 found by handle, then the entry point it hands out.
    using Gpa = int (*)(const char*, void**, int, uint64_t, int*);
    auto gpa = sym<Gpa>(rt, "cuGetProcAddress_v2");
    void* fn = nullptr;
    int status = -1;
    rc = gpa("cuMemAlloc", &fn, 12000, 0, &status);
    unsigned long long d = 0;
    int rc2 = fn ? reinterpret_cast<int (*)(unsigned long long*, size_t)>(fn)(&d, 5 << 20) : -1;
    std::printf("cuMemAlloc_v2 ptr=0x%llx size=%d rc=%d/%d\n", d, 5 << 20, rc, rc2);

    // hipMalloc asked of the runtime's handle directly.
    auto hm = sym<int (*)(void**, size_t)>(rt, "hipMalloc");
    void* h = nullptr;
    rc = hm(&h, 7 << 20);
    std::printf("dlsym-hipMalloc ptr=%p size=%d rc=%d\n", h, 7 << 20, rc);

    std::printf("hipFree ptr=%p rc=%d\n", a, hipFreeFn(a));

    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([] {
            int r = 0;
            for (int i = 0; i < 50; ++i) hipAlloc(64 << 10, &r);
        });
    for (auto& t : ts) t.join();
    std::printf("threads 200\n");

    std::fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        void* p = hipAlloc(2 << 20, &rc);
        std::printf("child pid=%d ptr=%p size=%d\n", getpid(), p, 2 << 20);
        std::fflush(stdout);
        _exit(0);
    }
    int st = 0;
    waitpid(c, &st, 0);
    return caught == 1000 ? 0 : 1;
}

int fault() {
    int rc = 0;
    void* a = hipAlloc(1 << 20, &rc);
    std::printf("hipMalloc ptr=%p size=%d rc=%d\n", a, 1 << 20, rc);
    std::fflush(stdout);
    uintptr_t at = reinterpret_cast<uintptr_t>(a) + (1 << 20) + 0x1000;
    std::fprintf(stderr,
                 "Memory access fault by GPU node-1 (Agent handle: 0x5581c7a0) on address 0x%lx. "
                 "Reason: Page not present or supervisor privilege.\n",
                 static_cast<unsigned long>(at));
    return 1;
}

int hold() {
    int rc = 0;
    void* a = hipAlloc(1 << 20, &rc);
    std::printf("pid=%d hipMalloc ptr=%p size=%d rc=%d\n", getpid(), a, 1 << 20, rc);
    std::fflush(stdout);
    char buf[256];
    while (read(0, buf, sizeof buf) > 0) {
    }
    return 0;
}

/// One allocation, then the same process runs this program again (pid and start time kept).
int execSelf(char** argv) {
    int rc = 0;
    void* a = hipAlloc(1 << 20, &rc);
    std::printf("before-exec pid=%d ptr=%p size=%d\n", getpid(), a, 1 << 20);
    std::fflush(stdout);
    char ptr[32];
    std::snprintf(
        ptr, sizeof ptr, "%lx", static_cast<unsigned long>(reinterpret_cast<uintptr_t>(a)));
    setenv("GPUFAULT_TEST_BEFORE_EXEC", ptr, 1);
    char mode[] = "after-exec";
    char* args[] = {argv[0], argv[1], argv[2], mode, nullptr};
    execv("/proc/self/exe", args);
    std::perror("execv");
    return 4;
}

/// One allocation, then the same process runs a shell that allocates nothing and prints a ROCr
/// fault line inside that allocation (its address space gone with the exec).
int execShell() {
    int rc = 0;
    void* a = hipAlloc(1 << 20, &rc);
    std::printf("before-exec pid=%d ptr=%p size=%d\n", getpid(), a, 1 << 20);
    std::fflush(stdout);
    char script[256];
    std::snprintf(script,
                  sizeof script,
                  "echo 'Memory access fault by GPU node-1 (Agent handle: 0x5581c7a0) on address "
                  "0x%lx. Reason: Page not present or supervisor privilege.'; exit 1",
                  static_cast<unsigned long>(reinterpret_cast<uintptr_t>(a)) + 0x1000);
    char sh[] = "/bin/sh", c[] = "-c";
    char* args[] = {sh, c, script, nullptr};
    execv("/bin/sh", args);
    std::perror("execv");
    return 4;
}

/// One allocation by the main thread, one by another thread (its kernel tid printed: what a
/// kernel record of a fault in that thread names as the pid).
int threads() {
    int rc = 0;
    void* a = hipAlloc(1 << 20, &rc);
    std::printf("main pid=%d tid=%ld ptr=%p size=%d\n",
                getpid(),
                static_cast<long>(::syscall(SYS_gettid)),
                a,
                1 << 20);
    std::thread t([] {
        int r = 0;
        void* b = hipAlloc(2 << 20, &r);
        std::printf("thread pid=%d tid=%ld ptr=%p size=%d\n",
                    getpid(),
                    static_cast<long>(::syscall(SYS_gettid)),
                    b,
                    2 << 20);
    });
    t.join();
    return 0;
}

int afterExec() {
    int rc = 0;
    void* a = hipAlloc(2 << 20, &rc);
    std::printf("after-exec pid=%d ptr=%p size=%d\n", getpid(), a, 2 << 20);
    std::fflush(stdout);
    // A ROCr fault line at the first image's buffer (whose address space the exec replaced).
    const char* before = std::getenv("GPUFAULT_TEST_BEFORE_EXEC");
    if (!before) return 5;
    std::fprintf(stderr,
                 "Memory access fault by GPU node-1 (Agent handle: 0x5581c7a0) on address 0x%lx. "
                 "Reason: Page not present or supervisor privilege.\n",
                 std::strtoul(before, nullptr, 16) + 0x10);
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s FRAMEWORK.so RUNTIME.so records|fault\n", argv[0]);
        return 2;
    }
    void* fw = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!fw) {
        std::fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 2;
    }
    void* rt = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);  // loaded by the framework
    if (!rt) {
        std::fprintf(stderr, "dlopen %s: %s\n", argv[2], dlerror());
        return 2;
    }
    hipAlloc = sym<Alloc>(fw, "fw_hip_alloc");
    cudaAlloc = sym<Alloc>(fw, "fw_cuda_alloc");
    hipFreeFn = sym<Free>(fw, "fw_hip_free");
    fwCall = sym<Call>(fw, "fw_call_c");
    if (std::strcmp(argv[3], "puts") == 0) return std::puts("hello from puts") >= 0 ? 0 : 3;
    if (std::strcmp(argv[3], "hold") == 0) return hold();
    if (std::strcmp(argv[3], "exec") == 0) return execSelf(argv);
    if (std::strcmp(argv[3], "exec-sh") == 0) return execShell();
    if (std::strcmp(argv[3], "after-exec") == 0) return afterExec();
    if (std::strcmp(argv[3], "thread") == 0) return threads();
    return std::strcmp(argv[3], "fault") == 0 ? fault() : records(rt);
}
