// Host program for the preload shim's descriptor tests: a program that closes every
// descriptor but 0–2 (as daemons and some launchers do) and then opens a file of its own,
// which gets a number the shim's record file may have had:
//   fd_host VICTIM close    allocate, close all, open VICTIM, write USERDATA1, allocate and
//                           free, write USERDATA2
//   fd_host VICTIM unlink   the same, and before reopening VICTIM remove every
//                           gpufault-alloc.* file of $GPUFAULT_ALLOC_DIR (the shim cannot
//                           reopen its file: it stops recording)
//   fd_host - signal        hipMalloc of 0x5151 bytes, which the stand-in runtime answers by
//                           raising SIGUSR1 inside the call; the handler allocates and frees
//   fd_host LIB deep N      allocate twice through LIB's deep_alloc (N frames deep), freeing
//                           the first (records with more frames than fit in one line)
// Prints "alloc ptr=0x… size=N" for each allocation.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" {
int hipMalloc(void** p, size_t n);
int hipFree(void* p);
}

namespace {

void closeAll() {
    struct rlimit rl {};
    getrlimit(RLIMIT_NOFILE, &rl);
    int top = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536 ? 65536 : int(rl.rlim_cur);
    for (int fd = 3; fd < top; ++fd) close(fd);
}

void removeRecordFiles() {
    const char* dir = std::getenv("GPUFAULT_ALLOC_DIR");
    DIR* d = dir ? opendir(dir) : nullptr;
    if (!d) return;
    while (dirent* e = readdir(d))
        if (std::strncmp(e->d_name, "gpufault-alloc.", 15) == 0)
            unlink((std::string(dir) + "/" + e->d_name).c_str());
    closedir(d);
}

int victim(const char* path, bool unlinkFirst) {
    void* p = nullptr;
    int rc = hipMalloc(&p, 100 << 10);
    std::printf("alloc ptr=%p size=%d rc=%d\n", p, 100 << 10, rc);
    std::fflush(stdout);
    closeAll();
    if (unlinkFirst) removeRecordFiles();
    int v = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (v < 0) return 3;
    std::printf("victim fd=%d\n", v);
    if (write(v, "USERDATA1\n", 10) != 10) return 4;
    rc = hipMalloc(&p, 200 << 10);
    std::printf("alloc ptr=%p size=%d rc=%d\n", p, 200 << 10, rc);
    rc = hipFree(p);
    if (write(v, "USERDATA2\n", 10) != 10) return 4;
    return close(v) == 0 ? 0 : 5;
}

int deep(const char* lib, int depth) {
    void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) return 2;
    auto alloc = reinterpret_cast<void* (*)(int, size_t)>(dlsym(h, "deep_alloc"));
    auto release = reinterpret_cast<int (*)(void*)>(dlsym(h, "deep_free"));
    if (!alloc || !release) return 2;
    void* a = alloc(depth, 1 << 20);
    std::printf("alloc ptr=%p size=%d\n", a, 1 << 20);
    release(a);
    void* b = alloc(depth, 2 << 20);
    std::printf("alloc ptr=%p size=%d\n", b, 2 << 20);
    return a && b ? 0 : 3;
}

void* g_inHandler = nullptr;

void onSignal(int) {
    void* q = nullptr;
    if (hipMalloc(&q, 4096) == 0) hipFree(q);
    g_inHandler = q;
}

int signalInCall() {
    struct sigaction sa {};
    sa.sa_handler = onSignal;
    sigaction(SIGUSR1, &sa, nullptr);
    void* p = nullptr;
    int rc = hipMalloc(&p, 0x5151);
    std::printf("alloc ptr=%p size=%d rc=%d\n", p, 0x5151, rc);
    std::printf("handler ptr=%p size=4096\n", g_inHandler);
    return rc == 0 && g_inHandler ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 4 && std::strcmp(argv[2], "deep") == 0) return deep(argv[1], std::atoi(argv[3]));
    if (argc == 3 && std::strcmp(argv[2], "signal") == 0) return signalInCall();
    if (argc == 3 && std::strcmp(argv[2], "close") == 0) return victim(argv[1], false);
    if (argc == 3 && std::strcmp(argv[2], "unlink") == 0) return victim(argv[1], true);
    std::fprintf(stderr, "usage: %s VICTIM close|unlink | - signal | LIB deep N\n", argv[0]);
    return 2;
}
