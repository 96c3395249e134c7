// LineReader: the batched takeBuffered() path against next() alone, on a real file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ingest/line_reader.h"

namespace gpufault {
namespace {

struct Read {
    std::string line;
    uint64_t offset;
    bool truncated;
    bool mayHaveCr;
};

/// Every line of `path`; `buffered`: takeBuffered() (up to 1–40 lines at a time, cut at
/// cutLongLine() at `maxLine` here, '\r' searched as the ingest's classify() does), next()
/// when it declines.
std::vector<Read> readAll(const std::string& path, size_t maxLine, bool buffered) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    LineReader r(fd, maxLine);
    std::vector<Read> out;
    std::vector<uint32_t> ends;
    size_t step = 0;
    for (;;) {
        ends.clear();
        const char* base = nullptr;
        uint64_t first = 0;
        if (buffered && r.takeBuffered(ends, 1 + step++ % 40, base, first)) {
            for (size_t i = 0; i < ends.size(); ++i) {
                const size_t s = i == 0 ? 0 : size_t{ends[i - 1]} + 1;
                std::string_view v(base + s, ends[i] - s);
                const bool cr = v.find('\r') != std::string_view::npos;
                out.push_back(
                    {std::string(cutLongLine(v, maxLine)), first + s, v.size() > maxLine, cr});
            }
            continue;
        }
        uint64_t off = 0;
        bool truncated = false;
        auto l = r.next(off, truncated);
        EXPECT_TRUE(l.has_value());
        if (!l || !*l) break;
        out.push_back({std::string(**l), off, truncated, r.lastLineMayHaveCr()});
    }
    ::close(fd);
    return out;
}

// Lines of every length around the 32-byte search step and the 4 MiB buffer end, '\r' at the
// start, middle and end of some, lines over the maximum (cut), a last line without '\n'.
TEST(LineReader, TakeBufferedAgreesWithNext) {
    char tmpl[] = "/tmp/gpufault-line-reader-XXXXXX";
    int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    std::string text, expectLast;
    uint64_t seed = 7;
    auto rnd = [&seed](size_t n) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<size_t>((seed >> 33) % n);
    };
    constexpr size_t kMax = 3000;
    while (text.size() < 2 * LineReader::kChunk + 100000) {
        size_t len = rnd(10) == 0 ? rnd(8000) : rnd(200);
        std::string l(len, 'a');
        for (auto& c : l) c = static_cast<char>('a' + rnd(26));
        if (len && rnd(7) == 0) l[rnd(len)] = '\r';
        text += l + '\n';
    }
    text += "last line without newline\r";
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);

    auto plain = readAll(tmpl, kMax, false);
    auto fast = readAll(tmpl, kMax, true);
    ASSERT_EQ(plain.size(), fast.size());
    size_t pos = 0, cut = 0, cr = 0;
    for (size_t i = 0; i < plain.size(); ++i) {
        EXPECT_EQ(plain[i].line, fast[i].line) << i;
        EXPECT_EQ(plain[i].offset, fast[i].offset) << i;
        EXPECT_EQ(plain[i].truncated, fast[i].truncated) << i;
        // Against the file itself: the offset, the text (cut at kMax) and no missed '\r'.
        ASSERT_EQ(fast[i].offset, pos);
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string whole = text.substr(pos, end - pos);
        EXPECT_EQ(fast[i].line, cutLongLine(whole, kMax)) << i;
        EXPECT_EQ(fast[i].truncated, whole.size() > kMax) << i;
        if (fast[i].line.find('\r') != std::string::npos) {
            EXPECT_TRUE(fast[i].mayHaveCr) << i;
            ++cr;
        }
        cut += fast[i].truncated;
        pos = end + 1;
    }
    EXPECT_EQ(fast.back().line, "last line without newline\r");
    EXPECT_GT(cut, 10u);
    EXPECT_GT(cr, 1000u);
    ::unlink(tmpl);
}

// next() alone (as the crash readers use it): lastLineMayHaveCr() is exact for every line, with
// '\r' far apart (the search looks ahead a bounded stretch, 64 KiB), in runs, at a line's last
// byte, at the buffers' ends, and in the line that crosses from one buffer into the next.
TEST(LineReader, NextTellsExactlyWhichLinesHoldACarriageReturn) {
    char tmpl[] = "/tmp/gpufault-line-reader-XXXXXX";
    int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    std::string text;
    uint64_t seed = 11;
    auto rnd = [&seed](size_t n) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<size_t>((seed >> 33) % n);
    };
    while (text.size() < 3 * LineReader::kChunk) {
        size_t len = 1 + (rnd(20) == 0 ? rnd(20000) : rnd(150));
        std::string l(len, 'x');
        // Sparse stretches (one line in 3000), then dense ones (one in 3).
        const bool dense = (text.size() / 300000) % 4 == 3;
        if (rnd(dense ? 3 : 3000) == 0) l[rnd(2) ? len - 1 : rnd(len)] = '\r';
        text += l + '\n';
    }
    // A '\r' in the line that crosses the first buffer's end, and right after that end.
    const size_t edge = text.find('\n', LineReader::kChunk - 10);
    ASSERT_NE(edge, std::string::npos);
    text[edge - 1] = '\r';
    const size_t after = text.find('\n', edge + 1);
    text[after - 1] = '\r';
    ASSERT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);

    fd = ::open(tmpl, O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    LineReader r(fd, 1 << 20);
    size_t lines = 0, withCr = 0, pos = 0;
    for (;;) {
        uint64_t off = 0;
        bool truncated = false;
        auto l = r.next(off, truncated);
        ASSERT_TRUE(l.has_value());
        if (!*l) break;
        ASSERT_EQ(off, pos);
        const bool cr = (*l)->find('\r') != std::string_view::npos;
        EXPECT_EQ(r.lastLineMayHaveCr(), cr) << "line " << lines << " at " << off;
        withCr += cr;
        ++lines;
        pos += (*l)->size() + 1;
    }
    ::close(fd);
    ::unlink(tmpl);
    EXPECT_EQ(pos, text.size());
    EXPECT_GT(withCr, 1000u);
    EXPECT_GT(lines, 20000u);
}

}  // namespace
}  // namespace gpufault

namespace gpufault {
namespace {

// Both newline searches (AVX2 where this CPU has it) find what memchr finds, from every start
// and to every end around their 32- and 64-byte steps, on buffers with sparse and dense '\n'.
// A line over max_line with '\r' past its first max_line bytes (a CR progress bar, then a
// message): next() gives '\r' + the text after the last '\r', cut at max_line, as
// cutLongLine() does for a line within the buffer. Small buffers: the line spans several.
TEST(LineReader, LongLineKeepsTheTextAfterItsLastCarriageReturn) {
    char path[] = "/tmp/gpufault-lr-XXXXXX";
    int w = ::mkstemp(path);
    ASSERT_GE(w, 0);
    std::string tail(150, 'z');
    std::string content = std::string(250, 'a') + "\rbar 1\r" + std::string(300, 'b') + "\rFAULT " +
                          tail + "\nnext\n" + std::string(500, 'c') + "\n";
    ASSERT_EQ(::write(w, content.data(), content.size()), static_cast<ssize_t>(content.size()));
    ::close(w);
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    LineReader r(fd, 100, {}, 64);
    uint64_t off = 0;
    bool truncated = false;
    auto l = r.next(off, truncated);
    ASSERT_TRUE(l && *l);
    EXPECT_EQ(**l, "\rFAULT " + tail.substr(0, 100 - 7));
    EXPECT_TRUE(truncated);
    l = r.next(off, truncated);
    ASSERT_TRUE(l && *l);
    EXPECT_EQ(**l, "next");
    EXPECT_FALSE(truncated);
    l = r.next(off, truncated);  // no '\r': its first 100 bytes, as before
    ASSERT_TRUE(l && *l);
    EXPECT_EQ(**l, std::string(100, 'c'));
    EXPECT_TRUE(truncated);
    ::close(fd);
    ::unlink(path);
}

// Issue 3 (ing3b, HIGH 1): a file's last line without '\n' ends the stream. A file that grew
// after that line was handed out (a job writing its log beside `gpufault ingest`) gave the rest
// of that line as a line of its own: every later line was numbered one too high.
TEST(LineReader, ALastLineWithoutItsNewlineEndsTheStreamWhenTheFileGrowsAfterIt) {
    char path[] = "/tmp/gpufault-lr-XXXXXX";
    int w = ::mkstemp(path);
    ASSERT_GE(w, 0);
    const std::string first = "step 1\n:3:hip_";
    ASSERT_EQ(::write(w, first.data(), first.size()), static_cast<ssize_t>(first.size()));
    int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    LineReader r(fd, 4096);
    uint64_t off = 0;
    bool truncated = false;
    auto l = r.next(off, truncated);
    ASSERT_TRUE(l && *l);
    EXPECT_EQ(**l, "step 1");
    EXPECT_FALSE(r.lastUnended());
    l = r.next(off, truncated);
    ASSERT_TRUE(l && *l);
    EXPECT_EQ(**l, ":3:hip_");
    EXPECT_EQ(off, 7u);
    EXPECT_TRUE(r.lastUnended());
    // The writer ends that line and writes another.
    const std::string rest = "module.cpp :85 : hipErrorNotFound\nstep 3\n";
    ASSERT_EQ(::write(w, rest.data(), rest.size()), static_cast<ssize_t>(rest.size()));
    l = r.next(off, truncated);
    ASSERT_TRUE(l);
    EXPECT_FALSE(*l) << "read on after the unended line: \"" << std::string(**l) << "\"";
    EXPECT_EQ(r.consumed(), first.size());
    ::close(w);
    ::close(fd);
    ::unlink(path);
}

TEST(LineReader, NewlineSearchesAgreeWithMemchr) {
    const bool avx2 = __builtin_cpu_supports("avx2");
    std::string buf(600, 'x');
    uint64_t seed = 11;
    size_t checked = 0, found = 0;
    for (int round = 0; round < 16; ++round) {
        for (auto& c : buf) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            c = (seed >> 33) % (round < 8 ? 150 : 9) == 0 ? '\n' : 'a';
        }
        const char* b = buf.data();
        for (size_t from = 0; from < 80; ++from) {
            for (size_t to = from; to <= buf.size(); ++to) {
                const char* want = static_cast<const char*>(std::memchr(b + from, '\n', to - from));
                ASSERT_EQ(findNewlineSse2(b + from, b + to), want) << from << " " << to;
                if (avx2) {
                    ASSERT_EQ(findNewlineAvx2(b + from, b + to), want) << from << " " << to;
                }
                ASSERT_EQ(findNewline(b + from, b + to), want);
                ++checked;
                found += want != nullptr;
            }
        }
    }
    EXPECT_GT(checked, 500000u);
    EXPECT_GT(found, checked / 2);
    EXPECT_LT(found, checked);
}

// The batch line-end search (64-byte masks, positions taken bit by bit; AVX2 where this CPU has
// it) finds the `max` first '\n' that memchr from each line's start finds: every start and end
// around the 64-byte steps, `max` from 1 to more than the buffer holds, sparse and dense '\n'
// (empty lines, runs of them, none at all).
TEST(LineReader, LineEndSearchesAgreeWithMemchr) {
    const bool avx2 = __builtin_cpu_supports("avx2");
    std::string buf(700, 'x');
    uint64_t seed = 12;
    size_t checked = 0, ends = 0;
    for (int round = 0; round < 24; ++round) {
        const unsigned every = round < 8 ? 150 : round < 16 ? 9 : round < 20 ? 2 : 100000;
        for (auto& c : buf) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            c = (seed >> 33) % every == 0 ? '\n' : 'a';
        }
        const char* b = buf.data();
        std::vector<uint32_t> got(buf.size() + 1), want;
        for (size_t from = 0; from < 70; from += 3) {
            for (size_t to = from; to <= buf.size(); to += 1 + to % 5) {
                want.clear();
                for (const char* p = b + from;;) {
                    const void* nl = std::memchr(p, '\n', static_cast<size_t>(b + to - p));
                    if (!nl) break;
                    want.push_back(static_cast<uint32_t>(static_cast<const char*>(nl) - b - from));
                    p = static_cast<const char*>(nl) + 1;
                }
                for (size_t max : {size_t{1}, size_t{2}, size_t{7}, want.size(), buf.size() + 1}) {
                    if (max == 0) continue;
                    const size_t n = std::min(max, want.size());
                    auto same = [&](size_t k) {
                        ASSERT_EQ(k, n) << from << " " << to << " " << max;
                        for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << i;
                    };
                    same(findLineEndsSse2(b + from, b + to, max, got.data()));
                    if (avx2) same(findLineEndsAvx2(b + from, b + to, max, got.data()));
                    same(kFindLineEnds(b + from, b + to, max, got.data()));
                    ++checked;
                    ends += n;
                }
            }
        }
    }
    EXPECT_GT(checked, 50000u);
    EXPECT_GT(ends, checked * 5);
}

}  // namespace
}  // namespace gpufault
