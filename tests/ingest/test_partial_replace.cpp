// Issue 3 "no loss, no duplicates": an ingest that ended only for now (finish(true): the file
// may grow) commits a checkpoint before its last lines (an open dispatch context) with
// sources.unended, after storing every line's rows. The next reader (gpufaultd taking over,
// or a daemon stream rebuilt after "database is locked" while a CLI ingest correlated) replaces
// those rows as it reads the lines again. A checkpoint it commits before it has read them all
// must leave the rows of the lines it has not read yet in the store, and unended set: the
// first version deleted every row from the resume line on at its first line, and a stop soon
// after committed max_line past a stretch with no rows (fault records lost; hostile review of
// DaemonCliBeside, helper 129).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/ingest/resumed_ingest.h"

namespace gpufault::testing {
namespace {

constexpr const char* kTid = "0x7f0a1b2c3d40";

/// 40 launches of one thread with a ROCr fault after every 4th (formats of FORMATS.md §2.1,
/// §3.2).
LineLog makeLog() {
    LineLog log;
    uint64_t us = 1000000000;
    for (int k = 1; k <= 40; ++k) {
        us += 37;
        log.addDispatch(us, kTid, k);
        if (k % 4 == 0)
            log.add(fmt::format("Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) "
                                "on address 0x7f64{:08x}. Reason: Page not present or supervisor "
                                "privilege.",
                                k * 0x1000));
    }
    return log;
}

/// Reader 1: every line of `log`, ended only for now (finish(true)), committed.
void endedForNow(ResumedStore& rs, const LineLog& log) {
    SourceState st = rs.state();
    ASSERT_TRUE(rs.store->begin());
    IngestSummary sum;
    StreamIngest stream(*rs.store, st, rs.window, sum);
    for (size_t i = 0; i < log.lines.size(); ++i) stream.feed(log.lines[i], log.offsets[i], false);
    stream.finish(true);
    ASSERT_TRUE(stream.checkpoint(log.bytes, false, log.bytes));
    ASSERT_TRUE(rs.store->commit());
    stream.committed();
}

TEST(PartialReplace, ACheckpointBeforeTheRereadEndsKeepsTheRowsNotReadAgain) {
    const LineLog log = makeLog();
    ResumedStore rs("/var/log/job.log", 8);
    endedForNow(rs, log);
    const SourceState after1 = rs.state();
    ASSERT_TRUE(after1.unended) << "the setup needs a checkpoint before the end";
    ASSERT_EQ(after1.max_line, static_cast<int64_t>(log.lines.size()));
    const auto faults = rs.ints("SELECT line FROM evidence WHERE kind = 'rocr_memory_fault'");
    ASSERT_EQ(faults.size(), 10u);
    const int64_t resume = after1.line;
    ASSERT_LT(resume + 2, static_cast<int64_t>(log.lines.size()) - 1);
    // Reader 2: the first two lines after the checkpoint, then a checkpoint (a stop).
    {
        SourceState st = rs.state();
        ASSERT_TRUE(rs.store->begin());
        IngestSummary sum;
        StreamIngest stream(*rs.store, st, rs.window, sum);
        for (size_t i = static_cast<size_t>(resume); i < static_cast<size_t>(resume) + 2; ++i)
            stream.feed(log.lines[i], log.offsets[i], false);
        auto r = stream.checkpoint(log.offsets[static_cast<size_t>(resume) + 2], false, log.bytes);
        ASSERT_TRUE(r) << r.error().message;
        ASSERT_TRUE(rs.store->commit());
        stream.committed();
    }
    EXPECT_EQ(rs.ints("SELECT line FROM evidence WHERE kind = 'rocr_memory_fault'"), faults);
    EXPECT_TRUE(rs.state().unended) << "rows past the re-read lines are still the earlier "
                                       "reader's: the next reader must replace them";
    // Reader 3: the rest, complete: the same records once each.
    rs.ingest(log, log.lines.size(), 1000);
    EXPECT_EQ(rs.ints("SELECT line FROM evidence WHERE kind = 'rocr_memory_fault'"), faults);
    EXPECT_FALSE(rs.state().unended);
}

// gpufaultd's file read replaces the rows of a whole chunk's lines at once (replaceThrough())
// and must then feed every one of them before it commits, whatever its poll budget says
// (replacedAhead()): also when the chunk reaches the earlier reader's last line, where the
// replacement is complete (replacing() false). The first fix reported nothing ahead once
// complete, and the budget stopped the read mid-chunk: DaemonCliBeside still lost a row in 3
// of 6 runs with a slow CLI correlation.
TEST(PartialReplace, RowsReplacedAheadAreReportedUntilTheirLinesAreFed) {
    const LineLog log = makeLog();
    ResumedStore rs("/var/log/job.log", 8);
    endedForNow(rs, log);
    const SourceState st = rs.state();
    ASSERT_TRUE(st.unended);
    const auto last = static_cast<uint64_t>(st.max_line);
    ASSERT_TRUE(rs.store->begin());
    IngestSummary sum;
    StreamIngest stream(*rs.store, st, rs.window, sum);
    ASSERT_TRUE(stream.replacing());
    EXPECT_FALSE(stream.replacedAhead());
    stream.replaceThrough(last);  // the chunk holds every line to the end
    EXPECT_FALSE(stream.replacing()) << "through the earlier reader's last line: complete";
    for (size_t i = static_cast<size_t>(st.line); i < log.lines.size(); ++i) {
        EXPECT_TRUE(stream.replacedAhead()) << "before line " << i + 1 << " was fed";
        stream.feed(log.lines[i], log.offsets[i], false);
    }
    EXPECT_FALSE(stream.replacedAhead());
    (void)rs.store->rollback();
}

}  // namespace
}  // namespace gpufault::testing
