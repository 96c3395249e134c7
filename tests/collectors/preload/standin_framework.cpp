// A stand-in framework extension (like a Python extension module): linked against the
// stand-in runtime and loaded by the host with dlopen(RTLD_LOCAL), so the runtime is not in
// the global scope (dlsym(RTLD_NEXT, "hipMalloc") from the shim finds nothing).
#include <cstddef>

extern "C" {
int hipMalloc(void** p, size_t n);
int hipFree(void* p);
int cudaMalloc(void** p, size_t n);
int cudaFree(void* p);

/// hipMalloc of `n` bytes: the pointer, or nullptr (the error code in *rc).
__attribute__((noinline)) void* fw_hip_alloc(size_t n, int* rc) {
    void* p = nullptr;
    *rc = hipMalloc(&p, n);
    return p;
}
__attribute__((noinline)) int fw_hip_free(void* p) {
    return hipFree(p);
}
__attribute__((noinline)) void* fw_cuda_alloc(size_t n, int* rc) {
    void* p = nullptr;
    *rc = cudaMalloc(&p, n);
    return p;
}
__attribute__((noinline)) int fw_cuda_free(void* p) {
    return cudaFree(p);
}
}

/// Calls back into the host, which may throw through this frame (C++ linkage on purpose).
__attribute__((noinline)) int fw_call(void (*cb)(int), int i) {
    volatile int guard = i;
    cb(guard);
    return guard + 1;
}
extern "C" int fw_call_c(void (*cb)(int), int i) {
    return fw_call(cb, i);
}
