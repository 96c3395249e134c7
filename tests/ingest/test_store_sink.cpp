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
#include <set>

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
/// The flood rule is checked against every fault that arrived before (a list, no state).
class ReferenceSink final : public Sink {
  public:
    ReferenceSink(Store& store,
                  int64_t source,
                  size_t window,
                  uint64_t count_after,
                  FloodRule flood = FloodRule{})
        : store_(store),
          source_(source),
          window_(window),
          countAfter_(count_after),
          flood_(flood) {}

    void evidence(Evidence&& e) override {
        if (opensIncident(e.kind)) {
            // The faults that arrived before less than the span before this one's line (or
            // after it): a flood for the windows they flush. The list is in arrival order and a
            // record arrives at most kLate lines late, so the walk back stops there.
            // Only floodFaultKind() faults are a flood's or make one.
            bool any = false, noPid = false;
            std::set<int64_t> recent;
            const bool floods = floodFaultKind(e.kind);
            for (auto f = faults_.rbegin(); floods && f != faults_.rend(); ++f) {
                if (f->second + flood_.lines + kLate <= e.line) break;
                if (f->second + flood_.lines <= e.line) continue;
                any = true;
                if (f->first)
                    recent.insert(*f->first);
                else
                    noPid = true;
            }
            for (auto& [key, w] : windows_) {
                if (e.pid && key.first >= 0 && key.first != *e.pid) continue;
                // A window naming no pid is flushed by every fault, one of pid P by those of P
                // and by those naming none.
                bool flood = key.first < 0 ? any : noPid || recent.count(key.first) > 0;
                flushWindow(w, e.line, flood ? std::min(flood_.window, window_) : window_);
            }
            if (floods) faults_.emplace_back(e.pid, e.line);
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
        for (auto& [key, w] : windows_) flushWindow(w, UINT64_MAX, window_);
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
    void flushWindow(std::deque<Held>& w, uint64_t before, size_t n) {
        size_t end = 0;
        while (end < w.size() && w[end].d.line < before) ++end;
        size_t begin = end > n ? end - n : 0;
        for (size_t i = begin; i < end; ++i) {
            auto& h = w[i];
            if (h.stored) continue;
            h.stored = true;
            auto id = store_.addDispatch(source_, h.d);
            ASSERT_TRUE(id);
            for (const auto& a : h.d.args) {
                if (!a.obj_lo || !a.obj_hi || *a.obj_hi <= *a.obj_lo) continue;
                if (*a.obj_hi - *a.obj_lo > (uint64_t{1} << 48)) continue;  // no allocation
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
    static constexpr uint64_t kLate = 16;  ///< lines a fault may come late in these streams
    uint64_t countAfter_;
    FloodRule flood_;
    std::vector<std::pair<std::optional<int64_t>, uint64_t>> faults_;  ///< (pid, line)
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
/// `flood`: the flood rule of both sinks; `pids`: processes the threads and faults belong to;
/// `faultEvery`: one fault per that many dispatches on average.
void compareOnRandomStream(uint32_t seed,
                           size_t window,
                           int threads,
                           int dispatches,
                           FloodRule flood = FloodRule{},
                           int pids = 3,
                           size_t faultEvery = 200) {
    SCOPED_TRACE(fmt::format("seed {} window {} threads {} flood {}/{}",
                             seed,
                             window,
                             threads,
                             flood.lines,
                             flood.window));
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
    StoreSink fast(*p.fast, p.fastSource, static_cast<int>(window), countAfter, sumFast, flood);
    ReferenceSink ref(*p.ref, p.refSource, window, countAfter, flood);
    Dispatch reused;  // as the HIP matcher does: one Dispatch for every call
    uint64_t line = 0;
    for (int i = 0; i < dispatches; ++i) {
        line += 1 + pick(3);
        int t = static_cast<int>(pick(static_cast<size_t>(threads)));
        Dispatch d;
        d.line = line;
        d.time.runtime_us = static_cast<int64_t>(line * 10);
        if (t % 5 != 4) d.pid = 100 + t % pids;
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
        if (pick(faultEvery) == 0) {  // a fault, maybe emitted a few lines late
            Evidence e;
            e.kind = pick(2) ? Kind::RocrMemoryFault : Kind::AmdgpuPageFault;
            e.line = line - std::min<uint64_t>(line - 1, pick(4));
            e.address = 0x7000000000 + rng() % 0x100000;
            if (pick(3) != 0)
                e.pid = 100 + static_cast<int64_t>(pick(static_cast<size_t>(pids) + 1));
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
    // Faults ~400 lines apart: with the default flood rule every one after the first is a
    // flood's; with span 0 none is.
    const FloodRule none{0, 8};
    compareOnRandomStream(1, 3, 8, 6000, none);     // rings wrap (67 slots), few threads
    compareOnRandomStream(2, 128, 20, 6000, none);  // a window larger than most runs
    compareOnRandomStream(3, 1, 2, 4000, none);     // count_after: early lines not counted
    compareOnRandomStream(4, 16, 60, 8000, none);
    compareOnRandomStream(1, 3, 8, 6000);
    compareOnRandomStream(2, 128, 20, 6000);
    compareOnRandomStream(4, 16, 60, 8000);
}

TEST(StoreSink, FloodWindowsAgreeWithEveryFaultBefore) {
    // Spans near the faults' spacing: some faults are a flood's, some not, by pid.
    compareOnRandomStream(7, 16, 12, 8000, FloodRule{400, 4});
    compareOnRandomStream(8, 32, 30, 8000, FloodRule{1500, 8});
    compareOnRandomStream(9, 8, 40, 8000, FloodRule{300, 1}, 12, 30);
}

/// Writes one dispatch (kernel `k<line>`) at `line` into `sink`.
void dispatchAt(StoreSink& sink, uint64_t line, std::optional<int64_t> pid, std::string tid) {
    Dispatch d;
    d.line = line;
    d.pid = pid;
    d.runtime_tid = std::move(tid);
    d.kernel = fmt::format("k{}", line);
    sink.dispatch(std::move(d));
}

void faultAt(StoreSink& sink, uint64_t line, std::optional<int64_t> pid) {
    Evidence e;
    e.kind = Kind::RocrMemoryFault;
    e.line = line;
    e.pid = pid;
    e.address = 0x7f0000000000 + line * 0x1000;
    e.raw = fmt::format("fault {}", line);
    sink.evidence(std::move(e));
}

std::vector<int64_t> storedDispatchLines(Store& s) {
    std::vector<int64_t> lines;
    auto st = s.db().prepare("SELECT line FROM dispatches ORDER BY line");
    EXPECT_TRUE(st);
    while (st) {
        auto row = st->step();
        if (!row || !*row) break;
        lines.push_back(st->i64(0));
    }
    return lines;
}

/// The lines of the dispatch rows stored when one thread of pid 100 dispatches at lines 1..10,
/// 12..15 and 17..200, with faults of pid 100 at lines 11, 16 and 201 (window 4).
std::vector<int64_t> storedLinesAroundFaults(FloodRule flood) {
    Pair p;
    IngestSummary sum;
    StoreSink sink(*p.fast, p.fastSource, 4, 0, sum, flood);
    for (uint64_t line = 1; line <= 201; ++line) {
        if (line == 11 || line == 16 || line == 201)
            faultAt(sink, line, 100);
        else
            dispatchAt(sink, line, 100, "0x7f01");
    }
    EXPECT_FALSE(sink.error());
    return storedDispatchLines(*p.fast);
}

TEST(StoreSink, AFloodsFaultsStoreShortWindows) {
    // Span 0: every fault stores the 4 dispatches before it.
    EXPECT_EQ(storedLinesAroundFaults(FloodRule{0, 2}),
              (std::vector<int64_t>{7, 8, 9, 10, 12, 13, 14, 15, 197, 198, 199, 200}));
    // The fault at 16 comes 5 lines after the one at 11: the last 2 only; the one at 201
    // (185 lines after 16) the full 4.
    EXPECT_EQ(storedLinesAroundFaults(FloodRule{100, 2}),
              (std::vector<int64_t>{7, 8, 9, 10, 14, 15, 197, 198, 199, 200}));
    // A span past 201: each fault after the first is a flood's (not "after the first fault
    // of the flood": 201 is 190 lines after 11).
    EXPECT_EQ(storedLinesAroundFaults(FloodRule{186, 2}),
              (std::vector<int64_t>{7, 8, 9, 10, 14, 15, 199, 200}));
    // A short window larger than the window: the window.
    EXPECT_EQ(storedLinesAroundFaults(FloodRule{1000, 16}),
              (std::vector<int64_t>{7, 8, 9, 10, 12, 13, 14, 15, 197, 198, 199, 200}));
}

TEST(StoreSink, AFloodIsKeptPerProcess) {
    // Window 4, short window 1, span 1 000. Lines 1..300 dispatch in turn on a thread of
    // pid 100 (lines = 0 mod 3), of pid 200 (1 mod 3) and one naming no pid (2 mod 3), but
    // for faults of pid 200 at 100, of pid 100 at 200 and naming none at 290.
    Pair p;
    IngestSummary sum;
    StoreSink sink(*p.fast, p.fastSource, 4, 0, sum, FloodRule{1000, 1});
    for (uint64_t line = 1; line <= 300; ++line) {
        if (line == 100)
            faultAt(sink, line, 200);
        else if (line == 200)
            faultAt(sink, line, 100);
        else if (line == 290)
            faultAt(sink, line, std::nullopt);
        else if (line % 3 == 0)
            dispatchAt(sink, line, 100, "0xa");
        else if (line % 3 == 1)
            dispatchAt(sink, line, 200, "0xb");
        else
            dispatchAt(sink, line, std::nullopt, "0xc");
    }
    ASSERT_FALSE(sink.error());
    // 100: pid 200's window and the pid-less one, in full (no fault before). 200: pid 100's in
    // full (the fault of pid 200 flushes no window of pid 100), the pid-less one short (any
    // fault flushes it). 290: all three short.
    const std::vector<int64_t> fault100{88, 89, 91, 92, 94, 95, 97, 98},
        fault200{189, 192, 195, 197, 198}, fault290{287, 288, 289};
    std::vector<int64_t> expected = fault100;
    expected.insert(expected.end(), fault200.begin(), fault200.end());
    expected.insert(expected.end(), fault290.begin(), fault290.end());
    EXPECT_EQ(storedDispatchLines(*p.fast), expected);
}

TEST(StoreSink, AProcessFloodOutlivesFaultsOfManyOthers) {
    // Window 16, the default rule (65 536 lines, 8), lines from 200 001 (past the span and
    // the lines a record may come late: old pids may be forgotten). Pid 7 dispatches at
    // lines +1..+20 and faults at +21; 2 000 other processes fault at +22..+2021 (more pids
    // than the 1 024 kept before old ones are forgotten); pid 7 dispatches at +2022..+2041
    // and faults at +2042, 2 021 lines after its last fault: a flood's, the last 8.
    Pair p;
    IngestSummary sum;
    StoreSink sink(*p.fast, p.fastSource, 16, 0, sum);
    const uint64_t base = 200000;
    uint64_t line = base;
    for (int i = 0; i < 20; ++i) dispatchAt(sink, ++line, 7, "0x7");
    faultAt(sink, ++line, 7);
    for (int64_t pid = 1000; pid < 3000; ++pid) faultAt(sink, ++line, pid);
    for (int i = 0; i < 20; ++i) dispatchAt(sink, ++line, 7, "0x7");
    faultAt(sink, ++line, 7);
    ASSERT_EQ(line, base + 2042);
    ASSERT_FALSE(sink.error());
    std::vector<int64_t> expected;
    for (int64_t l = 5; l <= 20; ++l) expected.push_back(base + l);
    for (int64_t l = 2034; l <= 2041; ++l) expected.push_back(base + l);
    EXPECT_EQ(storedDispatchLines(*p.fast), expected);
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
