// StoreSink's dispatch windows keyed by rank (hostile review 8, rank8): two ranks of one
// torchrun stream whose lines share a pid and runtime thread (one pid namespace per container)
// keep separate windows, a fault flushes its own rank's, and a resumed stream gets its held
// dispatches back under their ranks (held_dispatches.rank). Real HIP lines through the HIP
// matcher into a real store file.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/common/log_line.h"
#include "collectors/prefix/line_decoder.h"
#include "collectors/runtime_log/hip_log.h"
#include "ingest/store_sink.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

/// A store with one source and its transaction open.
struct Opened {
    TempDir dir;
    std::optional<Store> store;
    int64_t source = 0;
    Opened() {
        auto s = Store::open(dir.file("store.db"), Store::Mode::ReadWrite);
        EXPECT_TRUE(s) << s.error().message;
        store.emplace(std::move(*s));
        auto src = store->source(SourceIdentity{"ranks.log", "file", 1, 2, "ab-1"});
        EXPECT_TRUE(src);
        source = src->id;
        EXPECT_TRUE(store->begin());
    }
    /// (line, rank, kernel) of the stored dispatch rows, by line; rank -1 for NULL.
    std::vector<std::tuple<int64_t, int64_t, std::string>> dispatchRows() {
        auto st = store->db().prepare(
            "SELECT d.line, ifnull(d.rank, -1), k.name FROM dispatches d JOIN kernels k ON k.id "
            "= d.kernel_id ORDER BY d.line");
        EXPECT_TRUE(st);
        std::vector<std::tuple<int64_t, int64_t, std::string>> out;
        for (;;) {
            auto row = st->step();
            if (!row || !*row) break;
            out.emplace_back(st->i64(0), st->i64(1), st->str(2));
        }
        return out;
    }
};

/// The HIP ShaderName line of `rank` (pid 1, thread 0x7053, as in two containers).
std::string shaderLine(int rank, const std::string& kernel) {
    return "[rank" + std::to_string(rank) +
           "]: :3:rocvirtual.cpp           :3016: 4815821610391 us: [pid:1 tid:0x7053] "
           "ShaderName : " +
           kernel;
}

/// Feeds `text` as line `line` through the line decoder (it removes `[rankN]:` and the AMD
/// prefix) into the HIP matcher.
void feedHip(LineDecoder& dec, Matcher& m, Sink& sink, uint64_t line, const std::string& text) {
    dec.feed(line, text, [&](const LogLine& l) { m.feed(l, sink); });
}

/// A ROCr-style fault record of `rank`, naming no pid.
void faultOf(Sink& sink, uint64_t line, int64_t rank) {
    Evidence e;
    e.kind = Kind::RocrMemoryFault;
    e.line = line;
    e.address = 0x7f6459a10000;
    e.rank = rank;
    e.raw = "[rank" + std::to_string(rank) + "]: Memory access fault by GPU node-2";
    sink.evidence(std::move(e));
}

TEST(RankWindows, EachRankKeepsItsOwnWindow) {
    Opened o;
    IngestSummary sum;
    LineDecoder dec;
    auto hip = makeHipLogMatcher();
    {
        StoreSink sink(*o.store, o.source, 2, 0, sum);
        // Rank 0's two dispatches, then 70 of rank 1 (more than window + slack) on the same
        // pid and thread: one shared window would have dropped rank 0's.
        feedHip(dec, *hip, sink, 1, shaderLine(0, "_Z6r0_oldv"));
        feedHip(dec, *hip, sink, 2, shaderLine(0, "_Z6r0_newv"));
        for (uint64_t line = 3; line < 73; ++line)
            feedHip(dec, *hip, sink, line, shaderLine(1, "_Z2r1v"));
        faultOf(sink, 73, 0);
        EXPECT_FALSE(sink.error());
    }
    using Row = std::tuple<int64_t, int64_t, std::string>;
    EXPECT_EQ(o.dispatchRows(), (std::vector<Row>{{1, 0, "_Z6r0_oldv"}, {2, 0, "_Z6r0_newv"}}));
}

TEST(RankWindows, AResumedStreamHoldsDispatchesUnderTheirRanks) {
    Opened o;
    IngestSummary sum;
    LineDecoder dec;
    auto hip = makeHipLogMatcher();
    {
        StoreSink sink(*o.store, o.source, 2, 0, sum);
        feedHip(dec, *hip, sink, 1, shaderLine(0, "_Z6r0_onev"));
        feedHip(dec, *hip, sink, 2, shaderLine(1, "_Z6r1_onev"));
        // A checkpoint that resumes at line 3 keeps both behind it.
        EXPECT_EQ(sink.persistHeld(3), 2u);
        EXPECT_FALSE(sink.error());
    }
    {
        auto st =
            o.store->db().prepare("SELECT line, rank, kernel FROM held_dispatches ORDER BY line");
        ASSERT_TRUE(st);
        std::vector<std::string> held;
        for (;;) {
            auto row = st->step();
            if (!row || !*row) break;
            held.push_back(std::to_string(st->i64(0)) + " " + std::to_string(st->i64(1)) + " " +
                           st->str(2));
        }
        EXPECT_EQ(held, (std::vector<std::string>{"1 0 _Z6r0_onev", "2 1 _Z6r1_onev"}));
    }
    // The resumed stream: rank 1 dispatches again on the shared thread, then rank 0 faults.
    StoreSink resumed(*o.store, o.source, 2, 0, sum);
    resumed.loadHeld(3);
    LineDecoder dec2;
    auto hip2 = makeHipLogMatcher();
    feedHip(dec2, *hip2, resumed, 3, shaderLine(1, "_Z6r1_twov"));
    feedHip(dec2, *hip2, resumed, 4, shaderLine(1, "_Z8r1_threev"));
    faultOf(resumed, 5, 0);
    EXPECT_FALSE(resumed.error());
    using Row = std::tuple<int64_t, int64_t, std::string>;
    EXPECT_EQ(o.dispatchRows(), (std::vector<Row>{{1, 0, "_Z6r0_onev"}}));
    resumed.flushWindows();  // the end of the stream writes rank 1's last 2 too
    EXPECT_EQ(
        o.dispatchRows(),
        (std::vector<Row>{{1, 0, "_Z6r0_onev"}, {3, 1, "_Z6r1_twov"}, {4, 1, "_Z8r1_threev"}}));
}

TEST(RankWindows, OneRanksFaultDoesNotMakeAnotherRanksAFlood) {
    // Window 4, short window 1, span 1 000: rank 0 faults, then rank 1 two lines later (a DDP
    // crash: every rank faults at once). Rank 0's fault did not flush rank 1's window, so rank
    // 1's is no flood's: its full window is stored. A second fault of rank 1 is one.
    Opened o;
    IngestSummary sum;
    LineDecoder dec;
    auto hip = makeHipLogMatcher();
    {
        StoreSink sink(*o.store, o.source, 4, 0, sum, FloodRule{1000, 1});
        for (uint64_t line = 1; line <= 10; ++line)
            feedHip(dec, *hip, sink, line, shaderLine(line % 2 == 0 ? 0 : 1, "_Z1kv"));
        faultOf(sink, 11, 0);
        faultOf(sink, 12, 1);
        feedHip(dec, *hip, sink, 13, shaderLine(1, "_Z1kv"));
        feedHip(dec, *hip, sink, 14, shaderLine(1, "_Z1kv"));
        faultOf(sink, 15, 1);
        EXPECT_FALSE(sink.error());
    }
    std::vector<int64_t> lines;
    for (const auto& [line, rank, kernel] : o.dispatchRows()) {
        EXPECT_EQ(rank, line % 2 == 0 && line < 11 ? 0 : 1) << line;
        lines.push_back(line);
    }
    // rank 0: 4, 6, 8, 10; rank 1: 3, 5, 7, 9; then rank 1's flood: 14 only.
    EXPECT_EQ(lines, (std::vector<int64_t>{3, 4, 5, 6, 7, 8, 9, 10, 14}));
}

}  // namespace
}  // namespace gpufault::testing
