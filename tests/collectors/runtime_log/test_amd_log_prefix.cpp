#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <vector>

#include "collectors/runtime_log/amd_log_prefix.h"
#include "collectors/runtime_log/amd_shape_cache.h"

namespace gpufault {
namespace {

std::string_view msg(std::string_view line, const AmdLogPrefix& p) {
    return line.substr(p.message_offset);
}

// Lines constructed from the format strings of FORMATS.md §3.1 (printf padding applied by hand).

TEST(AmdLogPrefix, Rocm33HundredNanosecondUnitsNoUs) {
    // ":%d:%-25s:%-4d: %010lld: %s"
    std::string_view l = ":3:rocdevice.cpp            :412 : 0012345670: Initializing HSA stack.";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->level, 3);
    EXPECT_EQ(p->file, "rocdevice.cpp");
    EXPECT_EQ(p->src_line, 412);
    EXPECT_EQ(p->runtime_us, 1234567);  // 100 ns units → µs
    EXPECT_FALSE(p->pid);
    EXPECT_EQ(p->runtime_tid, "");
    EXPECT_EQ(msg(l, *p), "Initializing HSA stack.");
}

TEST(AmdLogPrefix, Rocm37UsNoPid) {
    // ":%d:%-25s:%-4d: %010lld us: %s"
    std::string_view l =
        ":4:rocdevice.cpp            :1858: 1885937272 us: Allocate hsa host memory";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->level, 4);
    EXPECT_EQ(p->src_line, 1858);
    EXPECT_EQ(p->runtime_us, 1885937272);
    EXPECT_FALSE(p->pid);
    EXPECT_EQ(msg(l, *p), "Allocate hsa host memory");
}

TEST(AmdLogPrefix, Rocm45PidColonTid) {
    // ":%d:%-25s:%-4d: %010lld us: %-5d: [tid:0x%s] %s"
    std::string_view l =
        ":1:hip_memory.cpp           :333 : 1123456789 us: 4242 : [tid:0x7f0a1b2c3d40] Allocation "
        "failed : Pinned Memory, size :64";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->level, 1);
    EXPECT_EQ(p->file, "hip_memory.cpp");
    EXPECT_EQ(p->pid, 4242);
    EXPECT_EQ(p->runtime_tid, "0x7f0a1b2c3d40");
    EXPECT_EQ(p->runtime_us, 1123456789);
    EXPECT_EQ(msg(l, *p), "Allocation failed : Pinned Memory, size :64");
}

TEST(AmdLogPrefix, Rocm45FiveDigitPidRunsIntoColon) {
    std::string_view l =
        ":3:rocvirtual.cpp           :2738: 0000000042 us: 12345: [tid:0x7f3d5b7fe700] ShaderName "
        ": k";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->pid, 12345);
    EXPECT_EQ(p->runtime_tid, "0x7f3d5b7fe700");
    EXPECT_EQ(p->runtime_us, 42);
    EXPECT_EQ(msg(l, *p), "ShaderName : k");
}

TEST(AmdLogPrefix, Rocm57BracketPidPaddedTid) {
    // ":%d:%-25s:%-4d: %010lld us: [pid:%-5d tid:0x%s] %s"
    std::string_view l =
        ":0:rocdevice.cpp            :2984: 71322719728 us: [pid:8     tid:0x7f53d8bff640] "
        "Callback: "
        "Queue 0x7f53d8200000 aborting";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->level, 0);
    EXPECT_EQ(p->pid, 8);
    EXPECT_EQ(p->runtime_tid, "0x7f53d8bff640");
    EXPECT_EQ(p->runtime_us, 71322719728);
    EXPECT_EQ(msg(l, *p), "Callback: Queue 0x7f53d8200000 aborting");
}

TEST(AmdLogPrefix, Rocm63LevelBelow4TwoSpacesNoPid) {
    // ":%d:%-25s:%-4d: %010lu us: %s %s" with an empty pid/tid part
    std::string_view l =
        ":3:rocvirtual.cpp           :3190: 0043127734 us:  ShaderName : _Z9vectoraddPfS_S_i";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_FALSE(p->pid);
    EXPECT_EQ(p->runtime_tid, "");
    EXPECT_EQ(p->runtime_us, 43127734);
    EXPECT_EQ(msg(l, *p), "ShaderName : _Z9vectoraddPfS_S_i");
}

TEST(AmdLogPrefix, Rocm63Level4TidWithSpace) {
    // rocm-systems pidtid "[pid:%u tid: 0x%05zx]"
    std::string_view l =
        ":1:rocdevice.cpp            :3438: 48517558015 us: [pid:77544 tid: 0x7fd5af5ff6c0] HW "
        "Exception Error";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->pid, 77544);
    EXPECT_EQ(p->runtime_tid, "0x7fd5af5ff6c0");
    EXPECT_EQ(msg(l, *p), "HW Exception Error");
    std::string_view hashed =
        ":4:rocvirtual.cpp           :1260: 0000000100 us: [pid:9 tid: 0x0a1b2] Arg0: x";
    auto q = parseAmdLogPrefix(hashed);
    ASSERT_TRUE(q);
    EXPECT_EQ(q->pid, 9);
    EXPECT_EQ(q->runtime_tid, "0x0a1b2");
}

TEST(AmdLogPrefix, StrayDBeforeUsTypo) {
    // "%010lud us" of one 2024 commit
    std::string_view l =
        ":1:hip_code_object.cpp      :1008: 2156327706d us:  Cannot find the function: Cijk_A ";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->file, "hip_code_object.cpp");
    EXPECT_EQ(p->runtime_us, 2156327706);
    EXPECT_EQ(msg(l, *p), "Cannot find the function: Cijk_A ");
}

TEST(AmdLogPrefix, CollapsedPadding) {
    std::string_view l =
        ":0:rocdevice.cpp :2672: 0696142325 us: 5999 : [tid:0x7f676e4c7640] Device::callbackQueue "
        "aborting with error : X";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->file, "rocdevice.cpp");
    EXPECT_EQ(p->src_line, 2672);
    EXPECT_EQ(p->runtime_us, 696142325);
    EXPECT_EQ(p->pid, 5999);
    EXPECT_EQ(msg(l, *p), "Device::callbackQueue aborting with error : X");
}

TEST(AmdLogPrefix, LogEntryAndTimestampedLayouts) {
    // log_entry ":%d:%s:%d: %s"
    std::string_view e = ":2:rocprogram.cpp:120: Build log is empty";
    auto p = parseAmdLogPrefix(e);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->level, 2);
    EXPECT_EQ(p->file, "rocprogram.cpp");
    EXPECT_EQ(p->src_line, 120);
    EXPECT_FALSE(p->runtime_us);
    EXPECT_EQ(msg(e, *p), "Build log is empty");
    // log_timestamped ":% 2d:%15s:% 5d: (%010lld) us %s"
    std::string_view t = ": 3:  rocdevice.cpp:  430: (0000001234) us Initializing HSA stack.";
    auto q = parseAmdLogPrefix(t);
    ASSERT_TRUE(q);
    EXPECT_EQ(q->level, 3);
    EXPECT_EQ(q->file, "rocdevice.cpp");
    EXPECT_EQ(q->src_line, 430);
    EXPECT_EQ(q->runtime_us, 1234);
    EXPECT_EQ(msg(t, *q), "Initializing HSA stack.");
}

TEST(AmdLogPrefix, GuaranteeFullPathAndEmptyLocation) {
    std::string_view g =
        ":0:/long/build/path/hip_global.cpp:88  : 0000000005 us:  Cannot find Symbol";
    auto p = parseAmdLogPrefix(g);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->file, "/long/build/path/hip_global.cpp");
    EXPECT_EQ(p->src_line, 88);
    // AMD_LOG_MASK without LOG_LOCATION: file "" and line 0.
    std::string_view n = ":3:                         :0   : 0000000007 us:  ShaderName : k";
    auto q = parseAmdLogPrefix(n);
    ASSERT_TRUE(q);
    EXPECT_EQ(q->file, "");
    EXPECT_EQ(q->src_line, 0);
    EXPECT_EQ(msg(n, *q), "ShaderName : k");
}

TEST(AmdLogPrefix, LostLeadingColonOnlyWithStamp) {
    // Real line of fixture 018 (a paste that lost the first ':').
    std::string_view l =
        "3:rocvirtual.cpp           :807 : 24888422484d us:  Arg0:  Tensor2dSizeA = val:1966080";
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->level, 3);
    EXPECT_EQ(msg(l, *p), "Arg0:  Tensor2dSizeA = val:1966080");
    EXPECT_FALSE(parseAmdLogPrefix("3:foo.cpp:12: no stamp here"));
}

TEST(AmdLogPrefix, RejectsOtherLines) {
    EXPECT_FALSE(
        parseAmdLogPrefix("Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x0."));
    EXPECT_FALSE(parseAmdLogPrefix("12:30:45 INFO started"));
    EXPECT_FALSE(parseAmdLogPrefix("src/fault.cu:156: CUDA error 719"));
    EXPECT_FALSE(parseAmdLogPrefix(":3:"));
    EXPECT_FALSE(parseAmdLogPrefix(":33:file.cpp:1: 0000000001 us: x"));
    EXPECT_FALSE(parseAmdLogPrefix(""));
}

TEST(AmdLogPrefix, RealLinesFromFixtures) {
    // 016 (ROCm 5.7–6.2 layout, level 3)
    std::string_view a =
        ":3:rocvirtual.cpp           :723 : 4815821610388 us: [pid:2429112 tid:0x70536bbc5640] "
        "Arg2:   "
        "= ptr:0x7051e5a00000 obj:[0x705165a00000-0x705365a00000]";
    auto p = parseAmdLogPrefix(a);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->pid, 2429112);
    EXPECT_EQ(p->runtime_us, 4815821610388);
    EXPECT_TRUE(msg(a, *p).starts_with("Arg2:   = ptr:"));
    // 105 (ROCm 7, level 0, no pid, two spaces)
    std::string_view b =
        ":0:rocdevice.cpp            :2991: 218582848177 us:  Callback: Queue 0x7f0810400000 "
        "aborting";
    auto q = parseAmdLogPrefix(b);
    ASSERT_TRUE(q);
    EXPECT_FALSE(q->pid);
    EXPECT_EQ(q->runtime_us, 218582848177);
    EXPECT_EQ(msg(b, *q), "Callback: Queue 0x7f0810400000 aborting");
}

void expectSameParse(std::string_view l) {
    auto fast = parseAmdLogPrefix(l);
    auto general = parseAmdLogPrefixGeneral(l);
    ASSERT_EQ(fast.has_value(), general.has_value()) << l;
    if (!fast) return;
    EXPECT_EQ(fast->level, general->level) << l;
    EXPECT_EQ(fast->file, general->file) << l;
    EXPECT_EQ(fast->file.data(), general->file.data()) << l;
    EXPECT_EQ(fast->src_line, general->src_line) << l;
    EXPECT_EQ(fast->runtime_us, general->runtime_us) << l;
    EXPECT_EQ(fast->pid, general->pid) << l;
    EXPECT_EQ(fast->runtime_tid, general->runtime_tid) << l;
    EXPECT_EQ(fast->message_offset, general->message_offset) << l;
}

TEST(AmdLogPrefix, FixedColumnPathAgreesWithGeneralParser) {
    // Lines in the printf columns, each byte of the head replaced, a byte inserted or removed
    // and the line cut at every length: the fixed-column path gives what the general one gives.
    const std::string bases[] = {
        ":3:hip_device_runtime.cpp   :623 : 1000000000 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
        "hipGetDevice ( 0x70536bbc2ecc ) ",
        ":3:rocvirtual.cpp           :3016: 71322719728 us: [pid:8     tid:0x7f53d8bff640] "
        "ShaderName : k",
        ":1:hip_memory.cpp           :333 : 1123456789 us: 4242 : [tid:0x7f0a1b2c3d40] x",
        ":3:rocdevice.cpp            :412 : 0012345670: Initializing HSA stack.",
        ":3:rocvirtual.cpp           :3190: 0043127734 us:  ShaderName : _Z9vectoraddPfS_S_i",
        ":1:hip_code_object.cpp      :1008: 2156327706d us:  Cannot find the function: C ",
        ":3:                         :0   : 0000000007 us:  ShaderName : k",
        ":4:a_file_name_of_25_chars.c:1   : 0000000100 us: [pid:9 tid: 0x0a1b2] Arg0: x",
        ":3:x                        :7   : (0000001234) us Initializing",
        ":3:rocvirtual.cpp           :723 : 4815821610388 us: [pid:2429112 tid:0x70536bbc5640] "
        "Arg2:   = ptr:0x7051e5a00000",
        ":3:hip_module.cpp           :670 : 1000000006 us: [pid:1 tid:0x7F0A1B2C3D4E5F60] \t "
        "hipLaunchKernel: Returned hipSuccess : ",
        ":3:hip_module.cpp           :670 : 100000000612345 us: [pid:12345 tid:0xa] x",
        ":3:hip_module.cpp           :9   : 98765432 us: [pid:7654321 tid:0xa] x",
    };
    const char subst[] = {' ', '\t', ':', '0', '9', 'a', 'x', '[', ']', '(', 'd', '-'};
    for (const std::string& base : bases) {
        expectSameParse(base);
        for (size_t i = 0; i < 100 && i < base.size(); ++i) {
            for (char c : subst) {
                std::string m = base;
                m[i] = c;
                expectSameParse(m);
                std::string ins = base;
                ins.insert(i, 1, c);
                expectSameParse(ins);
            }
            std::string del = base;
            del.erase(i, 1);
            expectSameParse(del);
        }
        for (size_t n = 0; n <= base.size(); ++n)
            expectSameParse(std::string_view(base).substr(0, n));
    }
}

void expectSameShape(const std::string& l) {
    // The SIMD and scalar shape checks agree, and an accepted line parses to the same fields.
    AmdFixedShape a = amdFixedShape(l), b = amdFixedShapeScalar(l);
    ASSERT_EQ(a.message, b.message) << l;
    if (a.message == 0) return;
    EXPECT_EQ(a.stamp_len, b.stamp_len) << l;
    EXPECT_EQ(a.pid_at, b.pid_at) << l;
    EXPECT_EQ(a.pid_len, b.pid_len) << l;
    EXPECT_EQ(a.tid_at, b.tid_at) << l;
    EXPECT_EQ(a.tid_len, b.tid_len) << l;
    auto p = parseAmdLogPrefix(l);
    ASSERT_TRUE(p) << l;
    EXPECT_EQ(p->message_offset, a.message) << l;
    int64_t us = 0, pid = 0;
    std::string_view tid;
    amdFixedValues(l, a, us, pid, tid);
    EXPECT_EQ(p->runtime_us, us) << l;
    EXPECT_EQ(p->pid, pid) << l;
    EXPECT_EQ(p->runtime_tid, tid) << l;
}

TEST(AmdLogPrefix, FixedShapeSimdAgreesWithScalarAndParser) {
    // Lines of ≥ 96 bytes take the SIMD path; every byte of the first 100 replaced, a byte
    // inserted or removed, and the line cut at every length.
    const std::string tail(40, 'm');
    const std::string bases[] = {
        ":3:hip_device_runtime.cpp   :623 : 1000000000 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
        "hipGetDevice ( 0x70536bbc2ecc ) ",
        ":3:rocvirtual.cpp           :3016: 71322719728 us: [pid:8     tid:0x7f53d8bff640] "
        "ShaderName : k" +
            tail,
        ":3:rocvirtual.cpp           :723 : 4815821610388 us: [pid:2429112 tid:0x70536bbc5640] "
        "Arg2:   = ptr:0x7051e5a00000",
        ":3:hip_module.cpp           :670 : 1000000006 us: [pid:1 tid:0x7F0A1B2C3D4E5F60] \t "
        "hipLaunchKernel: Returned hipSuccess : ",
        ":3:hip_module.cpp           :670 : 100000000612345 us: [pid:12345 tid:0xa] x" + tail,
        ":3:hip_module.cpp           :9   : 98765432 us: [pid:7654321 tid:0xa] x" + tail,
        ":3:x                        :7   : 0000001234 us: [pid:1234567 tid:0x7f53d8bff640123] " +
            tail,
        // Blanks after the prefix: sixteen at a time, more than sixteen, up to the line's end.
        ":3:hip_module.cpp           :670 : 1000000006 us: [pid:1 tid:0xa]" + std::string(20, ' ') +
            "x" + tail,
        ":3:hip_module.cpp           :670 : 1000000006 us: [pid:1 tid:0xa] \t \t" + tail,
        ":3:hip_module.cpp           :670 : 1000000006 us: [pid:1 tid:0xa]" + std::string(40, ' '),
    };
    const char subst[] = {' ', '\t', ':', '0', '9', 'a', 'x', '[', ']', 'd', '\r'};
    for (const std::string& base : bases) {
        expectSameShape(base);
        for (size_t i = 0; i < 100 && i < base.size(); ++i) {
            for (char c : subst) {
                std::string m = base;
                m[i] = c;
                expectSameShape(m);
                std::string ins = base;
                ins.insert(i, 1, c);
                expectSameShape(ins);
            }
            std::string del = base;
            del.erase(i, 1);
            expectSameShape(del);
        }
        for (size_t n = 0; n <= base.size(); ++n) expectSameShape(base.substr(0, n));
    }
}

// The shape cache gives amdFixedShape()'s answer on every line whatever came before it: each
// mutated line right after its base line (a cache hit where its tail is unchanged) and after
// another base line (other stamp, pid and tid widths).
TEST(AmdLogPrefix, ShapeCacheAgreesWithAmdFixedShape) {
    const std::string tail(40, 'm');
    const std::string bases[] = {
        ":3:hip_device_runtime.cpp   :623 : 1000000000 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
        "hipGetDevice ( 0x70536bbc2ecc ) ",
        ":3:rocvirtual.cpp           :3016: 71322719728 us: [pid:8     tid:0x7f53d8bff640] "
        "ShaderName : k" +
            tail,
        ":3:rocvirtual.cpp           :723 : 4815821610388 us: [pid:2429112 tid:0x70536bbc5640] "
        "Arg2:   = ptr:0x7051e5a00000",
        ":3:hip_module.cpp           :670 : 1000000006 us: [pid:1 tid:0x7F0A1B2C3D4E5F60] \t "
        "hipLaunchKernel: Returned hipSuccess : ",
        ":3:x                        :7   : 000000123456789 us: [pid:1234567 "
        "tid:0x7f53d8bff640123] " +
            tail,
        ":3:hip_module.cpp           :670 : 1000000006 us: [pid:1 tid:0xa]" + std::string(20, ' ') +
            "x" + tail,
        ":3:hip_module.cpp           :670 : 1000000006 us: [pid:1 tid:0xa]" + std::string(40, ' '),
    };
    const char subst[] = {' ', '\t', ':', '0', '9', 'a', 'x', '[', ']', 'd', '\r'};
    AmdShapeCache cache;
    size_t lines = 0, accepted = 0;
    auto same = [&](const std::string& l) {
        const AmdFixedShape a = cache.shape(l), b = amdFixedShape(l);
        ASSERT_EQ(a.message, b.message) << l;
        ++lines;
        if (a.message == 0) return;
        ++accepted;
        EXPECT_EQ(a.stamp_len, b.stamp_len) << l;
        EXPECT_EQ(a.pid_at, b.pid_at) << l;
        EXPECT_EQ(a.pid_len, b.pid_len) << l;
        EXPECT_EQ(a.tid_at, b.tid_at) << l;
        EXPECT_EQ(a.tid_len, b.tid_len) << l;
    };
    for (size_t k = 0; k < std::size(bases); ++k) {
        const std::string& base = bases[k];
        const std::string& other = bases[(k + 1) % std::size(bases)];
        for (size_t i = 0; i < base.size(); ++i) {
            std::vector<std::string> mutated;
            for (char c : subst) {
                mutated.push_back(base);
                mutated.back()[i] = c;
                mutated.push_back(base);
                mutated.back().insert(i, 1, c);
            }
            mutated.push_back(base);
            mutated.back().erase(i, 1);
            for (const std::string& m : mutated) {
                same(base);
                same(m);
                same(other);
                same(m);
            }
        }
    }
    EXPECT_GT(lines, 50000u);
    EXPECT_GT(accepted, lines / 2);
}

}  // namespace
}  // namespace gpufault
