// The kill9 harness (see kill9_harness.h): the ledger, its writer, the random-kill scenario.
#include "tests/daemon/kill9_harness.h"
#include "tests/daemon/kill9_writer.h"

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


namespace gpufault::testing::kill9 {

using Clock = std::chrono::steady_clock;

namespace {
constexpr uint64_t kPtrBase = 0x10000000, kPtrStep = 0x1000, kSize = 4096;
}  // namespace


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

namespace {
int64_t fileSize(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}
}  // namespace

Setup::Setup() {
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

namespace {
uint64_t lostOf(const std::vector<StreamView>& v) {
    uint64_t n = 0;
    for (const auto& s : v) n += s.lost;
    return n;
}
}  // namespace

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

namespace {
/// After a start that did not become ready: how the daemon ended, if it did.
std::string exitText(DaemonProcess& d) {
    auto rc = d.waitExit(0ms);
    return rc ? fmt::format("the daemon exited with status {}", *rc) : "the daemon is running";
}
}  // namespace

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

uint64_t storedLost(const std::string& store, std::string* error) {
    sqlite3* db = nullptr;
    uint64_t n = 0;
    if (sqlite3_open_v2(store.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
        *error = db ? sqlite3_errmsg(db) : "cannot open";
        sqlite3_close(db);
        return 0;
    }
    sqlite3_stmt* s = nullptr;
    const char* sql = "SELECT ifnull(sum(lost_bytes), 0) FROM sources WHERE kind = 'file'";
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        n = static_cast<uint64_t>(sqlite3_column_int64(s, 0));
    else
        *error = sqlite3_errmsg(db);
    sqlite3_finalize(s);
    sqlite3_close(db);
    return n;
}

namespace {
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
}  // namespace


// ---------------------------------------------------------------------------------------------
// The scenario: kills while the writer writes, then a clean catch-up, then the ledger check.

namespace {
uint64_t seedFromEnv() {
    if (const char* s = std::getenv("GPUFAULT_KILL9_SEED"); s && *s)
        return std::strtoull(s, nullptr, 10);
    return std::random_device{}();
}
}  // namespace

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
    std::fflush(stdout);
    // Every failure names the seed (replay: GPUFAULT_KILL9_SEED).
    SCOPED_TRACE(fmt::format("seed {}", fig->seed));
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
    if (auto st = status(s.sock)) fig->statusLost = lostOf(*st);
    d.signal(SIGTERM);
    auto rc = d.waitExit(30s);
    ASSERT_TRUE(rc.has_value()) << "no exit after SIGTERM";
    EXPECT_EQ(*rc, 0) << d.stderrText();

    std::string dbError;
    auto stored = storedLedger(s.store, &dbError);
    fig->reportedLost = storedLost(s.store, &dbError);
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
        "missing %llu; bytes removed %llu, removed unread (missing) %llu, reported lost %llu "
        "(status at the end: %llu); ops:%s; %.1f s\n",
        fig->kills,
        fig->freezes,
        static_cast<unsigned long long>(fig->written),
        static_cast<unsigned long long>(fig->stored),
        static_cast<unsigned long long>(fig->storedRemoved),
        static_cast<unsigned long long>(fig->written - fig->stored),
        static_cast<unsigned long long>(fig->removedBytes),
        static_cast<unsigned long long>(fig->missingBytes),
        static_cast<unsigned long long>(fig->reportedLost),
        static_cast<unsigned long long>(fig->statusLost),
        ops.c_str(),
        fig->seconds);

    // `status` shows the store's totals (before, each daemon's own counts since it started).
    EXPECT_EQ(fig->statusLost, fig->reportedLost);
    // Reported ≤ removed unread ≤ removed (see the top of this file for why not equal).
    EXPECT_LE(fig->reportedLost, fig->missingBytes);
    EXPECT_LE(fig->missingBytes, fig->removedBytes);
    // The run exercised what it claims to.
    for (const char* k : {"rotate", "truncate", "truncate-partial", "delete", "recreate"})
        EXPECT_GT(l.ops.count(k) ? l.ops.at(k) : 0, 0) << k;
    EXPECT_GT(fig->stored, 0u);
}


Quiet::Quiet() {
    fd = ::open(s.app.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}
Quiet::~Quiet() {
    if (fd >= 0) ::close(fd);
}
void Quiet::lines(int f, int count) {
    std::string b;
    for (int i = 0; i < count; ++i) b += ledgerLine(next++, 8);
    ASSERT_TRUE(writeAll(f, b));
}
bool Quiet::caughtUp() {
    std::string why;
    bool ok = eventually([&] { return kill9::caughtUp(s.sock, s.logs, &why); }, 30s);
    if (!ok) ADD_FAILURE() << why << "\n" << d.stderrText();
    return ok;
}
std::optional<StreamView> Quiet::stream(const std::string& path) {
    if (auto st = status(s.sock))
        for (const auto& v : *st)
            if (v.name == path) return v;
    return std::nullopt;
}
bool Quiet::startWith(int count) {
    if (!start()) return false;
    lines(fd, count);
    return caughtUp();
}
bool Quiet::shows(const std::string& path, uint64_t StreamView::*field, uint64_t bytes) {
    return eventually(
        [&] {
            auto st = stream(path);
            return st && (*st).*field == bytes;
        },
        30s);
}
bool Quiet::copyWaitsForAFirstLine(const std::string& copy) {
    const std::string app = fmt::format("offset {}", ::lseek(fd, 0, SEEK_END));
    return eventually(
        [&] {
            auto a = stream(s.app);
            auto c = stream(copy);
            return a && a->position == app && c && c->position == "waiting for a first line";
        },
        30s);
}
bool Quiet::copyWaits(const std::string& copy, bool at_end) {
    return eventually(
        [&] {
            auto c = stream(copy);
            auto a = stream(s.app);
            // status names the original the copy's bytes are read from
            if (!c || !a || !c->position.starts_with("waiting: a copy of " + s.app + " (") ||
                a->lag != 0)
                return false;
            return !at_end || a->position == fmt::format("offset {}", ::lseek(fd, 0, SEEK_END));
        },
        30s);
}
std::map<uint64_t, Stored> Quiet::stop() {
    d.signal(SIGTERM);
    auto rc = d.waitExit(30s);
    EXPECT_EQ(rc, std::optional<int>(0)) << d.stderrText();
    std::string err;
    auto out = storedLedger(s.store, &err);
    EXPECT_EQ(err, "");
    return out;
}

uint64_t Quiet::lostInStore() {
    std::string err;
    uint64_t n = storedLost(s.store, &err);
    EXPECT_EQ(err, "");
    return n;
}

std::string storedNames(const std::map<uint64_t, Stored>& m) {
    std::string s;
    for (const auto& [n, r] : m) s += fmt::format(" L{}x{}", n, r.rows);
    return s;
}

std::string every(uint64_t from, uint64_t to) {
    std::string s;
    for (uint64_t n = from; n < to; ++n) s += fmt::format(" L{}x1", n);
    return s;
}

}  // namespace gpufault::testing::kill9
