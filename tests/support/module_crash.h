// gpu_module_crash (GPU_MODULE_CRASH, tests/tools) run to leave a core file: shared by the
// CLI's diagnosis tests and gpufaultd's worker tests.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <string>

namespace gpufault::testing {

/// Runs gpu_module_crash on `module` in `dir` with cores enabled (a SIGSEGV at 0x8a in
/// amd::Symbol::getDeviceKernel; another exit is a test failure); the path of the core it left
/// (`dir`/core or `dir`/core.PID), "" when the kernel wrote none there (core_pattern is not a
/// plain file name on this machine).
inline std::string crashModuleForCore(const std::string& dir, const std::string& module) {
    pid_t pid = ::fork();
    if (pid == 0) {
        struct rlimit rl {
            RLIM_INFINITY, RLIM_INFINITY
        };
        ::setrlimit(RLIMIT_CORE, &rl);
        if (::chdir(dir.c_str()) != 0) ::_exit(3);
        ::execl(GPU_MODULE_CRASH, GPU_MODULE_CRASH, module.c_str(), static_cast<char*>(nullptr));
        ::_exit(4);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) << st;
    for (const auto& name : {std::string("core"), fmt::format("core.{}", pid)})
        if (std::filesystem::exists(dir + "/" + name)) return dir + "/" + name;
    return "";
}

}  // namespace gpufault::testing
