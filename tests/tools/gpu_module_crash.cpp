// gpu_module_crash FILE: maps FILE read-only (as a process has its HIP fat binaries mapped) and
// then dies the way the HIP runtime did in issue 5's real report when a kernel had no code for
// the device: amd::Symbol::getDeviceKernel reads nullptr + 0x8a under a kernel launch. Run by
// tests/cli/test_diagnosis.cpp with RLIMIT_CORE raised, to get a real core whose NT_FILE notes
// name FILE.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

namespace amd {
struct DeviceProgram {
    char pad[0x8a];
    char kernel_flag;
};
struct Symbol {
    const DeviceProgram* program = nullptr;  // no code object for this device
    __attribute__((noinline)) int getDeviceKernel(int device) const;
};
__attribute__((noinline)) int Symbol::getDeviceKernel(int device) const {
    const volatile char* p = &program->kernel_flag;
    return *p + device;
}
}  // namespace amd

__attribute__((noinline)) int ihipLaunchKernel(const amd::Symbol* sym, int device) {
    return sym->getDeviceKernel(device);
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: gpu_module_crash FILE\n");
        return 2;
    }
    int fd = ::open(argv[1], O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
        std::perror(argv[1]);
        return 2;
    }
    void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
        std::perror("mmap");
        return 2;
    }
    static amd::Symbol sym;
    return ihipLaunchKernel(&sym, argc);
}
