// Issue 3 "no loss, no duplicates": a runtime thread that went idle keeps its last dispatches
// held far behind the lines a checkpoint can re-read (the 65 536 remembered line positions).
// StreamIngest over real AMD_LOG_LEVEL=3 lines into a real store, stopped after committed
// checkpoints (what a kill leaves) and resumed from the store, must store the rows of one
// uninterrupted ingest: the idle thread's dispatches come back from held_dispatches.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/ingest/resumed_ingest.h"

namespace gpufault::testing {
namespace {

constexpr int kWindow = 32;  // dispatches per thread (96 held with the slack)
constexpr const char* kA = "0x7f0a1b2c3d40";
constexpr const char* kB = "0x7f0a1b2c4640";

struct Log : LineLog {
    uint64_t us = 1000000000;
    int kernel = 0;

    /// One launch of thread `tid` (pid 4242): launch, Arg0 and ShaderName lines.
    void dispatch(const char* tid) {
        us += 37;
        ++kernel;
        addDispatch(us, tid, kernel);
    }
    /// A HIP API error (a runtime_error record, folded with its repeats).
    void error() {
        us += 37;
        add(
            fmt::format(":3:hip_module.cpp           :85  : {:010} us: [pid:4242  tid:{}]  "
                        "hipModuleGetFunction: Returned hipErrorNotFound : ",
                        us,
                        kA));
    }
    /// A ROCr fault line (names no pid: flushes every window).
    void fault(int i) {
        add(
            fmt::format("Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on "
                        "address 0x7f64{:08x}. Reason: Page not present or supervisor privilege.",
                        i * 0x1000));
    }
};

/// gen2.py's stream, smaller: threads A and B 200 dispatches each, then A alone `alone`
/// times (3 lines each), a fault, both 100 more, a second fault.
Log idleThreadLog(int alone) {
    Log log;
    for (int i = 0; i < 200; ++i) {
        log.dispatch(kA);
        log.dispatch(kB);
    }
    for (int i = 0; i < alone; ++i) log.dispatch(kA);
    log.fault(1);
    for (int i = 0; i < 100; ++i) {
        log.dispatch(kA);
        log.dispatch(kB);
    }
    log.fault(2);
    return log;
}

/// idle.log's store, fed from its checkpoint (ingest() returns the line it began after and
/// the held_dispatches rows it wrote).
struct Opened : ResumedStore {
    Opened() : ResumedStore("idle.log", kWindow) {}
    std::vector<std::string> dispatches() {
        return rows(
            "SELECT d.line, d.runtime_us, d.pid, d.runtime_tid, k.name FROM dispatches "
            "d JOIN kernels k ON k.id = d.kernel_id ORDER BY d.line");
    }
    std::vector<std::string> operands() {
        return rows(
            "SELECT o.line, o.name, o.ptr, o.end, o.arg_ptr, o.runtime_us, d.line FROM "
            "operands o JOIN dispatches d ON d.id = o.dispatch_id ORDER BY o.line");
    }
    std::vector<std::string> counts() {
        return rows(
            "SELECT c.pid, k.name, c.n, c.first_line, c.last_line FROM dispatch_counts "
            "c JOIN kernels k ON k.id = c.kernel_id ORDER BY k.name");
    }
    int64_t heldRows() {
        auto r = rows("SELECT count(*) FROM held_dispatches");
        return r.empty() ? -1 : std::stoll(r[0]);
    }
};

/// The rows of thread `tid` among `rows` (dispatches()).
size_t ofThread(const std::vector<std::string>& rows, const char* tid) {
    return static_cast<size_t>(std::count_if(rows.begin(), rows.end(), [&](const std::string& r) {
        return r.find(tid) != std::string::npos;
    }));
}

TEST(HeldResume, AnIdleThreadsDispatchesSurviveStopsPastTheRememberedLines) {
    // A alone 25 000 times: 75 000 lines, past the 65 536 remembered line positions, so B's
    // held dispatches (its last, kernel 400, among them) are behind every later checkpoint.
    const Log log = idleThreadLog(25000);
    Opened clean;
    clean.ingest(log, log.lines.size(), 10000);
    const auto expected = clean.dispatches();
    // Fault 1: the last 32 of A and of B; fault 2 (a flood's, 600 lines later): the last 8 of
    // each; the end: the last 32 of each, those already stored not again.
    ASSERT_EQ(ofThread(expected, kB), 32u + 32u) << "the test's log is not what it means";
    ASSERT_EQ(clean.heldRows(), 0) << "a completed stream keeps no held dispatches";

    // Stopped (a kill after a commit) at 70 000, 72 000 and 74 000 lines of A alone, then
    // finished: each resume reads again from the remembered lines only.
    Opened resumed;
    uint64_t written = 0;
    const size_t aloneStart = 1200;
    for (size_t stop : {aloneStart + 70000, aloneStart + 72000, aloneStart + 74000}) {
        auto [after, w] = resumed.ingest(log, stop, 10000);
        written += w;
        EXPECT_GT(resumed.heldRows(), 0) << "after the stop at " << stop;
    }
    auto [readAgainAfter, w] = resumed.ingest(log, log.lines.size(), 10000);
    written += w;
    EXPECT_GT(readAgainAfter, static_cast<int64_t>(aloneStart))
        << "B's dispatches are read again: the test proves nothing";
    EXPECT_EQ(resumed.dispatches(), expected);
    EXPECT_EQ(resumed.operands(), clean.operands());
    EXPECT_EQ(resumed.counts(), clean.counts());
    EXPECT_EQ(resumed.heldRows(), 0);
    // B's 96 held slots once, A's only while idle: a few hundred rows, not a row a dispatch.
    EXPECT_LT(written, 400u);
}

TEST(HeldResume, StoppedBetweenTheFaultsAfterTheIdleThreadResumed) {
    // Stopped after B dispatched again (its loaded slots evicted and stored meanwhile): the
    // rows stay those of one ingest, and no held_dispatches row outlives its slot.
    const Log log = idleThreadLog(25000);
    Opened clean;
    clean.ingest(log, log.lines.size(), 10000);
    Opened resumed;
    resumed.ingest(log, 1200 + 74000, 10000);
    resumed.ingest(log, 1200 + 75000 + 1 + 300, 100);
    resumed.ingest(log, log.lines.size(), 10000);
    EXPECT_EQ(resumed.dispatches(), clean.dispatches());
    EXPECT_EQ(resumed.operands(), clean.operands());
    EXPECT_EQ(resumed.heldRows(), 0);
}

TEST(FloodKinds, AnErrorRecordDoesNotShrinkALaterFaultsWindow) {
    // The hostile review's case: a runtime_error 40 000 lines before a ROCr fault. The error
    // record opens an incident but is no memory fault; the fault stores its full window
    // whether the error record came at once (gpufaultd: the stream went quiet after it and
    // published it), at the end (gpufault ingest: folded records wait) or from the store (a
    // resumed stream; its fold closed kFoldLines after it, so it is not read again).
    Log log;
    for (int i = 0; i < 200; ++i) log.dispatch(kA);
    log.error();
    const size_t errorAt = log.lines.size() - 1;
    for (int i = 0; i < 40000; ++i) log.dispatch(kA);
    log.fault(1);
    const int64_t faultLine = static_cast<int64_t>(log.lines.size());
    for (int i = 0; i < 100; ++i) log.dispatch(kA);

    Opened ingestLike, daemonLike, resumed;
    ingestLike.ingest(log, log.lines.size(), 10000);
    daemonLike.ingest(log, log.lines.size(), 10000, errorAt);
    resumed.ingest(log, errorAt + 36000, 10000, errorAt);
    auto [readAgainAfter, w] = resumed.ingest(log, log.lines.size(), 10000);
    EXPECT_GT(readAgainAfter, static_cast<int64_t>(errorAt) + 1)
        << "the error line is read again: the test proves nothing";
    for (Opened* o : {&ingestLike, &daemonLike, &resumed})
        ASSERT_EQ(o->rows("SELECT line FROM evidence WHERE kind = 'runtime_error'"),
                  std::vector<std::string>{fmt::format("{}|", errorAt + 1)});
    // The rows after the error line (the error's own window differs: emitted at once it finds
    // the 32 dispatches before it, emitted at the end of the stream they are gone).
    auto after = [&](Opened& o) {
        auto rows = o.dispatches();
        std::erase_if(rows, [&](const std::string& r) {
            return std::stoll(r) <= static_cast<int64_t>(errorAt) + 1;
        });
        return rows;
    };
    const auto rows = after(ingestLike);
    const auto before = std::count_if(
        rows.begin(), rows.end(), [&](const std::string& r) { return std::stoll(r) < faultLine; });
    EXPECT_EQ(before, kWindow);
    EXPECT_EQ(after(daemonLike), rows);
    EXPECT_EQ(after(resumed), rows);
}

}  // namespace
}  // namespace gpufault::testing
