// A stand-in GPU runtime for the preload shim's tests (CI has no GPU): hipMalloc/hipFree,
// cudaMalloc/cudaFree and a driver whose cuGetProcAddress_v2 hands out internal functions,
// as libcuda does. Memory is address space reserved with mmap (PROT_NONE): real,
// non-overlapping ranges, 2 MiB aligned like a GPU allocator's.
#include <sys/mman.h>

#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>

#ifdef STANDIN_PAD
// 8 KiB of int3 ahead of every function (.text.unlikely is laid out before .text): this
// runtime's functions are not where the other build's are, at the same load address.
asm(".pushsection .text.unlikely.standin_pad,\"ax\",@progbits\n"
    ".fill 8192,1,0xcc\n"
    ".popsection\n");
#endif

namespace {

#ifndef STANDIN_HIP_DEVICE
#define STANDIN_HIP_DEVICE 3  // what hipGetDevice says (the two-runtime test builds another)
#endif

/// hipMalloc of this many bytes raises SIGUSR1 inside the call (a signal handler that
/// allocates while the thread is in a hooked call).
constexpr size_t kRaiseSize = 0x5151;
/// hipMalloc of this many bytes throws a C++ exception through the shim's hook (preload_host
/// records catches it).
constexpr size_t kThrowSize = 0x7707;

std::mutex g_mu;
uintptr_t g_base = 0, g_next = 0, g_end = 0;

void* take(size_t n) {
    std::lock_guard<std::mutex> l(g_mu);
    if (g_next == 0) {
        size_t len = size_t{1} << 32;
        void* p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return nullptr;
        g_base = reinterpret_cast<uintptr_t>(p);
        g_next = (g_base + 0x1fffff) & ~uintptr_t{0x1fffff};
        g_end = reinterpret_cast<uintptr_t>(p) + len;
    }
    uintptr_t p = g_next;
    uintptr_t step = (n + 0x1fffff) & ~uintptr_t{0x1fffff};
    if (p + step > g_end) return nullptr;
    g_next += step;
    return reinterpret_cast<void*>(p);
}

int driverAlloc(unsigned long long* p, size_t n) {  // reached only through cuGetProcAddress
    void* q = n ? take(n) : nullptr;
    if (!q) return 2;  // CUDA_ERROR_OUT_OF_MEMORY
    *p = reinterpret_cast<uintptr_t>(q);
    return 0;
}
int driverFree(unsigned long long) {
    return 0;
}

}  // namespace

extern "C" {

int hipMalloc(void** p, size_t n) {
    if (n == 0) return 1;                 // hipErrorInvalidValue
    if (n == kRaiseSize) raise(SIGUSR1);  // a signal while the call runs (fd_host signal)
    if (n == kThrowSize) throw std::runtime_error("runtime threw");
    *p = take(n);
    return *p ? 0 : 2;  // hipErrorOutOfMemory
}
int hipFree(void*) {
    return 0;
}
int hipGetDevice(int* d) {
    *d = STANDIN_HIP_DEVICE;
    return 0;
}

/// 1 when `p` is memory this runtime handed out (tests tell two runtimes apart by it).
int standin_owns(const void* p) {
    std::lock_guard<std::mutex> l(g_mu);
    auto a = reinterpret_cast<uintptr_t>(p);
    return g_base != 0 && a >= g_base && a < g_end;
}

int cudaMalloc(void** p, size_t n) {
    if (n == 0) return 1;
    *p = take(n);
    return *p ? 0 : 2;
}
int cudaFree(void*) {
    return 0;
}
int cudaGetDevice(int* d) {
    *d = 1;
    return 0;
}

int cuCtxGetDevice(int* d) {
    *d = 2;
    return 0;
}
int cuGetProcAddress_v2(const char* sym, void** pfn, int version, uint64_t, int* status) {
    if (status) *status = 0;
    if (std::strcmp(sym, "cuMemAlloc") == 0 && version >= 3020) {
        *pfn = reinterpret_cast<void*>(&driverAlloc);
        return 0;
    }
    if (std::strcmp(sym, "cuMemFree") == 0 && version >= 3020) {
        *pfn = reinterpret_cast<void*>(&driverFree);
        return 0;
    }
    if (status) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
    return 500;               // CUDA_ERROR_NOT_FOUND
}
}
