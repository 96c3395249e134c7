// LineReader: the inline nextBuffered() path against next() alone, on a real file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
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

/// Every line of `path`; `buffered`: nextBuffered() first, next() when it declines.
std::vector<Read> readAll(const std::string& path, size_t maxLine, bool buffered) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    EXPECT_GE(fd, 0);
    LineReader r(fd, maxLine);
    std::vector<Read> out;
    for (;;) {
        uint64_t off = 0;
        bool truncated = false;
        std::string_view v;
        if (!buffered || !r.nextBuffered(v, off, truncated)) {
            auto l = r.next(off, truncated);
            EXPECT_TRUE(l.has_value());
            if (!l || !*l) break;
            v = **l;
        }
        out.push_back({std::string(v), off, truncated, r.lastLineMayHaveCr()});
    }
    ::close(fd);
    return out;
}

// Lines of every length around the 32-byte search step and the 4 MiB buffer end, '\r' at the
// start, middle and end of some, lines over the maximum (cut), a last line without '\n'.
TEST(LineReader, BufferedPathAgreesWithNext) {
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
        EXPECT_EQ(plain[i].mayHaveCr, fast[i].mayHaveCr) << i;
        // Against the file itself: the offset, the text (cut at kMax) and no missed '\r'.
        ASSERT_EQ(fast[i].offset, pos);
        size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string whole = text.substr(pos, end - pos);
        EXPECT_EQ(fast[i].line, whole.substr(0, kMax)) << i;
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

}  // namespace
}  // namespace gpufault
