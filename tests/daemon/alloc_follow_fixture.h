// Shared by the tests of gpufaultd following the preload shim's directory
// (test_alloc_follow.cpp, test_alloc_incremental.cpp, test_alloc_recordings.cpp,
// test_alloc_container.cpp): a daemon configuration with an allocation directory (mode 1733)
// and a log directory, a job under the real shim, a fault log.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "tests/collectors/preload/shim_file.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/followed_log.h"
#include "tests/support/process.h"

namespace gpufault::testing {

struct Fixture {
    TempDir dir;
    std::string conf = dir.file("gpufaultd.conf");
    std::string store = dir.file("store.db");
    std::string sock = dir.file("ctl.sock");
    std::string alloc = dir.file("alloc");
    std::string logs = dir.file("logs");

    Fixture() {
        ::chmod(dir.path().c_str(), 0711);  // other users reach the allocation directory
        ::mkdir(alloc.c_str(), 0755);
        ::chmod(alloc.c_str(), 01733);  // as tmpfiles.d makes /run/gpufault-alloc
        ::mkdir(logs.c_str(), 0755);
        writeFile(conf,
                  fmt::format("[store]\npath = \"{}\"\n[kmsg]\nenabled = false\n[files]\n"
                              "globs = [\"{}/*.log\"]\npoll_interval_ms = 100\n[allocations]\n"
                              "directory = \"{}\"\n[control]\nsocket = \"{}\"\ngroup = \"\"\n"
                              "[commit]\ncorrelate_ms = 50\n",
                              store,
                              logs,
                              alloc,
                              sock));
    }
    int64_t count(const std::string& sql) const { return storeCount(store, sql); }
};

/// A daemon on the fixture's configuration, started and ready (nullptr, with the test failed,
/// when it did not come up).
inline std::unique_ptr<DaemonProcess> startedDaemon(const Fixture& f) {
    auto d = std::make_unique<DaemonProcess>(GPUFAULTD_BIN, f.conf, f.dir.path());
    if (!d->start() || !d->waitNotify("READY=1", std::chrono::seconds(10))) {
        ADD_FAILURE() << "gpufaultd did not start: " << d->stderrText();
        return nullptr;
    }
    return d;
}

/// A job under the shim that holds its allocation until release() (its stdin closes).
struct HeldJob {
    pid_t pid = -1;
    int in = -1;
    std::string line;  ///< what it printed: "pid=P hipMalloc ptr=0x… size=1048576 rc=0"

    /// `wrapper`: a command that runs the job (`unshare --pid --fork`, `setpriv …`), or none.
    explicit HeldJob(const std::string& alloc_dir, std::vector<std::string> wrapper = {}) {
        int toChild[2], fromChild[2];
        if (::pipe2(toChild, O_CLOEXEC) != 0 || ::pipe2(fromChild, O_CLOEXEC) != 0) return;
        for (const char* a : {PRELOAD_HOST, STANDIN_FW, STANDIN_RT, "hold"}) wrapper.push_back(a);
        std::vector<char*> argv;
        for (auto& a : wrapper) argv.push_back(a.data());
        argv.push_back(nullptr);
        pid = ::fork();
        if (pid == 0) {
            ::dup2(toChild[0], 0);
            ::dup2(fromChild[1], 1);
            ::setenv("LD_PRELOAD", PRELOAD_SHIM, 1);
            ::setenv("GPUFAULT_ALLOC_DIR", alloc_dir.c_str(), 1);
            ::execv(argv[0], argv.data());
            ::_exit(127);
        }
        ::close(toChild[0]);
        ::close(fromChild[1]);
        in = toChild[1];
        char c;
        while (::read(fromChild[0], &c, 1) == 1 && c != '\n') line += c;
        ::close(fromChild[0]);
    }
    void release() {
        if (in >= 0) ::close(in);
        in = -1;
        if (pid > 0) ::waitpid(pid, nullptr, 0);
        pid = -1;
    }
    ~HeldJob() { release(); }
    uint64_t ptr() const {
        std::smatch m;
        static const std::regex re(R"(hipMalloc ptr=(0x[0-9a-f]+) size=1048576 rc=0)");
        return std::regex_search(line, m, re) ? std::stoull(m[1], nullptr, 16) : 0;
    }
};

/// A job's log as in tests/data/real/012: ROCr's fault line (no pid), then the kernel's
/// amdgpu page-fault block of the same fault, which names the process's pid.
inline std::string faultLog(pid_t pid, uint64_t address) {
    constexpr const char* k = "Nov 30 10:24:16 node7 kernel: amdgpu 0000:0a:00.0: amdgpu: ";
    return fmt::format(
        "Memory access fault by GPU node-1 (Agent handle: 0x5581c7a0) on address 0x{:x}. "
        "Reason: Page not present or supervisor privilege.\n"
        "{}[gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32772, for process preload_host "
        "pid {} thread preload_host pid {})\n"
        "{}  in page starting at address 0x{:016x} from client 0x1b (UTCL2)\n"
        "{}GCVM_L2_PROTECTION_FAULT_STATUS:0x00801031\n"
        "{}         Faulty UTCL2 client ID: TCP (0x8)\n",
        address,
        k,
        pid,
        pid,
        k,
        address & ~uint64_t{0xfff},
        k,
        k);
}

inline void append(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0) << path << ": " << std::strerror(errno);
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
}

}  // namespace gpufault::testing
