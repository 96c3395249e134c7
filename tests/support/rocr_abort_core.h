// A real core of three threads: tests/tools/rocr_abort run with RLIMIT_CORE raised (the
// including target defines ROCR_ABORT, the helper's path).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/support/process.h"

namespace gpufault::testing {

/// Runs rocr_abort in `t` with cores enabled; the core's path, "" when the kernel wrote none
/// there (kernel.core_pattern is not a plain file name).
inline std::string rocrAbortCore(const TempDir& t) {
    pid_t pid = ::fork();
    if (pid == 0) {
        struct rlimit rl {
            RLIM_INFINITY, RLIM_INFINITY
        };
        ::setrlimit(RLIMIT_CORE, &rl);
        if (::chdir(t.path().c_str()) != 0) ::_exit(3);
        ::execl(ROCR_ABORT, ROCR_ABORT, static_cast<char*>(nullptr));
        ::_exit(4);
    }
    int st = 0;
    ::waitpid(pid, &st, 0);
    EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT) << st;
    for (const auto& name : {std::string("core"), "core." + std::to_string(pid)})
        if (std::filesystem::exists(t.file(name))) return t.file(name);
    return "";
}

}  // namespace gpufault::testing
