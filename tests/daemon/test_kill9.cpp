// gpufaultd under SIGKILL. A writer that never waits for the daemon appends a ledger of lines
// while it rotates the log (by rename; copytruncate in tests of their own), truncates it,
// deletes old rotations and recreates it; the test kills the daemon with SIGKILL at random
// moments and restarts it each time, and freezes it (SIGSTOP) at times so that the writer runs
// ahead, as on a loaded machine. Then it checks the store against the ledger.
//
// The ledger: line N is `[ledger] name=L<N> ptr=<0x10000000 + N*0x1000> size=4096 pad=x…`,
// which the operand-probe parser stores as one row of `operands`, so the rows say exactly which
// lines are stored and how often.
//
// What the daemon can know, and therefore what is asserted:
//  * Duplicates: never. A line's records and its source's checkpoint are committed in one
//    transaction, and records are keyed by (source, line number), so a kill at any instant
//    neither loses a committed line nor stores one twice. Asserted for every line.
//  * A line that is still in a file when the writer stops (its file was never truncated nor
//    deleted) is stored: renamed files are found again by inode and first line, and reading
//    resumes at the committed checkpoint.
//  * A line that was removed (its file truncated or deleted) may be missing: the daemon may
//    not have looked yet, may have been dead, or may have read it and been killed before the
//    commit. A deleted (or renamed) file the daemon holds open stays readable through its
//    descriptor and is read to its end (DeletedFilesHeldOpenAreReadToTheEnd); a file deleted
//    while the daemon is dead, or before it opened it, is gone for it.
//  * Whatever was stored of a file, removed later or not, is a prefix of its lines: the
//    daemon reads in order, so a stored line after a missing one means it skipped part of a
//    file (as it did when a file was truncated and written past the old read offset between
//    two looks: TruncatedAndRegrownBetweenTwoLooksIsReadFromTheStart).
//  * Reported loss: on truncation the daemon counts lost_bytes += (the size at its last look −
//    its read offset), i.e. bytes it saw and had not read; a deleted file whose first line it
//    never saw complete counts its size; after a restart, a stream whose file is gone (or
//    truncated below its checkpoint) counts the size its last checkpoint recorded − that
//    checkpoint's offset (LostBytesTheDaemonSawAreCountedAlsoAcrossARestart in
//    test_hostile.cpp). What was written after its last look and truncated before its next
//    one, what a file deleted before it opened it held, what was written while it was dead,
//    and what it read but had not committed when it was killed, are all unknowable to it.
//    So reported ≤ missing ≤ removed, where missing is the
//    ledger's count of bytes removed unread (the removed lines the store lacks). Equality
//    holds when the daemon saw everything that was removed unread: asserted exactly in
//    PartialLineSeenThenTruncatedIsReportedLostExactly. (`status` shows only the files still
//    followed, and each daemon counts from 0: the test adds up, per life, the most it saw.)
//
// GPUFAULT_KILL9_SEED=<n> replays a seed (the writer's timing still varies); GPUFAULT_LONG=1
// kills 200 times instead of 50 (and runs 100 copytruncate periods instead of 20).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

using gpufault::testing::controlRequest;
using gpufault::testing::DaemonProcess;
using gpufault::testing::eventually;
using gpufault::testing::TempDir;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint64_t kPtrBase = 0x10000000, kPtrStep = 0x1000, kSize = 4096;

std::string ledgerLine(uint64_t n, size_t pad) {
    return fmt::format("[ledger] name=L{} ptr=0x{:x} size={} pad={}\n",
                       n,
                       kPtrBase + n * kPtrStep,
                       kSize,
                       std::string(pad, 'x'));
}

void sleepFor(std::chrono::microseconds d) {
    struct timespec ts {
        static_cast<time_t>(d.count() / 1000000), static_cast<long>(d.count() % 1000000) * 1000
    };
    nanosleep(&ts, nullptr);
}

bool writeAll(int fd, std::string_view s) {
    while (!s.empty()) {
        ssize_t n = ::write(fd, s.data(), s.size());
        if (n <= 0) return false;
        s.remove_prefix(static_cast<size_t>(n));
    }
    return true;
}

int64_t fileSize(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

/// A test directory with a daemon configuration: logs/app.log* tailed, kmsg off.
struct Setup {
    TempDir dir;
    std::string logs = dir.file("logs"), app = logs + "/app.log", store = dir.file("store.db"),
                sock = dir.file("ctl.sock"), config = dir.file("gpufaultd.conf");
    Setup() {
        std::filesystem::create_directories(logs);
        gpufault::testing::writeFile(config,
                                     fmt::format(R"([store]
path = "{}"
[kmsg]
enabled = false
[files]
globs = ["{}/app.log*"]
poll_interval_ms = 50
[control]
socket = "{}"
group = ""
)",
                                                 store,
                                                 logs,
                                                 sock));
    }
};

/// One stream as `status` shows it.
struct StreamView {
    std::string name, position;
    uint64_t lag = 0, lost = 0;
};

std::optional<std::vector<StreamView>> status(const std::string& sock) {
    std::string out = controlRequest(sock, "status", 2000ms);
    auto nl = out.find('\n');
    if (nl == std::string::npos) return std::nullopt;
    auto j = nlohmann::json::parse(out.substr(0, nl), nullptr, false);
    if (j.is_discarded() || !j.contains("streams")) return std::nullopt;
    std::vector<StreamView> v;
    for (const auto& s : j["streams"]) {
        if (s.value("source", "") != "file") continue;
        v.push_back({s.value("name", ""),
                     s.value("position", ""),
                     s.value("lag", uint64_t{0}),
                     s.value("lost_bytes", uint64_t{0})});
    }
    return v;
}

uint64_t lostOf(const std::vector<StreamView>& v) {
    uint64_t n = 0;
    for (const auto& s : v) n += s.lost;
    return n;
}

/// Every non-empty file under `logs` has a stream of that name whose committed position is
/// its size, and no stream lags: the daemon has read and committed everything (the writer
/// has stopped, so nothing changes any more).
bool caughtUp(const std::string& sock, const std::string& logs, std::string* why) {
    auto st = status(sock);
    if (!st) {
        *why = "no status";
        return false;
    }
    for (const auto& s : *st)
        if (s.lag != 0) {
            *why = fmt::format("{} lags {} bytes", s.name, s.lag);
            return false;
        }
    for (const auto& e : std::filesystem::directory_iterator(logs)) {
        int64_t size = fileSize(e.path().string());
        if (size <= 0) continue;
        bool ok = false;
        for (const auto& s : *st)
            ok =
                ok || (s.name == e.path().string() && s.position == fmt::format("offset {}", size));
        if (!ok) {
            *why =
                fmt::format("{} ({} bytes) is not committed to its end", e.path().string(), size);
            return false;
        }
    }
    return true;
}

/// After a start that did not become ready: how the daemon ended, if it did.
std::string exitText(DaemonProcess& d) {
    auto rc = d.waitExit(0ms);
    return rc ? fmt::format("the daemon exited with status {}", *rc) : "the daemon is running";
}

/// Stops the daemon (SIGSTOP) and waits until it is stopped: whatever happens next, it sees
/// only when continued. False when it is not running any more.
bool freeze(pid_t pid) {
    ::kill(pid, SIGSTOP);
    int st = 0;
    return ::waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st);
}
void thaw(pid_t pid) {
    ::kill(pid, SIGCONT);
}

/// name → (rows, ptr, end) of the ledger's operand rows.
struct Stored {
    int64_t rows = 0;
    uint64_t ptr = 0, end = 0;
};
std::map<uint64_t, Stored> storedLedger(const std::string& store, std::string* error) {
    std::map<uint64_t, Stored> out;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(store.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        *error = db ? sqlite3_errmsg(db) : "cannot open";
        sqlite3_close(db);
        return out;
    }
    sqlite3_stmt* s = nullptr;
    const char* sql =
        "SELECT name, count(*), min(ptr), max(ptr), min(end), max(end) FROM operands "
        "GROUP BY name";
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
        *error = sqlite3_errmsg(db);
        sqlite3_close(db);
        return out;
    }
    while (sqlite3_step(s) == SQLITE_ROW) {
        std::string name = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
        if (name.size() < 2 || name[0] != 'L' ||
            name.find_first_not_of("0123456789", 1) != std::string::npos) {
            *error += fmt::format("unexpected operand name '{}'; ", name);
            continue;
        }
        uint64_t n = std::stoull(name.substr(1));
        uint64_t lo = sqlite3_column_int64(s, 2), hi = sqlite3_column_int64(s, 3);
        uint64_t elo = sqlite3_column_int64(s, 4), ehi = sqlite3_column_int64(s, 5);
        if (lo != hi || elo != ehi) *error += fmt::format("L{}: rows disagree; ", n);
        out[n] = {sqlite3_column_int64(s, 1), lo, elo};
    }
    sqlite3_finalize(s);
    sqlite3_close(db);
    return out;
}

/// Where line L<n> is stored: "path (inode) line N; …" (for failure messages).
std::string whereStored(const std::string& store, uint64_t n) {
    sqlite3* db = nullptr;
    std::string out;
    if (sqlite3_open_v2(store.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* s = nullptr;
        const char* sql =
            "SELECT s.path, s.inode, o.line, s.offset FROM operands o JOIN sources s ON "
            "s.id = o.source_id WHERE o.name = ?1";
        if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK) {
            std::string name = fmt::format("L{}", n);
            sqlite3_bind_text(s, 1, name.c_str(), -1, SQLITE_TRANSIENT);
            while (sqlite3_step(s) == SQLITE_ROW)
                out += fmt::format("{} (inode {}, checkpoint {}) line {}; ",
                                   reinterpret_cast<const char*>(sqlite3_column_text(s, 0)),
                                   sqlite3_column_int64(s, 1),
                                   sqlite3_column_int64(s, 3),
                                   sqlite3_column_int64(s, 2));
        }
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return out;
}

// ---------------------------------------------------------------------------------------------
// The ledger and its writer.

/// The content of one inode between truncations: a file's life as the writer made it.
struct Segment {
    std::string file;             ///< its last name ("app.log", "app.log.3")
    std::string fate;             ///< "" = still there at the end, else how it was removed
    uint64_t bytes = 0;           ///< bytes written into it (an abandoned partial line included)
    std::vector<uint32_t> lines;  ///< complete ledger lines in it
};

struct Ledger {
    std::vector<uint32_t> bytes;  ///< per line: bytes written (a partial line: its part)
    std::vector<bool> complete;   ///< false: abandoned before its newline (never storable)
    std::vector<Segment> segments;
    std::map<std::string, int> ops;
    std::string error;  ///< a failed system call: the ledger is then not trusted
};

enum class Rotation { Rename, CopyTruncate };

/// Appends ledger lines to logs/app.log in small random bursts (sometimes a line in two
/// writes, so that the daemon can see a partial line) and, at random moments, rotates,
/// truncates, deletes the oldest rotation or recreates the file. It never waits for the daemon.
class Writer {
  public:
    Writer(std::string logs, uint64_t seed, Rotation rotation)
        : logs_(std::move(logs)), app_(logs_ + "/app.log"), rng_(seed), rotation_(rotation) {}
    ~Writer() { stop(); }

    void start() {
        openNew();
        thread_ = std::thread([this] { run(); });
    }
    /// Stops after the current burst (never inside a line) and closes the file.
    void stop() {
        stop_ = true;
        if (thread_.joinable()) thread_.join();
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }
    const Ledger& ledger() const { return l_; }

  private:
    uint64_t rand(uint64_t lo, uint64_t hi) {
        return std::uniform_int_distribution<uint64_t>(lo, hi)(rng_);
    }
    void fail(const std::string& what) {
        if (l_.error.empty()) l_.error = fmt::format("{}: {}", what, std::strerror(errno));
        stop_ = true;
    }
    void openNew() {
        fd_ = ::open(app_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd_ < 0) return fail("open " + app_);
        cur_ = static_cast<int>(l_.segments.size());
        l_.segments.push_back({"app.log", "", 0, {}});
    }
    /// The next line (with a random pad), not yet in the ledger.
    std::string make() { return ledgerLine(l_.bytes.size(), rand(0, 40)); }
    /// The next line was written into app.log: whole, or only its first `bytes` (abandoned).
    void record(size_t bytes, bool complete) {
        uint32_t n = static_cast<uint32_t>(l_.bytes.size());
        l_.bytes.push_back(static_cast<uint32_t>(bytes));
        l_.complete.push_back(complete);
        l_.segments[cur_].bytes += bytes;
        if (complete) l_.segments[cur_].lines.push_back(n);
    }

    void burst() {
        std::string buf;
        uint64_t n = rand(1, 48);
        for (uint64_t i = 0; i < n; ++i) {
            std::string line = make();
            record(line.size(), true);
            if (rand(0, 15) == 0) {
                // One line in two writes: the daemon may look in between.
                size_t cut = rand(1, line.size() - 1);
                buf += line.substr(0, cut);
                if (!writeAll(fd_, buf)) return fail("write");
                buf = line.substr(cut);
                sched_yield();
                continue;
            }
            buf += line;
        }
        if (!writeAll(fd_, buf)) fail("write");
    }

    void rotateRename() {
        std::string to = fmt::format("{}/app.log.{}", logs_, ++k_);
        if (::rename(app_.c_str(), to.c_str()) != 0) return fail("rename");
        ::close(fd_);
        l_.segments[cur_].file = to.substr(logs_.size() + 1);
        rotated_.push_back({to, cur_});
        openNew();
    }
    /// logrotate's copytruncate: copy, (the writer goes on), truncate.
    void rotateCopy() {
        std::string to = fmt::format("{}/app.log.{}", logs_, ++k_);
        std::string content = gpufault::testing::readFile(app_);
        int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (out < 0) return fail("open " + to);
        bool ok = writeAll(out, content);
        ::close(out);
        if (!ok) return fail("write " + to);
        int copy = static_cast<int>(l_.segments.size());
        l_.segments.push_back(
            {to.substr(logs_.size() + 1), "", content.size(), l_.segments[cur_].lines});
        rotated_.push_back({to, copy});
        if (rand(0, 1) == 0) burst();  // written between copy and truncation: lost with it
        truncate("copied then truncated");
    }
    void truncate(const char* fate) {
        if (::ftruncate(fd_, 0) != 0) return fail("ftruncate");
        l_.segments[cur_].fate = fate;
        cur_ = static_cast<int>(l_.segments.size());
        l_.segments.push_back({"app.log", "", 0, {}});
    }
    void deleteOldest() {
        if (rotated_.empty()) return;
        auto [path, seg] = rotated_.front();
        rotated_.pop_front();
        if (::unlink(path.c_str()) != 0) return fail("unlink " + path);
        l_.segments[seg].fate = "deleted";
        ++l_.ops["delete"];
    }
    void recreate() {
        if (::unlink(app_.c_str()) != 0) return fail("unlink " + app_);
        ::close(fd_);
        l_.segments[cur_].fate = "deleted (recreated)";
        openNew();
    }

    void op() {
        // The first five are one of each kind (in a random order); then at random.
        static const std::vector<std::string> kinds = {
            "rotate", "truncate", "truncate-partial", "delete", "recreate"};
        std::string kind;
        if (firsts_.empty() && l_.ops.empty()) {
            firsts_ = kinds;
            std::shuffle(firsts_.begin(), firsts_.end(), rng_);
        }
        if (!firsts_.empty()) {
            kind = firsts_.back();
            firsts_.pop_back();
        } else {
            uint64_t r = rand(0, 99);
            kind = r < 40   ? "rotate"
                   : r < 60 ? "truncate"
                   : r < 70 ? "truncate-partial"
                   : r < 85 ? "delete"
                            : "recreate";
        }
        if (kind == "delete" && rotated_.empty()) {
            if (l_.ops.count("delete") == 0) firsts_.insert(firsts_.begin(), "delete");
            kind = "rotate";
        }
        if (kind == "rotate") {
            rotation_ == Rotation::Rename ? rotateRename() : rotateCopy();
            while (rotated_.size() > 3) deleteOldest();
        } else if (kind == "truncate") {
            truncate("truncated");
        } else if (kind == "truncate-partial") {
            // A line abandoned half-written, left for a moment (the daemon may see it and
            // hold it as a partial line), then truncated away.
            std::string line = make();
            size_t cut = rand(1, line.size() - 1);
            record(cut, false);
            if (!writeAll(fd_, line.substr(0, cut))) return fail("write");
            sleepFor(std::chrono::microseconds(rand(0, 3000)));
            truncate("truncated (partial line)");
        } else if (kind == "delete") {
            deleteOldest();
            return;  // counted there (with the deletions that keep three rotations)
        } else {
            recreate();
        }
        ++l_.ops[kind];
    }

    void run() {
        auto nextOp = Clock::now() + std::chrono::milliseconds(rand(20, 200));
        while (!stop_) {
            burst();
            if (stop_) break;
            if (Clock::now() >= nextOp) {
                op();
                nextOp = Clock::now() + std::chrono::milliseconds(rand(20, 250));
            }
            sleepFor(std::chrono::microseconds(rand(0, 1500)));
        }
    }

    std::string logs_, app_;
    std::mt19937_64 rng_;
    Rotation rotation_;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    Ledger l_;
    int fd_ = -1, cur_ = -1, k_ = 0;
    std::deque<std::pair<std::string, int>> rotated_;
    std::vector<std::string> firsts_;
};

// ---------------------------------------------------------------------------------------------
// The scenario: kills while the writer writes, then a clean catch-up, then the ledger check.

struct Figures {
    uint64_t seed = 0;
    int kills = 0, freezes = 0;
    uint64_t written = 0, stored = 0, removedBytes = 0, missingBytes = 0, reportedLost = 0;
    uint64_t storedRemoved = 0;  ///< lines stored although their file was removed later
    double seconds = 0;
};

uint64_t seedFromEnv() {
    if (const char* s = std::getenv("GPUFAULT_KILL9_SEED"); s && *s)
        return std::strtoull(s, nullptr, 10);
    return std::random_device{}();
}

int killsFromEnv(int ci, int longRun) {
    const char* l = std::getenv("GPUFAULT_LONG");
    return l && std::string(l) == "1" ? longRun : ci;
}

/// `lives` periods of 0-700 ms; after each the daemon is killed (SIGKILL) and restarted when
/// `kill`, else it runs on. Three periods in four it is frozen (SIGSTOP) for 5-150 ms, as a
/// loaded machine may: the writer then runs ahead, and a truncated file may grow past the old
/// read offset before the daemon looks again.
void runScenario(Rotation rotation, int lives, bool kill, Figures* fig) {
    auto t0 = Clock::now();
    Setup s;
    fig->seed = seedFromEnv();
    fig->kills = kill ? lives : 0;
    std::printf("seed %llu (replay: GPUFAULT_KILL9_SEED=%llu), %d periods, %s\n",
                static_cast<unsigned long long>(fig->seed),
                static_cast<unsigned long long>(fig->seed),
                lives,
                kill ? "SIGKILL after each" : "no kill");
    std::mt19937_64 rng(fig->seed);
    auto rand = [&](uint64_t lo, uint64_t hi) {
        return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
    };

    Writer writer(s.logs, fig->seed ^ 0x9e3779b97f4a7c15ull, rotation);
    DaemonProcess d(GPUFAULTD_BIN, s.config, s.dir.path());
    writer.start();
    // lost_bytes is in memory and restarts from 0 with each daemon: keep the most each life
    // reported (a lower bound of what it counted: a file finished after its last look takes
    // its count with it, and the kill may follow a count we did not see).
    uint64_t lifeLost = 0;
    for (int i = 0; i < lives; ++i) {
        // One kill in ten lands during start-up (store open, migrations, first scan).
        bool early = kill && rand(0, 9) == 0;
        if (kill || i == 0) {
            ASSERT_TRUE(d.start());
            if (!early) {
                ASSERT_TRUE(d.waitNotify("READY=1", 30s))
                    << "start " << i << ": " << exitText(d) << "\n"
                    << d.stderrText();
            }
        }
        auto life = std::chrono::milliseconds(early ? rand(0, 30) : rand(0, 700));
        auto start = Clock::now(), end = start + life;
        std::optional<Clock::time_point> freezeAt;
        if (!early && rand(0, 3) != 0)
            freezeAt = start + std::chrono::milliseconds(rand(0, life.count()));
        do {
            if (auto st = early ? std::nullopt : status(s.sock))
                lifeLost = std::max(lifeLost, lostOf(*st));
            if (freezeAt && Clock::now() >= *freezeAt) {
                freezeAt.reset();
                ASSERT_TRUE(freeze(d.pid())) << "the daemon died\n" << d.stderrText();
                sleepFor(std::chrono::milliseconds(rand(5, 150)));
                thaw(d.pid());
                ++fig->freezes;
            }
            auto left = std::chrono::duration_cast<std::chrono::microseconds>(end - Clock::now());
            sleepFor(std::min<std::chrono::microseconds>(std::max(left, 0us), 25ms));
        } while (Clock::now() < end);
        if (kill) {
            d.kill9();
            fig->reportedLost += lifeLost;
            lifeLost = 0;
        }
    }
    writer.stop();
    const Ledger& l = writer.ledger();
    ASSERT_EQ(l.error, "") << "the writer failed: its ledger cannot be trusted";

    // The last life: the writer has stopped, so the daemon must catch up with every file and
    // commit it to its end; a clean SIGTERM must then exit 0.
    if (kill) {
        ASSERT_TRUE(d.start());
        ASSERT_TRUE(d.waitNotify("READY=1", 30s)) << exitText(d) << "\n" << d.stderrText();
    }
    std::string why;
    EXPECT_TRUE(eventually([&] { return caughtUp(s.sock, s.logs, &why); }, 60s)) << why << "\n"
                                                                                 << d.stderrText();
    if (auto st = status(s.sock)) lifeLost = std::max(lifeLost, lostOf(*st));
    fig->reportedLost += lifeLost;
    d.signal(SIGTERM);
    auto rc = d.waitExit(30s);
    ASSERT_TRUE(rc.has_value()) << "no exit after SIGTERM";
    EXPECT_EQ(*rc, 0) << d.stderrText();

    std::string dbError;
    auto stored = storedLedger(s.store, &dbError);
    EXPECT_EQ(dbError, "");

    // Which lines may be missing: those whose every copy was removed.
    size_t n = l.bytes.size();
    std::vector<bool> survives(n, false), removed(n, false);
    std::vector<int> segOf(n, -1);
    for (size_t i = 0; i < l.segments.size(); ++i) {
        const Segment& g = l.segments[i];
        if (g.fate.empty()) {
            for (auto x : g.lines) survives[x] = true;
        } else {
            fig->removedBytes += g.bytes;
            for (auto x : g.lines) removed[x] = true;
        }
        for (auto x : g.lines) segOf[x] = static_cast<int>(i);
    }
    fig->written = n;
    int shown = 0;
    auto show = [&](uint64_t x, const std::string& what) {
        if (shown++ >= 20) return;
        const Segment* g = x < n && segOf[x] >= 0 ? &l.segments[segOf[x]] : nullptr;
        ADD_FAILURE() << "L" << x << ": " << what << " (file " << (g ? g->file : "?")
                      << (g && !g->fate.empty() ? ", " + g->fate : std::string()) << ")";
    };
    for (const auto& [x, row] : stored) {
        if (x >= n) {
            show(x, "stored but never written");
            continue;
        }
        if (row.rows != 1)
            show(x,
                 fmt::format("stored {} times: {}",
                             row.rows,
                             shown < 20 ? whereStored(s.store, x) : std::string()));
        if (row.ptr != kPtrBase + x * kPtrStep || row.end != row.ptr + kSize)
            show(x, fmt::format("stored as ptr 0x{:x} end 0x{:x}", row.ptr, row.end));
        if (!l.complete[x]) show(x, "stored, but it was never complete");
    }
    for (size_t x = 0; x < n; ++x) {
        bool have = stored.count(x) > 0;
        if (have) {
            ++fig->stored;
            if (!survives[x]) ++fig->storedRemoved;
        } else {
            fig->missingBytes += l.bytes[x];
            if (survives[x])
                show(x, "missing, though its file was never truncated nor deleted");
            else if (l.complete[x] && !removed[x])
                show(x, "missing and in no file");
        }
    }
    // The daemon reads each file in order and commits a line with its checkpoint, so what it
    // stored of a file, removed later or not, is a prefix of the file's lines: a stored line
    // after a missing one means it skipped or misread part of the file.
    for (const Segment& g : l.segments) {
        std::optional<uint32_t> gap;
        for (auto x : g.lines) {
            if (!stored.count(x)) {
                if (!gap) gap = x;
            } else if (gap) {
                show(x, fmt::format("stored, but L{} before it in the same file is not", *gap));
                break;
            }
        }
    }
    fig->seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::string ops;
    for (const auto& [k, v] : l.ops) ops += fmt::format(" {} {}", k, v);
    std::printf(
        "kills %d, freezes %d, lines written %llu, stored %llu (%llu of them from "
        "files removed later), "
        "missing %llu; bytes removed %llu, removed unread (missing) %llu, reported lost %llu; "
        "ops:%s; %.1f s\n",
        fig->kills,
        fig->freezes,
        static_cast<unsigned long long>(fig->written),
        static_cast<unsigned long long>(fig->stored),
        static_cast<unsigned long long>(fig->storedRemoved),
        static_cast<unsigned long long>(fig->written - fig->stored),
        static_cast<unsigned long long>(fig->removedBytes),
        static_cast<unsigned long long>(fig->missingBytes),
        static_cast<unsigned long long>(fig->reportedLost),
        ops.c_str(),
        fig->seconds);

    // Reported ≤ removed unread ≤ removed (see the top of this file for why not equal).
    EXPECT_LE(fig->reportedLost, fig->missingBytes);
    EXPECT_LE(fig->missingBytes, fig->removedBytes);
    // The run exercised what it claims to.
    for (const char* k : {"rotate", "truncate", "truncate-partial", "delete", "recreate"})
        EXPECT_GT(l.ops.count(k) ? l.ops.at(k) : 0, 0) << k;
    EXPECT_GT(fig->stored, 0u);
}

}  // namespace

TEST(DaemonKill9, RenameRotationTruncationDeletionUnderRandomKills) {
    Figures fig;
    runScenario(Rotation::Rename, killsFromEnv(50, 200), true, &fig);
}

// copytruncate while the daemon runs (frozen at times, never killed): a copy resumes where
// the original was read, whether it appears before or after the truncation.
TEST(DaemonKill9, CopyTruncateRotationWithoutKills) {
    Figures fig;
    runScenario(Rotation::CopyTruncate, killsFromEnv(20, 100), false, &fig);
}

// KNOWN GAP (see daemon/sources/file_tail.h): a copy resumes after its original only while
// the daemon remembers the original (in memory). A copytruncate while the daemon is down, or
// whose original was finished in a transaction a kill undid, leaves a copy with a new inode
// and the original's first line that is read from its start: the lines already stored from
// the original are stored twice. Enable once the store keeps, with each checkpoint, a hash of
// the bytes before it (then a copy is recognised after a restart too).
TEST(DaemonKill9, DISABLED_CopyTruncateRotationUnderRandomKills) {
    Figures fig;
    runScenario(Rotation::CopyTruncate, killsFromEnv(20, 100), true, &fig);
}

// ---------------------------------------------------------------------------------------------
// Deterministic cases (the daemon is frozen with SIGSTOP while the files change).

namespace {

struct Quiet {
    Setup s;
    DaemonProcess d{GPUFAULTD_BIN, s.config, s.dir.path()};
    int fd = -1;
    uint64_t next = 0;
    Quiet() { fd = ::open(s.app.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644); }
    ~Quiet() {
        if (fd >= 0) ::close(fd);
    }
    bool start() { return d.start() && d.waitNotify("READY=1", 30s); }
    /// Appends lines next … next+count-1 to `f`.
    void lines(int f, int count) {
        std::string b;
        for (int i = 0; i < count; ++i) b += ledgerLine(next++, 8);
        ASSERT_TRUE(writeAll(f, b));
    }
    bool caughtUp() {
        std::string why;
        bool ok = eventually([&] { return ::caughtUp(s.sock, s.logs, &why); }, 30s);
        if (!ok) ADD_FAILURE() << why << "\n" << d.stderrText();
        return ok;
    }
    std::optional<StreamView> stream(const std::string& path) {
        if (auto st = status(s.sock))
            for (const auto& v : *st)
                if (v.name == path) return v;
        return std::nullopt;
    }
    std::map<uint64_t, Stored> stop() {
        d.signal(SIGTERM);
        auto rc = d.waitExit(30s);
        EXPECT_EQ(rc, std::optional<int>(0)) << d.stderrText();
        std::string err;
        auto out = storedLedger(s.store, &err);
        EXPECT_EQ(err, "");
        return out;
    }
};

std::string storedNames(const std::map<uint64_t, Stored>& m) {
    std::string s;
    for (const auto& [n, r] : m) s += fmt::format(" L{}x{}", n, r.rows);
    return s;
}

}  // namespace

// Truncated, then written past the old read offset before the daemon looked again: the size
// alone does not show the truncation; the changed first line does. Every line is read once.
TEST(DaemonKill9, TruncatedAndRegrownBetweenTwoLooksIsReadFromTheStart) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 10);
    ASSERT_TRUE(q.caughtUp());
    ASSERT_TRUE(freeze(q.d.pid()));
    ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    q.lines(q.fd, 30);  // three times the old offset
    thaw(q.d.pid());
    ASSERT_TRUE(q.caughtUp());
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lost, 0u);  // it had read everything it saw before the truncation
    auto stored = q.stop();
    std::string want;
    for (uint64_t n = 0; n < 40; ++n) want += fmt::format(" L{}x1", n);
    EXPECT_EQ(storedNames(stored), want);
}

// The daemon sees a partial line (it holds it until its newline), then the file is truncated
// while it is frozen, after the writer completed that line and wrote another. It can know the
// partial line's bytes only: lost_bytes equals them exactly; the rest is unknowable to it.
TEST(DaemonKill9, PartialLineSeenThenTruncatedIsReportedLostExactly) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 10);
    ASSERT_TRUE(q.caughtUp());
    std::string l10 = ledgerLine(10, 8), l11 = ledgerLine(11, 8);
    const size_t part = 20;
    ASSERT_TRUE(writeAll(q.fd, l10.substr(0, part)));
    ASSERT_TRUE(eventually(
        [&] {
            auto st = q.stream(q.s.app);
            return st && st->lag == part;
        },
        30s));
    ASSERT_TRUE(freeze(q.d.pid()));
    ASSERT_TRUE(writeAll(q.fd, l10.substr(part) + l11));
    ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    q.next = 12;
    q.lines(q.fd, 2);
    thaw(q.d.pid());
    ASSERT_TRUE(q.caughtUp());
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lost, part);  // removed unread: l10 + l11 bytes; knowable: the part it saw
    auto stored = q.stop();
    std::string want;
    for (uint64_t n : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13}) want += fmt::format(" L{}x1", n);
    EXPECT_EQ(storedNames(stored), want);
}

// Files the daemon holds open stay readable after a rename and after deletion: lines written
// to them while it was frozen are read to the end, and nothing is reported lost.
TEST(DaemonKill9, DeletedFilesHeldOpenAreReadToTheEnd) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 10);  // L0-9
    std::string rotated = q.s.app + ".1";
    ASSERT_EQ(::rename(q.s.app.c_str(), rotated.c_str()), 0);
    int fd2 = ::open(q.s.app.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd2, 0);
    q.lines(fd2, 10);  // L10-19
    ASSERT_TRUE(q.caughtUp());
    ASSERT_TRUE(freeze(q.d.pid()));
    q.lines(q.fd, 10);  // L20-29 into the rotated file, which is then deleted
    ASSERT_EQ(::unlink(rotated.c_str()), 0);
    q.lines(fd2, 10);  // L30-39 into app.log, which is then deleted and recreated
    ASSERT_EQ(::unlink(q.s.app.c_str()), 0);
    ::close(fd2);
    int fd3 = ::open(q.s.app.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd3, 0);
    q.lines(fd3, 10);  // L40-49
    ::close(fd3);
    thaw(q.d.pid());
    // The deleted files are finished once idle: then only the new app.log is followed.
    std::string why;
    ASSERT_TRUE(eventually(
        [&] {
            auto st = status(q.s.sock);
            return st && st->size() == 1 && ::caughtUp(q.s.sock, q.s.logs, &why);
        },
        30s))
        << why;
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lost, 0u);
    auto stored = q.stop();
    std::string want;
    for (uint64_t n = 0; n < 50; ++n) want += fmt::format(" L{}x1", n);
    EXPECT_EQ(storedNames(stored), want);
}

// ---------------------------------------------------------------------------------------------
// copytruncate: a copy resumes where its original was read (in memory: see file_tail.h).

namespace {

std::string every(uint64_t from, uint64_t to) {
    std::string s;
    for (uint64_t n = from; n < to; ++n) s += fmt::format(" L{}x1", n);
    return s;
}

/// logrotate's copytruncate, as the writer would see it: copy, then truncate.
void copyTruncate(Quiet& q, const std::string& to, bool truncate = true) {
    gpufault::testing::writeFile(to, gpufault::testing::readFile(q.s.app));
    if (truncate) {
        ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    }
}

}  // namespace

// The daemon had read app.log to its end; the copy appears with the truncation.
TEST(DaemonKill9, CopyTruncateContinuesWhereTheOriginalWasRead) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 10);  // L0-9, read from app.log
    ASSERT_TRUE(q.caughtUp());
    copyTruncate(q, q.s.app + ".1");
    q.lines(q.fd, 5);  // L10-14
    ASSERT_TRUE(q.caughtUp());
    EXPECT_EQ(storedNames(q.stop()), every(0, 15));
}

// The copy appears while app.log still has lines the daemon has not read, and more are
// written before the truncation: the copy waits (status says so), app.log is read on, and
// the copy resumes where app.log ended.
TEST(DaemonKill9, CopySeenBeforeTheTruncationWaitsForTheOriginal) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 10);  // L0-9
    ASSERT_TRUE(q.caughtUp());
    ASSERT_TRUE(freeze(q.d.pid()));
    q.lines(q.fd, 10);  // L10-19, unread
    std::string copy = q.s.app + ".1";
    copyTruncate(q, copy, false);
    q.lines(q.fd, 5);  // L20-24: in app.log only
    thaw(q.d.pid());
    ASSERT_TRUE(eventually(
        [&] {
            auto c = q.stream(copy);
            auto a = q.stream(q.s.app);
            return c && a && c->position == "waiting: a copy of a file still being read" &&
                   a->lag == 0;
        },
        30s));
    ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    q.lines(q.fd, 5);  // L25-29
    ASSERT_TRUE(q.caughtUp());
    EXPECT_EQ(storedNames(q.stop()), every(0, 30));
}

// Copied and truncated while the daemon was frozen, with lines it had not read: they are read
// from the copy, after what app.log gave.
TEST(DaemonKill9, CopyHoldsWhatTheOriginalHadNotGiven) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 10);  // L0-9
    ASSERT_TRUE(q.caughtUp());
    ASSERT_TRUE(freeze(q.d.pid()));
    q.lines(q.fd, 10);  // L10-19, unread, then copied
    copyTruncate(q, q.s.app + ".1");
    q.lines(q.fd, 3);  // L20-22
    thaw(q.d.pid());
    ASSERT_TRUE(q.caughtUp());
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lost, 0u);
    EXPECT_EQ(storedNames(q.stop()), every(0, 23));
}

// A partial line the daemon saw is counted lost at the truncation; the copy then holds it
// (completed) after all, so the count is taken back: lost_bytes is exact again.
TEST(DaemonKill9, CopyGivesBackWhatTheTruncationCountedLost) {
    Quiet q;
    ASSERT_TRUE(q.start());
    q.lines(q.fd, 10);  // L0-9
    ASSERT_TRUE(q.caughtUp());
    std::string l10 = ledgerLine(10, 8);
    ASSERT_TRUE(writeAll(q.fd, l10.substr(0, 20)));
    ASSERT_TRUE(eventually(
        [&] {
            auto st = q.stream(q.s.app);
            return st && st->lag == 20;
        },
        30s));
    ASSERT_TRUE(freeze(q.d.pid()));
    ASSERT_TRUE(writeAll(q.fd, l10.substr(20)));
    q.next = 11;
    q.lines(q.fd, 1);  // L11
    // The truncation is seen first (the copy is made after the daemon thaws).
    ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    q.lines(q.fd, 2);   // L12-13
    std::string saved;  // app.log as it was before the truncation
    for (uint64_t n = 0; n < 12; ++n) saved += ledgerLine(n, 8);
    thaw(q.d.pid());
    ASSERT_TRUE(eventually(
        [&] {
            auto st = q.stream(q.s.app);
            return st && st->lost == 20;
        },
        30s));
    gpufault::testing::writeFile(q.s.app + ".1", saved);
    ASSERT_TRUE(q.caughtUp());
    auto st = q.stream(q.s.app);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->lost, 0u);
    EXPECT_EQ(storedNames(q.stop()), every(0, 14));
}

// Another file that merely starts with the same line is no copy: it is read from its start,
// whether it appears while app.log is followed or after app.log was truncated.
TEST(DaemonKill9, ASameFirstLineIsNoCopy) {
    Quiet q;
    ASSERT_TRUE(q.start());
    ASSERT_TRUE(writeAll(q.fd, "=== job started ===\n"));
    q.lines(q.fd, 10);  // L0-9
    ASSERT_TRUE(q.caughtUp());
    std::string other = "=== job started ===\n";
    for (uint64_t n = 100; n < 105; ++n) other += ledgerLine(n, 8);
    gpufault::testing::writeFile(q.s.app + ".a", other);  // smaller than app.log
    ASSERT_TRUE(q.caughtUp());
    ASSERT_EQ(::ftruncate(q.fd, 0), 0);
    q.next = 10;
    q.lines(q.fd, 2);  // L10-11
    ASSERT_TRUE(q.caughtUp());
    other = "=== job started ===\n";
    for (uint64_t n = 200; n < 220; ++n) other += ledgerLine(n, 8);
    gpufault::testing::writeFile(q.s.app + ".b", other);  // larger than app.log had been
    ASSERT_TRUE(q.caughtUp());
    EXPECT_EQ(storedNames(q.stop()), every(0, 12) + every(100, 105) + every(200, 220));
}
