#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collectors/pipeline.h"

namespace gpufault {
namespace {

LogLine amd(std::string_view text, int level = 3) {
    LogLine l;
    l.text = text;
    l.amd_level = level;
    return l;
}

// FORMATS.md §3.2: `"%s %s ( %s ) %s"` (KGRN/KNRM around the name) and `"%s: Returned %s : %s"`.
TEST(Pipeline, ApiTraceLinesAreRecognised) {
    EXPECT_TRUE(isApiTrace(amd(" hipGetDevice ( 0x70536bbc2ecc ) ")));
    EXPECT_TRUE(
        isApiTrace(amd("\x1b[32m hipLaunchKernel \x1b[0m( 0x7056a988e9d0, {1,1,1}, {256,1,1}, 0x0, "
                       "0, stream:<null> ) ")));
    EXPECT_TRUE(
        isApiTrace(amd(" __hipPushCallConfiguration ( {128,1,1}, {512,1,1}, 0, stream:<null> ) ")));
    EXPECT_TRUE(isApiTrace(amd("hipGetDevice: Returned hipSuccess : ")));
    // A polled status is no evidence (EVIDENCE.md "Benign statuses"): a trace line too.
    EXPECT_TRUE(isApiTrace(amd("hipStreamQuery: Returned hipErrorNotReady : ")));
    EXPECT_TRUE(
        isApiTrace(amd("hipDeviceEnablePeerAccess: Returned "
                       "hipErrorPeerAccessAlreadyEnabled : ")));
    // Everything a matcher records stays.
    EXPECT_FALSE(isApiTrace(amd("hipModuleUnload: Returned hipErrorLaunchFailure : ")));
    EXPECT_FALSE(isApiTrace(amd("hipStreamQuery: Returned hipErrorNotReadyYet : ")));
    EXPECT_FALSE(isApiTrace(amd("hipStreamQuery: Returned : ")));
    EXPECT_FALSE(isApiTrace(amd("ShaderName : _Z9vectoraddPfS_S_i")));
    EXPECT_FALSE(
        isApiTrace(amd("Arg1:   = ptr:0x705165a01000 obj:[0x705165a00000-0x705365a00000]")));
    EXPECT_FALSE(isApiTrace(amd("Cannot find the function: Cijk_Ailk_Bljk_SB_MT128x64x8 ")));
    EXPECT_FALSE(
        isApiTrace(amd("Callback: Queue 0x7f3c3c600000 aborting with error : "
                       "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access "
                       "memory beyond the largest legal address. code: 0x29",
                       0)));
    EXPECT_FALSE(isApiTrace(amd(" hipGetDevice ( 0x1 ) ", 4)));  // only level 3 lines
    LogLine plain;
    plain.text = " hipGetDevice ( 0x70536bbc2ecc ) ";
    EXPECT_FALSE(isApiTrace(plain));  // not an AMD log line
}

// The inline trace check decides as the full one on every mutated message: each byte of the
// first 48 replaced, a byte inserted or removed, and the message cut at every length.
TEST(Pipeline, QuickTraceCheckAgreesWithFull) {
    const std::string bases[] = {
        "hipGetDevice ( 0x70536bbc2ecc ) ",
        " hipGetDevice ( 0x70536bbc2ecc ) ",
        "__hipPushCallConfiguration ( {1048576,1,1}, {256,1,1}, 0, stream:0x5631a8c0e290 ) ",
        "hsaKmtFoo ( 1 )\r\r  ",
        "hipGetDevice: Returned hipSuccess : ",
        "__hipPopCallConfiguration: Returned hipSuccess : ",
        "hipStreamQuery: Returned hipErrorNotReady : ",
        "hipMalloc: Returned hipErrorOutOfMemory : ",
        "hipFunctionWithAVeryLongNameOfMoreThan32Bytes ( 1 ) ",
        "\x1b[32m hipLaunchKernel \x1b[0m( 0x7056a988e9d0, {1,1,1}, {256,1,1}, 0x0, 0 ) ",
        "ShaderName : Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1",
        "Arg1:   = ptr:0x705165a01000 obj:[0x705165a00000-0x705365a00000]",
        // Messages of 16–31 bytes: one SIMD load.
        "hipGetLastError (  ) ",
        "hipFree ( 0x1 ) ",
        "Arg0:   = val:1073741824",
        "hipX: Returned hipSuccess",
        "hipEventQuery: Returned hipErrorNotReady_ : ",
    };
    const char subst[] = {' ', ':', '(', ')', '\r', '_', 'x', '0', '\x1b', '\t', '.', 'S'};
    size_t n = 0, traces = 0;
    auto same = [&](const std::string& m) {
        const bool full = isApiTraceMessage(m);
        EXPECT_EQ(isApiTraceMessageQuick(m), full) << m;
        ++n;
        traces += full;
    };
    for (const std::string& base : bases) {
        same(base);
        for (size_t i = 0; i < 48 && i < base.size(); ++i) {
            for (char c : subst) {
                std::string m = base;
                m[i] = c;
                same(m);
                std::string ins = base;
                ins.insert(i, 1, c);
                same(ins);
            }
            std::string del = base;
            del.erase(i, 1);
            same(del);
        }
        for (size_t k = 0; k <= base.size(); ++k) same(base.substr(0, k));
    }
    EXPECT_GT(n, 10000u);
    EXPECT_GT(traces, 1000u);  // both answers were exercised
    EXPECT_LT(traces, n - 1000);
}

/// Counts what reaches the sink.
struct CountingSink final : Sink {
    std::vector<Evidence> ev;
    std::vector<Dispatch> d;
    void evidence(Evidence&& e) override { ev.push_back(std::move(e)); }
    void dispatch(Dispatch&& x) override { d.push_back(std::move(x)); }
    void operand(Operand&&) override {}
    void warning(Warning&&) override {}
};

const char* const kTrace =
    ":3:hip_device_runtime.cpp   :623 : 1000000000 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
    "hipGetDevice ( 0x70536bbc2ecc ) ";

// The cheap skip of bare trace lines decides as the full decode + isApiTrace() does.
TEST(Pipeline, BareTraceSkipAgreesWithTheFullDecode) {
    auto full = [](std::string_view raw) {
        LineDecoder d;
        bool trace = false, emitted = false;
        d.feed(1, raw, [&](const LogLine& l) {
            emitted = true;
            trace = isApiTrace(l);
        });
        return emitted && trace;
    };
    auto skip = [](std::string_view raw) {
        LineDecoder d;
        LogLine l;
        FixedLine fx;
        return d.feedBare(1, raw, l, fx, isApiTraceMessage, true) == LineDecoder::Bare::Skipped;
    };
    const std::string head =
        ":3:hip_device_runtime.cpp   :623 : 1000000000 us: [pid:4242  tid:0x7f0a1b2c3d40] ";
    for (std::string raw : {
             std::string(kTrace),
             head + "hipGetDevice: Returned hipSuccess : ",
             head + "hipStreamQuery: Returned hipErrorNotReady : ",
             head + "hipMalloc: Returned hipErrorOutOfMemory : ",
             head + "ShaderName : _Z9vectoraddPfS_S_i",
             head + " hipGetDevice ( 0x1 ) \r",
             head + " hipGetDevice ( 0x1 ) ^M",
             std::string(":4") + (head.c_str() + 2) + " hipGetDevice ( 0x1 ) ",
             std::string(":3:hip_device_runtime.cpp   :6x3 : 1000000000 us: [pid:4242  "
                         "tid:0x7f0a1b2c3d40]  hipGetDevice ( 0x1 ) "),
             std::string(":3:hip_device:runtime.cpp   :623 : 1000000000 us: [pid:4242  "
                         "tid:0x7f0a1b2c3d40]  hipGetDevice ( 0x1 ) "),
             head + " hipGetDevice ( 0x1 ) \rprogress",
         }) {
        SCOPED_TRACE(raw);
        bool skipped = skip(raw);
        EXPECT_TRUE(!skipped || full(raw));  // never skips what the full path keeps
    }
    EXPECT_TRUE(skip(kTrace));
    EXPECT_TRUE(skip(head + "hipStreamQuery: Returned hipErrorNotReady : "));
    EXPECT_FALSE(skip(head + "hipMalloc: Returned hipErrorOutOfMemory : "));
    EXPECT_FALSE(skip(head + "hipGetDevice ( 0x1 ) \rprogress"));
}

// Once the decoder state is settled, bare lines skip its CRI/compose checks (quiet_); every
// other kind of line after them (kmsg with continuations, CRI pieces, compose prefixes) must
// still be decoded as feed() alone decodes the whole stream.
TEST(Pipeline, BarePathAgreesWithFeedAcrossOtherLayers) {
    const std::string head =
        ":3:hip_device_runtime.cpp   :623 : 1000000000 us: [pid:4242  tid:0x7f0a1b2c3d40] ";
    const std::string arg =
        ":3:rocvirtual.cpp           :723 : 1000000001 us: [pid:4242  tid:0x7f0a1b2c3d40] "
        "Arg1:   = ptr:0x7051e5a00000 obj:[0x705165a00000-0x705365a00000]";
    std::vector<std::string> lines;
    auto bare = [&](int n) {
        for (int i = 0; i < n; ++i) lines.push_back(i % 3 == 2 ? arg : std::string(kTrace));
    };
    bare(70);  // past the compose detection window
    lines.push_back("6,1234,5678901,-;amdgpu 0000:03:00.0: amdgpu: page fault");
    bare(2);
    lines.push_back(" SUBSYSTEM=pci");
    lines.push_back("6,1235,5678902,-;amdgpu: x");
    lines.push_back(" DEVICE=+pci:0000:03:00.0");
    bare(3);
    lines.push_back("2025-06-05T12:40:08.100000000Z stderr P " + head + "Arg0:   = val:1");
    bare(2);
    lines.push_back("2025-06-05T12:40:08.200000000Z stderr F  and the rest");
    bare(2);
    lines.push_back("svc-1  | " + arg);
    bare(2);
    lines.push_back(head + "hipMalloc: Returned hipErrorOutOfMemory : ");
    bare(1);
    lines.push_back(head + " hipGetDevice ( 0x1 ) \r");
    bare(80);

    using Row = std::tuple<uint64_t,
                           std::string,
                           std::optional<int>,
                           std::optional<int64_t>,
                           std::string,
                           std::optional<int64_t>>;
    auto row = [](const LogLine& l) {
        return Row{l.line,
                   std::string(l.text),
                   l.amd_level,
                   l.log_pid,
                   std::string(l.runtime_tid),
                   l.time.runtime_us};
    };
    std::vector<Row> viaBare, viaFeed;
    size_t kept = 0;
    {
        LineDecoder d;
        LogLine b;
        FixedLine fx;
        for (size_t i = 0; i < lines.size(); ++i) {
            switch (d.feedBare(i + 1, lines[i], b, fx, isApiTraceMessage, true)) {
                case LineDecoder::Bare::Skipped:
                    continue;
                case LineDecoder::Bare::Filled:
                    if (!isApiTrace(b)) viaBare.push_back(row(b));
                    continue;
                case LineDecoder::Bare::Fixed:
                    LineDecoder::fillFixed(i + 1, lines[i], fx, b);
                    if (fx.check_trace) {
                        if (!isApiTrace(b)) viaBare.push_back(row(b));
                        continue;
                    }
                    ++kept;
                    EXPECT_FALSE(isApiTrace(b)) << lines[i];
                    viaBare.push_back(row(b));
                    continue;
                case LineDecoder::Bare::No:
                    break;
            }
            d.feed(i + 1, lines[i], [&](const LogLine& l) {
                if (!isApiTrace(l)) viaBare.push_back(row(l));
            });
        }
        d.finish([&](const LogLine& l) { viaBare.push_back(row(l)); });
    }
    {
        LineDecoder d;
        for (size_t i = 0; i < lines.size(); ++i)
            d.feed(i + 1, lines[i], [&](const LogLine& l) {
                if (!isApiTrace(l)) viaFeed.push_back(row(l));
            });
        d.finish([&](const LogLine& l) { viaFeed.push_back(row(l)); });
    }
    EXPECT_EQ(viaBare, viaFeed);
    EXPECT_EQ(kept, 50u);            // every Arg line, without a second isApiTrace()
    std::vector<std::string> other;  // what is not an Arg line
    for (const Row& r : viaFeed)
        if (!std::get<1>(r).starts_with("Arg1:")) other.push_back(std::get<1>(r));
    EXPECT_EQ(viaFeed.size() - other.size(), 50u);
    // The continuation after a bare line is a line of its own (the bare line ended the kmsg
    // record), the one right after a record is dropped; a CRI piece cut by bare lines is
    // emitted as it stands; no compose capture was detected.
    const std::vector<std::string> want = {
        "amdgpu 0000:03:00.0: amdgpu: page fault",
        " SUBSYSTEM=pci",
        "amdgpu: x",
        "Arg0:   = val:1",
        " and the rest",
        "svc-1  | " + arg,
        "hipMalloc: Returned hipErrorOutOfMemory :",
    };
    EXPECT_EQ(other, want);
}

// A kept bare line comes out of the fixed-column path exactly as feedBareAmd() makes it.
TEST(Pipeline, FixedColumnFillAgreesWithFeedBareAmd) {
    const std::string head =
        ":3:rocvirtual.cpp           :723 : 4815821610388 us: [pid:2429112 tid:0x70536bbc5640] ";
    const std::string lines[] = {
        head + "Arg2:   = ptr:0x7051e5a00000 obj:[0x705165a00000-0x705365a00000]",
        head + "ShaderName : k   ",
        head + "ShaderName : k\r",
        head + "   ",
        head + "x",
        std::string(":1") + (head.c_str() + 2) + "Allocation failed",
    };
    for (const std::string& raw : lines) {
        SCOPED_TRACE(raw);
        LineDecoder d1, d2;
        LogLine a, b;
        FixedLine fx;
        auto keepAll = [](std::string_view) { return false; };
        const LineDecoder::Bare got = d1.feedBare(7, raw, a, fx, keepAll, true);
        if (got == LineDecoder::Bare::Fixed) LineDecoder::fillFixed(7, raw, fx, a);
        const bool filled = got >= LineDecoder::Bare::Filled;
        ASSERT_EQ(filled, d2.feedBareAmd(7, raw, b));
        EXPECT_EQ(a.line, b.line);
        EXPECT_EQ(a.text, b.text);
        EXPECT_EQ(a.raw, b.raw);
        EXPECT_EQ(a.amd_level, b.amd_level);
        EXPECT_EQ(a.log_pid, b.log_pid);
        EXPECT_EQ(a.runtime_tid, b.runtime_tid);
        EXPECT_EQ(a.time.runtime_us, b.time.runtime_us);
    }
}

TEST(Pipeline, DispatchContextMessages) {
    EXPECT_TRUE(isDispatchContext("Arg0:   = val:1073741824"));
    EXPECT_TRUE(isDispatchContext("Arg12: float* a = ptr:0x1 obj:[0x1-0x2]"));
    EXPECT_TRUE(isDispatchContext("ShaderName : _Z9vectoraddPfS_S_i"));
    EXPECT_TRUE(isDispatchContext("Graph shader name : k"));
    EXPECT_FALSE(isDispatchContext("Argument list too long"));
    EXPECT_FALSE(isDispatchContext("Allocation failed : Device memory"));
}

// A kernel-log block in progress still sees the AMD lines interleaved with it: they count
// towards the gap after which it ends (64 lines), exactly as before the routing.
TEST(Pipeline, AmdLinesReachABlockInProgress) {
    for (int between : {10, 70}) {
        SCOPED_TRACE(between);
        CountingSink sink;
        TextPipeline p(sink);
        uint64_t n = 0;
        auto feed = [&](std::string_view s) { p.feedLine(++n, s); };
        feed(
            "[ 4778.915423] amdgpu 0000:c3:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 "
            "vmid:8 pasid:32769)");
        for (int i = 0; i < between; ++i)
            feed(
                ":3:rocvirtual.cpp           :3016: 1000000010 us: [pid:4242  "
                "tid:0x7f0a1b2c3d40] ShaderName : _Z9vectoraddPfS_S_i");
        feed(
            "[ 4778.915441] amdgpu 0000:c3:00.0: amdgpu:   in page starting at address "
            "0x00007f6459a00000 from client 10");
        p.finish();
        EXPECT_EQ(sink.d.size(), static_cast<size_t>(between));
        ASSERT_GE(sink.ev.size(), 1u);
        EXPECT_EQ(sink.ev[0].line, 1u);
        EXPECT_EQ(sink.ev[0].address.has_value(), between < 64);
    }
}

// Hostile review 17, i2 H2: two compute-sanitizer runs in one log (a CI job's) folded the
// second run's repeated API errors into the first run's records (count 2 for one each): its
// incident lost its reason and `groups` split one crash into two signatures. A run's
// `ERROR SUMMARY` (and the next banner) closes the folds.
TEST(Pipeline, ComputeSanitizerRunsDoNotFoldIntoEachOther) {
    CountingSink sink;
    TextPipeline p(sink);
    uint64_t n = 0;
    auto feed = [&](std::string_view s) { p.feedLine(++n, s); };
    for (int run = 0; run < 2; ++run) {
        feed("========= COMPUTE-SANITIZER");
        for (int i = 0; i < 3; ++i)
            feed(
                "========= Program hit cudaErrorLaunchFailure (error 719) due to \"unspecified "
                "launch failure\" on CUDA API call to cudaDeviceSynchronize.");
        feed("========= Target application returned an error");
        feed("========= ERROR SUMMARY: 3 errors");
    }
    p.finish();
    ASSERT_EQ(sink.ev.size(), 2u);
    EXPECT_EQ(sink.ev[0].line, 2u);
    EXPECT_EQ(sink.ev[0].count, 3u);
    EXPECT_EQ(sink.ev[1].line, 8u);
    EXPECT_EQ(sink.ev[1].count, 3u);
}

// Hostile review 17's leftover: the boundary was only seen with the default prefix at the
// line's start. A CI runner's own stamp before it, or `--prefix`, let runs fold again.
TEST(Pipeline, ComputeSanitizerRunsEndBehindAStampOrACustomPrefix) {
    for (std::string_view prefix : {"=========", "==SAN=="}) {
        for (std::string_view stamp : {"", "build 12 | step 3 ", "2025-06-05 12:40:08 "}) {
            SCOPED_TRACE(std::string(stamp) + std::string(prefix));
            CountingSink sink;
            TextPipeline p(sink);
            uint64_t n = 0;
            auto feed = [&](std::string_view s) {
                p.feedLine(++n, std::string(stamp) + std::string(prefix) + std::string(s));
            };
            for (int run = 0; run < 2; ++run) {
                feed(" COMPUTE-SANITIZER");
                feed(" Invalid __global__ write of size 4 bytes");
                feed("     at vectorAdd(float*)+0x70");
                feed("     Address 0x7f1a2b3c4000 is out of bounds");
                feed("");
                for (int i = 0; i < 3; ++i)
                    feed(
                        " Program hit cudaErrorLaunchFailure (error 719) due to \"unspecified "
                        "launch failure\" on CUDA API call to cudaDeviceSynchronize.");
                feed(" ERROR SUMMARY: 4 errors");
            }
            p.finish();
            size_t reports = 0, errors = 0;
            for (const auto& e : sink.ev) {
                if (e.kind == Kind::SanitizerReport) {
                    ++reports;
                    EXPECT_EQ(e.address, 0x7f1a2b3c4000ull);
                } else {
                    ++errors;
                    EXPECT_EQ(e.count, 3u) << e.line;
                }
            }
            EXPECT_EQ(reports, 2u);
            EXPECT_EQ(errors, 2u);
        }
    }
}

// MPI ranks share one log and each runs its own sanitizer: rank 1's ERROR SUMMARY in the
// middle of rank 0's report does not end rank 0's report (its address comes after it).
TEST(Pipeline, AnotherRanksErrorSummaryDoesNotEndAReport) {
    CountingSink sink;
    TextPipeline p(sink);
    uint64_t n = 0;
    auto feed = [&](std::string_view s) { p.feedLine(++n, s); };
    feed("[rank0]:========= Invalid __global__ read of size 8 bytes");
    feed("[rank0]:=========     at gather(double*)+0x1f0");
    feed("[rank1]:========= ERROR SUMMARY: 0 errors");
    feed("[rank0]:=========     Address 0x7f00dead0000 is out of bounds");
    feed("[rank0]:========= ERROR SUMMARY: 1 error");
    p.finish();
    ASSERT_EQ(sink.ev.size(), 1u);
    EXPECT_EQ(sink.ev[0].kind, Kind::SanitizerReport);
    EXPECT_EQ(sink.ev[0].rank, 0);
    EXPECT_EQ(sink.ev[0].address, 0x7f00dead0000ull);
}

// Two ranks' reports interleaved line by line: each keeps its own lines (hostile review 23,
// H2: rank 1's record took rank 0's address and rank 0's had none).
TEST(Pipeline, InterleavedRanksKeepTheirOwnSanitizerReports) {
    CountingSink sink;
    TextPipeline p(sink);
    uint64_t n = 0;
    auto feed = [&](std::string_view s) { p.feedLine(++n, s); };
    feed("[rank0]:========= Invalid __global__ read of size 4 bytes");
    feed("[rank0]:=========     at k(float *)+0x10 in k.cu:5");
    feed("[rank1]:========= Invalid __global__ write of size 8 bytes");
    feed("[rank0]:=========     by thread (0,0,0) in block (0,0,0)");
    feed("[rank0]:=========     Address 0x7f0000001000 is out of bounds");
    feed("[rank1]:=========     at k2(float *)+0x20 in k.cu:9");
    feed("[rank1]:=========     Address 0x7e0000001000 is out of bounds");
    feed("[rank1]:========= ");
    p.finish();
    ASSERT_EQ(sink.ev.size(), 2u);
    for (const auto& e : sink.ev) {
        ASSERT_TRUE(e.rank);
        EXPECT_EQ(e.address, *e.rank == 0 ? 0x7f0000001000ull : 0x7e0000001000ull);
        EXPECT_EQ(e.access, *e.rank == 0 ? "read" : "write");
        EXPECT_EQ(e.line, *e.rank == 0 ? 1u : 3u);
    }
}

}  // namespace
}  // namespace gpufault
