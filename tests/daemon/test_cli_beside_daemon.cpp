// Issue 3, hostile review (ing3b, HIGH 1): `gpufault ingest` run again and again beside a
// gpufaultd that follows the same growing file. A writer appends AMD_LOG_LEVEL dispatches, HIP
// errors that fold and now and then a ROCr fault, sometimes a line in two writes (a reader may
// see it without its newline), and keeps a ledger of each line's text. The CLI read on past
// such a line when the file had grown meanwhile: the rest of the line became a line of its own
// and every later row named the wrong line (seeds 9 and 10 of the old repro: 180–288 rows).
// Asserted: every stored record and dispatch row names the line its text is on, each fault is
// stored once, and the stream stays one source.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/followed_log.h"
#include "tests/daemon/kill9_harness.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

/// Appends lines to `path` in random bursts (half of them longer and written in small pieces),
/// pausing at times so that a CLI ingest can commit; `ledger` gets each line's text (line N at
/// index N - 1). Runs until `stop`.
void writeLog(const std::string& path,
              uint64_t seed,
              const std::atomic<bool>& stop,
              std::vector<std::string>& ledger,
              std::string& error) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        error = "open " + path;
        return;
    }
    std::mt19937_64 rng(seed);
    auto rand = [&](uint64_t lo, uint64_t hi) {
        return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
    };
    uint64_t us = 1000000000;
    auto add = [&](std::string& buf, std::string text) {
        buf += text + "\n";
        ledger.push_back(std::move(text));
    };
    while (!stop) {
        std::string buf;
        const bool pieces = rand(0, 1) == 0;
        for (uint64_t i = pieces ? rand(50, 400) : rand(1, 30); i > 0; --i) {
            us += 37;
            const size_t n = ledger.size() + 1;  // the number of the next line
            const uint64_t r = rand(0, 999);
            if (r < 600) {
                add(buf,
                    fmt::format(":3:hip_module.cpp           :669 : {:010} us: [pid:4242  "
                                "tid:0x7f0a1b2c3d40]  hipLaunchKernel ( 0x7056a988e9d0, "
                                "{{1048576,1,1}}, {{256,1,1}}, 0x70536bbc2fa0, 0, stream:<null> ) ",
                                us));
                add(buf,
                    fmt::format(":3:rocvirtual.cpp           :3016: {:010} us: [pid:4242  "
                                "tid:0x7f0a1b2c3d40] ShaderName : kernel_L{}",
                                us + 2,
                                n + 1));
            } else if (r < 850) {
                add(buf,
                    fmt::format(":3:hip_module.cpp           :85  : {:010} us: [pid:4242  "
                                "tid:0x7f0a1b2c3d40]  hipModuleGetFunction: Returned "
                                "hipErrorNotFound : ",
                                us));
            } else if (r < 860) {
                add(buf,
                    fmt::format("Memory access fault by GPU node-1 (Agent handle: "
                                "0x55d5b2d4a780) on address 0x{:x}. Reason: Page not present "
                                "or supervisor privilege.",
                                0x7f6400000000ull + n * 0x1000));
            } else {
                add(buf, fmt::format("step {} loss {:.3f}", n, 1.0 / static_cast<double>(n)));
            }
        }
        // Half the bursts in pieces of 1-64 bytes back to back (unbuffered stderr writes): a
        // reader at the end of the file finds a line without its newline, and its end comes
        // microseconds later (the ingest read on, HIGH 1).
        bool ok = true;
        for (size_t at = 0; ok && at < buf.size();) {
            size_t len = pieces ? std::min<size_t>(rand(1, 64), buf.size() - at) : buf.size();
            ok = kill9::writeAll(fd, std::string_view(buf).substr(at, len));
            at += len;
        }
        if (!ok) {
            error = "write " + path;
            break;
        }
        kill9::sleepFor(
            std::chrono::microseconds(rand(0, 9) == 0 ? rand(0, 300000) : rand(0, 10000)));
    }
    ::close(fd);
}

}  // namespace

TEST(DaemonCliBeside, EveryRowNamesItsLineWhileCliIngestsRunBesideTheDaemon) {
    FollowedLog f;
    f.writeConfig("*.log", 20);
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    std::vector<std::string> ledger;
    std::string error;
    std::atomic<bool> stop{false};
    std::thread writer([&] { writeLog(f.log, 9, stop, ledger, error); });
    // CLI ingests one after the other while the writer runs (6 s of writing; no timing is
    // asserted), and one after it stopped.
    int ingests = 0, stored = 0;
    for (auto end = std::chrono::steady_clock::now() + 6s; std::chrono::steady_clock::now() < end;
         ++ingests) {
        auto r = run({GPUFAULT_BIN, "--db", f.store, "ingest", "-q", f.log}, 120);
        // Refused when the daemon committed since it read the checkpoint (it says so).
        if (r.status == 0)
            ++stored;
        else
            EXPECT_NE(r.err.find("another ingest or gpufaultd is writing"), std::string::npos)
                << r.err;
    }
    stop = true;
    writer.join();
    ASSERT_EQ(error, "");
    auto last = run({GPUFAULT_BIN, "--db", f.store, "ingest", "-q", f.log}, 120);
    EXPECT_TRUE(last.status == 0 ||
                last.err.find("another ingest or gpufaultd is writing") != std::string::npos)
        << last.err;
    EXPECT_GT(stored, 0) << ingests << " ingests, none stored anything";
    // Every line stored: the last reader (the daemon, or the last ingest) stored the file's
    // last line. Its checkpoint may stay before the end, at the oldest thing a reader that goes
    // on must read again (a fold, a held dispatch: ing3a), but it names a line start.
    ASSERT_TRUE(storeReaches(
        d,
        f.store,
        "SELECT count(*) FROM sources WHERE max_line = " + std::to_string(ledger.size()),
        1,
        60s));
    ASSERT_TRUE(stoppedCleanly(d));

    EXPECT_EQ(storeCount(f.store, "SELECT count(*) FROM sources"), 1);
    const int64_t atLine = storeCount(f.store, "SELECT line FROM sources");
    ASSERT_GE(atLine, 0);
    ASSERT_LE(atLine, static_cast<int64_t>(ledger.size()));
    int64_t lineStart = 0;
    for (int64_t i = 0; i < atLine; ++i)
        lineStart += static_cast<int64_t>(ledger[static_cast<size_t>(i)].size()) + 1;
    EXPECT_EQ(storeCount(f.store, "SELECT offset FROM sources"), lineStart)
        << "the checkpoint's offset is not the start of line " << atLine + 1;
    // Every record names the line its text is on.
    auto records = storeRows(f.store, "SELECT line, raw FROM evidence ORDER BY line", 2);
    ASSERT_FALSE(records.empty());
    int wrong = 0;
    std::string first;
    for (const auto& row : records) {
        size_t bar = row.find('|');
        uint64_t line = std::stoull(row.substr(0, bar));
        std::string raw = row.substr(bar + 1);
        if (line < 1 || line > ledger.size() || ledger[line - 1] != raw) {
            if (wrong++ == 0)
                first =
                    fmt::format("line {}: stored \"{}\", the ledger has \"{}\"",
                                line,
                                raw,
                                line >= 1 && line <= ledger.size() ? ledger[line - 1] : "(none)");
        }
    }
    EXPECT_EQ(wrong, 0) << wrong << " of " << records.size() << " records; first " << first;
    // Every dispatch row names its ShaderName line.
    auto dispatches = storeRows(
        f.store, "SELECT d.line, k.name FROM dispatches d JOIN kernels k ON k.id = d.kernel_id", 2);
    int wrongDispatches = 0;
    for (const auto& row : dispatches) {
        size_t bar = row.find('|');
        uint64_t line = std::stoull(row.substr(0, bar));
        std::string suffix = "ShaderName : " + row.substr(bar + 1);
        if (line < 1 || line > ledger.size() || !ledger[line - 1].ends_with(suffix))
            ++wrongDispatches;
    }
    EXPECT_EQ(wrongDispatches, 0) << "of " << dispatches.size() << " dispatch rows";
    // Each fault once.
    int64_t faults = std::count_if(ledger.begin(), ledger.end(), [](const std::string& l) {
        return l.starts_with("Memory access fault");
    });
    EXPECT_EQ(storeCount(f.store, "SELECT count(*) FROM evidence WHERE raw LIKE 'Memory access%'"),
              faults);
    EXPECT_EQ(storeCount(f.store,
                         "SELECT count(DISTINCT line) FROM evidence WHERE raw LIKE "
                         "'Memory access%'"),
              faults);
}
