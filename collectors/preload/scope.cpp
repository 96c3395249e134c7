// libgpufault-preload.so: the nesting of hooked calls on a thread (Scope: which calls are
// recorded, which are the runtime's own, which a signal handler's) and the count of calls
// dropped while the thread held the shim's locks (Busy). docs/preload.md "How the calls are
// reached".
#include <sched.h>
#include <signal.h>
#include <time.h>

#include <cstdint>

#include "collectors/preload/shim.h"

namespace gpufault::preload {

namespace {

// hooked calls running on this thread
__thread int t_depth __attribute__((tls_model("initial-exec"))) = 0;
// the real function of the innermost recorded call running on this thread
__thread void* t_running __attribute__((tls_model("initial-exec"))) = nullptr;
// the innermost recorded call on this thread is a nested one (Scope::nested)
__thread bool t_nested __attribute__((tls_model("initial-exec"))) = false;
// locks of the shim this thread holds (Busy), and its signal mask before the first
__thread int t_busy __attribute__((tls_model("initial-exec"))) = 0;
__thread sigset_t t_mask __attribute__((tls_model("initial-exec")));
uint64_t g_dropped = 0;  // calls not recorded since the last `dropped` record

}  // namespace

Scope::Scope(const Target& t) : recorded_(true), prevNested_(t_nested), prev_(t_running) {
    if (t_depth > 0) {
        if (objectOf(t.ret) == objectOf(prev_)) {
            recorded_ = false;  // the runtime's own call (cudaMalloc → cuMemAlloc_v2)
        } else if (t_busy > 0) {
            recorded_ = false;  // a signal handler while this thread holds our locks
            __atomic_add_fetch(&g_dropped, 1, __ATOMIC_RELAXED);
        } else {
            t_nested = true;  // a signal handler: recorded without stack or device
        }
    }
    if (recorded_) t_running = t.fn;
    ++t_depth;
}

Scope::~Scope() {
    --t_depth;
    t_running = prev_;
    t_nested = prevNested_;
}

bool Scope::nested() {
    return t_nested;
}

Busy::Busy() {
    enter();
}
Busy::~Busy() {
    leave();
}
void Busy::enter() {
    if (t_busy++ > 0) return;
    // Asynchronous signals wait until the lock is released: a handler that allocates would
    // otherwise need the lock (or the loader's, inside dlopen) this thread holds. Faults are
    // never blocked (a fault while blocked kills the process whatever its handler).
    sigset_t all;
    sigfillset(&all);
    static constexpr int kFaults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
    for (int sig : kFaults) sigdelset(&all, sig);
    pthread_sigmask(SIG_BLOCK, &all, &t_mask);
}
void Busy::leave() {
    if (--t_busy == 0) pthread_sigmask(SIG_SETMASK, &t_mask, nullptr);
}
bool Busy::held() {
    return t_busy > 0;
}

void lockShim(pthread_mutex_t* a, pthread_mutex_t* b) {
    for (unsigned tries = 0;; ++tries) {
        Busy::enter();
        if (pthread_mutex_trylock(a) == 0) {
            if (!b || pthread_mutex_trylock(b) == 0) return;
            pthread_mutex_unlock(a);
        }
        Busy::leave();  // a pending signal is taken here, between tries
        if (tries < 64) {
            sched_yield();
        } else {
            struct timespec ts {0, 200 * 1000};  // 0.2 ms: the holder is descheduled
            nanosleep(&ts, nullptr);
        }
    }
}

void unlockShim(pthread_mutex_t* a, pthread_mutex_t* b) {
    if (b) pthread_mutex_unlock(b);
    pthread_mutex_unlock(a);
    Busy::leave();
}

uint64_t takeDropped() {
    return __atomic_exchange_n(&g_dropped, 0, __ATOMIC_ACQ_REL);
}

bool hasDropped() {
    return __atomic_load_n(&g_dropped, __ATOMIC_ACQUIRE) != 0;
}

}  // namespace gpufault::preload
