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

#include "tests/support/core_run.h"

namespace gpufault::testing {

/// Runs gpu_module_crash on `module` in `dir` with cores enabled (a SIGSEGV at 0x8a in
/// amd::Symbol::getDeviceKernel; another exit is a test failure); the path of the core it left
/// (`dir`/core or `dir`/core.PID), "" when the kernel wrote none there (core_pattern is not a
/// plain file name on this machine).
inline std::string crashModuleForCore(const std::string& dir, const std::string& module) {
    auto r = runWithCores(dir, {GPU_MODULE_CRASH, module});
    EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV) << r.status;
    return r.coreIn(dir);
}

}  // namespace gpufault::testing
