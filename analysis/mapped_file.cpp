#include "analysis/mapped_file.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "collectors/common/small_file.h"

namespace gpufault {

namespace {

/// The guarded mappings: [begin, end) while mapped (begin 0: a free slot), and whether a page
/// past the file's end was met. Read by the signal handler: lock-free atomics only.
struct Guard {
    std::atomic<uintptr_t> begin{0}, end{0};
    std::atomic<bool> hit{false};
};
Guard g_guards[MappedFile::kMaxGuarded];
struct sigaction g_previous {};

void onSigbus(int sig, siginfo_t* info, void* ctx) {
    auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
    if (info->si_code == BUS_ADRERR) {
        for (auto& g : g_guards) {
            uintptr_t b = g.begin.load(), e = g.end.load();
            if (b == 0 || addr < b || addr >= e) continue;
            // Past the end of a file cut short: a zero page in its place, and read on.
            auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
            void* at = reinterpret_cast<void*>(addr & ~(page - 1));
            if (::mmap(at, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
                MAP_FAILED)
                break;
            g.hit.store(true);
            return;
        }
    }
    // Not ours: what would have happened without this handler.
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, ctx);
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        return g_previous.sa_handler(sig);
    }
    ::signal(SIGBUS, SIG_DFL);  // the faulting access runs again and ends the process
}

void installOnce() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa {};
        sa.sa_sigaction = onSigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGBUS, &sa, &g_previous);
    });
}

int claimSlot(uintptr_t begin, uintptr_t end) {
    for (size_t i = 0; i < MappedFile::kMaxGuarded; ++i) {
        uintptr_t expected = 0;
        if (g_guards[i].begin.compare_exchange_strong(expected, begin)) {
            g_guards[i].hit.store(false);
            g_guards[i].end.store(end);
            return static_cast<int>(i);
        }
    }
    return -1;
}

}  // namespace

MappedFile::~MappedFile() {
    if (slot_ >= 0) {
        g_guards[slot_].end.store(0);
        g_guards[slot_].begin.store(0);
    }
    if (data_ && size_) ::munmap(data_, size_);
}

bool MappedFile::shrank() const {
    return slot_ >= 0 && g_guards[slot_].hit.load();
}

std::string MappedFile::open(const std::string& path) {
    // Checked before opening (RegularFile): paths come from cores and logs, and opening a FIFO
    // blocks (and eats its writer's data) while opening a device node (/dev/kfd, /dev/dri/…)
    // runs its driver.
    auto f = RegularFile::open(path);
    if (!f) {
        if (f.error().why == FileError::Why::NotRegular) return "not a regular file";
        return std::strerror(f.error().err);
    }
    if (f->st().st_size <= 0) return "";
    installOnce();
    size_ = static_cast<size_t>(f->st().st_size);
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, f->fd(), 0);
    if (p == MAP_FAILED) {
        size_ = 0;
        return std::strerror(errno);
    }
    auto b = reinterpret_cast<uintptr_t>(p);
    slot_ = claimSlot(b, b + size_);
    if (slot_ < 0) {  // every guard in use: the bytes are read instead
        ::munmap(p, size_);
        auto text = f->read(size_);
        size_ = 0;
        if (!text) return text.error().text();
        copy_ = std::move(*text);
        size_ = copy_.size();
        return "";
    }
    data_ = p;
    return "";
}

}  // namespace gpufault
