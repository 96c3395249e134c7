// correlate() on records made up in memory, shaped to hit the joins that used to scan every
// record per record (docs/performance.md "gpufaultd: correlation off the loop"): 100 000
// segfault lines (pid, wall time, 8 devices) of one kernel log, 20 000 GPU resets after them and
// 5 000 cores of their pids. Usage: correlate_synthetic
#include <fmt/format.h>

#include <chrono>

#include "correlate/correlate.h"

using namespace gpufault;

static std::string wall(int s) {
    return fmt::format("2026-11-30T{:02}:{:02}:{:02}", (s / 3600) % 24, (s / 60) % 60, s % 60);
}

int main() {
    std::vector<StoredEvidence> ev;
    int64_t id = 0;
    for (int i = 0; i < 100000; ++i) {
        StoredEvidence s;
        s.id = ++id;
        s.source_id = 1;
        s.source = "kern.log";
        s.e.line = static_cast<uint64_t>(i) + 1;
        s.e.kind = Kind::CpuSegfault;
        s.e.pid = 1000 + i;
        s.e.time.wall = wall(i);
        s.e.pci = fmt::format("0000:{:02x}:00.0", i % 8);
        ev.push_back(s);
    }
    for (int i = 0; i < 20000; ++i) {
        StoredEvidence s;
        s.id = ++id;
        s.source_id = 1;
        s.source = "kern.log";
        s.e.line = 200000 + static_cast<uint64_t>(i);
        s.e.kind = Kind::GpuReset;
        s.e.pci = fmt::format("0000:{:02x}:00.0", i % 8);
        ev.push_back(s);
    }
    for (int i = 0; i < 5000; ++i) {
        StoredEvidence s;
        s.id = ++id;
        s.source_id = 2 + i;
        s.source = fmt::format("core.{}", i);
        s.e.line = 1;
        s.e.kind = Kind::Coredump;
        s.e.pid = 1000 + i * 20;
        s.e.time.wall = wall(i * 20);
        ev.push_back(s);
    }
    auto t = std::chrono::steady_clock::now();
    auto inc = correlate(ev);
    size_t rows = 0;
    for (const auto& x : inc) rows += x.members.size();
    fmt::print("{} records (5000 cores, 20000 resets): {} incidents, {} rows, correlate {:.3f} s\n",
               ev.size(),
               inc.size(),
               rows,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
    return 0;
}
