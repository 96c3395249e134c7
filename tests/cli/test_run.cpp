// `gpufault run`: a real job on a pseudo-terminal, its output passed through and spooled, the
// run recorded, its fault ingested.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

// Hostile review 17, i3 LOW 2: a user whose default spool cannot be made (no home directory)
// got exit 2 before the job ran, as if the job had exited 2. It runs, spooled under TMPDIR.
TEST(Run, AJobRunsWhenTheDefaultSpoolCannotBeMade) {
    if (::geteuid() != 0 || ::access("/usr/bin/setpriv", X_OK) != 0)
        GTEST_SKIP() << "needs root and setpriv to run as another user";
    TempDir dir;
    ASSERT_EQ(::chmod(dir.path().c_str(), 01777), 0);
    // As nobody, with a home directory that does not exist.
    auto r = run({"/usr/bin/setpriv",
                  "--reuid=65534",
                  "--regid=65534",
                  "--clear-groups",
                  "/usr/bin/env",
                  "-i",
                  "HOME=/nonexistent/home",
                  "TMPDIR=" + dir.path(),
                  "PATH=/usr/bin:/bin",
                  GPUFAULT_BIN,
                  "--db",
                  dir.file("g.db"),
                  "run",
                  "--",
                  "sh",
                  "-c",
                  "echo ran; exit 3"});
    EXPECT_EQ(r.status, 3) << r.err << r.out;
    EXPECT_NE(r.out.find("ran"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("gpufault run: spool directory /nonexistent/home/.local/share/gpufault/"
                         "spool: "),
              std::string::npos)
        << r.out << r.err;
    EXPECT_NE(r.err.find("; spooling to " + dir.path() + "/gpufault-spool-"), std::string::npos)
        << r.err;
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
    // Nearest operand: `out`, 640 MiB − 1 MiB above its end (thread 160 × 4 MiB stride). An
    // MMU fault names a page (the fault buffer keeps no bits below 4 KiB), so the distance is
    // from the page start and never claimed exact.
    auto ops = show.out.find("Operands by |distance| from the page start 0x00007f4dc1f00000");
    ASSERT_NE(ops, std::string::npos) << show.out;
    auto first = show.out.find('\n', show.out.find('\n', ops) + 1) + 1;
    EXPECT_EQ(show.out.substr(first, show.out.find('\n', first) - first).substr(0, 138),
              "out\t0x00007f4d99f00000\t0x00007f4d9a000000\t1,048,576 B (1.00 MiB)\tpage start "
              "+670,040,064 B (+639.00 MiB) above end (exact byte unknown)\tno");

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

TEST(Run, StoresTheCommandLineWithoutItsSecrets) {
    TempDir dir;
    std::string db = dir.file("g.db"), spool = dir.file("spool");
    // sh -c 'exit 0' takes the rest as $0 $1 …: a job with secrets on its command line.
    auto r = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "run",
                  "--spool",
                  spool,
                  "--",
                  "sh",
                  "-c",
                  "exit 0",
                  "train",
                  "--password=hunter2",
                  "--token",
                  "tk_123",
                  "--db-pw",
                  "pw1",
                  "--mirror",
                  "https://bob:s3cret@pypi.example.com/simple",
                  "--epochs=3"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto runs = run({GPUFAULT_BIN, "--db", db, "runs", "--json"});
    ASSERT_EQ(runs.status, 0) << runs.err;
    auto j = nlohmann::json::parse(runs.out);
    EXPECT_EQ(j["command"],
              nlohmann::json({"sh",
                              "-c",
                              "exit 0",
                              "train",
                              "--password=<redacted>",
                              "--token",
                              "<redacted>",
                              "--db-pw",
                              "<redacted>",
                              "--mirror",
                              "https://<redacted>@pypi.example.com/simple",
                              "--epochs=3"}));
    for (const char* secret : {"hunter2", "tk_123", "pw1", "s3cret"}) {
        EXPECT_EQ(runs.out.find(secret), std::string::npos) << secret;
        auto q = run({GPUFAULT_BIN,
                      "--db",
                      db,
                      "query",
                      "SELECT count(*) FROM runs WHERE command "
                      "LIKE '%" +
                          std::string(secret) + "%'"});
        EXPECT_EQ(q.out, "count(*)\n0\n") << secret << q.err;
    }
}

namespace {

/// `gpufault run` with its stdout (and, with `stderrToo`, its stderr) on a pipe whose reader
/// takes the first line and closes, as `| head -1` does; then the job writes 2000 more lines
/// and exits 7. Returns gpufault's exit status (128 + N for signal N).
int runIntoClosedPipe(const TempDir& dir, bool stderrToo) {
    std::string flag = dir.file(stderrToo ? "closed2" : "closed1");
    std::string script = "echo first; while [ ! -e " + flag +
                         " ]; do sleep 0.02; done; i=0; while [ $i -lt 2000 ]; do "
                         "echo line $i; i=$((i+1)); done; exit 7";
    int p[2];
    if (::pipe(p) != 0) return -1;
    pid_t pid = ::fork();
    if (pid == 0) {
        int err = ::open(dir.file("err").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
        int in = ::open("/dev/null", O_RDONLY);
        ::dup2(in, 0);
        ::dup2(p[1], 1);
        ::dup2(stderrToo ? p[1] : err, 2);
        ::close(p[0]);
        ::close(p[1]);
        ::execl(GPUFAULT_BIN,
                GPUFAULT_BIN,
                "--db",
                dir.file("g.db").c_str(),
                "run",
                "--spool",
                dir.file("spool").c_str(),
                "--",
                "sh",
                "-c",
                script.c_str(),
                nullptr);
        ::_exit(127);
    }
    ::close(p[1]);
    std::string got;
    char c;
    while (::read(p[0], &c, 1) == 1 && c != '\n') got += c;
    ::close(p[0]);  // `head -1` is done
    writeFile(flag, "");
    int st = 0;
    ::waitpid(pid, &st, 0);
    EXPECT_EQ(got, "first");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace

// `gpufault run -- CMD | head -1`: gpufault used to die of SIGPIPE (status 141), taking the job
// (its terminal gone) and the run record with it.
TEST(Run, AClosedStdoutPipeNeitherEndsTheJobNorLosesTheRun) {
    TempDir dir;
    EXPECT_EQ(runIntoClosedPipe(dir, false), 7) << readFile(dir.file("err"));
    EXPECT_NE(readFile(dir.file("err"))
                  .find("our output stopped (Broken pipe); the job's whole "
                        "output is in "),
              std::string::npos)
        << readFile(dir.file("err"));
    // stdout and stderr both on the closed pipe (`2>&1 | head -1`): our messages fail too.
    EXPECT_EQ(runIntoClosedPipe(dir, true), 7);

    auto runs = run({GPUFAULT_BIN, "--db", dir.file("g.db"), "runs", "--json"});
    ASSERT_EQ(runs.status, 0) << runs.err;
    ASSERT_EQ(std::count(runs.out.begin(), runs.out.end(), '\n'), 2) << runs.out;
    for (size_t at = 0; at < runs.out.size(); at = runs.out.find('\n', at) + 1) {
        auto j = nlohmann::json::parse(runs.out.substr(at, runs.out.find('\n', at) - at));
        EXPECT_EQ(j["exit_status"], 7);
        std::string spooled = readFile(j["spool"]);
        EXPECT_EQ(std::count(spooled.begin(), spooled.end(), '\n'), 2001);
        EXPECT_EQ(spooled.substr(0, 6), "first\n");
        EXPECT_NE(spooled.find("line 1999\n"), std::string::npos);
    }
}
