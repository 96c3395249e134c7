// Hostile review 3, MEDIUM 4: a folded runtime record (identical errors counted into one) held
// a stream's checkpoint at its first line for the life of the file, so a restart read the whole
// file again. A fold now closes kFoldLines (32 768) after its first line. StreamIngest over real
// lines into a real store: the committed checkpoint follows the stream, and a stream stopped
// after committed checkpoints (what a kill leaves) and resumed from the store stores the rows of
// one uninterrupted ingest, whenever it commits.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/common/log_line.h"
#include "tests/ingest/resumed_ingest.h"

namespace gpufault::testing {
namespace {

/// 100 000 lines: a HIP API error (hip_log) at lines 1, 20 000, 50 000, 60 000 and 95 000, a
/// PyTorch `HIP error:` line (runtime_error's matcher) at 10 000 and 45 000; the others are
/// program output.
struct Log : LineLog {
    Log() {
        for (uint64_t n = 1; n <= 100000; ++n) {
            std::string s;
            if (n == 1 || n == 20000 || n == 50000 || n == 60000 || n == 95000)
                s = fmt::format(
                    ":3:hip_module.cpp           :85  : {:010} us: [pid:4242  tid:0x7f0a1b2c3d40]"
                    "  hipModuleGetFunction: Returned hipErrorNotFound : ",
                    1000000000 + n);
            else if (n == 10000 || n == 45000)
                s = "RuntimeError: HIP error: an illegal memory access was encountered";
            else
                s = fmt::format("step {} loss {:.3f}", n, 1.0 / static_cast<double>(n));
            add(std::move(s));
        }
    }
};

/// fold.log's store, fed from its checkpoint (window 64).
struct Opened : ResumedStore {
    Opened() : ResumedStore("fold.log", 64) {}
    /// Lines from the committed checkpoint up to line index `stop` (exclusive), committed every
    /// `every` lines and at `stop`; finished (complete) at the log's end. Returns the line the
    /// ingest began after.
    int64_t ingest(const Log& log, size_t stop, size_t every) {
        return ResumedStore::ingest(log, stop, every).began;
    }
    /// line|kind|count|reason of every record, by line.
    std::vector<std::string> evidence() {
        std::vector<std::string> out;
        auto s = store->db().prepare(
            "SELECT line, kind, count, coalesce(reason, '') FROM evidence ORDER BY line, kind");
        EXPECT_TRUE(s);
        while (s) {
            auto row = s->step();
            if (!row || !*row) break;
            out.push_back(fmt::format("{}|{}|{}|{}", s->i64(0), s->str(1), s->i64(2), s->str(3)));
        }
        return out;
    }
};

const std::vector<std::string> kExpected = {
    // 1 and 20 000 fold; the fold closes before line 32 769, so 50 000 starts a new one, which
    // 60 000 joins; 95 000 comes 45 000 lines after 50 000: a third.
    "1|runtime_error|2|hipErrorNotFound",
    "10000|runtime_error|1|hipErrorIllegalAddress",
    "45000|runtime_error|1|hipErrorIllegalAddress",
    "50000|runtime_error|2|hipErrorNotFound",
    "95000|runtime_error|1|hipErrorNotFound",
};

TEST(FoldSpan, AFoldClosesAfterItsSpanAndNoLongerHoldsTheCheckpoint) {
    ASSERT_EQ(kFoldLines, 32768u) << "the expected rows are computed for this span";
    const Log log;
    Opened clean;
    clean.ingest(log, log.lines.size(), 10000);
    EXPECT_EQ(clean.evidence(), kExpected);
    // Every checkpoint but the last (complete) one: within two spans of the line committed (an
    // open fold, or one closed whose repeats it would read again; the fold of line 1 held it at
    // line 0 for the whole file before).
    ASSERT_EQ(clean.checkpointLines.size(), 10u);
    for (size_t i = 0; i + 1 < clean.checkpointLines.size(); ++i) {
        const auto read = static_cast<int64_t>((i + 1) * 10000);
        EXPECT_GT(clean.checkpointLines[i], read - 2 * static_cast<int64_t>(kFoldLines))
            << "after " << read << " lines";
    }
}

TEST(FoldSpan, StoppedAndResumedWhileFoldsAreOpenStoresTheRowsOfOneIngest) {
    const Log log;
    Opened clean;
    clean.ingest(log, log.lines.size(), 100000);
    ASSERT_EQ(clean.evidence(), kExpected);
    // Stopped while the fold of line 1 is open (15 000, 25 000), just after it closed (33 000:
    // the one of 10 000 is open, and a resume there would read 20 000 again), inside those of 45
    // 000 and 50 000 (55 000, 70 000) and of 95 000 (99 000): each resume re-reads from the oldest
    // open fold; counts are neither lost nor counted twice.
    Opened resumed;
    std::vector<int64_t> starts;
    for (size_t stop : {15000u, 25000u, 33000u, 55000u, 70000u, 99000u})
        starts.push_back(resumed.ingest(log, stop, 7000));
    starts.push_back(resumed.ingest(log, log.lines.size(), 7000));
    EXPECT_EQ(resumed.evidence(), kExpected);
    EXPECT_EQ(starts, (std::vector<int64_t>{0, 0, 0, 0, 44999, 44999, 94999}))
        << "where each resume began: the oldest open fold, else the last line committed";
    // Commits at other instants (every 7 lines: most checkpoints close folds before the next
    // line is matched) store the same rows.
    Opened often;
    often.ingest(log, log.lines.size(), 7);
    EXPECT_EQ(often.evidence(), kExpected);
}

}  // namespace
}  // namespace gpufault::testing
