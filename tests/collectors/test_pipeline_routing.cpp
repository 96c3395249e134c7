// TextPipeline::match()'s routing by bit masks (a matcher's idle() asked after it is fed, not
// for every line) against the routing it replaced (every skippable matcher's idle() asked for
// every line), on thousands of lines drawn from the real fixtures, mutated and interleaved with
// generated AMD_LOG_LEVEL lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "collectors/common/evidence_json.h"
#include "collectors/pipeline.h"

namespace gpufault {
namespace {

/// The matcher half as it was before the masks: decode() of its own pipeline, then every
/// matcher that cannot be skipped, or whose idle() says no, gets the line.
class ReferenceRouting {
  public:
    explicit ReferenceRouting(Sink& out) : outer_(out), decoder_(unused_), m_(makeTextMatchers()) {}
    void feedLine(uint64_t n, std::string_view raw) {
        decoder_.decode(
            n,
            raw,
            [this](const LogLine& l) { match(l); },
            [this, n](std::string_view r, const FixedLine& fx) {
                LineDecoder::fillFixed(n, r, fx, filled_);
                if (fx.check_trace && isApiTraceMessageQuick(filled_.text)) return;
                match(filled_);
            });
    }
    void finish() {
        decoder_.decodeFinish([this](const LogLine& l) { match(l); });
        for (auto& m : m_) {
            m->finish(out_);
            closeProcesses();
        }
    }

  private:
    void match(const LogLine& l) {
        if (!l.amd_level) {
            for (auto& m : m_) {
                m->feed(l, out_);
                closeProcesses();
            }
            return;
        }
        const bool dispatchLine = isDispatchContext(l.text);
        for (auto& m : m_) {
            const bool skippable = dispatchLine ? !m->ownsDispatchLines() : m->kernelLogOnly();
            if (!skippable || !m->idle()) m->feed(l, out_);
            closeProcesses();
        }
    }
    /// Matcher::closeProcess() for each record that ends a process, and each run boundary,
    /// emitted since the last call, in their order.
    void closeProcesses() {
        for (; seen_ < ends_.size(); ++seen_) {
            const End end = ends_[seen_];
            for (auto& m : m_) m->closeProcess(end.line, end.pid, end.rank, out_);
        }
    }
    struct End {
        uint64_t line;
        std::optional<int64_t> pid, rank;
    };
    /// Sees every record before `out_`.
    struct Tee final : Sink {
        Tee(Sink& to, std::vector<End>& ends) : to(to), ends(ends) {}
        void evidence(Evidence&& e) override {
            if (endsProcess(e)) ends.push_back({e.line, e.pid, e.rank});
            to.evidence(std::move(e));
        }
        void runBoundary(uint64_t line, std::optional<int64_t> rank) override {
            ends.push_back({line, std::nullopt, rank});
        }
        void dispatch(Dispatch&& d) override { to.dispatch(std::move(d)); }
        void operand(Operand&& o) override { to.operand(std::move(o)); }
        void warning(Warning&& w) override { to.warning(std::move(w)); }
        void context(const Evidence& e) override { to.context(e); }
        bool takesPendingArgs() const override { return to.takesPendingArgs(); }
        Sink& to;
        std::vector<End>& ends;
    };
    std::vector<End> ends_;
    size_t seen_ = 0;
    Sink& outer_;
    Tee tee_{outer_, ends_};
    Sink& out_ = tee_;
    CollectSink unused_;
    TextPipeline decoder_;  ///< its decoder half only
    LogLine filled_;
    std::vector<std::unique_ptr<Matcher>> m_;
};

std::vector<std::string> fixtureLines() {
    const char* d = std::getenv("GPUFAULT_TEST_DATA");
    const std::filesystem::path dir = std::filesystem::path(d ? d : "tests/data") / "real";
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir))
        if (e.path().extension() == ".txt") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<std::string> lines;
    for (const auto& f : files) {
        std::ifstream in(f, std::ios::binary);
        for (std::string s; std::getline(in, s);) lines.push_back(s);
    }
    return lines;
}

std::string describe(const CollectSink& s) {
    std::string out;
    for (const Evidence& e : s.evidences) out += toJson(e).dump() + "\n";
    for (const Dispatch& d : s.dispatches) {
        out += "D " + std::to_string(d.line) + " " + std::to_string(d.context_line) + " " +
               std::to_string(d.pid.value_or(-1)) + " " + d.runtime_tid + " " + d.kernel + " " +
               toJson(d.time).dump();
        for (const DispatchArg& a : d.args)
            out += " " + std::to_string(a.index) + ":" + a.name + ":" + std::to_string(a.ptr) +
                   ":" + std::to_string(a.obj_lo.value_or(0)) + "-" +
                   std::to_string(a.obj_hi.value_or(0));
        out += "\n";
    }
    for (const Operand& o : s.operands)
        out += "O " + std::to_string(o.line) + " " + o.name + " " + std::to_string(o.ptr) + " " +
               std::to_string(o.end) + " " + o.origin + "\n";
    for (const Warning& w : s.warnings)
        out += "W " + std::to_string(w.line) + " " + w.message + "\n";
    return out;
}

TEST(PipelineRouting, BusyMasksAgreeWithAskingIdleForEveryLine) {
    const std::vector<std::string> real = fixtureLines();
    ASSERT_GT(real.size(), 1000u);
    const std::vector<std::string> amd = {
        ":3:rocvirtual.cpp           :798 : 1000000007 us: [pid:4242  tid:0x7f0a1b2c3d40] Arg0:   "
        "= val:1073741824",
        ":3:rocvirtual.cpp           :723 : 1000000008 us: [pid:4242  tid:0x7f0a1b2c3d40] Arg1:   "
        "= ptr:0x705165a01000 obj:[0x705165a00000-0x705365a00000]",
        ":3:rocvirtual.cpp           :3016: 1000000010 us: [pid:4242  tid:0x7f0a1b2c3d40] "
        "ShaderName : _Z9vectoraddPfS_S_i",
        ":3:hip_module.cpp           :669 : 1000000006 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
        "hipLaunchKernel ( 0x7056a988e9d0, {1048576,1,1}, {256,1,1}, 0x70536bbc2fa0, 0, "
        "stream:0x5631a8c0e290 ) ",
        ":3:hip_stream.cpp           :476 : 1000000014 us: [pid:4242  tid:0x7f0a1b2c3d40] "
        "hipStreamQuery: Returned hipErrorNotReady : ",
        ":1:rocvirtual.cpp           :3190: 1000000015 us: [pid:4242  tid:0x7f0a1b2c3d40] "
        "Graph shader name : _Z4fillPfi",
        ":3:hip_memory.cpp           :333 : 1000000016 us: [pid:4242  tid:0x7f0a1b2c3d40] "
        "hipMalloc: Returned hipErrorOutOfMemory : ",
    };
    std::mt19937 rng(20261130);
    auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    const char subst[] = {' ', ':', '0', 'x', '[', ']', '\r', 'a'};
    size_t lines = 0;
    for (int round = 0; round < 6; ++round) {
        CollectSink fastOut, refOut;
        TextPipeline fast(fastOut);
        ReferenceRouting ref(refOut);
        // A fixture line in its order (blocks stay whole) or a random one, an AMD line (kept
        // or a trace line), one in eight mutated at a random byte.
        size_t at = pick(real.size());
        for (int i = 0; i < 6000; ++i) {
            std::string s;
            const size_t kind = pick(10);
            if (kind < 5) {
                s = real[at];
                at = (at + 1) % real.size();
            } else if (kind < 6) {
                s = real[pick(real.size())];
            } else {
                s = amd[pick(amd.size())];
            }
            if (!s.empty() && pick(8) == 0) s[pick(s.size())] = subst[pick(std::size(subst))];
            fast.feedLine(++lines, s);
            ref.feedLine(lines, s);
        }
        fast.finish();
        ref.finish();
        EXPECT_GT(fastOut.evidences.size(), 50u);
        EXPECT_GT(fastOut.dispatches.size(), 50u);
        EXPECT_EQ(describe(fastOut), describe(refOut)) << "round " << round;
    }
}

}  // namespace
}  // namespace gpufault
