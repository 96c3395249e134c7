// One file holding a forward GPU reset episode and a newest-first one (`journalctl -r`) of
// another reset, either first, either older, built from real fixture lines in each prefix form
// (mixed_runs.h): each episode is one record with its own task and reset method
// (gpu_reset.cpp learns the order again for each run of episodes). And a boot marker ends the
// episodes in progress. Whole text pipeline.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/pipeline.h"
#include "tests/collectors/kernel_log/mixed_runs.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

using namespace testing;

// Fixture 102: a MES failure on GPU c1 (journald iso lines), MODE2 reset, `GPU reset(2)
// succeeded!`.
std::vector<std::string> mesReset() {
    return fixtureMessages(
        "102-amdlog7-tid-space-hw-exception-launch-failure-syslog-mes-reset.txt", 30, 64);
}

// Fixture 092: a ring timeout on GPU c5 with its task line, a failed ring reset, MODE2 reset.
std::vector<std::string> ringReset() {
    return fixtureMessages("092-ring-gfx-timeout-process-line-ring-reset-failed-mode2.txt", 3, 16);
}

std::vector<Evidence> resets(const std::vector<std::string>& lines) {
    CollectSink sink;
    TextPipeline pipe(sink);
    uint64_t n = 0;
    for (const auto& l : lines) pipe.feedLine(++n, l);
    pipe.finish();
    std::vector<Evidence> out;
    for (auto& e : sink.evidences)
        if (e.kind == Kind::GpuReset) out.push_back(std::move(e));
    return out;
}

// The two records, whatever their order: the MES one of c1 and the ring-timeout one of c5.
void expectTwo(const std::vector<Evidence>& r) {
    ASSERT_EQ(r.size(), 2u);
    for (const auto& e : r) {
        SCOPED_TRACE(e.raw);
        EXPECT_EQ(e.attr("reset_method"), "mode2");
        if (e.pci == "0000:c1:00.0") {
            EXPECT_EQ(e.attr("trigger"), "mes_failure");
            EXPECT_EQ(e.attr("mes_msg"), "REMOVE_QUEUE");
            EXPECT_FALSE(e.pid);
        } else {
            EXPECT_EQ(e.pci, "0000:c5:00.0");
            EXPECT_EQ(e.attr("trigger"), "ring_timeout");
            EXPECT_EQ(e.attr("ring"), "gfx_0.0.0");
            EXPECT_EQ(e.pid, 1048641);
            EXPECT_EQ(e.process, "code");
            EXPECT_EQ(e.tid, 1048662);
            EXPECT_EQ(e.thread, "code:cs0");
        }
    }
}

// Stamps 0.3 s apart: journalctl short ties some lines and not others.
constexpr int64_t kStep = 300000;

TEST(GpuResetMixedRuns, ForwardThenNewestFirstKeepsTheSecondTaskAndMethod) {
    for (Form f : kForms) {
        for (bool later : {true, false}) {
            SCOPED_TRACE(std::string(formName(f)) + (later ? " later" : " earlier"));
            auto fwd = stamped(f, 40000000000, kStep, mesReset());
            auto rev =
                newestFirst(stamped(f, later ? 50000000000 : 30000000000, kStep, ringReset()));
            expectTwo(resets(concat(fwd, rev)));
        }
    }
}

TEST(GpuResetMixedRuns, NewestFirstThenForwardKeepsBothEpisodes) {
    for (Form f : kForms) {
        for (bool later : {true, false}) {
            SCOPED_TRACE(std::string(formName(f)) + (later ? " later" : " earlier"));
            auto rev = newestFirst(stamped(f, 40000000000, kStep, ringReset()));
            auto fwd = stamped(f, later ? 50000000000 : 30000000000, kStep, mesReset());
            expectTwo(resets(concat(rev, fwd)));
        }
    }
}

// A forward episode that resumed, then the same GPU's next reset newest first: two records.
TEST(GpuResetMixedRuns, ResumedEpisodeThenNewestFirstOnOneGpu) {
    for (Form f : kForms) {
        SCOPED_TRACE(formName(f));
        auto fwd = stamped(f, 40000000000, kStep, ringReset());
        auto rev = newestFirst(
            stamped(f, 50000000000, kStep, replaced(mesReset(), "0000:c1:00.0", "0000:c5:00.0")));
        auto r = resets(concat(fwd, rev));
        ASSERT_EQ(r.size(), 2u);
        EXPECT_EQ(r[0].attr("trigger"), "ring_timeout");
        EXPECT_EQ(r[0].pid, 1048641);
        EXPECT_EQ(r[0].attr("reset_method"), "mode2");
        EXPECT_EQ(r[1].attr("trigger"), "mes_failure");
        EXPECT_EQ(r[1].attr("reset_method"), "mode2");
        EXPECT_FALSE(r[1].pid);
    }
}

// A boot marker ends the episode in progress: the next boot's lines of the same GPU start
// their own.
TEST(GpuResetMixedRuns, BootMarkerEndsTheEpisode) {
    auto ring = ringReset();
    std::vector<std::string> first(ring.begin(), ring.begin() + 2);  // timeout and task
    for (Form f : kForms) {
        SCOPED_TRACE(formName(f));
        auto lines = concat(
            stamped(f, 40000000000, kStep, first),
            concat(
                {"-- Boot 6bd9b0a8e3f94d1c8e0a2b3c4d5e6f70 --"},
                stamped(f, 5000000, kStep, replaced(mesReset(), "0000:c1:00.0", "0000:c5:00.0"))));
        auto r = resets(lines);
        ASSERT_EQ(r.size(), 2u);
        EXPECT_EQ(r[0].line, 1u);
        EXPECT_EQ(r[0].pid, 1048641);
        EXPECT_FALSE(r[0].attr("reset_method"));  // the next boot's reset is not this one's
        EXPECT_EQ(r[1].line, 4u);
        EXPECT_EQ(r[1].attr("trigger"), "mes_failure");
        EXPECT_EQ(r[1].attr("reset_method"), "mode2");
    }
}

}  // namespace
}  // namespace gpufault
