// The ninth round's fast paths of the fixed-column AMD_LOG_LEVEL lines against the general
// ones on random lines: the shape cache's known heads (only the stamp checked) against the
// scalar shape check, the fields (amdFixedValues()) against the general parser, and the trace
// check that loads the identifier's second sixteen bytes only when the first sixteen are all
// identifier bytes against isApiTraceMessage().
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "collectors/pipeline.h"
#include "collectors/runtime_log/amd_log_prefix.h"
#include "collectors/runtime_log/amd_shape_cache.h"

namespace gpufault {
namespace {

struct Gen {
    std::mt19937_64 rng{20261130};
    size_t pick(size_t n) { return static_cast<size_t>(rng() % n); }
    std::string digits(size_t n) {
        std::string s;
        for (size_t i = 0; i < n; ++i) s += static_cast<char>('0' + pick(10));
        return s;
    }
    std::string from(std::string_view set, size_t n) {
        std::string s;
        for (size_t i = 0; i < n; ++i) s += set[pick(set.size())];
        return s;
    }
    std::string blanks(size_t n) { return from(pick(4) == 0 ? " \t" : " ", n); }
    std::string ident(size_t n) {
        return from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", n);
    }
    /// A message: a trace entry or exit line, a kept line or noise, of any length.
    std::string message() {
        const std::string id = (pick(2) ? "hip" : "__hip") + ident(pick(36));
        switch (pick(6)) {
            case 0:
                return id + " ( " + from("0123456789abcdefx, {}", pick(60)) + " )" +
                       blanks(pick(3));
            case 1:
                return id + ": Returned hipSuccess : " + blanks(pick(2));
            case 2:
                return id + ": Returned hipErrorNotReady : ";
            case 3:
                return id + ": Returned hipError" + ident(pick(20)) + " : ";
            case 4:
                return "Arg" + digits(1 + pick(2)) + ":   = ptr:0x" + from("0123456789abcdef", 12);
            default:
                return from("ShaderName :_ ()xyz0123456789", pick(80));
        }
    }
    /// A head: `:N:`, the file and source line columns, `: `.
    std::string head() {
        std::string file = from("abcdefghij_.", 1 + pick(25));
        file.resize(25, ' ');
        std::string src = digits(1 + pick(4));
        src.resize(4, ' ');
        return ":" + std::to_string(pick(6)) + ":" + file + ":" + src + ": ";
    }
    std::vector<std::string> heads;
    /// A line in the fixed ROCm 5.7–6.2 columns: the head (columns 0–34, any level) from a pool
    /// of 300 call sites three times in four (the shape cache's known heads), else a new one; a
    /// stamp of 8–15 digits (1–17 one time in eight), a pid of 1–7, a tid of 1–16 hex digits,
    /// 0–40 blanks after it; one line in six mutated at a random byte.
    std::string line() {
        if (heads.empty())
            for (int i = 0; i < 300; ++i) heads.push_back(head());
        std::string s = (pick(4) != 0 ? heads[pick(heads.size())] : head()) +
                        digits(pick(8) == 0 ? 1 + pick(17) : 8 + pick(8)) +
                        " us: [pid:" + digits(1 + pick(7)) + std::string(pick(8), ' ') + "tid:0x" +
                        from("0123456789abcdefABCDEF", 1 + pick(16)) + "]" + blanks(pick(41)) +
                        message();
        if (pick(6) == 0) s[pick(s.size())] = " \t:0x]["[pick(7)];
        return s;
    }
};

TEST(AmdFixedRandom, ShapeCacheAndValuesAgreeWithScalarAndGeneralParser) {
    Gen g;
    AmdShapeCache cache;
    size_t accepted = 0, longBlanks = 0, longStamps = 0;
    for (int i = 0; i < 40000; ++i) {
        const std::string l = g.line();
        const AmdFixedShape a = amdFixedShape(l), s = amdFixedShapeScalar(l), c = cache.shape(l);
        ASSERT_EQ(a.message, s.message) << l;
        ASSERT_EQ(c.message, s.message) << l;
        if (a.message == 0) continue;
        ++accepted;
        EXPECT_EQ(a.stamp_len, s.stamp_len) << l;
        EXPECT_EQ(a.pid_at, s.pid_at) << l;
        EXPECT_EQ(a.pid_len, s.pid_len) << l;
        EXPECT_EQ(a.tid_at, s.tid_at) << l;
        EXPECT_EQ(a.tid_len, s.tid_len) << l;
        EXPECT_EQ(c.stamp_len, s.stamp_len) << l;
        const auto p = parseAmdLogPrefixGeneral(l);
        ASSERT_TRUE(p) << l;
        EXPECT_EQ(p->message_offset, a.message) << l;
        int64_t us = 0, pid = 0;
        std::string_view tid;
        amdFixedValues(l, a, us, pid, tid);
        EXPECT_EQ(p->runtime_us, us) << l;
        EXPECT_EQ(p->pid, pid) << l;
        EXPECT_EQ(p->runtime_tid, tid) << l;
        longBlanks += a.message - (a.tid_at + a.tid_len + 1) >= 16;
        longStamps += a.stamp_len > 8;
    }
    EXPECT_GT(accepted, 20000u);  // most lines take the fast paths
    EXPECT_GT(longBlanks, 5000u);
    EXPECT_GT(longStamps, 15000u);
}

TEST(AmdFixedRandom, QuickTraceCheckAgreesWithFullOnRandomMessages) {
    Gen g;
    size_t traces = 0;
    for (int i = 0; i < 40000; ++i) {
        std::string m = g.blanks(g.pick(2)) + g.message();
        if (!m.empty() && g.pick(6) == 0) m[g.pick(m.size())] = " :(_x\r"[g.pick(6)];
        const bool full = isApiTraceMessage(m);
        EXPECT_EQ(isApiTraceMessageQuick(m), full) << m;
        traces += full;
    }
    EXPECT_GT(traces, 10000u);
    EXPECT_LT(traces, 30000u);
}

}  // namespace
}  // namespace gpufault
