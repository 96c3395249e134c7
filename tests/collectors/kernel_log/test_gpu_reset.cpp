// Tests of the amdgpu ring-timeout / GPU-reset matcher: one constructed line per producer format
// string (FORMATS.md §1.5, §1.7), then real lines from the fixtures.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectors/common/text.h"
#include "collectors/kernel_log/gpu_reset.h"
#include "tests/support/matcher_feed.h"

namespace gpufault {
namespace {

std::vector<Evidence> run(const std::vector<std::string>& lines) {
    auto m = makeGpuResetMatcher();
    CollectSink sink;
    uint64_t n = 0;
    for (auto& l : lines) {
        LogLine ll;
        ll.line = ++n;
        ll.raw = l;
        ll.text = text::trimRight(l);
        m->feed(ll, sink);
    }
    m->finish(sink);
    for (auto& e : sink.evidences) {
        EXPECT_EQ(e.kind, Kind::GpuReset);
        EXPECT_EQ(e.vendor, "amd");
    }
    return sink.evidences;
}

const std::string D = "amdgpu 0000:03:00.0: amdgpu: ";

TEST(GpuReset, RingTimeoutWithTaskLineAndWholeEpisodeIsOneRecord) {
    auto r = run({D + "ring gfx_0.0.0 timeout, signaled seq=1041, emitted seq=1043",
                  D + " Process python3 pid 4242 thread python3:cs0 pid 4250",
                  D + "Starting gfx_0.0.0 ring reset",
                  D + "Ring gfx_0.0.0 reset failed",
                  D + "GPU reset begin!",
                  D + "Dumping IP State",
                  D + "MODE2 reset",
                  D + "GPU reset succeeded, trying to resume",
                  D + "GPU reset(2) succeeded!"});
    ASSERT_EQ(r.size(), 1u);
    const Evidence& e = r[0];
    EXPECT_EQ(e.line, 1u);
    EXPECT_EQ(e.pci, "0000:03:00.0");
    EXPECT_EQ(e.pid, 4242);
    EXPECT_EQ(e.process, "python3");
    EXPECT_EQ(e.tid, 4250);
    EXPECT_EQ(e.thread, "python3:cs0");
    EXPECT_EQ(e.attr("trigger"), "ring_timeout");
    EXPECT_EQ(e.attr("ring"), "gfx_0.0.0");
    EXPECT_EQ(e.attr("signaled_seq"), "1041");
    EXPECT_EQ(e.attr("emitted_seq"), "1043");
    EXPECT_EQ(e.attr("reset_method"), "mode2");
    EXPECT_EQ(e.attr("reset_count"), "2");
    EXPECT_EQ(e.attr("result"), "succeeded");
    EXPECT_EQ(std::count(e.raw.begin(), e.raw.end(), '\n'), 7);  // Dumping IP State not kept
}

TEST(GpuReset, SoftRecoveredTimeoutIsItsOwnRecord) {
    auto r = run({D + "ring comp_1.0.0 timeout, but soft recovered",
                  D + "ring comp_1.0.0 timeout, but soft recovered"});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].attr("result"), "soft_recovered");
    EXPECT_EQ(r[1].line, 2u);
}

TEST(GpuReset, SuccessfulRingResetEndsTheEpisode) {
    auto r = run({D + "ring sdma0 timeout, signaled seq=5, emitted seq=7",
                  D + "Starting sdma0 ring reset",
                  D + "Ring sdma0 reset succeeded",
                  D + "ring gfx_0.0.0 timeout, signaled seq=9, emitted seq=11"});
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].attr("result"), "ring_reset_succeeded");
    EXPECT_EQ(r[0].attr("ring"), "sdma0");
    EXPECT_EQ(r[1].line, 4u);
    EXPECT_EQ(r[1].attr("ring"), "gfx_0.0.0");
}

TEST(GpuReset, ResetBeginWithSourceAndFailures) {
    auto a = run({"amdgpu 0000:c4:00.0: GPU reset begin!. Source:  3",
                  "amdgpu 0000:c4:00.0: GPU reset(1) failed"});
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].attr("source"), "3");
    EXPECT_EQ(a[0].attr("result"), "failed");
    EXPECT_EQ(a[0].attr("trigger"), "reset_begin");
    auto b = run({D + "GPU reset(3) failed with error -110 "});
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].attr("reset_count"), "3");
    EXPECT_EQ(b[0].attr("result"), "failed");
    auto c = run({D + "GPU Recovery Failed: -22"});
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].attr("result"), "failed");
    auto d = run({D + "GPU reset end with ret = 0"});
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0].attr("result"), "succeeded");
}

TEST(GpuReset, ResetMethods) {
    for (auto [line, method] : {std::pair{"MODE1 reset", "mode1"},
                                {"GPU mode1 reset", "mode1"},
                                {"GPU smu mode1 reset", "mode1"},
                                {"GPU psp mode1 reset", "mode1"},
                                {"MODE2 reset", "mode2"},
                                {"BACO reset", "baco"},
                                {"GPU BACO reset", "baco"},
                                {"PCI CONFIG reset", "pci_config"},
                                {"GPU pci config reset", "pci_config"}}) {
        auto r = run({D + line});
        ASSERT_EQ(r.size(), 1u) << line;
        EXPECT_EQ(r[0].attr("reset_method"), method) << line;
    }
    EXPECT_TRUE(run({D + "BACO reset is not supported on this ASIC, using MODE1"}).empty());
}

TEST(GpuReset, MesFailureStartsAnEpisode) {
    auto r = run({D + "MES failed to respond to msg=REMOVE_QUEUE",
                  D + "failed to remove hardware queue from MES, doorbell=0x1002",
                  D + "MES might be in unrecoverable state, issue a GPU reset",
                  D + "GPU reset begin!"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_EQ(r[0].attr("mes_msg"), "REMOVE_QUEUE");
    EXPECT_EQ(r[0].attr("trigger"), "mes_failure");
    // Two unanswered messages in one episode (and a repeat): both kept, in order, once.
    auto two = run({D + "MES failed to respond to msg=REMOVE_QUEUE",
                    D + "MES failed to respond to msg=MISC (WAIT_REG_MEM)",
                    D + "MES failed to respond to msg=REMOVE_QUEUE",
                    D + "GPU reset begin!"});
    ASSERT_EQ(two.size(), 1u);
    EXPECT_EQ(two[0].attr("mes_msg"), "REMOVE_QUEUE,MISC");
}

// radeon (radeon_fence.c, radeon_device.c): a GPU lockup is the ring timeout that starts the
// episode; a resume that fails after `GPU reset succeeded, trying to resume` says so.
TEST(GpuReset, RadeonLockupResumeAndFailure) {
    const std::string R = "radeon 0000:01:00.0: ";
    auto r = run({R + "GPU lockup (current fence id 0x0000000000005b1b last fence id "
                      "0x0000000000005b1c on ring 0)",
                  R + "Saved 1177 dwords of commands on ring 0.",
                  R + "GPU softreset: 0x00000048",
                  R + "GPU reset succeeded, trying to resume",
                  R + "GPU reset failed"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_EQ(r[0].pci, "0000:01:00.0");
    EXPECT_EQ(r[0].attr("trigger"), "ring_timeout");
    EXPECT_EQ(r[0].attr("ring"), "0");
    EXPECT_EQ(r[0].attr("result"), "failed");
    auto ok = run({R + "GPU reset succeeded, trying to resume"});
    ASSERT_EQ(ok.size(), 1u);
    EXPECT_FALSE(ok[0].attr("result"));
}

// mes_v12's `MES(%d) failed to respond to msg=%s` and the early `MES failed to response
// msg=%d` (no record before).
TEST(GpuReset, MesFailureOfAPipeAndTheEarlyWording) {
    auto a = run({D + "MES(1) failed to respond to msg=INVALIDATE_TLBS"});
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].attr("mes_msg"), "INVALIDATE_TLBS");
    EXPECT_EQ(a[0].attr("trigger"), "mes_failure");
    auto b = run({D + "MES failed to response msg=3"});
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].attr("mes_msg"), "3");
    EXPECT_TRUE(run({D + "MES(1) is ready"}).empty());
}

TEST(GpuReset, RasErrorCountsOnlyWithAReset) {
    EXPECT_TRUE(
        run({D + "uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!"}).empty());
    auto r = run({D + "uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
                  D + "GPU reset begin!"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_EQ(r[0].attr("ras_error"), "ERREVENT_ATHUB_INTERRUPT");
}

TEST(GpuReset, OldDrmErrorTimeoutTakesTheDeviceOfTheResetAfterIt) {
    auto r =
        run({"[ 100.000001] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, signaled "
             "seq=10, emitted seq=12",
             "[ 100.000002] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* Process information: "
             "process Xorg pid 900 thread Xorg:cs0 pid 950",
             "[ 100.000003] amdgpu 0000:0a:00.0: GPU reset begin!",
             "[ 101.000000] amdgpu 0000:0a:00.0: GPU reset(1) succeeded!"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_EQ(r[0].pci, "0000:0a:00.0");
    EXPECT_EQ(r[0].process, "Xorg");
    EXPECT_EQ(r[0].pid, 900);
    EXPECT_EQ(r[0].thread, "Xorg:cs0");
    EXPECT_EQ(r[0].tid, 950);
    EXPECT_EQ(r[0].attr("ring"), "gfx");
}

// FreeBSD drm-kmod prints DRM_ERROR as `[drm ERROR :FUNC] …` (a real report: the timeout and its
// process were not read, the record started at the reset line).
TEST(GpuReset, FreeBsdDrmErrorTimeoutAndProcessLine) {
    auto r =
        run({"[drm ERROR :amdgpu_job_timedout] ring gfx_0.0.0 timeout, signaled seq=12174921, "
             "emitted seq=12174923",
             "[drm ERROR :amdgpu_job_timedout] Process information: process  pid 540118 "
             "thread  pid 540118",
             "drmn0: GPU reset begin!"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_EQ(r[0].pid, 540118);
    EXPECT_EQ(r[0].tid, 540118);
    EXPECT_FALSE(r[0].process);
    EXPECT_FALSE(r[0].pci);
    EXPECT_EQ(r[0].attr("ring"), "gfx_0.0.0");
}

// `ring %s timeout, but soft recovered` (§1.5) is a timeout of its own: a device's soft recovery
// of another ring does not take over the device-less DRM_ERROR timeout before it.
TEST(GpuReset, SoftRecoveryDoesNotTakeOverADeviceLessTimeout) {
    auto r =
        run({"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma1 timeout, signaled "
             "seq=4294967295, emitted seq=0",
             D + "ring gfx_0.0.0 timeout, but soft recovered"});
    ASSERT_EQ(r.size(), 2u);
    std::sort(r.begin(), r.end(), [](auto& a, auto& b) { return a.line < b.line; });
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_FALSE(r[0].pci);
    EXPECT_EQ(r[0].attr("ring"), "sdma1");
    EXPECT_EQ(r[0].attr("signaled_seq"), "4294967295");
    EXPECT_FALSE(r[0].attr("result"));
    EXPECT_EQ(r[1].line, 2u);
    EXPECT_EQ(r[1].pci, "0000:03:00.0");
    EXPECT_EQ(r[1].attr("ring"), "gfx_0.0.0");
    EXPECT_EQ(r[1].attr("result"), "soft_recovered");
}

TEST(GpuReset, DeviceLessTimeoutAloneHasNoPci) {
    auto r =
        run({"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 timeout, signaled seq=1, "
             "emitted seq=2"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_FALSE(r[0].pci);
    EXPECT_EQ(r[0].attr("ring"), "sdma0");
}

TEST(GpuReset, DevErrProcessInformationLine) {
    auto r = run({D + "ring gfx timeout, signaled seq=3, emitted seq=4",
                  D + "Process information: process glxgears pid 77 thread glxgears:cs0 pid 78"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].pid, 77);
    EXPECT_EQ(r[0].tid, 78);
}

TEST(GpuReset, TaskLineOnlyRightAfterTheTimeout) {
    auto r = run({D + "GPU reset begin!", D + " Process python3 pid 4242 thread python3 pid 4250"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_FALSE(r[0].pid);
    EXPECT_TRUE(run({D + " Process python3 pid 4242 thread python3 pid 4250"}).empty());
}

TEST(GpuReset, LinesThatAreNotResetsMakeNoRecord) {
    auto r = run({D + "ring gfx_0.0.0 uses VM inv eng 0 on hub 0",
                  D + "[gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32770)",
                  D + "GCVM_L2_PROTECTION_FAULT_STATUS:0x00801031",
                  "[drm] VRAM is lost due to GPU reset!",
                  "amdgpu: Failed to restore process queues"});
    EXPECT_TRUE(r.empty());
}

TEST(GpuReset, Fixture092RingTimeoutRecordCarriesTheProcess) {
    auto r = run({
        "[127033.279657] amdgpu 0000:c5:00.0: amdgpu: [drm] Check your "
        "/sys/class/drm/card1/device/devcoredump/data",
        "[127033.279661] amdgpu 0000:c5:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled "
        "seq=2662395, emitted seq=2662397",
        "[127033.279667] amdgpu 0000:c5:00.0: amdgpu:  Process code pid 1048641 thread code:cs0 "
        "pid 1048662",
        "[127033.279672] amdgpu 0000:c5:00.0: amdgpu: Starting gfx_0.0.0 ring reset",
        "[127035.492298] amdgpu 0000:c5:00.0: amdgpu: Ring gfx_0.0.0 reset failed",
        "[127035.492304] amdgpu 0000:c5:00.0: amdgpu: GPU reset begin!",
        "[127037.563935] amdgpu 0000:c5:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE",
        "[127037.775225] [drm:gfx_v11_0_cp_gfx_enable.isra.0 [amdgpu]] *ERROR* failed to halt cp "
        "gfx",
        "[127037.776773] amdgpu 0000:c5:00.0: amdgpu: MODE2 reset",
        "[127037.807536] amdgpu 0000:c5:00.0: amdgpu: GPU reset succeeded, trying to resume",
        "[127037.960564] amdgpu 0000:c5:00.0: amdgpu: ring gfx_0.0.0 uses VM inv eng 0",
    });
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].line, 2u);
    EXPECT_EQ(r[0].pci, "0000:c5:00.0");
    EXPECT_EQ(r[0].pid, 1048641);
    EXPECT_EQ(r[0].process, "code");
    EXPECT_EQ(r[0].tid, 1048662);
    EXPECT_EQ(r[0].thread, "code:cs0");
    EXPECT_EQ(r[0].attr("reset_method"), "mode2");
}

TEST(GpuReset, Fixture093NoAmdgpuTagAndCutLastLine) {
    const std::string t = "[Fri Jul 10 20:23:53 2026] amdgpu 0000:c4:00.0: ";
    auto r =
        run({"user@host:~$ sudo dmesg -T | grep -iE 'amdgpu|gpu reset|ring.*timeout' | tail -68",
             t + "MES failed to respond to msg=REMOVE_QUEUE",
             t + "Failed to evict queue 1",
             t + "GPU reset begin!. Source:  3",
             t + "MODE2 reset",
             "[Fri Jul 10 20:23:58 2026] amdgpu 0000:c4:00.0: GPU reset su"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].pci, "0000:c4:00.0");
    EXPECT_EQ(r[0].line, 2u);
    EXPECT_EQ(r[0].attr("source"), "3");
    EXPECT_FALSE(r[0].attr("result"));
}

TEST(GpuReset, Fixture084EightGpusEachGetARecord) {
    std::vector<std::string> lines{
        "[76914.152141] amdgpu 0000:dd:00.0: {1}uncorrectable hardware "
        "error(ERREVENT_ATHUB_INTERRUPT) detected!",
        "[76914.152940] amdgpu 0000:1b:00.0: {1}[Hardware Error]: aca "
        "entry[00].STATUS=0xbaa000000000080b",
        "[76914.214195] amdgpu 0000:dd:00.0: amdgpu: GPU reset begin!"};
    for (std::string bus : {"1b", "dd", "3d", "4e", "bd", "9d", "5f", "cd"})
        lines.push_back("[76914.238315] amdgpu 0000:" + bus + ":00.0: amdgpu: MODE1 reset");
    for (std::string bus : {"dd", "1b"})
        lines.push_back("[76914.238321] amdgpu 0000:" + bus + ":00.0: amdgpu: GPU mode1 reset");
    auto r = run(lines);
    ASSERT_EQ(r.size(), 8u);
    EXPECT_EQ(r[0].pci, "0000:dd:00.0");
    EXPECT_EQ(r[0].line, 1u);
    EXPECT_EQ(r[0].attr("ras_error"), "ERREVENT_ATHUB_INTERRUPT");
    EXPECT_EQ(r[0].attr("reset_method"), "mode1");
}

TEST(GpuReset, Fixture102SyslogRfc3339) {
    const std::string s =
        "2025-08-10T19:55:33.635860+01:00 hostname kernel: amdgpu 0000:c1:00.0: amdgpu: ";
    auto r =
        run({s + "MES failed to respond to msg=REMOVE_QUEUE",
             s + "GPU reset begin! ",
             "2025-08-10T19:55:35.653676+01:00 hostname kernel: [drm:amdgpu_mes_unmap_legacy_queue "
             "[amdgpu]] *ERROR* failed to unmap legacy queue",
             s + "MODE2 reset",
             s + "GPU reset(2) succeeded!",
             "2025-08-10T19:55:38.037757+01:00 hostname kernel: amdgpu 0000:c1:00.0: [drm] device "
             "wedged, but recovered through reset"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].pci, "0000:c1:00.0");
    EXPECT_EQ(r[0].attr("result"), "succeeded");
    EXPECT_EQ(r[0].attr("reset_count"), "2");
}

TEST(GpuReset, Fixture118RasThenResetOldBoard) {
    const std::string t = "[Sat Jan  7 14:25:56 2023] amdgpu 0000:e3:00.0: amdgpu: ";
    auto r = run({t + "MEM ECC is active.",
                  t + "uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
                  t + "GPU reset begin!",
                  "[Sat Jan  7 14:25:59 2023] amdgpu: [powerplay] Failed to set soft min gfxclk !",
                  "[S"});
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].pci, "0000:e3:00.0");
    EXPECT_EQ(r[0].line, 2u);
}

TEST(GpuReset, NewestFirstTaskLineBeforeItsRingTimeout) {
    // journalctl -r: the task line is printed after the timeout, so it comes first.
    auto r = run({D + "GPU reset(1) succeeded!",
                  D + "GPU reset begin!",
                  D + " Process code pid 1048641 thread code:cs0 pid 1048662",
                  D + "ring gfx_0.0.0 timeout, signaled seq=2662395, emitted seq=2662397",
                  D + " Process other pid 1 thread other pid 1",
                  D + "MODE2 reset",
                  D + "ring sdma0 timeout, signaled seq=1, emitted seq=2"});
    auto timeout = std::find_if(r.begin(), r.end(), [](auto& e) { return e.line == 4; });
    ASSERT_NE(timeout, r.end());
    EXPECT_EQ(timeout->pid, 1048641);
    EXPECT_EQ(timeout->thread, "code:cs0");
    auto other = std::find_if(r.begin(), r.end(), [](auto& e) { return e.line == 7; });
    ASSERT_NE(other, r.end());
    EXPECT_FALSE(other->pid);  // the task line was not directly before it
}

// The checkpoint (Matcher::openSince): the first line of the oldest episode still open, or of a
// task line kept for the ring timeout that may follow it; nothing once every episode has ended.
TEST(GpuReset, OpenEpisodeHoldsTheCheckpointAtItsFirstLine) {
    auto m = makeGpuResetMatcher();
    CollectSink sink;
    auto feed = [&](uint64_t line, const std::string& text) {
        testing::feedLine(*m, sink, line, text);
    };
    const std::string D2 = "amdgpu 0000:c6:00.0: amdgpu: ";
    EXPECT_FALSE(m->openSince());
    EXPECT_TRUE(m->idle());
    feed(3, D + "ring gfx_0.0.0 timeout, signaled seq=1041, emitted seq=1043");
    EXPECT_EQ(m->openSince(), 3u);
    EXPECT_FALSE(m->idle());
    feed(4, D + " Process python3 pid 4242 thread python3:cs0 pid 4250");
    feed(5, D2 + "ring sdma0 timeout, signaled seq=5, emitted seq=7");
    feed(6, D + "GPU reset begin!");
    EXPECT_EQ(m->openSince(), 3u);  // the oldest of the two devices' episodes
    feed(7, D + "GPU reset(2) succeeded!");
    EXPECT_EQ(m->openSince(), 5u);  // the first device's episode ended: the second holds it
    ASSERT_EQ(sink.evidences.size(), 1u);
    EXPECT_EQ(sink.evidences[0].line, 3u);
    EXPECT_EQ(sink.evidences[0].pid, 4242);
    feed(8, D2 + "Ring sdma0 reset succeeded");
    EXPECT_FALSE(m->openSince());
    EXPECT_TRUE(m->idle());
    ASSERT_EQ(sink.evidences.size(), 2u);
    EXPECT_EQ(sink.evidences[1].attr("result"), "ring_reset_succeeded");

    // Input read oldest first (the task line after its timeout said so): a task line with no
    // timeout before it belongs to no episode and holds nothing.
    feed(20, D + " Process other pid 1 thread other pid 1");
    EXPECT_FALSE(m->openSince());
    EXPECT_TRUE(m->idle());

    // An episode in progress at the end of the input is emitted by finish() and closes.
    feed(30, D + "ring comp_1.0.0 timeout, signaled seq=9, emitted seq=11");
    EXPECT_EQ(m->openSince(), 30u);
    m->finish(sink);
    EXPECT_FALSE(m->openSince());
    ASSERT_EQ(sink.evidences.size(), 3u);
    EXPECT_EQ(sink.evidences[2].line, 30u);
    EXPECT_EQ(sink.evidences[2].attr("ring"), "comp_1.0.0");
}

}  // namespace
}  // namespace gpufault
