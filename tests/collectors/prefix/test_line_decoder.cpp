// Line endings, quotes, containers, logger prefixes, `[rankN]:` and the AMD log prefix hand-off.
#include <gtest/gtest.h>

#include <string>

#include "collectors/prefix/program_prefix.h"
#include "tests/collectors/prefix/decode_helper.h"

namespace gpufault::testing {
namespace {

const std::string kRocr =
    "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address 0x7f3a12340000. "
    "Reason: Page not present or supervisor privilege.";

TEST(LineDecoder, PlainTextPassesThrough) {
    auto d = decodeOne(kRocr);
    EXPECT_EQ(d.text, kRocr);
    EXPECT_EQ(d.raw, kRocr);
    EXPECT_EQ(d.line, 1u);
    EXPECT_EQ(d.origin, Origin::Unknown);
    EXPECT_TRUE(d.time.empty());
    EXPECT_FALSE(d.rank);
    EXPECT_FALSE(d.amd_level);
    EXPECT_EQ(decodeOne("").text, "");
    EXPECT_EQ(decodeOne("  ~~~~~~~^^^^").text, "  ~~~~~~~^^^^");  // leading blanks are kept
}

TEST(LineDecoder, LineEndings) {
    EXPECT_EQ(decodeOne(kRocr + "\r").text, kRocr);
    EXPECT_EQ(decodeOne(kRocr + "^M").text, kRocr);
    EXPECT_EQ(decodeOne(kRocr + "   ^M\r").text, kRocr);
    auto d =
        decodeOne("[ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault^M");
    EXPECT_EQ(d.text, "amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault");
    ASSERT_TRUE(d.time.kernel_s);
    EXPECT_NEAR(*d.time.kernel_s, 4778.915423, 5e-7);
    EXPECT_EQ(d.raw, "[ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault^M");
}

TEST(LineDecoder, AByteOrderMarkIsNotPartOfTheLine) {
    // A file saved by a Windows editor: the UTF-8 BOM before the dmesg stamp.
    auto d = decodeOne(
        "\xEF\xBB\xBF[ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault");
    EXPECT_EQ(d.text, "amdgpu 0000:c6:00.0: amdgpu: [gfxhub0] no-retry page fault");
    ASSERT_TRUE(d.time.kernel_s);
    EXPECT_NEAR(*d.time.kernel_s, 4778.915423, 5e-7);
    EXPECT_EQ(decodeOne("\xEF\xBB\xBF" + kRocr).text, kRocr);
}

TEST(LineDecoder, CarriageReturnProgressBar) {
    auto d = decodeOne(
        "Loading:  50%|#####     | 1/2 [00:01<00:01]\rLoading: 100%|##########| 2/2 "
        "[00:02<00:00]\r" +
        kRocr);
    EXPECT_EQ(d.text, kRocr);
    EXPECT_EQ(decodeOne("100%|##########|\r" + kRocr + "\r").text, kRocr);
}

// A Markdown fence glued to a pasted dmesg -T line (a real report: the time was lost).
TEST(LineDecoder, AGluedCodeFenceGoes) {
    auto d = decodeOne("```[Wed Jul 30 20:12:38 2025] amdgpu 0000:65:00.0: amdgpu: x");
    EXPECT_EQ(d.text, "amdgpu 0000:65:00.0: amdgpu: x");
    ASSERT_TRUE(d.time.wall);
    EXPECT_EQ(*d.time.wall, "2025-07-30T20:12:38");
    EXPECT_EQ(decodeOne("``` [ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: y").text,
              "amdgpu 0000:c6:00.0: amdgpu: y");
    EXPECT_EQ(decodeOne("```text").text, "```text");
    // One backtick (mbevand/silentarmy#6) and a terminal's `^[` copied as text
    // (bugs.freedesktop.org 109022) before a stamp.
    auto one = decodeOne("`[356702.608922] NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp");
    EXPECT_EQ(one.text, "NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp");
    ASSERT_TRUE(one.time.kernel_s);
    EXPECT_DOUBLE_EQ(*one.time.kernel_s, 356702.608922);
    auto esc = decodeOne("^[      [Jul31 16:10] amdgpu 0000:23:00.0: GPU fault detected: 147");
    EXPECT_EQ(esc.text, "amdgpu 0000:23:00.0: GPU fault detected: 147");
    EXPECT_EQ(esc.time.wall, "07-31T16:10");
    EXPECT_EQ(decodeOne("`code` [1.0] x").text, "`code` [1.0] x");
    EXPECT_EQ(decodeOne("^[[31mred").text, "^[[31mred");
}

TEST(LineDecoder, ReplyQuotes) {
    auto d = decodeOne("> > [ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: x");
    EXPECT_EQ(d.text, "amdgpu 0000:c6:00.0: amdgpu: x");
    EXPECT_EQ(d.origin, Origin::Kernel);
    EXPECT_EQ(decodeOne(">").text, "");
    EXPECT_EQ(decodeOne("> ").text, "");
    EXPECT_EQ(decodeOne("> > ").text, "");
    EXPECT_EQ(decodeOne(">>> import torch").text, ">>> import torch");
    // nested quotes without a blank between, and a bare `>` before a stamp (hostile review 23, M5)
    for (std::string q : {">> ", ">>\t", ">", "> >> "}) {
        auto n = decodeOne(q + "[ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: x");
        EXPECT_EQ(n.text, "amdgpu 0000:c6:00.0: amdgpu: x") << q;
        ASSERT_TRUE(n.time.kernel_s) << q;
        EXPECT_NEAR(*n.time.kernel_s, 4778.915423, 5e-7) << q;
    }
    // real: 108
    auto r = decodeOne(
        "> :0:rocdevice.cpp            :2984: 71322719728 us: [pid:8     "
        "tid:0x7f53d8bff640] Callback: Queue 0x7f53d8200000 aborting with error : "
        "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access");
    EXPECT_EQ(r.amd_level, 0);
    EXPECT_EQ(r.log_pid, 8);
    EXPECT_EQ(r.runtime_tid, "0x7f53d8bff640");
    EXPECT_EQ(r.time.runtime_us, 71322719728);
    EXPECT_TRUE(r.text.starts_with("Callback: Queue 0x7f53d8200000 aborting"));
}

TEST(LineDecoder, RankPrefix) {
    auto d =
        decodeOne("[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered");
    EXPECT_EQ(d.rank, 3);
    EXPECT_EQ(d.text, "RuntimeError: CUDA error: an illegal memory access was encountered");
    // real: 082 — the glog block stays in the text
    auto g = decodeOne(
        "[rank5]:[E610 07:42:53.345100746 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG "
        "GUID 3 Rank 5] Process group watchdog thread terminated with exception");
    EXPECT_EQ(g.rank, 5);
    EXPECT_TRUE(g.text.starts_with("[E610 07:42:53.345100746 ProcessGroupNCCL.cpp:1595] [PG ID 2"));
    EXPECT_EQ(g.origin, Origin::Unknown);
    EXPECT_FALSE(decodeOne("[ranks]: x").rank);
}

TEST(LineDecoder, TorchrunRolePrefixKeepsTheLocalRank) {
    // torchrun --tee: f"[{role}{local_rank}]:" (local_elastic_agent.py), role "default" unless set
    std::string rocr =
        "Memory access fault by GPU node-2 (Agent handle: 0x55d5b2d4a780) on address "
        "0x7f0000100000. Reason: Page not present or supervisor privilege.";
    auto d = decodeOne("[default1]:" + rocr);
    EXPECT_EQ(d.rank, 1);
    EXPECT_EQ(d.text, rocr);
    auto t = decodeOne("[trainer12]: x");
    EXPECT_EQ(t.rank, 12);
    EXPECT_EQ(t.text, "x");
    auto a =
        decodeOne("[default0]::3:rocvirtual.cpp           :3190: 0000100000 us:  ShaderName : k0");
    EXPECT_EQ(a.rank, 0);
    EXPECT_EQ(a.amd_level, 3);
    EXPECT_EQ(a.text, "ShaderName : k0");
    EXPECT_FALSE(decodeOne("[default]: x").rank);
    EXPECT_FALSE(decodeOne("[gfxhub0] retry page fault").rank);
    EXPECT_FALSE(decodeOne("[E610 07:42:53.345100746 ProcessGroupNCCL.cpp:1595] x").rank);
}

TEST(LineDecoder, VllmWorkerPrefixKeepsRankAndPid) {
    // vllm _add_prefix(): f"{CYAN}({worker_name} pid={pid}){RESET} ", worker "VllmWorker rank=N"
    auto d = decodeOne("(VllmWorker rank=1 pid=101) [probe] name=A ptr=0x10 end=0x20");
    EXPECT_EQ(d.rank, 1);
    EXPECT_EQ(d.log_pid, 101);
    EXPECT_EQ(d.text, "[probe] name=A ptr=0x10 end=0x20");
    auto c = decodeOne(
        "\x1b[1;36m(VllmWorker rank=3 pid=4242)\x1b[0;0m :3:rocvirtual.cpp           "
        ":3190: 0000100000 us:  ShaderName : k3");
    EXPECT_EQ(c.rank, 3);
    EXPECT_EQ(c.amd_level, 3);
    EXPECT_EQ(c.text, "ShaderName : k3");
    // no rank in the name: the worker itself is the line's process, one per name and pid
    auto p1 = decodeOne("(VllmWorkerProcess pid=100) x");
    auto p2 = decodeOne("(VllmWorkerProcess pid=101) x");
    ASSERT_TRUE(p1.rank && p2.rank);
    EXPECT_NE(*p1.rank, *p2.rank);
    EXPECT_GE(*p1.rank, prefix::kServiceRankBase);
    EXPECT_EQ(p1.log_pid, 100);
    EXPECT_EQ(p1.text, "x");
    EXPECT_FALSE(decodeOne("(see pid=12 above) x").rank);
    EXPECT_EQ(decodeOne("(pid=12) x").text, "(pid=12) x");
}

// Open MPI `mpirun --tag-output` (hostile review 24: interleaved ranks' reports crossed).
TEST(LineDecoder, OpenMpiTagOutputIsTheRank) {
    auto d = decodeOne("[1,3]<stdout>:========= Invalid __global__ read of size 4 bytes");
    EXPECT_EQ(d.rank, 3);
    EXPECT_EQ(d.text, "========= Invalid __global__ read of size 4 bytes");
    auto e = decodeOne("[12345,0]<stderr>: [rank0]: RuntimeError: CUDA error: x");
    EXPECT_EQ(e.rank, 0);
    EXPECT_EQ(e.text, "RuntimeError: CUDA error: x");
    EXPECT_FALSE(decodeOne("[1,3]<stdin>: x").rank);
    EXPECT_FALSE(decodeOne("[1,3] x").rank);
}

TEST(LineDecoder, ComposeServiceIsTheLinesProcess) {
    auto v = decodeAll({"trainer-1    | a", "evaluator-1  | b", "trainer-1    | c"});
    ASSERT_EQ(v.size(), 3u);
    ASSERT_TRUE(v[0].rank && v[1].rank);
    EXPECT_NE(*v[0].rank, *v[1].rank);
    EXPECT_EQ(v[0].rank, v[2].rank);
    EXPECT_GE(*v[0].rank, prefix::kServiceRankBase);
    EXPECT_EQ(v[1].text, "b");
}

TEST(LineDecoder, AmdLogPrefix) {
    // real: 102 (ROCm 6.4+ `tid: 0x…`)
    auto d = decodeOne(
        ":3:hip_device_runtime.cpp   :671 : 48517561912 us: [pid:77544 tid: "
        "0x7fd5bfa8d640] hipDeviceSynchronize: Returned hipErrorLaunchFailure : ");
    EXPECT_EQ(d.amd_level, 3);
    EXPECT_EQ(d.log_pid, 77544);
    EXPECT_EQ(d.runtime_tid, "0x7fd5bfa8d640");
    EXPECT_EQ(d.time.runtime_us, 48517561912);
    EXPECT_EQ(d.text, "hipDeviceSynchronize: Returned hipErrorLaunchFailure :");
    // hip_memory.cpp's own ` | ` must survive (no compose stripping of runtime lines)
    auto m = decodeOne(
        ":4:hip_memory.cpp           :779 : 2156327711 us: [pid:1 tid:0x7f] "
        "hipMemGetInfo: free :17163 | total :17163");
    EXPECT_EQ(m.text, "hipMemGetInfo: free :17163 | total :17163");
}

TEST(LineDecoder, DockerJsonFile) {
    auto d = decodeOne("{\"log\":\"" + kRocr +
                       "\\n\",\"stream\":\"stderr\",\"time\":\"2025-09-09T00:30:29.40412803Z\"}");
    EXPECT_EQ(d.text, kRocr);
    EXPECT_EQ(d.time.wall, "2025-09-09T00:30:29");
    EXPECT_EQ(d.origin, Origin::Unknown);
    auto esc = decodeOne(
        "{\"log\":\"\\u001b[32m hipLaunchKernel \\u001b[0m\\u0009arg "
        "\\u003cx\\u003e\\n\",\"stream\":\"stderr\",\"time\":\"2025-09-09T00:30:29.5Z\"}");
    EXPECT_EQ(esc.text, "\x1b[32m hipLaunchKernel \x1b[0m\targ <x>");
    auto amd = decodeOne(
        "{\"log\":\":3:rocvirtual.cpp           :3190: 0043127734 us:  ShaderName "
        ": _Z9vectoraddPfS_S_i\\n\",\"stream\":\"stderr\",\"time\":\"2025-09-09T00:"
        "30:29.4041Z\"}");
    EXPECT_EQ(amd.amd_level, 3);
    EXPECT_EQ(amd.time.runtime_us, 43127734);
    EXPECT_EQ(amd.time.wall, "2025-09-09T00:30:29");
    EXPECT_EQ(amd.text, "ShaderName : _Z9vectoraddPfS_S_i");
    // escapes the fast path decodes itself, and a layout it leaves to the full parser
    auto u = decodeOne(
        "{\"log\":\"\\\"q\\\" \\\\ \\/ \\ud83d\\ude00 \\u00e9\\r\\n\",\"stream\":\"stdout\","
        "\"time\":\"2025-09-09T00:30:29Z\"}");
    EXPECT_EQ(u.text, "\"q\" \\ / \xf0\x9f\x98\x80 \xc3\xa9");
    EXPECT_EQ(u.time.wall, "2025-09-09T00:30:29");
    auto attrs = decodeOne(
        "{\"log\":\"x\\n\",\"stream\":\"stderr\",\"attrs\":{\"tag\":\"t\"},\"time\":"
        "\"2025-09-09T00:30:29.5Z\"}");
    EXPECT_EQ(attrs.text, "x");
    EXPECT_EQ(attrs.time.wall, "2025-09-09T00:30:29");
    EXPECT_EQ(decodeOne("{\"log\":\"\\ud800\"}").text, "{\"log\":\"\\ud800\"}");  // lone surrogate
}

// FORMATS.md §9.4 (moby marshalMessage): `log` keeps the `\n` of a complete line; the pieces of
// a longer one have none until the last. Pieces of stdout and stderr interleave; each stream
// joins its own. A piece left at the end of the stream, or before a line of another kind, is
// a line of its own.
TEST(LineDecoder, DockerJsonFilePiecesAreJoined) {
    auto rec = [](std::string log, std::string stream, std::string extra = "") {
        return "{\"log\":\"" + log + "\",\"stream\":\"" + stream + "\"," + extra +
               "\"time\":\"2025-12-31T23:59:59.999999999Z\"}";
    };
    auto v =
        decodeAll({rec("Memory access fault by GPU node-1 (Agent handle: 0x1) on add", "stderr"),
                   rec("progress 1\\n", "stdout"),
                   rec("partial out ", "stdout"),
                   rec("ress 0xFFFFFFFFF000. Reason: Unknown.", "stderr", "\"attrs\":{},"),
                   rec(" of stderr\\r\\n", "stderr"),
                   rec("end of out\\n", "stdout"),
                   rec("cut at the end", "stderr")});
    ASSERT_EQ(v.size(), 4u);
    EXPECT_EQ(v[0].text, "progress 1");
    EXPECT_EQ(v[0].line, 2u);
    EXPECT_EQ(v[1].text,
              "Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0xFFFFFFFFF000. "
              "Reason: Unknown. of stderr");
    EXPECT_EQ(v[1].line, 1u);
    EXPECT_EQ(v[1].time.wall, "2025-12-31T23:59:59");
    EXPECT_EQ(v[2].text, "partial out end of out");
    EXPECT_EQ(v[2].line, 3u);
    EXPECT_EQ(v[3].text, "cut at the end");
    EXPECT_EQ(v[3].line, 7u);
    // Another kind of line ends a piece; JSON of other producers never ends in `\n`.
    auto w = decodeAll({rec("first piece", "stderr"), "plain", "{\"MESSAGE\":\"journald\"}"});
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(w[0].text, "first piece");
    EXPECT_EQ(w[1].text, "plain");
    EXPECT_EQ(w[2].text, "journald");
}

TEST(LineDecoder, JsonDataWithSeveralLines) {
    auto v = decodeAll({"x",
                        "{\"event\": \"line\", \"data\": \"first\\nsecond\\r\\n\", \"pipe\": "
                        "\"stderr\"}"});
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[1].text, "first");
    EXPECT_EQ(v[2].text, "second");
    EXPECT_EQ(v[1].line, 2u);
    EXPECT_EQ(v[2].line, 2u);
    // real: 066
    auto r = decodeOne(
        "{\"event\": \"line\", \"data\": \"[rank3]: For debugging consider passing "
        "AMD_SERIALIZE_KERNEL=3\\n\", \"pipe\": \"stderr\"}");
    EXPECT_EQ(r.rank, 3);
    EXPECT_EQ(r.text, "For debugging consider passing AMD_SERIALIZE_KERNEL=3");
    EXPECT_EQ(decodeOne("{\"log\":\"\\n\"}").text, "");
}

TEST(LineDecoder, JsonThatIsNotAWrapper) {
    for (const std::string line :
         {"{\"event\": \"", "{\"a\": 1, \"b\": [1, 2]}", "{not json}", "{\"log\": 5}", "{}"}) {
        auto d = decodeOne(line);
        EXPECT_EQ(d.text, line);
        EXPECT_EQ(d.origin, Origin::Unknown);
    }
}

TEST(LineDecoder, JournaldAndDmesgJson) {
    auto j = decodeOne(
        "{\"__REALTIME_TIMESTAMP\":\"1757377828123456\",\"_TRANSPORT\":\"kernel\","
        "\"SYSLOG_IDENTIFIER\":\"kernel\",\"_SOURCE_MONOTONIC_TIMESTAMP\":"
        "\"229550864052\",\"MESSAGE\":\"amdgpu: x\"}");
    EXPECT_EQ(j.text, "amdgpu: x");
    EXPECT_EQ(j.origin, Origin::Kernel);
    EXPECT_EQ(j.ident, "kernel");
    ASSERT_TRUE(j.time.kernel_s);
    EXPECT_NEAR(*j.time.kernel_s, 229550.864052, 5e-7);
    EXPECT_EQ(j.time.wall, "2025-09-09T00:30:28");
    auto p =
        decodeOne("{\"SYSLOG_IDENTIFIER\":\"python3\",\"_PID\":\"4242\",\"MESSAGE\":[104,105]}");
    EXPECT_EQ(p.text, "hi");
    EXPECT_EQ(p.ident_pid, 4242);
    EXPECT_EQ(p.origin, Origin::Other);
    auto dm = decodeOne(
        "      {\"pri\": 3, \"time\":   229.550864, \"msg\": \"amdgpu 0000:65:00.0: "
        "amdgpu: [gfxhub] page fault\"},");
    EXPECT_EQ(dm.text, "amdgpu 0000:65:00.0: amdgpu: [gfxhub] page fault");
    EXPECT_EQ(dm.origin, Origin::Kernel);
    ASSERT_TRUE(dm.time.kernel_s);
    EXPECT_NEAR(*dm.time.kernel_s, 229.550864, 5e-7);
}

// Hostile review 4, A: every prefix that states a zone (or an epoch) gives the instant of its
// wall time; one without a zone gives none (the store reads it in the ingesting zone).
TEST(LineDecoder, StampsThatStateAZoneGiveTheirInstant) {
    const int64_t t = 1796033100;  // 2026-11-30T10:05:00Z
    struct Case {
        std::string line;
        std::optional<int64_t> utc;
    } cases[] = {
        {"2026-11-30T12:05:00+0200 host kernel: procA[4528]: segfault at 10", t},
        {"2026-11-30T10:05:00.123456+00:00 host kernel: x", t},
        {"2026-11-30T05:05:00,123456-05:00 procA[4528]: x", t},  // dmesg --time-format iso
        {"2026-11-30T19:05:00.404128031+09:00 stderr F x", t},   // CRI
        {"2026-11-30T10:05:00.404128031Z x", t},                 // docker logs -t
        {"{\"log\":\"x\\n\",\"stream\":\"stderr\",\"time\":\"2026-11-30T11:05:00.1+01:00\"}", t},
        {"{\"__REALTIME_TIMESTAMP\":\"1796033100999999\",\"MESSAGE\":\"x\"}", t},
        {"1796033100.123456 host kernel: x", t},                      // journald short-unix
        {"[Mon Nov 30 10:05:00 2026] procA[4528]: x", std::nullopt},  // dmesg -T: no zone
        {"Nov 30 10:05:00 host kernel: x", std::nullopt},             // no year
    };
    for (const auto& c : cases) {
        auto d = decodeOne(c.line);
        EXPECT_TRUE(d.time.wall) << c.line;
        EXPECT_EQ(d.time.wall_utc_s, c.utc) << c.line;
    }
}

TEST(LineDecoder, CriFullAndPartial) {
    auto f = decodeOne("2025-09-09T00:30:29.404128031Z stderr F " + kRocr);
    EXPECT_EQ(f.text, kRocr);
    EXPECT_EQ(f.time.wall, "2025-09-09T00:30:29");
    auto v = decodeAll({
        "2025-09-09T00:30:29.41Z stderr P :3:rocvirtual.cpp           :3190: 0043127734 us:  "
        "ShaderName : Cijk_",
        "2025-09-09T00:30:29.410000100Z stdout F interleaved",
        "2025-09-09T00:30:29.410000512Z stderr P Alik",
        "2025-09-09T00:30:29.410000600Z stderr F:x _Bljk",
        "2016-10-06T00:17:09.669794202Z stdout P log content 1",
    });
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0].line, 2u);
    EXPECT_EQ(v[0].text, "interleaved");
    EXPECT_EQ(v[1].line, 1u);
    EXPECT_EQ(v[1].text, "ShaderName : Cijk_Alik_Bljk");
    EXPECT_EQ(v[1].amd_level, 3);
    EXPECT_EQ(v[1].time.runtime_us, 43127734);
    EXPECT_EQ(v[1].time.wall, "2025-09-09T00:30:29");
    EXPECT_EQ(v[2].line, 5u);  // unterminated at EOF: emitted by finish()
    EXPECT_EQ(v[2].text, "log content 1");
    EXPECT_EQ(v[2].time.wall, "2016-10-06T00:17:09");
}

TEST(LineDecoder, CriPartialKeepsTheBlanksWhereTheLineWasSplit) {
    // CRI splits a logical line anywhere, also right after a blank: the blank is text.
    auto v = decodeAll({
        "2025-09-09T00:30:29Z stderr P :3:rocvirtual.cpp           :723 : 0043127734 us: "
        " Arg1: float* a1 ",
        "2025-09-09T00:30:29Z stderr F = ptr:0x7f0000001000 obj:[0x7f0000000000-0x7f0000100000]",
        "2025-09-09T00:30:29Z stderr P :3:rocvirtual.cpp           :3190: 0043127735 us:  "
        "ShaderName : \r",
        "2025-09-09T00:30:29Z stderr F _Z6kernelPfi  ",
    });
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].text,
              "Arg1: float* a1 = ptr:0x7f0000001000 obj:[0x7f0000000000-0x7f0000100000]");
    EXPECT_EQ(v[1].text, "ShaderName : _Z6kernelPfi");
}

TEST(LineDecoder, CriPartialFlushedByOtherText) {
    auto v = decodeAll({"2025-09-09T00:30:29Z stdout P abc", "plain"});
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0].text, "abc");
    EXPECT_EQ(v[1].text, "plain");
}

TEST(LineDecoder, CriQuotedReal) {
    // real: 080
    auto d = decodeOne(
        "> 2026-08-31T17:43:36.6703347Z stderr F Memory access fault by GPU node-6 "
        "(Agent handle: 0x501def90) on address 0x7f5e50c00000. Reason: Unknown.");
    EXPECT_TRUE(d.text.starts_with("Memory access fault by GPU node-6"));
    EXPECT_EQ(d.time.wall, "2026-08-31T17:43:36");
}

TEST(LineDecoder, ComposePrefix) {
    auto v = decodeAll({"trainer-1    | " + kRocr,
                        "evaluator-1  | RuntimeError: CUDA error: an illegal memory access",
                        "\x1b[36mtrainer-1    | \x1b[0m[rank2]: x"});
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0].text, kRocr);
    EXPECT_EQ(v[1].text, "RuntimeError: CUDA error: an illegal memory access");
    EXPECT_EQ(v[2].text, "x");
    EXPECT_EQ(v[2].rank, 2);
    // Names without a replica index: two lines with the bar in the same column.
    auto w = decodeAll({"web  | one", "web  | two", "db   | three"});
    EXPECT_EQ(w[0].text, "web  | one");
    EXPECT_EQ(w[1].text, "two");
    EXPECT_EQ(w[2].text, "three");
}

TEST(LineDecoder, NoComposeWithoutEvidence) {
    auto v =
        decodeAll({"GPU0 | free :17163 | total :17163",
                   "free | x",
                   ":4:hip_memory.cpp :779 : 2156327711 us: [pid:1 tid:0x7f] | free :1 | total "
                   ":2"});
    ASSERT_EQ(v.size(), 3u);
    EXPECT_EQ(v[0].text, "GPU0 | free :17163 | total :17163");
    EXPECT_EQ(v[1].text, "free | x");
    EXPECT_EQ(v[2].text, "| free :1 | total :2");
}

TEST(LineDecoder, LoggerStampsAndContainerStamp) {
    // real: 064 (ComfyUI)
    auto g = decodeOne(
        "2025-12-21T05:01:45.677513 - Exception in thread 2025-12-21T05:01:45.677741 "
        "- Thread-5 (prompt_worker)2025-12-21T05:01:45.677860 - :");
    EXPECT_EQ(g.text, "Exception in thread Thread-5 (prompt_worker):");
    EXPECT_TRUE(g.time.empty());
    auto r = decodeOne(
        "2025-12-21T05:01:45.686997 - 2025-12-21T05:01:45.689733 -   File "
        "\"/usr/lib/python3.13/threading.py\", line 1044, in _bootstrap_inner");
    EXPECT_EQ(r.text,
              "  File \"/usr/lib/python3.13/threading.py\", line 1044, in _bootstrap_inner");
    // docker logs -t
    auto t = decodeOne(
        "2025-09-09T00:30:29.404128031Z RuntimeError: CUDA error: an illegal memory "
        "access was encountered");
    EXPECT_EQ(t.text, "RuntimeError: CUDA error: an illegal memory access was encountered");
    EXPECT_EQ(t.time.wall, "2025-09-09T00:30:29");
    EXPECT_EQ(t.origin, Origin::Unknown);
}

TEST(LineDecoder, HugeLineIsTruncated) {
    std::string big(2u << 20, 'a');
    auto d = decodeOne(big);
    EXPECT_EQ(d.text.size(), LineDecoder::kMaxLine);
    EXPECT_EQ(d.raw.size(), big.size());
    std::string piece(700u << 10, 'b');
    auto v = decodeAll({"2025-09-09T00:30:29Z stderr P " + piece,
                        "2025-09-09T00:30:29Z stderr P " + piece,
                        "2025-09-09T00:30:29Z stderr F " + piece});
    ASSERT_EQ(v.size(), 1u);
    EXPECT_EQ(v[0].text.size(), LineDecoder::kMaxLine);
}

TEST(LineDecoder, NulBytesAndInvalidUtf8PassThrough) {
    std::string nul(64, '\0');
    auto d = decodeOne(nul);
    EXPECT_EQ(d.text, nul);
    EXPECT_EQ(d.origin, Origin::Unknown);
    std::string bad = "\xff\xfe abc \xc3";
    EXPECT_EQ(decodeOne(bad).text, bad);
    std::string mixed = std::string("[  1.000000] a\0b", 16);
    EXPECT_EQ(decodeOne(mixed).text, std::string("a\0b", 3));
}

TEST(LineDecoder, BareAmdFastPathGivesWhatFeedGives) {
    const std::string amd =
        ":3:hip_module.cpp           :669 : 1000000002 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
        "hipLaunchKernel ( 0x7056a988e9d0, {1048576,1,1} ) ";
    const std::string shader =
        ":3:rocvirtual.cpp           :3016: 1000000005 us: [pid:4242  tid:0x7f0a1b2c3d40] "
        "ShaderName : Cijk_Ailk";
    std::vector<std::string> lines;
    // Compose detection looks at the first 64 lines: AMD lines in between reset it.
    for (int i = 0; i < 3; ++i) {
        lines.push_back("trainer  | step " + std::to_string(i));
        lines.push_back(amd);
    }
    lines.push_back("trainer  | step 9");
    lines.push_back("worker   | step 9");
    lines.push_back(shader);
    lines.push_back(amd + "\r");
    lines.push_back(amd + "^M  ");
    lines.push_back(amd + "\rprogress 50%");
    lines.push_back(":3:rocdevice.cpp :412 : 0012345670: Initializing HSA stack.");
    lines.push_back(":3:not a prefix");
    lines.push_back(": plain text after a colon");
    lines.push_back("6,1234,5678901,-;amdgpu 0000:c6:00.0: amdgpu: page fault");
    lines.push_back(amd);
    lines.push_back(" SUBSYSTEM=pci");
    lines.push_back("6,1235,5678902,-;amdgpu 0000:c6:00.0: amdgpu: in page");
    lines.push_back(" SUBSYSTEM=pci");
    lines.push_back(shader);
    lines.push_back("2025-06-05T12:40:08.100000000Z stderr P " + amd.substr(0, 40));
    lines.push_back(shader);
    lines.push_back("2025-06-05T12:40:08.200000000Z stderr F " + amd.substr(40));
    lines.push_back(shader);
    lines.push_back("{\"log\":\"" + shader + "\\n\"}");
    lines.push_back(std::string(2 << 20, 'x'));
    lines.push_back(":3:" + std::string(2 << 20, 'y'));
    auto slow = decodeAll(lines);
    auto fast = decodeAll(lines, true);
    ASSERT_EQ(slow.size(), fast.size());
    for (size_t i = 0; i < slow.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(slow[i].line, fast[i].line);
        EXPECT_EQ(slow[i].text, fast[i].text);
        EXPECT_EQ(slow[i].raw, fast[i].raw);
        EXPECT_EQ(slow[i].ident, fast[i].ident);
        EXPECT_EQ(slow[i].runtime_tid, fast[i].runtime_tid);
        EXPECT_EQ(slow[i].time.kernel_s, fast[i].time.kernel_s);
        EXPECT_EQ(slow[i].time.wall, fast[i].time.wall);
        EXPECT_EQ(slow[i].time.runtime_us, fast[i].time.runtime_us);
        EXPECT_EQ(slow[i].origin, fast[i].origin);
        EXPECT_EQ(slow[i].rank, fast[i].rank);
        EXPECT_EQ(slow[i].ident_pid, fast[i].ident_pid);
        EXPECT_EQ(slow[i].log_pid, fast[i].log_pid);
        EXPECT_EQ(slow[i].amd_level, fast[i].amd_level);
    }
    // The fast path took the bare AMD lines, not the others.
    LineDecoder d;
    LogLine l;
    EXPECT_TRUE(d.feedBareAmd(1, amd, l));
    EXPECT_EQ(l.text, "hipLaunchKernel ( 0x7056a988e9d0, {1048576,1,1} )");
    EXPECT_EQ(l.log_pid, 4242);
    LogLine m;
    EXPECT_FALSE(d.feedBareAmd(2, amd + "\rprogress 50%", m));
    EXPECT_FALSE(d.feedBareAmd(3, "> " + amd, m));
}

}  // namespace
}  // namespace gpufault::testing
