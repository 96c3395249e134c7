// libgpufault-preload.so under a real host process: a stand-in runtime loaded RTLD_LOCAL by a
// framework library, the driver's cuGetProcAddress, dlsym by handle, C++ exceptions thrown
// through the framework while the shim (and libunwind) are loaded, threads and fork. The
// records are checked against the pointers the host printed.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <regex>
#include <sstream>

#include "collectors/preload/alloc_log.h"
#include "tests/collectors/preload/shim_file.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
namespace al = gpufault::alloclog;

namespace {

/// "KEY ptr=0x… size=N" lines of the host's output: KEY → (ptr, size).
std::multimap<std::string, std::pair<uint64_t, uint64_t>> printed(const std::string& out) {
    std::multimap<std::string, std::pair<uint64_t, uint64_t>> m;
    std::istringstream in(out);
    std::string line;
    static const std::regex re(R"(^(\S+)(?: pid=\d+)? ptr=(0x[0-9a-f]+|\(nil\)) size=(\d+))");
    while (std::getline(in, line)) {
        std::smatch s;
        if (!std::regex_search(line, s, re)) continue;
        uint64_t p = s[2] == "(nil)" ? 0 : std::stoull(s[2], nullptr, 16);
        m.emplace(s[1], std::make_pair(p, std::stoull(s[3])));
    }
    return m;
}

ProcessResult runHost(const std::string& dir, const std::string& mode) {
    return run({"/usr/bin/env",
                "LD_PRELOAD=" PRELOAD_SHIM,
                "GPUFAULT_ALLOC_DIR=" + dir,
                PRELOAD_HOST,
                STANDIN_FW,
                STANDIN_RT,
                mode});
}

const al::Allocation* find(const al::Log& log, const std::string& api, uint64_t ptr) {
    for (const auto& a : log.allocations)
        if (a.api == api && a.ptr == ptr) return &a;
    return nullptr;
}

}  // namespace

TEST(PreloadShim, ExportsOnlyTheHookedFunctionsAndNoUnwinder) {
    FILE* p = popen("nm -D --defined-only " PRELOAD_SHIM, "r");
    ASSERT_TRUE(p);
    std::string out;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    ASSERT_EQ(pclose(p), 0);
    int symbols = 0;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        ++symbols;
        auto name = line.substr(line.rfind(' ') + 1);
        EXPECT_TRUE(name.starts_with("hip") || name.starts_with("cu") || name == "dlsym") << line;
        EXPECT_EQ(name.find("Unwind"), std::string::npos) << line;
    }
    EXPECT_EQ(symbols, 45);  // exports.map: 15 HIP, 8 runtime, 21 driver, dlsym
    auto needed = run({"/usr/bin/readelf", "-d", PRELOAD_SHIM});
    EXPECT_EQ(needed.out.find("libunwind"), std::string::npos) << needed.out;
    EXPECT_EQ(needed.out.find("libstdc++"), std::string::npos) << needed.out;
}

TEST(PreloadShim, RecordsWhatTheHostAllocatedAndExceptionsStillWork) {
    TempDir dir;
    auto r = runHost(dir.path(), "records");
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("caught 1000\n"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("unwinder libgcc_s.so.1\n"), std::string::npos) << r.out;
    int pid = 0;
    ASSERT_EQ(std::sscanf(r.out.c_str(), "pid=%d", &pid), 1);
    auto text = readFile(shimFile(dir.path(), pid));
    auto log = al::parse(text);
    EXPECT_TRUE(log.warnings.empty()) << log.warnings.front().message;
    ASSERT_EQ(log.processes.size(), 1u);
    EXPECT_EQ(log.processes[0].pid, pid);
    EXPECT_TRUE(log.processes[0].exe.ends_with("/gpufault_preload_host")) << log.processes[0].exe;

    auto p = printed(r.out);
    // hipMalloc through the RTLD_LOCAL framework: found by handle, freed later.
    auto hip = p.find("hipMalloc")->second;
    const auto* a = find(log, "hipMalloc", hip.first);
    ASSERT_TRUE(a) << text;
    EXPECT_EQ(a->end - a->ptr, hip.second);
    EXPECT_EQ(a->device, 3);  // the stand-in's hipGetDevice
    EXPECT_EQ(a->free_api, "hipFree");
    EXPECT_TRUE(a->stack.starts_with("libgpufault_standin_fw.so+0x")) << a->stack;
    EXPECT_NE(a->stack.find(";gpufault_preload_host+0x"), std::string::npos) << a->stack;
    EXPECT_GT(*a->wall_us, 1600000000000000);
    // cudaMalloc, the driver through cuGetProcAddress_v2, hipMalloc from dlsym(handle).
    auto cuda = p.find("cudaMalloc")->second;
    ASSERT_TRUE(find(log, "cudaMalloc", cuda.first));
    EXPECT_EQ(find(log, "cudaMalloc", cuda.first)->end - cuda.first, cuda.second);
    EXPECT_EQ(find(log, "cudaMalloc", cuda.first)->device, 1);
    auto drv = p.find("cuMemAlloc_v2")->second;
    ASSERT_NE(drv.first, 0u) << r.out;
    ASSERT_TRUE(find(log, "cuMemAlloc_v2", drv.first)) << text;
    EXPECT_EQ(find(log, "cuMemAlloc_v2", drv.first)->device, 2);
    EXPECT_EQ(find(log, "cuMemAlloc_v2", drv.first)->end - drv.first, drv.second);
    auto viaDlsym = p.find("dlsym-hipMalloc")->second;
    ASSERT_TRUE(find(log, "hipMalloc", viaDlsym.first)) << text;
    // After the runtime's hipMalloc threw through the hook, the thread's next call is recorded
    // with its stack and device, not as a nested call (a signal handler's).
    EXPECT_NE(r.out.find("runtime threw\n"), std::string::npos) << r.out;
    auto after = p.find("after-throw")->second;
    const auto* t = find(log, "hipMalloc", after.first);
    ASSERT_TRUE(t) << text;
    EXPECT_EQ(t->end - t->ptr, after.second);
    EXPECT_EQ(t->device, 3);
    EXPECT_TRUE(t->stack.starts_with("libgpufault_standin_fw.so+0x")) << t->stack;
    EXPECT_EQ(text.find("nested=1"), std::string::npos) << text;
    // 1 + 10 (during the exceptions) + 1 + 1 after the throw + 200 from threads; the failed
    // call is counted apart, the one that threw is not recorded.
    size_t hipCount = 0;
    for (const auto& x : log.allocations) hipCount += x.api == "hipMalloc";
    EXPECT_EQ(hipCount, 1u + 10u + 1u + 1u + 200u);
    EXPECT_EQ(log.allocations.size(), hipCount + 2u);
    EXPECT_EQ(log.failed, 1u);
    std::map<int64_t, int> tids;
    for (const auto& x : log.allocations) ++tids[*x.tid];
    EXPECT_EQ(tids.size(), 5u);  // the main thread and four others

    // The forked child wrote its own file.
    auto child = p.find("child");
    ASSERT_NE(child, p.end());
    int cpid = 0;
    ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find("child pid="), "child pid=%d", &cpid), 1);
    auto clog = al::parse(readFile(shimFile(dir.path(), cpid)));
    ASSERT_EQ(clog.allocations.size(), 1u);
    EXPECT_EQ(clog.allocations[0].ptr, child->second.first);
    EXPECT_EQ(clog.allocations[0].pid, cpid);
    EXPECT_EQ(clog.processes.size(), 1u);
}

TEST(PreloadShim, AnotherInterposersRtldNextStillFindsTheNextObject) {
    TempDir dir;
    auto r = run({"/usr/bin/env",
                  "LD_PRELOAD=" PRELOAD_SHIM ":" INTERPOSER,
                  "GPUFAULT_ALLOC_DIR=" + dir.path(),
                  PRELOAD_HOST,
                  STANDIN_FW,
                  STANDIN_RT,
                  "puts"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "[interposed] hello from puts\n");
}

TEST(PreloadShim, WithoutTheShimTheHostRunsTheSame) {
    auto r = run({PRELOAD_HOST, STANDIN_FW, STANDIN_RT, "records"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("caught 1000\n"), std::string::npos);
    EXPECT_NE(r.out.find("cuMemAlloc_v2 ptr=0x"), std::string::npos);
}

TEST(PreloadShim, NeverWritesThroughALinkAnotherUserPutWhereItsFileGoes) {
    // In a shared directory (gpufaultd's /run/gpufault-alloc) someone may have made
    // gpufault-alloc.<pid>.log first: a symbolic link to a file of theirs, or a hard link. The
    // shim writes into neither (recording is off for that process) and the job runs on.
    TempDir dir;
    for (bool hard : {false, true}) {
        std::string target = dir.file(hard ? "hard-target" : "soft-target");
        writeFile(target, "");
        int gate[2];
        ASSERT_EQ(::pipe(gate), 0);
        pid_t pid = ::fork();
        if (pid == 0) {
            ::close(gate[1]);
            char c;
            if (::read(gate[0], &c, 1) != 1) ::_exit(5);
            ::setenv("LD_PRELOAD", PRELOAD_SHIM, 1);
            ::setenv("GPUFAULT_ALLOC_DIR", dir.path().c_str(), 1);
            int devnull = ::open("/dev/null", O_WRONLY);
            ::dup2(devnull, 1);
            ::execl(PRELOAD_HOST,
                    PRELOAD_HOST,
                    STANDIN_FW,
                    STANDIN_RT,
                    "fault",
                    static_cast<char*>(nullptr));
            ::_exit(127);
        }
        ::close(gate[0]);
        // The name the shim will use: its pid, its pid namespace (ours) and its start ticks
        // (the forked child's, kept by the exec).
        char ns[64] = {};
        ASSERT_GT(::readlink("/proc/self/ns/pid", ns, sizeof ns - 1), 6);
        std::string stat = readFile(fmt::format("/proc/{}/stat", pid));
        std::istringstream fields(stat.substr(stat.rfind(')') + 2));
        std::string ticks;
        for (int i = 3; i <= 22; ++i) fields >> ticks;
        std::string name = dir.file(fmt::format("gpufault-alloc.{}.{}.{}.log",
                                                pid,
                                                std::string(ns + 5, std::strlen(ns) - 6),
                                                ticks));
        ASSERT_EQ(
            hard ? ::link(target.c_str(), name.c_str()) : ::symlink(target.c_str(), name.c_str()),
            0);
        ASSERT_EQ(::write(gate[1], "g", 1), 1);
        ::close(gate[1]);
        int st = 0;
        ::waitpid(pid, &st, 0);
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << st;  // the host's own status
        EXPECT_EQ(readFile(target), "") << (hard ? "hard link" : "symbolic link");
        ::unlink(name.c_str());
    }
}

// Hostile review of issue 4 (second round), finding 2: two containers (pid namespaces of their
// own) run at the same time, each job pid 1. Each process writes its own file, named by its
// pid, pid namespace and start ticks, and every record names its process.
TEST(PreloadShim, TwoContainersWithTheSamePidWriteTwoFiles) {
    TempDir dir;
    std::string job = fmt::format(
        "sleep 1 | unshare -pf --mount-proc env LD_PRELOAD={} GPUFAULT_ALLOC_DIR={} {} {} {} hold",
        PRELOAD_SHIM,
        dir.path(),
        PRELOAD_HOST,
        STANDIN_FW,
        STANDIN_RT);
    auto r = run({"/bin/sh", "-c", job + " & " + job + " & wait"});
    ASSERT_EQ(r.status, 0) << r.err;
    if (r.out.find("pid=1 ") == std::string::npos && r.err.find("unshare") != std::string::npos)
        GTEST_SKIP() << "no pid namespaces here: " << r.err;
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(dir.path()))
        files.push_back(e.path().filename().string());
    ASSERT_EQ(files.size(), 2u) << r.out << r.err;
    std::set<uint64_t> namespaces;
    for (const auto& name : files) {
        auto log = al::parse(readFile(dir.file(name)));
        EXPECT_TRUE(log.warnings.empty()) << name << ": " << log.warnings.front().message;
        ASSERT_EQ(log.processes.size(), 1u) << name;
        const auto& p = log.processes[0];
        EXPECT_EQ(p.pid, 1);
        ASSERT_TRUE(p.pidns && p.start_ticks) << name;
        EXPECT_EQ(name, fmt::format("gpufault-alloc.1.{}.{}.log", *p.pidns, *p.start_ticks));
        namespaces.insert(*p.pidns);
        ASSERT_EQ(log.allocations.size(), 1u) << name;
        EXPECT_EQ(log.allocations[0].start_line, 1u);
    }
    EXPECT_EQ(namespaces.size(), 2u);
    // Each record carries its process's pid namespace and start ticks.
    for (const auto& name : files) {
        std::string text = readFile(dir.file(name));
        auto alloc = text.substr(text.find("\ngpufault.alloc 1 alloc ") + 1);
        EXPECT_NE(alloc.find(" pidns="), std::string::npos) << alloc;
        EXPECT_NE(alloc.find(" start_ticks="), std::string::npos) << alloc;
    }
}
