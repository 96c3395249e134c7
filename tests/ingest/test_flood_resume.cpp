// The flood rule (StoreSink: a fault less than FloodRule::lines lines after the previous fault
// that flushes the same window stores a short window) across a resume: StreamIngest over real
// AMD_LOG_LEVEL=3 lines into a real store, stopped after a committed checkpoint (what a kill
// leaves) and resumed from the store's checkpoint, must store the rows of one uninterrupted
// ingest, whether the previous fault lies before the lines read again or among them.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/ingest/resumed_ingest.h"

namespace gpufault::testing {
namespace {

constexpr int kWindow = 32;  // dispatches per thread; a flood's faults store the last 8

/// A log of one HIP thread (pid 4242): `dispatches` launches of 3 lines each (launch, Arg0,
/// ShaderName), with a ROCr fault line (no pid) after the dispatches numbered in `faultsAfter`.
struct Log : LineLog {
    std::vector<uint64_t> faultLines;
    std::vector<uint64_t> shaderLines;  ///< line of each dispatch's ShaderName (its row's line)
};

Log makeLog(int dispatches, const std::vector<int>& faultsAfter) {
    Log log;
    for (int i = 1; i <= dispatches; ++i) {
        log.addDispatch(1000000000ull + static_cast<uint64_t>(i) * 37, "0x7f0a1b2c3d40", i);
        log.shaderLines.push_back(log.lines.size());
        for (int f : faultsAfter)
            if (f == i) {
                log.add(fmt::format(
                    "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on "
                    "address 0x7f64{:08x}. Reason: Page not present or supervisor privilege.",
                    i * 0x1000));
                log.faultLines.push_back(log.lines.size());
            }
    }
    return log;
}

/// flood.log's store, fed from its checkpoint.
struct Opened : ResumedStore {
    Opened() : ResumedStore("flood.log", kWindow) {}
    /// Lines [state().line, stop) of `log` (0-based indexes), from the committed checkpoint,
    /// committed with a checkpoint every `every` lines; the stream finished (complete) when
    /// `stop` is its end. Returns the line the ingest began after (the checkpoint's).
    int64_t ingest(const Log& log, size_t stop, size_t every) {
        return ResumedStore::ingest(log, stop, every).began;
    }
    std::vector<int64_t> dispatchLines() {
        return ints("SELECT line FROM dispatches ORDER BY line");
    }
};

/// The ShaderName lines of dispatches [first, last] (1-based), as stored dispatch rows.
std::vector<int64_t> rowsOf(const Log& log, int first, int last) {
    std::vector<int64_t> out;
    for (int i = first; i <= last; ++i)
        out.push_back(static_cast<int64_t>(log.shaderLines[static_cast<size_t>(i - 1)]));
    return out;
}

std::vector<int64_t> joined(std::vector<std::vector<int64_t>> parts) {
    std::vector<int64_t> out;
    for (auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
}

/// The checkpoint after `stop` lines, then the rest from it: the re-read start it leaves.
struct Resumed {
    std::vector<int64_t> rows, operands;
    int64_t readAgainAfter = 0;
};

Resumed stoppedAndResumed(const Log& log, size_t stop) {
    Opened o;
    o.ingest(log, stop, 1000);
    Resumed r;
    r.readAgainAfter = o.ingest(log, log.lines.size(), 1000);
    r.rows = o.dispatchLines();
    r.operands = o.ints("SELECT line FROM operands ORDER BY line");
    EXPECT_EQ(o.state().complete, true);
    return r;
}

TEST(FloodResume, PreviousFaultBeforeTheLinesReadAgain) {
    // Faults after dispatches 100 and 350 (~750 lines apart: a flood); stopped after
    // dispatch 300, whose oldest held dispatch (window 32 + 64 slack) is ~204: the first fault
    // is not read again, only found in the store.
    const Log log = makeLog(400, {100, 350});
    Opened clean;
    clean.ingest(log, log.lines.size(), 1000);
    // The first fault: the 32 before it; the second, a flood's: the last 8; the end: the last 32.
    const std::vector<int64_t> expected =
        joined({rowsOf(log, 69, 100), rowsOf(log, 343, 350), rowsOf(log, 369, 400)});
    ASSERT_EQ(clean.dispatchLines(), expected);

    const Resumed r = stoppedAndResumed(log, log.shaderLines[299]);
    EXPECT_GT(r.readAgainAfter, static_cast<int64_t>(log.faultLines[0]))
        << "the first fault is read again: the test proves nothing";
    EXPECT_LT(r.readAgainAfter, static_cast<int64_t>(log.shaderLines[342]));
    EXPECT_EQ(r.rows, expected);
    EXPECT_EQ(r.operands, clean.ints("SELECT line FROM operands ORDER BY line"));
}

TEST(FloodResume, PreviousFaultReadAgain) {
    // Stopped after dispatch 120: the held dispatches reach back before the first fault
    // (after dispatch 100), which is read and stored again; the second is still a flood's.
    const Log log = makeLog(400, {100, 350});
    Opened clean;
    clean.ingest(log, log.lines.size(), 1000);
    const Resumed r = stoppedAndResumed(log, log.shaderLines[119]);
    EXPECT_LT(r.readAgainAfter, static_cast<int64_t>(log.faultLines[0]))
        << "the first fault is not read again: the test proves nothing";
    EXPECT_EQ(r.rows, joined({rowsOf(log, 69, 100), rowsOf(log, 343, 350), rowsOf(log, 369, 400)}));
    EXPECT_EQ(r.rows, clean.dispatchLines());
    EXPECT_EQ(r.operands, clean.ints("SELECT line FROM operands ORDER BY line"));
}

TEST(FloodResume, FaultsFartherApartThanTheSpanStoreFullWindowsAfterAResume) {
    // Faults after dispatches 100 and 22 000 (~65 700 lines apart, past the span of 65 536):
    // the second stores its full window, resumed or not; the stored first fault is no flood.
    const Log log = makeLog(22100, {100, 22000});
    ASSERT_GT(log.faultLines[1] - log.faultLines[0], 65536u);
    const std::vector<int64_t> expected =
        joined({rowsOf(log, 69, 100), rowsOf(log, 21969, 22000), rowsOf(log, 22069, 22100)});
    Opened clean;
    clean.ingest(log, log.lines.size(), 10000);
    ASSERT_EQ(clean.dispatchLines(), expected);
    const Resumed r = stoppedAndResumed(log, log.shaderLines[21900]);
    EXPECT_GT(r.readAgainAfter, static_cast<int64_t>(log.faultLines[0]));
    EXPECT_EQ(r.rows, expected);
}

}  // namespace
}  // namespace gpufault::testing
