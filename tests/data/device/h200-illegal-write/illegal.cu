// Writes through a pointer 4 MiB past the end of a 1 MiB cudaMalloc allocation.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void scatter_rows(float* out, const float* in, int n, long long stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[(long long)i * stride] = in[i];
}
int main() {
    float *in = nullptr, *out = nullptr;
    cudaMalloc(&in, 1 << 20);
    cudaMalloc(&out, 1 << 20);
    fprintf(stderr, "gpufault.operand name=out ptr=%p size=%d\n", (void*)out, 1 << 20);
    fprintf(stderr, "gpufault.operand name=in ptr=%p size=%d\n", (void*)in, 1 << 20);
    scatter_rows<<<4, 256>>>(out, in, 1024, 1 << 20);
    cudaError_t e = cudaDeviceSynchronize();
    fprintf(stderr, "CUDA error: %s (%d: %s)\n", cudaGetErrorString(e), (int)e, cudaGetErrorName(e));
    return e == cudaSuccess ? 0 : 1;
}
