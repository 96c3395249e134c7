// A fault line after a CR progress bar of more than LineDecoder::kMaxLine bytes: the decoder sees
// the text after the line's last '\r' (what a terminal shows), not the bar's first MiB.
#include <gtest/gtest.h>

#include <string>

#include "ingest/line_batches.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

/// tqdm's default bar (`{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]`),
/// redrawn after '\r' `n` times, then ROCr's `Memory access fault by GPU node-%u (Agent handle:
/// %p) on address %p. Reason: %s` (FORMATS.md §2.1) written after the last redraw.
std::string progressThenFault(int n) {
    std::string s;
    for (int i = 0; i < n; ++i)
        s += "\r 50%|#####     | " + std::to_string(i) + "/100000 [00:01<00:01, 3.2it/s]";
    return s +
           "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x7f0000003000. "
           "Reason: Unknown.";
}

TEST(CrLongLine, CutLongLineKeepsTheTextAfterTheLastCarriageReturn) {
    std::string l = progressThenFault(40000);
    ASSERT_GT(l.size(), LineDecoder::kMaxLine);
    std::string_view v = cutLongLine(l);
    EXPECT_EQ(v,
              "\r 50%|#####     | 39999/100000 [00:01<00:01, 3.2it/s]Memory access fault by GPU "
              "node-1 (Agent handle: 0x1) on address 0x7f0000003000. Reason: Unknown.");
    // Within kMaxLine: whole. Over it without a '\r' (or with one last): the first kMaxLine bytes.
    EXPECT_EQ(cutLongLine("a\rb"), "a\rb");
    std::string x(LineDecoder::kMaxLine + 10, 'x');
    EXPECT_EQ(cutLongLine(x).size(), LineDecoder::kMaxLine);
    x.back() = '\r';
    EXPECT_EQ(cutLongLine(x), std::string_view(x).substr(0, LineDecoder::kMaxLine));
}

// LongLine (a line read in pieces: LineReader past its buffer, gpufaultd before the newline
// came) gives cutLongLine() of the whole line, wherever the pieces end: '\r' in the first
// `max` bytes only, past them, at a piece's first or last byte, as the line's last byte.
TEST(CrLongLine, LongLineInPiecesIsCutLongLineOfTheWhole) {
    constexpr size_t kMax = 64;
    uint64_t seed = 3;
    auto rnd = [&seed](size_t n) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<size_t>((seed >> 33) % n);
    };
    size_t fromCr = 0;
    for (int round = 0; round < 2000; ++round) {
        std::string l(kMax + 1 + rnd(4 * kMax), 'a');
        for (auto& c : l) c = static_cast<char>('a' + rnd(26));
        for (size_t n = rnd(4); n > 0; --n) l[rnd(l.size())] = '\r';
        if (rnd(8) == 0) l.back() = '\r';
        LongLine ll(kMax);
        size_t first = kMax + rnd(l.size() - kMax);  // start() gets at least kMax bytes
        ll.start(std::string_view(l).substr(0, first));
        for (size_t at = first; at < l.size();) {
            size_t n = 1 + rnd(l.size() - at);
            ll.add(std::string_view(l).substr(at, n));
            at += n;
        }
        ASSERT_EQ(ll.text(), cutLongLine(l, kMax)) << round;
        fromCr += ll.text()[0] == '\r';
    }
    EXPECT_GT(fromCr, 500u);  // both kinds of cut were met
    EXPECT_LT(fromCr, 1900u);
}

TEST(CrLongLine, IngestFindsTheFaultAfterA2MiBProgressBar) {
    TempDir t;
    writeFile(t.file("long.log"), progressThenFault(40000) + "\n");
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("long.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    auto ev = parseJsonLines(
        run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json", "--kind", "rocr_memory_fault"})
            .out);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0]["address"], "0x7f0000003000");
    EXPECT_EQ(ev[0]["line"], 1);
}

// Over the reader's 4 MiB buffer: LineReader keeps the text after the last '\r' itself.
TEST(CrLongLine, IngestFindsTheFaultAfterA6MiBProgressBar) {
    TempDir t;
    writeFile(t.file("long.log"), "before\n" + progressThenFault(110000) + "\nafter\n");
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("long.log")});
    ASSERT_EQ(r.status, 0) << r.err;
    auto ev = parseJsonLines(
        run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json", "--kind", "rocr_memory_fault"})
            .out);
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0]["address"], "0x7f0000003000");
    EXPECT_EQ(ev[0]["line"], 2);
}

}  // namespace
}  // namespace gpufault::testing
