// A small library that calls hipMalloc/hipFree (its stand-in runtime is its dependency), from
// caller_call() and from its constructor (which runs with the loader's lock held, inside the
// host's dlopen). The reload test copies it under many names: each copy is another calling
// object of the shim's hooks.
#include <unistd.h>

#include <cstddef>

extern "C" {
int hipMalloc(void** p, size_t n);
int hipFree(void* p);

__attribute__((noinline)) int caller_call() {
    void* p = nullptr;
    int rc = hipMalloc(&p, 1);
    if (rc == 0) hipFree(p);
    return rc;
}
}

namespace {
__attribute__((constructor)) void callInConstructor() {
    usleep(50);  // a wider window for another thread to want the loader's lock meanwhile
    caller_call();
}
}  // namespace
