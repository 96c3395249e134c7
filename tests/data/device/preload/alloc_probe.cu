// Device check of libgpufault-preload.so (docs/preload.md): allocates through the CUDA runtime
// and the driver (VMM: reserve, create, map, as PyTorch's expandable segments do), prints every
// pointer, runs a kernel, frees. `bench N` times N cudaMalloc/cudaFree pairs (64 KiB).
//   nvcc -O2 -arch=sm_90 alloc_probe.cu -o probe_static -lcuda            (static cudart)
//   nvcc -O2 -arch=sm_90 -cudart shared alloc_probe.cu -o probe_shared -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CK(x)                                                            \
    do {                                                                 \
        int e_ = static_cast<int>(x);                                    \
        if (e_) {                                                        \
            std::fprintf(stderr, "%s failed: %d (line %d)\n", #x, e_, __LINE__); \
            return 1;                                                    \
        }                                                                \
    } while (0)

__global__ void fill(int* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = i;
}

int bench(int n) {
    void* p = nullptr;
    CK(cudaFree(nullptr));  // context
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
        CK(cudaMalloc(&p, 64 << 10));
        CK(cudaFree(p));
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    std::printf("bench pairs=%d us_per_pair=%.2f\n", n, us / n);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 3 && std::strcmp(argv[1], "bench") == 0) return bench(std::atoi(argv[2]));
    std::printf("pid=%d\n", getpid());
    void *a, *b, *c, *m, *h, *as;
    size_t na = 1 << 20, nb = (3 << 20) + 123, nc = size_t{256} << 20;
    CK(cudaMalloc(&a, na));
    std::printf("cudaMalloc ptr=%p size=%zu\n", a, na);
    CK(cudaMalloc(&b, nb));
    std::printf("cudaMalloc ptr=%p size=%zu\n", b, nb);
    CK(cudaMalloc(&c, nc));
    std::printf("cudaMalloc ptr=%p size=%zu\n", c, nc);
    CK(cudaMallocManaged(&m, 4 << 20));
    std::printf("cudaMallocManaged ptr=%p size=%d\n", m, 4 << 20);
    CK(cudaMallocHost(&h, 1 << 20));
    std::printf("cudaMallocHost ptr=%p size=%d\n", h, 1 << 20);
    cudaStream_t s;
    CK(cudaStreamCreate(&s));
    CK(cudaMallocAsync(&as, 8 << 20, s));
    CK(cudaStreamSynchronize(s));
    std::printf("cudaMallocAsync ptr=%p size=%d\n", as, 8 << 20);
    CK(cudaFreeAsync(as, s));
    CK(cudaStreamSynchronize(s));
    fill<<<(na / 4 + 255) / 256, 256>>>(static_cast<int*>(a), static_cast<int>(na / 4));
    CK(cudaDeviceSynchronize());

    CUdevice dev;
    CK(cuCtxGetDevice(&dev));
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va;
    CK(cuMemAddressReserve(&va, 64 * gran, 0, 0, 0));
    std::printf("cuMemAddressReserve ptr=0x%llx size=%zu\n", va, 64 * gran);
    CUmemGenericAllocationHandle hd;
    CK(cuMemCreate(&hd, 4 * gran, &prop, 0));
    CK(cuMemMap(va + 8 * gran, 4 * gran, 0, hd, 0));
    std::printf("cuMemMap ptr=0x%llx size=%zu\n", va + 8 * gran, 4 * gran);
    CK(cuMemUnmap(va + 8 * gran, 4 * gran));
    CK(cuMemRelease(hd));
    CK(cuMemAddressFree(va, 64 * gran));

    CK(cudaFree(b));
    std::printf("cudaFree ptr=%p\n", b);
    CK(cudaFreeHost(h));
    CK(cudaFree(m));
    CK(cudaFree(c));
    CK(cudaFree(a));
    std::printf("done\n");
    return 0;
}
