// Newest-first input (`journalctl -r`, `tac`) of ring-timeout / GPU-reset episodes: every real
// fixture with a reset, its lines in reverse order through the whole text pipeline, gives the
// same gpu_reset records as the forward file (each at the mirrored line of its first line in
// time, same trigger, task, attrs and excerpt); and the lines held while the order is not known
// (gpu_reset.cpp) keep the checkpoint at the first of them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "collectors/common/evidence_json.h"
#include "collectors/kernel_log/gpu_reset.h"
#include "collectors/pipeline.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

std::vector<std::string> fixtureLines(const std::string& name) {
    std::ifstream in(std::string(std::getenv("GPUFAULT_TEST_DATA")) + "/real/" + name);
    EXPECT_TRUE(in) << name;
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

/// The gpu_reset records of `lines` through the text pipeline, as JSON without `line`, keyed
/// by the line of the record in forward numbering (`mirror`: the input is reversed, N + 1 - line).
std::map<uint64_t, nlohmann::json> resets(const std::vector<std::string>& lines, bool mirror) {
    CollectSink sink;
    TextPipeline pipe(sink);
    uint64_t n = 0;
    for (const auto& l : lines) pipe.feedLine(++n, l);
    pipe.finish();
    std::map<uint64_t, nlohmann::json> out;
    for (const auto& e : sink.evidences) {
        if (e.kind != Kind::GpuReset) continue;
        auto j = toJson(e);
        j.erase("line");
        uint64_t at = mirror ? lines.size() + 1 - e.line : e.line;
        EXPECT_FALSE(out.contains(at)) << "two records at line " << at;
        out[at] = j;
    }
    return out;
}

class GpuResetReversed : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuResetReversed, SameRecordsAsTheForwardFile) {
    auto lines = fixtureLines(GetParam());
    auto forward = resets(lines, false);
    ASSERT_FALSE(forward.empty());
    std::vector<std::string> rev(lines.rbegin(), lines.rend());
    auto backward = resets(rev, true);
    EXPECT_EQ(backward.size(), forward.size());
    for (const auto& [line, rec] : forward) {
        ASSERT_TRUE(backward.contains(line)) << "no record at forward line " << line;
        EXPECT_EQ(backward[line], rec) << "forward line " << line;
    }
}

// Every fixture in tests/data/real with a gpu_reset record.
INSTANTIATE_TEST_SUITE_P(
    Fixtures,
    GpuResetReversed,
    ::testing::Values("062-sqc-inst-fault-null-then-mes-reset-gfx1103.txt",
                      "084-mi300x-ras-athub-aca-xgmi-mode1-reset-eight-gpus.txt",
                      "092-ring-gfx-timeout-process-line-ring-reset-failed-mode2.txt",
                      "093-dmesg-T-no-amdgpu-tag-mes-reset-source-3.txt",
                      "094-gpuowl-headless-flags-qcm-fence-baco-reset.txt",
                      "102-amdlog7-tid-space-hw-exception-launch-failure-syslog-mes-reset.txt",
                      "118-mi50-dmesg-T-ras-athub-uncorrectable-reset-powerplay.txt"));

TEST(GpuResetReversedHold, Fixture092NewestFirstIsOneRecordWithItsTask) {
    auto lines = fixtureLines("092-ring-gfx-timeout-process-line-ring-reset-failed-mode2.txt");
    std::vector<std::string> rev(lines.rbegin(), lines.rend());
    auto r = resets(rev, false);
    ASSERT_EQ(r.size(), 1u);
    const auto& [line, j] = *r.begin();
    EXPECT_EQ(line, rev.size() - 2);  // the ring timeout, third line of the forward file
    EXPECT_EQ(j["pid"], 1048641);
    EXPECT_EQ(j["thread"], "code:cs0");
    EXPECT_EQ(j["attrs"]["trigger"], "ring_timeout");
    EXPECT_EQ(j["attrs"]["reset_method"], "mode2");
}

TEST(GpuResetReversedHold, HeldLinesKeepTheCheckpointUntilReplayed) {
    auto m = makeGpuResetMatcher();
    CollectSink sink;
    const std::string D = "amdgpu 0000:c5:00.0: amdgpu: ";
    auto feed = [&](uint64_t line, const std::string& msg) {
        testing::feedLine(*m, sink, line, D + msg);
    };
    // No stamps: `MODE2 reset` read after `GPU reset succeeded, trying to resume` tells the order.
    feed(1, "GPU reset succeeded, trying to resume");
    EXPECT_EQ(m->openSince(), 1u);
    EXPECT_FALSE(m->idle());
    feed(2, "MODE2 reset");
    feed(3, "GPU reset begin!");
    feed(4, " Process code pid 1048641 thread code:cs0 pid 1048662");
    feed(5, "ring gfx_0.0.0 timeout, signaled seq=2662395, emitted seq=2662397");
    EXPECT_TRUE(sink.evidences.empty());  // held until a gap shows the episode is over
    EXPECT_EQ(m->openSince(), 1u);
    m->finish(sink);
    ASSERT_EQ(sink.evidences.size(), 1u);
    EXPECT_EQ(sink.evidences[0].line, 5u);
    EXPECT_EQ(sink.evidences[0].pid, 1048641);
    EXPECT_EQ(sink.evidences[0].attr("trigger"), "ring_timeout");
    EXPECT_EQ(sink.evidences[0].attr("result"), std::nullopt);
    EXPECT_FALSE(m->openSince());
    EXPECT_TRUE(m->idle());
}

}  // namespace
}  // namespace gpufault
