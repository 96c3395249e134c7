// fork_crash: two crashes whose cores share their first pages. The parent maps 100 small
// regions of alternating protections (so that a core holds 200-odd program headers and its first
// 4 KiB are headers only), then forks two children, one at a time: child K changes into the
// directory argv[1 + K] and writes at its own bad address (0x7000, 0xe000), so that two cores of
// the same size and the same first 4 KiB are written, which differ in the notes past it
// (pid, si_addr, registers). Run by tests/cli/test_core_forks.cpp with RLIMIT_CORE raised.
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    for (int i = 0; i < 100; ++i) {
        void* m = ::mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return 3;
        auto* p = static_cast<char*>(m);
        std::memset(p, i, 8192);
        ::mprotect(p + 4096, 4096, (i & 1) ? PROT_READ : PROT_NONE);
    }
    for (int k = 0; k < 2; ++k) {
        pid_t c = ::fork();
        if (c == 0) {
            if (::chdir(argv[1 + k]) != 0) ::_exit(4);
            auto* bad = reinterpret_cast<volatile long*>(uintptr_t{0x7000} * (k + 1));
            *bad = k;
            ::_exit(0);
        }
        int st = 0;
        ::waitpid(c, &st, 0);
    }
    return 0;
}
