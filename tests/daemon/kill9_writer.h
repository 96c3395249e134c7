// The kill9 ledger writer: appends ledger lines to logs/app.log in random bursts and rotates
// (by rename or copytruncate), truncates, deletes and recreates it, never waiting for the
// daemon; the Ledger says which line went into which file and what became of each file.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon/kill9_harness.h"

namespace gpufault::testing::kill9 {

using Clock = std::chrono::steady_clock;

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

}  // namespace gpufault::testing::kill9
