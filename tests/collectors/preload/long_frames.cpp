// A library with a very long file name (tests/collectors/preload/CMakeLists.txt) whose frames
// fill a record's stack: deep_alloc recurses `depth` times in this library, then calls the
// stand-in runtime's hipMalloc. With GPUFAULT_ALLOC_FRAMES=16 the frames do not fit in one
// record (1536 bytes): the shim writes whole frames only and marks the rest (stack_cut=N).
#include <cstddef>

extern "C" {
int hipMalloc(void** p, size_t n);
int hipFree(void* p);

__attribute__((noinline)) void* deep_alloc(int depth, size_t n) {
    if (depth > 0) {
        void* p = deep_alloc(depth - 1, n);
        asm volatile("" ::: "memory");  // not a tail call: each level keeps its frame
        return p;
    }
    void* p = nullptr;
    return hipMalloc(&p, n) == 0 ? p : nullptr;
}

__attribute__((noinline)) int deep_free(void* p) {
    return hipFree(p);
}
}
