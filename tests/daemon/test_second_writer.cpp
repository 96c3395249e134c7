// Hostile review of gpufaultd (issue 3), the real daemon: a second gpufaultd with the same
// configuration must leave the running daemon's control socket alone (MEDIUM); `gpufault
// ingest` of a file the daemon follows must not count its dispatches twice (HIGH); a file
// renamed under the daemon (rotation) is stored under its new name (LOW).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/followed_log.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kRocrFault =
    "Memory access fault by GPU node-1 (Agent handle: 0x55d4c0a1b2c0) on address 0x7f6459a00000. "
    "Reason: Page not present or supervisor privilege.";

/// A daemon following `logs/*.log*` (kmsg off) with its socket and store in a temporary
/// directory.
struct Daemon2 {
    TempDir dir;
    std::string conf = dir.file("gpufaultd.conf");
    std::string store = dir.file("store.db");
    std::string sock = dir.file("ctl.sock");
    std::string logs = dir.file("logs");
    Daemon2() {
        ::mkdir(logs.c_str(), 0755);
        writeFile(conf,
                  fmt::format("[store]\npath = \"{}\"\n[kmsg]\nenabled = false\n[files]\n"
                              "globs = [\"{}/*.log*\"]\npoll_interval_ms = 100\n"
                              "[control]\nsocket = \"{}\"\ngroup = \"\"\n",
                              store,
                              logs,
                              sock));
    }
    nlohmann::json status() const {
        return nlohmann::json::parse(controlRequest(sock, "status"), nullptr, false);
    }
};

void stop(DaemonProcess& d) {
    d.signal(SIGTERM);
    EXPECT_EQ(d.waitExit(10s), std::optional<int>(0)) << d.stderrText();
}

/// An AMD_LOG_LEVEL=3 log of `n` launches (one dispatch count each, kernel K<i % 7>).
std::string launches(int n, int pid) {
    std::string s;
    for (int i = 0; i < n; ++i) {
        uint64_t us = 1000000000ull + static_cast<uint64_t>(i) * 37;
        s += fmt::format(
            ":3:hip_module.cpp           :669 : {:010} us: [pid:{}  tid:0x7f0a1b2c3d40]  "
            "hipLaunchKernel ( 0x7056a988e9d0, {{1048576,1,1}}, {{256,1,1}}, 0x70536bbc2fa0, 0, "
            "stream:<null> ) \n",
            us,
            pid);
        s += fmt::format(
            ":3:rocvirtual.cpp           :3016: {:010} us: [pid:{}  tid:0x7f0a1b2c3d40] "
            "ShaderName : Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_K{}\n",
            us + 2,
            pid,
            i % 7);
    }
    return s;
}

}  // namespace

// The second daemon said "another gpufaultd is listening" and exited 1, but its teardown
// unlinked the socket: the first daemon could no longer be reached. Now only the server that
// bound a socket file removes it; a stale file (a daemon killed) is still replaced.
TEST(DaemonSecondWriter, ASecondDaemonLeavesTheFirstsControlSocket) {
    Daemon2 s;
    DaemonProcess first(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(startedReady(first));
    ASSERT_TRUE(s.status().is_object());
    struct stat before {};
    ASSERT_EQ(::lstat(s.sock.c_str(), &before), 0);

    for (int i = 0; i < 2; ++i) {
        auto second = run({GPUFAULTD_BIN, "--config", s.conf}, 30);
        EXPECT_EQ(second.status, 1) << second.err;
        EXPECT_NE(second.err.find(s.sock + ": another gpufaultd is listening"), std::string::npos)
            << second.err;
        struct stat after {};
        ASSERT_EQ(::lstat(s.sock.c_str(), &after), 0) << "the socket file was removed";
        EXPECT_EQ(after.st_ino, before.st_ino);
        auto st = s.status();
        ASSERT_TRUE(st.is_object()) << "the first daemon is unreachable";
        EXPECT_EQ(st.value("pid", 0), first.pid());
    }
    stop(first);
    EXPECT_FALSE(std::filesystem::exists(s.sock));  // the first removes its own at exit

    // A daemon killed leaves its file behind: the next one replaces it.
    DaemonProcess killed(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(startedReady(killed));
    killed.kill9();
    ASSERT_TRUE(std::filesystem::exists(s.sock));
    DaemonProcess next(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(startedReady(next));
    EXPECT_TRUE(s.status().is_object());
    stop(next);
}

// `gpufault ingest` of a file the daemon follows, both from its start at once: whichever
// commits second from the same checkpoint is refused (the CLI exits 2 with the message; the
// daemon logs it, rolls back and resumes from the store's checkpoint). Every dispatch counted
// once, each round.
TEST(DaemonSecondWriter, CliIngestBesideTheDaemonCountsEveryDispatchOnce) {
    Daemon2 s;
    DaemonProcess d(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(startedReady(d));
    constexpr int kLaunches = 100000;
    int refusedCli = 0;
    for (int round = 0; round < 4; ++round) {
        // Written aside, then renamed in: both readers find it whole.
        const std::string aside = s.dir.file(fmt::format("job{}.tmp", round));
        const std::string log = fmt::format("{}/job{}.log", s.logs, round);
        writeFile(aside, launches(kLaunches, 4000 + round));
        ASSERT_EQ(::rename(aside.c_str(), log.c_str()), 0);
        // Odd rounds: the daemon has begun (its stream is listed) when the CLI starts.
        if (round % 2 == 1) {
            EXPECT_TRUE(eventually(
                [&] {
                    auto st = s.status();
                    if (st.is_object())
                        for (const auto& f : st["streams"])
                            if (f.value("name", "") == log) return true;
                    return false;
                },
                10s));
        }
        auto cli = run({GPUFAULT_BIN, "--db", s.store, "ingest", "-q", log}, 120);
        if (cli.status != 0) {
            ++refusedCli;
            EXPECT_EQ(cli.status, 2) << cli.err;
            EXPECT_EQ(cli.err,
                      fmt::format("gpufault: another ingest or gpufaultd is writing source {}; "
                                  "nothing of this batch was stored\n",
                                  log));
        }
        const std::string sum = fmt::format(
            "SELECT ifnull(sum(c.n), 0) FROM dispatch_counts c JOIN sources s ON "
            "s.id = c.source_id WHERE s.path = '{}'",
            log);
        const std::string rows = fmt::format("SELECT count(*) FROM sources WHERE path = '{}'", log);
        EXPECT_TRUE(eventually(
            [&] {
                auto st = s.status();
                if (!st.is_object()) return false;
                for (const auto& f : st["streams"])
                    if (f.value("name", "") == log) return f.value("lag", -1) == 0;
                return false;
            },
            30s))
            << s.status().dump();
        // Both writers are done: the daemon has read the whole file and committed.
        EXPECT_TRUE(eventually([&] { return storeCount(s.store, sum) == kLaunches; }, 10s))
            << "round " << round << ": " << storeCount(s.store, sum) << "\n"
            << d.stderrText();
        EXPECT_EQ(storeCount(s.store, rows), 1);
    }
    // How often each side lost (the race is real: both happen).
    size_t refusedDaemon = 0;
    const std::string text = d.stderrText(), what = "another ingest or gpufaultd is writing";
    for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1))
        ++refusedDaemon;
    std::fprintf(
        stderr, "refused: the CLI %d, the daemon %zu of 4 rounds\n", refusedCli, refusedDaemon);
    stop(d);
}

// The daemon loses, deterministically: it has committed the first half of a file and is
// stopped (SIGSTOP); the second half is appended and `gpufault ingest` stores it; resumed, the
// daemon reads the second half from its own (now stale) checkpoint, is refused at its commit,
// logs it, rolls back and starts again from the CLI's checkpoint. Each dispatch counted once.
TEST(DaemonSecondWriter, TheDaemonRefusedAfterTheCliMovedItsCheckpointResumesFromTheStore) {
    Daemon2 s;
    DaemonProcess d(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(startedReady(d));
    const std::string log = s.logs + "/job.log";
    const std::string all = launches(20000, 4242);
    const size_t half = all.find('\n', all.size() / 2) + 1;
    writeFile(log, all.substr(0, half));
    const std::string sum = "SELECT ifnull(sum(n), 0) FROM dispatch_counts";
    const int64_t first = static_cast<int64_t>(
        std::count(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(half), '\n') / 2);
    ASSERT_TRUE(eventually([&] { return storeCount(s.store, sum) == first; }, 10s))
        << storeCount(s.store, sum);
    std::this_thread::sleep_for(500ms);  // the idle flush committed: no transaction open

    ASSERT_EQ(::kill(d.pid(), SIGSTOP), 0);
    std::ofstream(log, std::ios::app) << all.substr(half) << std::flush;
    auto cli = run({GPUFAULT_BIN, "--db", s.store, "ingest", "-q", log}, 60);
    EXPECT_EQ(cli.status, 0) << cli.err;
    EXPECT_EQ(storeCount(s.store, sum), 20000);
    ASSERT_EQ(::kill(d.pid(), SIGCONT), 0);

    const std::string refused = "another ingest or gpufaultd is writing source " + log +
                                "; nothing of this batch was stored";
    EXPECT_TRUE(eventually([&] { return d.stderrText().find(refused) != std::string::npos; }, 10s))
        << d.stderrText();
    EXPECT_TRUE(eventually(
        [&] { return d.stderrText().find("retrying the store") != std::string::npos; }, 10s))
        << d.stderrText();
    // Retried: it follows the file again from the store's checkpoint and adds nothing.
    std::ofstream(log, std::ios::app) << launches(10, 4242) << std::flush;
    EXPECT_TRUE(eventually([&] { return storeCount(s.store, sum) == 20010; }, 10s))
        << storeCount(s.store, sum) << "\n"
        << d.stderrText();
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(storeCount(s.store, sum), 20010);
    stop(d);
}

// job.log renamed job.log.1 (rotation) stays the same stream, and its source row now says
// so: status, `gpufault show` and queries used to print the old name. Then a new job.log is
// a stream of its own.
TEST(DaemonSecondWriter, ARenamedFileIsStoredUnderItsNewName) {
    Daemon2 s;
    DaemonProcess d(GPUFAULTD_BIN, s.conf, s.dir.path());
    ASSERT_TRUE(startedReady(d));
    const std::string job = s.logs + "/job.log", rotated = s.logs + "/job.log.1";
    std::ofstream(job) << "starting\n" << kRocrFault << "\n" << std::flush;
    auto byPath = [&](const std::string& p) {
        return storeCount(s.store,
                          fmt::format("SELECT count(*) FROM evidence e JOIN sources s "
                                      "ON s.id = e.source_id WHERE s.path = '{}'",
                                      p));
    };
    ASSERT_TRUE(eventually([&] { return byPath(job) == 1; }, 10s)) << d.stderrText();
    const int64_t id = storeCount(s.store, "SELECT id FROM sources WHERE kind = 'file'");

    // Renamed alone, no line written: the row follows within a poll or two.
    ASSERT_EQ(::rename(job.c_str(), rotated.c_str()), 0);
    EXPECT_TRUE(eventually([&] { return byPath(rotated) == 1; }, 10s))
        << storeCount(s.store, "SELECT count(*) FROM sources") << "\n"
        << d.stderrText();
    EXPECT_EQ(storeCount(s.store, fmt::format("SELECT id FROM sources WHERE path = '{}'", rotated)),
              id);
    EXPECT_EQ(byPath(job), 0);

    // A new job.log: its own row; the rotated one keeps its name.
    std::ofstream(job) << "restarted\n" << kRocrFault << "\n" << std::flush;
    EXPECT_TRUE(eventually([&] { return byPath(job) == 1; }, 10s)) << d.stderrText();
    EXPECT_EQ(byPath(rotated), 1);
    auto shown = run({GPUFAULT_BIN,
                      "--db",
                      s.store,
                      "query",
                      "SELECT path FROM sources WHERE kind = 'file' ORDER BY id"});
    EXPECT_EQ(shown.out, "path\n" + rotated + "\n" + job + "\n") << shown.err;
    stop(d);
}
