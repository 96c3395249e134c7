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

#include "tests/support/core_run.h"
#include "tests/support/process.h"

namespace gpufault::testing {

/// Runs rocr_abort in `t` with cores enabled; the core's path, "" when the kernel wrote none
/// there (kernel.core_pattern is not a plain file name).
inline std::string rocrAbortCore(const TempDir& t) {
    auto r = runWithCores(t.path(), {ROCR_ABORT});
    EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT) << r.status;
    return r.coreIn(t.path());
}

}  // namespace gpufault::testing
