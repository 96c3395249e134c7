// rocr_abort: dies like a ROCr abort after a GPU memory fault. One thread blocks in
// hipDeviceSynchronize (libamdhip64.so.6, tests/tools/fake_amdhip64.cpp); then another thread,
// as ROCr's event thread does, prints the "Memory access fault by GPU" line and abort()s. Run
// by tests/cli/test_cores.cpp with RLIMIT_CORE raised, to get a real core of three threads
// whose crashed thread is not the one inside the runtime.
#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

extern "C" int hipDeviceSynchronize();
extern "C" int fakehipWaiters();

namespace {

void* hostThread(void*) {
    hipDeviceSynchronize();
    return nullptr;
}

__attribute__((noinline)) void* eventThread(void*) {
    std::fprintf(stderr,
                 "Memory access fault by GPU node-1 (Agent handle: 0x5555d0a0) on address "
                 "0x7f0000001000. Reason: Page not present or supervisor privilege.\n");
    std::abort();
}

}  // namespace

int main() {
    pthread_t host, event;
    if (pthread_create(&host, nullptr, hostThread, nullptr) != 0) return 2;
    while (fakehipWaiters() < 1) ::usleep(1000);
    if (pthread_create(&event, nullptr, eventThread, nullptr) != 0) return 2;
    pthread_join(event, nullptr);
    return 1;
}
