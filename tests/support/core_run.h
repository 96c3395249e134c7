// Runs a program the way the tests get real cores: forked, RLIMIT_CORE raised, in a directory
// (these machines' kernel.core_pattern is `core`, written to the cwd).
#pragma once

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

namespace gpufault::testing {

/// What runWithCores() saw: the pid it ran and its wait status.
struct CoreRun {
    pid_t pid = -1;
    int status = 0;
    /// The core the kernel left in `dir` for this pid (`core` or `core.PID`); "" when none.
    std::string coreIn(const std::string& dir) const {
        for (const auto& name : {std::string("core"), "core." + std::to_string(pid)})
            if (std::filesystem::exists(dir + "/" + name)) return dir + "/" + name;
        return "";
    }
};

/// Runs `argv` (argv[0] the program's path) in `dir` with cores enabled; `env`: its whole
/// environment when not empty, else this process's. Waits for it.
inline CoreRun runWithCores(const std::string& dir,
                            const std::vector<std::string>& argv,
                            const std::vector<std::string>& env = {}) {
    CoreRun r;
    r.pid = ::fork();
    if (r.pid == 0) {
        struct rlimit rl {
            RLIM_INFINITY, RLIM_INFINITY
        };
        ::setrlimit(RLIMIT_CORE, &rl);
        if (::chdir(dir.c_str()) != 0) ::_exit(3);
        std::vector<char*> a, e;
        for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
        a.push_back(nullptr);
        for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
        e.push_back(nullptr);
        if (env.empty())
            ::execv(a[0], a.data());
        else
            ::execve(a[0], a.data(), e.data());
        ::_exit(4);
    }
    ::waitpid(r.pid, &r.status, 0);
    return r;
}

}  // namespace gpufault::testing
