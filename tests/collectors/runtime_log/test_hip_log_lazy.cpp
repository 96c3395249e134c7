// The HIP matcher's pending (lazily parsed) pointer arguments against the eager parse they
// replaced: the same dispatches, with the same args, from random and mutated line streams.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/common/dispatch_args.h"
#include "collectors/runtime_log/hip_log.h"
#include "tests/support/reference_hip_args.h"

namespace gpufault::testing {
namespace {

/// Takes dispatches with their pending argument lines unparsed (as StoreSink does) and parses
/// them itself.
struct PendingSink final : Sink {
    std::vector<Dispatch> dispatches;
    size_t withPending = 0;  ///< dispatches that arrived with pending lines
    void evidence(Evidence&&) override {}
    void dispatch(Dispatch&& d) override {
        if (!d.pending_args.empty()) ++withPending;
        Dispatch copy = d;
        resolveArgs(copy);
        EXPECT_TRUE(copy.pending_args.empty());
        dispatches.push_back(std::move(copy));
        d.args.clear();  // StoreSink's contract: args and pending lines taken
        d.pending_args.clear();
    }
    void operand(Operand&&) override {}
    void warning(Warning&& w) override { warnings.push_back(std::move(w)); }
    bool takesPendingArgs() const override { return true; }
    std::vector<Warning> warnings;
};

/// One line per dispatch and arg, every field.
std::string dump(const std::vector<Dispatch>& ds) {
    std::string out;
    for (const Dispatch& d : ds) {
        out += fmt::format("{} {} {} [{}] {} {}\n",
                           d.line,
                           d.time.runtime_us.value_or(-1),
                           d.pid.value_or(-1),
                           d.runtime_tid,
                           d.kernel,
                           d.args.size());
        EXPECT_TRUE(d.pending_args.empty());
        for (const DispatchArg& a : d.args)
            out += fmt::format("  {} [{}] {:x} {} {}\n",
                               a.index,
                               a.name,
                               a.ptr,
                               a.obj_lo ? fmt::format("{:x}", *a.obj_lo) : "-",
                               a.obj_hi ? fmt::format("{:x}", *a.obj_hi) : "-");
    }
    return out;
}

void compareOnRandomLines(uint32_t seed, int threads, int lines) {
    SCOPED_TRACE(fmt::format("seed {} threads {}", seed, threads));
    const std::vector<AmdDispatchLine> in = randomDispatchLines(seed, threads, lines);
    ReferenceHipArgs ref;
    std::vector<Dispatch> expected;
    CollectSink eager;  // takesPendingArgs() false: the matcher parses before delivering
    PendingSink pending;
    auto toEager = makeHipLogMatcher(), toPending = makeHipLogMatcher();
    uint64_t n = 0;
    for (const AmdDispatchLine& a : in) {
        LogLine l;
        l.line = ++n;
        l.text = a.text;
        l.raw = a.text;
        l.amd_level = 3;
        l.log_pid = a.pid;
        l.runtime_tid = a.tid;
        l.time.runtime_us = a.us;
        ref.feed(n, a, expected);
        toEager->feed(l, eager);
        toPending->feed(l, pending);
    }
    toEager->finish(eager);
    toPending->finish(pending);
    EXPECT_TRUE(eager.evidences.empty());
    const std::string want = dump(expected);
    EXPECT_EQ(dump(eager.dispatches), want);
    EXPECT_EQ(dump(pending.dispatches), want);
    // The streams reach what they are for: ranges, names, the 64-arg cap, pending lines.
    size_t ranges = 0, named = 0, full = 0;
    for (const Dispatch& d : expected) {
        full += d.args.size() == 64;
        for (const DispatchArg& a : d.args) {
            ranges += a.obj_lo.has_value();
            named += !a.name.empty();
        }
    }
    EXPECT_GT(expected.size(), static_cast<size_t>(lines / 20));
    EXPECT_GT(ranges, static_cast<size_t>(lines / 10));
    EXPECT_GT(named, static_cast<size_t>(lines / 10));
    if (threads <= 40) {  // with 300 threads a launch rarely gets that far
        EXPECT_GT(full, 0u);
    }
    EXPECT_GT(pending.withPending, expected.size() / 2);
}

TEST(HipLogLazy, PendingArgsAgreeWithEagerParse) {
    compareOnRandomLines(1, 4, 20000);
    compareOnRandomLines(2, 40, 30000);
    compareOnRandomLines(3, 13, 20000);
}

TEST(HipLogLazy, PendingArgsAgreeWithEagerParseWhenThreadsAreEvicted) {
    compareOnRandomLines(4, 300, 40000);  // more than the 256 threads the matcher keeps
}

// Hostile review 4, L: launches ended without a ShaderName (a failed call's return, a new
// launch's Arg0) and launches past 64 pointer args give the same dispatches and the same
// warnings whether the sink parses the pending lines or the matcher does.
TEST(HipLogLazy, DroppedAndCappedLaunchesAgreeWithEagerParse) {
    std::vector<std::pair<std::string, std::string>> in;  // (tid, message)
    in.emplace_back("0x1", "Arg0: float* x0 = ptr:0x10000000 obj:[0x10000000-0x10001000]");
    in.emplace_back("0x1", "Arg1: float* x1 = ptr:0x20000000 obj:[0x20000000-0x20001000]");
    in.emplace_back("0x1", "hipLaunchKernel: Returned hipErrorInvalidValue : ");
    in.emplace_back("0x1", "ShaderName : _Z6noargsv");
    in.emplace_back("0x1", "Arg0: float* x0 = ptr:0x60000000 obj:[0x60000000-0x60001000]");
    in.emplace_back("0x1", "Arg0: float* x0 = ptr:0x62000000 obj:[0x62000000-0x62001000]");
    in.emplace_back("0x1", "ShaderName : _Z2k6v");
    for (int i = 0; i < 70; ++i)
        in.emplace_back("0x2",
                        fmt::format("Arg{}: float* x{} = ptr:0x{:x} obj:[0x70000000-0x70001000]",
                                    i,
                                    i,
                                    0x70000000 + i * 0x10000));
    in.emplace_back("0x2", "ShaderName : _Z2k7v");
    CollectSink eager;
    PendingSink pending;
    auto toEager = makeHipLogMatcher(), toPending = makeHipLogMatcher();
    uint64_t n = 0;
    for (const auto& [tid, text] : in) {
        LogLine l;
        l.line = ++n;
        l.text = text;
        l.raw = text;
        l.amd_level = 3;
        l.log_pid = 4242;
        l.runtime_tid = tid;
        toEager->feed(l, eager);
        toPending->feed(l, pending);
    }
    toEager->finish(eager);
    toPending->finish(pending);
    ASSERT_EQ(eager.dispatches.size(), 3u);
    EXPECT_EQ(eager.dispatches[0].args.size(), 0u);
    EXPECT_EQ(eager.dispatches[1].args.size(), 1u);
    EXPECT_EQ(eager.dispatches[2].args.size(), 64u);
    EXPECT_EQ(dump(pending.dispatches), dump(eager.dispatches));
    auto text = [](const std::vector<Warning>& ws) {
        std::string out;
        for (const auto& w : ws) out += fmt::format("{}: {}\n", w.line, w.message);
        return out;
    };
    EXPECT_EQ(text(pending.warnings), text(eager.warnings));
    EXPECT_EQ(eager.warnings.size(), 3u) << text(eager.warnings);
}

// The pending form round-trips every entry: index, text and the offset of ` = `.
TEST(HipLogLazy, PendingEntriesParseAsTheirLines) {
    std::string pending;
    std::vector<DispatchArg> direct;
    const char* lines[] = {" float* a = ptr:0x7f0000001000 obj:[0x7f0000000000-0x7f0000100000]",
                           " = ptr:(nil) obj:[(nil)-0x10]",
                           " int* b = val:3 = ptr:0x10",
                           " x = ptr:zz"};
    int index = 0;
    for (std::string_view t : lines) {
        const size_t eq = t.find(" = ");
        appendPendingArg(pending, index, t, eq);
        DispatchArg a;
        if (parseDispatchArg(index, t.substr(0, eq), t.substr(eq + 3), a)) direct.push_back(a);
        ++index;
    }
    Dispatch d;
    d.pending_args = pending;
    resolveArgs(d);
    ASSERT_EQ(d.args.size(), 2u);  // `val:` first, and no hex after `ptr:`, give none
    EXPECT_EQ(dump({d}), dump({Dispatch{0, {}, {}, "", {}, "", direct, ""}}));
    EXPECT_EQ(d.args[0].name, "a");
    EXPECT_EQ(d.args[0].obj_hi, 0x7f0000100000u);
    EXPECT_EQ(d.args[1].index, 1);
    EXPECT_EQ(d.args[1].ptr, 0u);
    EXPECT_EQ(d.args[1].obj_lo, 0u);
    EXPECT_EQ(d.args[1].obj_hi, 0x10u);
    EXPECT_TRUE(d.pending_args.empty());
}

}  // namespace
}  // namespace gpufault::testing
