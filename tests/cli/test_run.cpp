// `gpufault run`: a real job on a pseudo-terminal, its output passed through and spooled, the
// run recorded, its fault ingested.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/run_env.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using gpufault::cli::gpuEnvironment;
using gpufault::cli::parseAmdLogMask;

TEST(RunEnv, KeepsGpuVariablesAndRedactsSecrets) {
    const char* env[] = {"HOME=/root",
                         "AMD_LOG_LEVEL=3",
                         "HIP_VISIBLE_DEVICES=0,1",
                         "ROCR_VISIBLE_DEVICES=1",
                         "HSA_OVERRIDE_GFX_VERSION=11.0.0",
                         "LOCAL_RANK=3",
                         "RANKING=x",
                         "NCCL_IB_HCA=mlx5",
                         "TORCH_HUB_TOKEN=hf_abcdef",
                         "CUDA_PROXY=https://user:pw@proxy:3128/",
                         "CUDA_HOME=/usr/local/cuda",
                         "AWS_SECRET_ACCESS_KEY=zzz",
                         nullptr};
    auto m = gpuEnvironment(env);
    EXPECT_EQ(m.size(), 9u);
    EXPECT_EQ(m.at("AMD_LOG_LEVEL"), "3");
    EXPECT_EQ(m.at("HIP_VISIBLE_DEVICES"), "0,1");
    EXPECT_EQ(m.at("ROCR_VISIBLE_DEVICES"), "1");
    EXPECT_EQ(m.at("LOCAL_RANK"), "3");
    EXPECT_EQ(m.at("TORCH_HUB_TOKEN"), "<redacted>");
    EXPECT_EQ(m.at("CUDA_PROXY"), "<redacted>");
    EXPECT_EQ(m.at("CUDA_HOME"), "/usr/local/cuda");
    EXPECT_EQ(m.count("HOME"), 0u);
    EXPECT_EQ(m.count("RANKING"), 0u);
    EXPECT_EQ(m.count("AWS_SECRET_ACCESS_KEY"), 0u);
}

TEST(RunEnv, AmdLogMaskByNameOrNumber) {
    EXPECT_EQ(parseAmdLogMask("kern"), 0x10080u);  // LOG_KERN | LOG_LOCATION
    EXPECT_EQ(parseAmdLogMask("kern,mem"), 0x30080u);
    EXPECT_EQ(parseAmdLogMask("0x7fffffff"), 0x7fffffffu);
    EXPECT_EQ(parseAmdLogMask("128"), 128u);
    ASSERT_FALSE(parseAmdLogMask("kern,kernel"));
    EXPECT_EQ(parseAmdLogMask("kern,kernel").error(), "unknown AMD_LOG_MASK bit 'kernel'");
    EXPECT_FALSE(parseAmdLogMask("0xzz"));
}

TEST(Run, RecordsAnAbortedJobWithItsFaultAndPassesItsStatusThrough) {
    TempDir dir;
    std::string db = dir.file("g.db"), spool = dir.file("spool");
    // stdout and stderr interleaved, a ROCr fault on stderr without a flush, then abort().
    std::string script =
        "echo one; echo two >&2; echo three; printf 'Memory access fault by GPU node-1 (Agent "
        "handle: 0x5581) on address 0x7f6459a00000. Reason: Page not present or supervisor "
        "privilege.\\n' >&2; env | grep -E '^(AMD_LOG|HIP_LAUNCH)' | sort; kill -ABRT $$";
    auto r = run({GPUFAULT_BIN, "--db", db, "run", "--spool", spool, "--amd-log-mask", "kern",
                  "--serialize", "--", "sh", "-c", script});
    EXPECT_EQ(r.status, 134) << r.err;  // 128 + SIGABRT, as a shell reports it
    EXPECT_EQ(r.out,
              "one\ntwo\nthree\nMemory access fault by GPU node-1 (Agent handle: 0x5581) on "
              "address 0x7f6459a00000. Reason: Page not present or supervisor privilege.\n"
              "AMD_LOG_LEVEL=3\nAMD_LOG_MASK=0x10080\nHIP_LAUNCH_BLOCKING=1\n");
    EXPECT_NE(r.err.find("ended by signal 6 (ABRT)"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("incident 1 (rocr_memory_fault)"), std::string::npos) << r.err;

    auto runs = run({GPUFAULT_BIN, "--db", db, "runs", "--json"});
    ASSERT_EQ(runs.status, 0) << runs.err;
    auto j = nlohmann::json::parse(runs.out);
    EXPECT_EQ(j["run"], 1);
    EXPECT_EQ(j["signal"], 6);
    EXPECT_TRUE(j["exit_status"].is_null());
    EXPECT_EQ(j["command"][0], "sh");
    EXPECT_EQ(j["env"]["AMD_SERIALIZE_KERNEL"], "3");
    EXPECT_EQ(j["env"]["CUDA_LAUNCH_BLOCKING"], "1");
    EXPECT_EQ(j["records"], 1);
    EXPECT_EQ(j["pids"][0], j["pid"]);
    std::string spoolFile = j["spool"];
    EXPECT_EQ(readFile(spoolFile), r.out) << "the spool holds exactly what was passed through";
    struct stat st {};
    ASSERT_EQ(::stat(spoolFile.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    ASSERT_EQ(::stat(spool.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);

    auto ev = run({GPUFAULT_BIN, "--db", db, "events", "--json"});
    auto e = nlohmann::json::parse(ev.out);
    EXPECT_EQ(e["kind"], "rocr_memory_fault");
    EXPECT_EQ(e["address"], "0x7f6459a00000");
    EXPECT_EQ(e["line"], 4);
}

TEST(Run, ExitCodeOfANormalJobAndACommandThatCannotRun) {
    TempDir dir;
    std::string db = dir.file("g.db"), spool = dir.file("spool");
    auto ok = run({GPUFAULT_BIN, "--db", db, "run", "--spool", spool, "--", "sh", "-c", "exit 3"});
    EXPECT_EQ(ok.status, 3) << ok.err;
    auto missing =
        run({GPUFAULT_BIN, "--db", db, "run", "--spool", spool, "--", "/nonexistent/cmd"});
    EXPECT_EQ(missing.status, 127);
    EXPECT_NE(missing.out.find("/nonexistent/cmd: No such file or directory"), std::string::npos)
        << missing.out;
    auto runs = run({GPUFAULT_BIN, "--db", db, "runs"});
    EXPECT_NE(runs.out.find("\t3\t"), std::string::npos) << runs.out;
    EXPECT_NE(runs.out.find("\t127\t"), std::string::npos) << runs.out;
    auto bad = run({GPUFAULT_BIN, "--db", db, "run", "--amd-log-mask", "kernel", "--", "true"});
    EXPECT_EQ(bad.status, 2);
    EXPECT_NE(bad.err.find("unknown AMD_LOG_MASK bit 'kernel'"), std::string::npos);
}

// A real H200 fault (tests/data/device/h200-illegal-write): the job's stderr captured by
// `gpufault run`, the kernel's Xid lines naming the pid the run spawned. The Xid 31 address is
// measured against the operands the job printed, though they live in different streams.
TEST(Run, NvidiaXidJoinsTheRunThatSpawnedItsPidAndMeetsItsOperands) {
    TempDir dir;
    std::string db = dir.file("g.db"), spool = dir.file("spool");
    std::string data = std::string(GPUFAULT_SOURCE_DIR) + "/tests/data/device/h200-illegal-write";
    auto r = run({GPUFAULT_BIN, "--db", db, "run", "--spool", spool, "--", "sh", "-c",
                  "cat " + data + "/stderr.log >&2"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto runs = nlohmann::json::parse(run({GPUFAULT_BIN, "--db", db, "runs", "--json"}).out);
    int64_t pid = runs["pid"];
    // The real dmesg lines, with the pid this run's job had instead of the H200 run's 524.
    std::string dmesg = readFile(data + "/dmesg.txt");
    for (size_t at; (at = dmesg.find("pid=524")) != std::string::npos;)
        dmesg.replace(at, 7, fmt::format("pid={}", pid));
    writeFile(dir.file("dmesg.txt"), dmesg);
    auto ing = run({GPUFAULT_BIN, "--db", db, "ingest", "-q", dir.file("dmesg.txt")});
    ASSERT_EQ(ing.status, 0) << ing.err;

    auto inc = run({GPUFAULT_BIN, "--db", db, "incidents", "--json"});
    ASSERT_EQ(std::count(inc.out.begin(), inc.out.end(), '\n'), 1) << inc.out;
    auto i = nlohmann::json::parse(inc.out);
    EXPECT_EQ(i["kind"], "nvidia_xid");
    EXPECT_EQ(i["address"], "0x7f4dc1f00000");
    EXPECT_EQ(i["records"], 3);
    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find(fmt::format("[same process: pid {} was spawned by run #1]", pid)),
              std::string::npos)
        << show.out;
    // Nearest operand: `out`, 640 MiB − 1 MiB above its end (thread 160 × 4 MiB stride).
    auto ops = show.out.find("Operands by |distance| from 0x00007f4dc1f00000");
    ASSERT_NE(ops, std::string::npos) << show.out;
    auto first = show.out.find('\n', show.out.find('\n', ops) + 1) + 1;
    EXPECT_EQ(show.out.substr(first, show.out.find('\n', first) - first).substr(0, 103),
              "out\t0x00007f4d99f00000\t0x00007f4d9a000000\t1,048,576 B (1.00 MiB)\t+670,040,064 B "
              "(+639.00 MiB) above end");

    // The sanitizer run of the same program: 100 reports (its print limit), the first at
    // 0x7f6c62900000 in scatter_rows.
    auto san = run({GPUFAULT_BIN, "--db", db, "ingest", "-q", data + "/compute-sanitizer.out"});
    ASSERT_EQ(san.status, 0) << san.err;
    auto ev = run({GPUFAULT_BIN, "--db", db, "events", "--json", "--kind", "sanitizer_report"});
    EXPECT_EQ(std::count(ev.out.begin(), ev.out.end(), '\n'), 100);
    auto e = nlohmann::json::parse(ev.out.substr(0, ev.out.find('\n')));
    EXPECT_EQ(e["address"], "0x7f6c62900000");
    EXPECT_EQ(e["kernel"], "scatter_rows(float *, const float *, int, long long)");
}
