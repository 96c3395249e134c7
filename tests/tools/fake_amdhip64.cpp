// A stand-in for the HIP runtime, built as libamdhip64.so.6 (tests/CMakeLists.txt): only so that
// a real core has a thread blocked inside a module named like the runtime. hipDeviceSynchronize
// waits forever, as a thread waiting on a GPU queue that faulted does.
#include <unistd.h>

#include <atomic>

namespace {
std::atomic<int> waiters{0};

__attribute__((noinline)) void waitForQueue() {
    waiters.fetch_add(1);
    for (;;) ::pause();
}
}  // namespace

/// Never returns (the queue it waits on never finishes).
extern "C" __attribute__((visibility("default"), noinline)) int hipDeviceSynchronize() {
    waitForQueue();
    return 0;
}

/// Threads waiting inside hipDeviceSynchronize.
extern "C" __attribute__((visibility("default"))) int fakehipWaiters() {
    return waiters.load();
}
