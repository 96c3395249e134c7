#include "collectors/coredump/signature.h"

#include <fmt/format.h>

#include <array>

namespace gpufault::coredump {

namespace {

std::string_view baseName(std::string_view p) {
    auto s = p.rfind('/');
    return s == std::string_view::npos ? p : p.substr(s + 1);
}

bool startsWith(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

/// The symbol without parameters: `raise`, `abort`, `fakeamd::Symbol::getDeviceKernel`.
std::string_view bareName(std::string_view s) {
    return s.substr(0, s.find('('));
}

}  // namespace

std::string moduleStem(std::string_view path) {
    auto b = baseName(path);
    auto so = b.find(".so.");
    if (so != std::string_view::npos) return std::string(b.substr(0, so + 3));
    return std::string(b);
}

bool isCLibraryModule(std::string_view path) {
    auto stem = moduleStem(path);
    return stem == "libc.so" || stem == "libpthread.so" || stem == "libdl.so" ||
           startsWith(stem, "ld-linux") || stem == "linux-vdso.so" || stem == "[vdso]";
}

bool isGpuRuntimeModule(std::string_view path) {
    auto stem = moduleStem(path);
    return stem == "libamdhip64.so" || stem == "libhsa-runtime64.so" || stem == "libamd_comgr.so";
}

bool isGenericFrame(const Frame& f) {
    if (!f.symbol) return false;
    static constexpr std::array<std::string_view, 11> kExact{"abort",
                                                             "raise",
                                                             "gsignal",
                                                             "pthread_kill",
                                                             "__pthread_kill_implementation",
                                                             "__pthread_kill_internal",
                                                             "__restore_rt",
                                                             "__kernel_rt_sigreturn",
                                                             "__assert_fail",
                                                             "__assert_fail_base",
                                                             "__assert_perror_fail"};
    auto n = bareName(*f.symbol);
    for (auto e : kExact)
        if (n == e) return true;
    return startsWith(n, "__libc_") || startsWith(n, "__GI_");
}

std::string frameKey(const Frame& f) {
    std::string mod = f.module ? moduleStem(*f.module) : "?";
    if (f.build_id && f.module_offset) return fmt::format("{}+0x{:x}", mod, *f.module_offset);
    if (f.symbol) return fmt::format("{}!{}", mod, *f.symbol);
    if (f.module_offset) return fmt::format("{}+0x{:x}", mod, *f.module_offset);
    return fmt::format("{}!0x{:x}", mod, f.pc);
}

StackSignature stackSignature(const std::vector<Frame>& frames, size_t depth) {
    StackSignature s;
    for (const auto& f : frames) {
        if (s.keys.size() >= depth) break;
        if (isGenericFrame(f) || (f.module && isCLibraryModule(*f.module))) continue;
        s.keys.push_back(frameKey(f));
    }
    if (s.keys.empty()) return s;
    uint64_t h = 1469598103934665603ull;
    for (const auto& k : s.keys)
        for (unsigned char c : k + "\n") h = (h ^ c) * 1099511628211ull;
    s.hash = fmt::format("{:016x}", h);
    return s;
}

std::map<std::string, std::string> runtimeVersions(const std::vector<MappedFile>& files) {
    static constexpr std::array<std::string_view, 16> kRuntimes{"libamdhip64.so",
                                                                "libhsa-runtime64.so",
                                                                "libhsakmt.so",
                                                                "librocblas.so",
                                                                "libhipblaslt.so",
                                                                "libMIOpen.so",
                                                                "librccl.so",
                                                                "libcudart.so",
                                                                "libcuda.so",
                                                                "libcublas.so",
                                                                "libcublasLt.so",
                                                                "libcudnn.so",
                                                                "libnccl.so",
                                                                "libtorch_cuda.so",
                                                                "libtorch_hip.so",
                                                                "libnvidia-ml.so"};
    std::map<std::string, std::string> out;
    for (const auto& f : files) {
        auto b = baseName(f.path);
        // A library deleted while mapped (upgraded under a running job): the kernel appends
        // " (deleted)" to the path; the version is the file's.
        if (b.ends_with(" (deleted)")) b.remove_suffix(10);
        auto so = b.find(".so.");
        if (so == std::string_view::npos) continue;
        auto stem = b.substr(0, so + 3);
        for (auto r : kRuntimes)
            if (stem == r) {
                auto v = std::string(b.substr(so + 4));
                auto& cur = out[std::string(stem)];
                if (v.size() > cur.size()) cur = v;  // the full version beats the soname's
            }
    }
    return out;
}

}  // namespace gpufault::coredump
