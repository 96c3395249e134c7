// StoreSink's interned counts and ring windows against the map-and-deque sink they replaced:
// the same random dispatch streams (with faults, commits, thread eviction and a reused
// Dispatch) must leave the same rows in two real stores; and the HIP matcher's pending
// argument lines, parsed only when a window is flushed, against the eager parse.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>

#include "collectors/common/demangle.h"
#include "collectors/runtime_log/hip_log.h"
#include "ingest/store_sink.h"
#include "schema/store.h"
#include "tests/support/process.h"
#include "tests/support/reference_hip_args.h"

namespace gpufault::testing {
namespace {

/// The sink as it was before the sixth speed round (std::map counts keyed by (pid, name),
/// a std::deque window per thread), kept as the reference for the fast one.
class ReferenceSink final : public Sink {
  public:
    ReferenceSink(Store& store, int64_t source, size_t window, uint64_t count_after)
        : store_(store), source_(source), window_(window), countAfter_(count_after) {}

    void evidence(Evidence&& e) override {
        if (opensIncident(e.kind)) {
            for (auto& [key, w] : windows_)
                if (!e.pid || key.first < 0 || key.first == *e.pid) flushWindow(w, e.line);
        }
        EXPECT_TRUE(store_.addEvidence(source_, e));
    }
    void dispatch(Dispatch&& d) override {
        const int64_t pid = d.pid.value_or(-1);
        if (d.line > countAfter_) {
            Count& c = counts_[{pid, d.kernel}];
            if (c.n++ == 0) c.first = d.line;
            c.last = d.line;
        }
        auto& w = windows_[{pid, d.runtime_tid}];
        w.push_back(Held{std::move(d), false});
        if (w.size() > window_ + 64) w.pop_front();
        if (windows_.size() > 1024) windows_.erase(windows_.begin());
    }
    void operand(Operand&&) override {}
    void warning(Warning&&) override {}

    void flushCounts() {
        for (auto& [key, c] : counts_) {
            std::optional<int64_t> pid =
                key.first < 0 ? std::nullopt : std::optional<int64_t>(key.first);
            EXPECT_TRUE(store_.addDispatchCount(source_,
                                                pid,
                                                key.second,
                                                c.n,
                                                static_cast<int64_t>(c.first),
                                                static_cast<int64_t>(c.last)));
        }
        counts_.clear();
    }
    void flushWindows() {
        for (auto& [key, w] : windows_) flushWindow(w, UINT64_MAX);
    }
    std::optional<uint64_t> oldestHeldLine() const {
        std::optional<uint64_t> oldest;
        for (const auto& [key, w] : windows_)
            if (!w.empty() && (!oldest || w.front().d.line < *oldest)) oldest = w.front().d.line;
        return oldest;
    }

  private:
    struct Held {
        Dispatch d;
        bool stored = false;
    };
    struct Count {
        int64_t n = 0;
        uint64_t first = 0, last = 0;
    };
    void flushWindow(std::deque<Held>& w, uint64_t before) {
        size_t end = 0;
        while (end < w.size() && w[end].d.line < before) ++end;
        size_t begin = end > window_ ? end - window_ : 0;
        for (size_t i = begin; i < end; ++i) {
            auto& h = w[i];
            if (h.stored) continue;
            h.stored = true;
            auto id = store_.addDispatch(source_, h.d);
            ASSERT_TRUE(id);
            for (const auto& a : h.d.args) {
                if (!a.obj_lo || !a.obj_hi || *a.obj_hi <= *a.obj_lo) continue;
                Operand o;
                o.line = h.d.line;
                o.time = h.d.time;
                o.pid = h.d.pid;
                std::string where =
                    fmt::format("arg{} of {}", a.index, shortKernelName(h.d.kernel, 48));
                o.name = a.name.empty() ? where : fmt::format("{} ({})", a.name, where);
                o.ptr = *a.obj_lo;
                o.end = *a.obj_hi;
                o.arg_ptr = a.ptr;
                o.origin = "hip_arg";
                EXPECT_TRUE(store_.addOperand(source_, o, *id));
            }
        }
    }
    Store& store_;
    int64_t source_;
    size_t window_;
    uint64_t countAfter_;
    std::map<std::pair<int64_t, std::string>, std::deque<Held>> windows_;
    std::map<std::pair<int64_t, std::string>, Count> counts_;
};

/// Every row of the tables the sinks write, ids included, one line each.
std::string dumpRows(Store& s) {
    std::string out;
    for (const char* sql : {"SELECT * FROM dispatches ORDER BY id",
                            "SELECT * FROM operands ORDER BY id",
                            "SELECT * FROM dispatch_counts ORDER BY rowid",
                            "SELECT * FROM kernels ORDER BY id",
                            "SELECT * FROM evidence ORDER BY id"}) {
        auto st = s.db().prepare(sql);
        EXPECT_TRUE(st) << sql;
        if (!st) continue;
        out += fmt::format("-- {}\n", sql);
        for (;;) {
            auto row = st->step();
            EXPECT_TRUE(row);
            if (!row || !*row) break;
            for (int c = 0; c < st->columns(); ++c)
                out += st->optStr(c).value_or("NULL") + (c + 1 < st->columns() ? "|" : "\n");
        }
    }
    return out;
}

struct Pair {
    TempDir dir;
    std::optional<Store> fast, ref;
    int64_t fastSource = 0, refSource = 0;
    Pair() {
        for (auto [name, store, source] :
             {std::tuple{"fast.db", &fast, &fastSource}, std::tuple{"ref.db", &ref, &refSource}}) {
            auto s = Store::open(dir.file(name), Store::Mode::ReadWrite);
            EXPECT_TRUE(s) << s.error().message;
            store->emplace(std::move(*s));
            auto src = (*store)->source(SourceIdentity{"sink.log", "file", 1, 2, "ab-1"});
            EXPECT_TRUE(src);
            *source = src->id;
            EXPECT_TRUE((*store)->begin());
        }
    }
};

/// One random stream: `threads` (pid, tid) pairs, kernel names sharing long prefixes (and
/// mutated ones), pointer args, faults with and without a pid, commits.
void compareOnRandomStream(uint32_t seed, size_t window, int threads, int dispatches) {
    SCOPED_TRACE(fmt::format("seed {} window {} threads {}", seed, window, threads));
    std::mt19937_64 rng(seed);
    auto pick = [&rng](size_t n) { return static_cast<size_t>(rng() % n); };
    std::vector<std::string> names;
    for (int i = 0; i < 40; ++i) {
        std::string base = i % 2 ? "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_K"
                                 : "_ZN2at6native29vectorized_elementwise_kernelILi4EN";
        names.push_back(base + std::to_string(i * 7919 % 1000));
    }
    names.push_back("k");
    names.push_back("");
    names.push_back("12345678");
    names.push_back(std::string(300, 'x'));

    Pair p;
    IngestSummary sumFast, sumRef;
    const uint64_t countAfter = seed % 3 == 0 ? 50 : 0;
    StoreSink fast(*p.fast, p.fastSource, static_cast<int>(window), countAfter, sumFast);
    ReferenceSink ref(*p.ref, p.refSource, window, countAfter);
    Dispatch reused;  // as the HIP matcher does: one Dispatch for every call
    uint64_t line = 0;
    for (int i = 0; i < dispatches; ++i) {
        line += 1 + pick(3);
        int t = static_cast<int>(pick(static_cast<size_t>(threads)));
        Dispatch d;
        d.line = line;
        d.time.runtime_us = static_cast<int64_t>(line * 10);
        if (t % 5 != 4) d.pid = 100 + t % 3;
        d.runtime_tid = t % 7 == 6 ? "" : fmt::format("0x7f{:x}", t * 2654435761u % 100000);
        std::string kernel = names[pick(names.size())];
        if (!kernel.empty() && pick(10) == 0) kernel[pick(kernel.size())] ^= 1;  // mutated
        d.kernel = kernel;
        for (int a = 0, n = static_cast<int>(pick(4)); a < n; ++a) {
            DispatchArg arg;
            arg.index = a;
            arg.name = pick(2) ? fmt::format("p{}", a) : "";
            arg.ptr = 0x7000000000 + rng() % 0x100000;
            if (pick(4) != 0) {
                arg.obj_lo = arg.ptr & ~0xFFFull;
                arg.obj_hi = *arg.obj_lo + (pick(3) == 0 ? 0 : 0x10000);
            }
            d.args.push_back(arg);
        }
        reused.line = d.line;
        reused.time = d.time;
        reused.pid = d.pid;
        reused.runtime_tid.assign(d.runtime_tid);
        reused.kernel.assign(d.kernel);
        reused.args = d.args;
        fast.dispatch(std::move(reused));
        EXPECT_TRUE(reused.args.empty());
        ref.dispatch(std::move(d));
        if (pick(200) == 0) {  // a fault, maybe emitted a few lines late
            Evidence e;
            e.kind = pick(2) ? Kind::RocrMemoryFault : Kind::AmdgpuPageFault;
            e.line = line - std::min<uint64_t>(line - 1, pick(4));
            e.address = 0x7000000000 + rng() % 0x100000;
            if (pick(3) != 0) e.pid = 100 + static_cast<int64_t>(pick(4));
            e.raw = fmt::format("fault {}", i);
            Evidence e2 = e;
            fast.evidence(std::move(e));
            ref.evidence(std::move(e2));
        }
        if (pick(500) == 0) {
            fast.flushCounts();
            ref.flushCounts();
        }
        if (pick(100) == 0) {
            ASSERT_EQ(fast.oldestHeldLine(), ref.oldestHeldLine()) << i;
        }
    }
    fast.flushCounts();
    ref.flushCounts();
    fast.flushWindows();
    ref.flushWindows();
    ASSERT_FALSE(fast.error());
    std::string a = dumpRows(*p.fast), b = dumpRows(*p.ref);
    EXPECT_GT(a.size(), 1000u);
    EXPECT_NE(a.find("hip_arg"), std::string::npos);
    EXPECT_EQ(a, b);
}

TEST(StoreSink, RingWindowsAndInternedCountsAgreeWithMapAndDeque) {
    compareOnRandomStream(1, 3, 8, 6000);     // rings wrap (67 slots), few threads
    compareOnRandomStream(2, 128, 20, 6000);  // a window larger than most runs
    compareOnRandomStream(3, 1, 2, 4000);     // count_after: early lines not counted
    compareOnRandomStream(4, 16, 60, 8000);
}

TEST(StoreSink, ThreadEvictionAgreesWithMapAndDeque) {
    // More (pid, tid) pairs than the 1 024 windows kept: the first key goes, and a new window
    // that has the first key goes at once.
    compareOnRandomStream(5, 4, 3000, 12000);
    compareOnRandomStream(6, 2, 1500, 9000);
}

/// Random, mutated dispatch-context lines through the HIP matcher into StoreSink (argument
/// lines left pending until a fault or the end flushes their window) and through the eager
/// parse into the reference sink: the same rows.
void compareLinesThroughMatcher(uint32_t seed, size_t window, int threads, int lines) {
    SCOPED_TRACE(fmt::format("seed {} window {} threads {}", seed, window, threads));
    std::mt19937_64 rng(seed * 7919u);
    const std::vector<AmdDispatchLine> in = randomDispatchLines(seed, threads, lines);
    Pair p;
    IngestSummary sum;
    StoreSink fast(*p.fast, p.fastSource, static_cast<int>(window), 0, sum);
    ReferenceSink ref(*p.ref, p.refSource, window, 0);
    auto matcher = makeHipLogMatcher();
    ReferenceHipArgs eager;
    std::vector<Dispatch> parsed;
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
        matcher->feed(l, fast);
        eager.feed(n, a, parsed);
        for (Dispatch& d : parsed) ref.dispatch(std::move(d));
        parsed.clear();
        if (rng() % 400 == 0) {  // a fault of one process, or of all
            Evidence e;
            e.kind = Kind::RocrMemoryFault;
            e.line = n;
            e.address = 0x7f0000000000 + rng() % 0x100000;
            if (rng() % 3 != 0) e.pid = 100 + static_cast<int64_t>(rng() % 3);
            e.raw = fmt::format("fault {}", n);
            Evidence e2 = e;
            fast.evidence(std::move(e));
            ref.evidence(std::move(e2));
        }
        if (rng() % 1000 == 0) {
            fast.flushCounts();
            ref.flushCounts();
        }
    }
    matcher->finish(fast);
    fast.flushCounts();
    ref.flushCounts();
    fast.flushWindows();
    ref.flushWindows();
    ASSERT_FALSE(fast.error());
    std::string a = dumpRows(*p.fast), b = dumpRows(*p.ref);
    EXPECT_GT(std::count(a.begin(), a.end(), '\n'), lines / 20);
    EXPECT_GT(sum.operands, static_cast<uint64_t>(lines / 50));
    EXPECT_EQ(a, b);
}

TEST(StoreSink, PendingArgsFromTheMatcherAgreeWithEagerArgs) {
    compareLinesThroughMatcher(11, 4, 6, 30000);
    compareLinesThroughMatcher(12, 64, 40, 30000);
    compareLinesThroughMatcher(13, 1, 300, 30000);  // matcher threads evicted (256 kept)
}

}  // namespace
}  // namespace gpufault::testing
