// gpufaultd's worker thread (issues 3 and 5): re-correlation and diagnoses off the event loop.
// The real daemon on a real store: `status` answers and a new fault line is committed while a
// correlation of 200 000 records runs; a hipErrorNoBinaryForGpu line in a followed log gets
// its diagnosis stored without the CLI (devices from a fake sysfs tree), and so does a core in a
// followed core directory, read by the worker.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/followed_log.h"
#include "tests/support/module_crash.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

namespace fs = std::filesystem;

/// A temporary daemon setup: logs/*.log followed, kmsg off, `extra` appended to the config.
struct Fixture {
    TempDir dir;
    std::string conf = dir.file("gpufaultd.conf");
    std::string store = dir.file("store.db");
    std::string sock = dir.file("ctl.sock");
    std::string logs = dir.file("logs");
    Fixture() { ::mkdir(logs.c_str(), 0755); }
    void configure(const std::string& extra = "") const {
        writeFile(conf,
                  fmt::format("[store]\npath = \"{}\"\n[kmsg]\nenabled = false\n[files]\n"
                              "globs = [\"{}/*.log\"]\npoll_interval_ms = 100\n"
                              "[control]\nsocket = \"{}\"\ngroup = \"\"\n{}",
                              store,
                              logs,
                              sock,
                              extra));
    }
    void append(const std::string& name, const std::string& text) const {
        std::ofstream(logs + "/" + name, std::ios::app) << text << std::flush;
    }
    int64_t count(const std::string& sql) const { return storeCount(store, sql); }
    nlohmann::json status() const {
        return nlohmann::json::parse(controlRequest(sock, "status"), nullptr, false);
    }
};

std::string rocrFault(uint64_t address) {
    return fmt::format(
        "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x{:x}. Reason: Page "
        "not present or supervisor privilege.\n",
        address);
}

/// A fake sysfs with one amdgpu KFD node (node 1, 0000:03:00.0) of `gfx_target_version`.
std::string fakeSysfs(const TempDir& t, const std::string& version) {
    std::string sys = t.file("sys");
    fs::create_directories(sys + "/class/kfd/kfd/topology/nodes/0");
    fs::create_directories(sys + "/class/kfd/kfd/topology/nodes/1");
    writeFile(sys + "/class/kfd/kfd/topology/nodes/0/properties",
              "cpu_cores_count 16\nsimd_count 0\n");
    writeFile(sys + "/class/kfd/kfd/topology/nodes/1/properties",
              "simd_count 80\ngfx_target_version " + version + "\nlocation_id 768\ndomain 0\n");
    return sys;
}

/// Runs gpu_module_crash on `module` in `dir` with cores enabled (a SIGSEGV at 0x8a in
/// amd::Symbol::getDeviceKernel); true when the kernel wrote `dir`/core or core.PID.
bool makeCore(const std::string& dir, const std::string& module) {
    return !crashModuleForCore(dir, module).empty();
}

void stop(DaemonProcess& d) {
    d.signal(SIGTERM);
    EXPECT_EQ(d.waitExit(10s), std::optional<int>(0)) << d.stderrText();
}

}  // namespace

// The store is filled by the CLI (200 000 ROCr fault records, correlated), so that the
// daemon's start-up pass reads and correlates them all (seconds). While the worker says it is
// busy, `status` answers and a fault line appended to a followed file is committed before
// that pass ends (the pass count has not moved); the next pass puts it into an incident.
TEST(DaemonWorker, StatusAnswersAndRecordsCommitWhileTheWorkerCorrelates) {
    Fixture f;
    constexpr int kRecords = 200000;
    {
        std::string lines;
        lines.reserve(size_t{kRecords} * 120);
        for (int i = 0; i < kRecords; ++i)
            lines += rocrFault(0x7f0000000000 + uint64_t(i) * 0x200000);
        writeFile(f.dir.file("big.log"), lines);
    }
    auto ing = run({GPUFAULT_BIN, "--db", f.store, "ingest", f.dir.file("big.log")}, 300);
    ASSERT_EQ(ing.status, 0) << ing.err;
    ASSERT_EQ(f.count("SELECT count(*) FROM evidence"), kRecords);
    f.configure("[commit]\ncorrelate_ms = 0\n");
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));

    // Each committed line asks for a new pass: try a few times to land one inside a pass.
    bool committedDuringPass = false;
    int answeredWhileBusy = 0;
    for (int attempt = 0; attempt < 5 && !committedDuringPass; ++attempt) {
        nlohmann::json before;
        ASSERT_TRUE(eventually(
            [&] {
                before = f.status();
                return before.is_object() && before["worker"].value("busy", false);
            },
            120s))
            << "the worker never reported a pass " << d.stderrText();
        ++answeredWhileBusy;
        int64_t n = f.count("SELECT count(*) FROM evidence");
        f.append("job.log", rocrFault(0x10000000000 + uint64_t(attempt) * 0x200000));
        ASSERT_TRUE(
            eventually([&] { return f.count("SELECT count(*) FROM evidence") == n + 1; }, 30s))
            << d.stderrText();
        auto after = f.status();
        ASSERT_TRUE(after.is_object()) << "status did not answer";
        if (after["worker"].value("busy", false) &&
            after["worker"]["correlations"] == before["worker"]["correlations"]) {
            committedDuringPass = true;
            ++answeredWhileBusy;
        }
    }
    EXPECT_TRUE(committedDuringPass) << "no line was committed while a pass ran";
    EXPECT_GE(answeredWhileBusy, 2);

    // The passes that follow put every record, the new ones too, into incidents.
    EXPECT_TRUE(eventually(
        [&] {
            return f.count("SELECT max(evidence_id) FROM incident_evidence") ==
                       f.count("SELECT max(id) FROM evidence") &&
                   f.count("SELECT count(*) FROM incident_evidence") ==
                       f.count("SELECT count(*) FROM evidence");
        },
        120s))
        << d.stderrText();
    // A pass writes its incidents before it diagnoses them (200 000 incidents: one per ROCr
    // line, docs/correlation.md): the pass that stored the new lines' incidents ends later.
    nlohmann::json st;
    EXPECT_TRUE(eventually(
        [&] {
            st = f.status();
            return st.is_object() && !st["worker"].value("busy", true) &&
                   st["worker"]["correlations"].get<int64_t>() >= 2;
        },
        120s))
        << st.dump() << d.stderrText();
    ASSERT_TRUE(st.is_object());
    EXPECT_EQ(st["correlations"], st["worker"]["correlations"]);
    EXPECT_EQ(st["worker"]["error"], "");
    stop(d);
}

// A hipErrorNoBinaryForGpu line naming a binary, in a followed log: the worker correlates it,
// inventories the binary against this machine's GPU (a fake sysfs with one gfx90a) and stores
// the diagnosis: bundle #4 of the seed-case binary has no code for gfx90a (only gfx906).
TEST(DaemonWorker, DiagnosesAMissingCodeObjectWithoutTheCli) {
    Fixture f;
    std::string sys = fakeSysfs(f.dir, "90010");  // gfx90a
    std::string module = f.dir.file("multi_plus_one");
    writeFile(module,
              readFile(std::string(GPUFAULT_SOURCE_DIR) +
                       "/tests/data/binaries/seedcase/multi_plus_one"));
    f.configure(fmt::format(
        "[diagnose]\nsysfs_root = \"{}\"\nproc_root = \"{}\"\n", sys, f.dir.file("proc")));
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    // hip_code_object.cpp's message names the binary it could not use.
    f.append("run.log",
             ":1:hip_code_object.cpp      :507 : 0635372365 us: 16170: [tid:0x7fe0e2402880] "
             "hipErrorNoBinaryForGpu: Couldn't find binary for file: " +
                 module + "\n");
    ASSERT_TRUE(eventually(
        [&] { return f.count("SELECT count(*) FROM diagnoses WHERE verdict = 'no_code'") == 1; },
        30s))
        << d.stderrText();
    EXPECT_EQ(
        f.count("SELECT count(*) FROM diagnoses d JOIN evidence e ON e.id = d.evidence_id "
                "WHERE e.kind = 'missing_code_object' AND d.rule = 'no_binary_for_gpu' AND "
                "d.verdict = 'no_code' AND d.device_target = 'gfx90a' AND d.module = '" +
                module + "' AND d.bundle = 4 AND d.offset = 73728 AND d.has = '[\"gfx906\"]'"),
        1);
    EXPECT_EQ(f.count("SELECT count(*) FROM diagnoses WHERE verdict = 'device' AND device_target "
                      "= 'gfx90a' AND device = '0000:03:00.0' AND device_from = 'this machine, its "
                      "only GPU'"),
              1);
    EXPECT_TRUE(eventually(
        [&] {
            auto st = f.status();
            return st.is_object() && st["worker"].value("diagnosed", 0) == 1;
        },
        10s));
    // The CLI finds it unchanged (same inputs): nothing recomputed.
    auto r = run({GPUFAULT_BIN, "--db", f.store, "diagnose", "--sysfs-root", sys});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "1 diagnosis in " + f.store + "\n");
    stop(d);
}

// A process dies in the HIP runtime at a null-page address and leaves a core in a followed core
// directory: the worker unwinds it (the loop only scans), correlates, and stores the diagnosis
// of the module it had mapped: bundle #4 has no code for this machine's gfx1030.
TEST(DaemonWorker, CoreInACoreDirectoryGetsItsDiagnosis) {
    Fixture f;
    std::string cores = f.dir.file("cores");
    fs::create_directories(cores);
    std::string module = f.dir.file("multi_plus_one");
    writeFile(module,
              readFile(std::string(GPUFAULT_SOURCE_DIR) +
                       "/tests/data/binaries/seedcase/multi_plus_one"));
    if (!makeCore(cores, module))
        GTEST_SKIP() << "no core written (kernel.core_pattern is not 'core')";
    std::string sys = fakeSysfs(f.dir, "100300");  // gfx1030
    f.configure(
        fmt::format("[cores]\ndirectories = [\"{}\"]\n[diagnose]\nsysfs_root = "
                    "\"{}\"\nproc_root = \"{}\"\n",
                    cores,
                    sys,
                    f.dir.file("proc")));
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    ASSERT_TRUE(eventually(
        [&] {
            return f.count(
                       "SELECT count(*) FROM diagnoses WHERE rule = 'runtime_null_deref' AND "
                       "verdict = 'no_code'") == 1;
        },
        60s))
        << d.stderrText() << controlRequest(f.sock, "status");
    EXPECT_EQ(f.count("SELECT count(*) FROM cores WHERE si_addr = 0x8a"), 1);
    EXPECT_EQ(f.count("SELECT count(*) FROM diagnoses d JOIN evidence e ON e.id = d.evidence_id "
                      "WHERE e.kind = 'coredump' AND d.verdict = 'no_code' AND d.device_target = "
                      "'gfx1030' AND d.module = '" +
                      module + "' AND d.bundle = 4 AND d.offset = 73728"),
              1);
    auto st = f.status();
    ASSERT_TRUE(st.is_object());
    EXPECT_EQ(st["worker"]["jobs_done"], 1);
    for (const auto& s : st["streams"])
        if (s["source"] == "cores") {
            EXPECT_EQ(s["position"], "1 cores stored, 0 not readable, 0 symbolic links skipped");
        }
    stop(d);
}

// `[diagnose] enabled = false`: the same line is stored and correlated, and no diagnosis is.
TEST(DaemonWorker, DiagnosesCanBeTurnedOff) {
    Fixture f;
    f.configure("[diagnose]\nenabled = false\n");
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    f.append("run.log",
             ":1:hip_code_object.cpp      :507 : 0635372365 us: 16170: [tid:0x7fe0e2402880] "
             "hipErrorNoBinaryForGpu: Couldn't find binary for file: /nonexistent/app\n");
    ASSERT_TRUE(
        eventually([&] { return f.count("SELECT count(*) FROM incident_evidence") == 1; }, 30s))
        << d.stderrText();
    ASSERT_TRUE(eventually(
        [&] {
            auto st = f.status();
            return st.is_object() && !st["worker"].value("busy", true) &&
                   !st["worker"].value("queued", true);
        },
        10s));
    EXPECT_EQ(f.count("SELECT count(*) FROM diagnoses"), 0);
    stop(d);
}
