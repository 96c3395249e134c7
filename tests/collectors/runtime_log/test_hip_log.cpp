#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/runtime_log/hip_log.h"

namespace gpufault {
namespace {

/// A line as the decoder delivers it: AMD prefix removed, its fields set.
struct Amd {
    Amd(std::string m,
        std::optional<int64_t> p = {},
        std::string t = "",
        std::optional<int64_t> u = {})
        : msg(std::move(m)), pid(p), tid(std::move(t)), us(u) {}
    std::string msg;
    std::optional<int64_t> pid;
    std::string tid;
    std::optional<int64_t> us;
};

struct Feeder {
    CollectSink sink;
    std::unique_ptr<Matcher> m = makeHipLogMatcher();
    uint64_t n = 0;
    void amd(const Amd& a, int level = 3) {
        LogLine l;
        l.line = ++n;
        l.text = a.msg;
        l.raw = a.msg;
        l.amd_level = level;
        l.log_pid = a.pid;
        l.runtime_tid = a.tid;
        l.time.runtime_us = a.us;
        m->feed(l, sink);
    }
    void plain(const std::string& s) {
        LogLine l;
        l.line = ++n;
        l.text = s;
        l.raw = s;
        m->feed(l, sink);
    }
    CollectSink& done() {
        m->finish(sink);
        return sink;
    }
};

const char* kT1 = "0x7f0a1b2c3d40";
const char* kT2 = "0x7f0a1b2c3e00";

// Dispatch lines (FORMATS.md §3.2): "Arg%d: %s %s = ptr:%p obj:[%p-%p]", "Arg%d: %s %s = val:%s",
// "ShaderName : %s", "Graph shader name : %s".

TEST(HipLog, ShaderNameTakesPointerArgsOfItsThread) {
    Feeder r;
    r.amd({"Arg0: float* a = ptr:0x7f0000001000 obj:[0x7f0000000000-0x7f0000100000]", 42, kT1, 10});
    r.amd(
        {"Arg0: int* other = ptr:0x7e0000000000 obj:[0x7e0000000000-0x7e0000001000]", 42, kT2, 11});
    r.amd({"Arg1: int n = val:1024", 42, kT1, 12});
    r.amd({"Arg2: float* b = ptr:0x7f0000200010 obj:[0x7f0000200000-0x7f0000300000]", 42, kT1, 13});
    r.amd({"ShaderName : _Z9vectoraddPfS_S_i", 42, kT1, 14});
    auto& s = r.done();
    ASSERT_EQ(s.dispatches.size(), 1u);
    const Dispatch& d = s.dispatches[0];
    EXPECT_EQ(d.line, 5u);
    EXPECT_EQ(d.pid, 42);
    EXPECT_EQ(d.runtime_tid, kT1);
    EXPECT_EQ(d.kernel, "_Z9vectoraddPfS_S_i");
    EXPECT_EQ(d.time.runtime_us, 14);
    ASSERT_EQ(d.args.size(), 2u);  // the val: arg is not a pointer; the other thread's arg stays
    EXPECT_EQ(d.args[0].index, 0);
    EXPECT_EQ(d.args[0].ptr, 0x7f0000001000u);
    EXPECT_EQ(d.args[0].obj_lo, 0x7f0000000000u);
    EXPECT_EQ(d.args[0].obj_hi, 0x7f0000100000u);
    EXPECT_EQ(d.args[0].name, "a");
    EXPECT_EQ(d.args[1].index, 2);
    EXPECT_EQ(d.args[1].name, "b");
    EXPECT_EQ(d.args[1].ptr, 0x7f0000200010u);
    EXPECT_EQ(d.args[1].obj_lo, 0x7f0000200000u);
    EXPECT_EQ(d.args[1].obj_hi, 0x7f0000300000u);
    // The ranges travel with the dispatch (the store makes them operands of its window).
    EXPECT_TRUE(s.operands.empty());
    EXPECT_TRUE(s.evidences.empty());
}

TEST(HipLog, NewLaunchDropsStaleArgsAndGraphShaderName) {
    Feeder r;
    r.amd({"Arg0: float* a = ptr:0x1000 obj:[0x1000-0x2000]", 7, kT1});
    r.amd({"Arg1: float* b = ptr:0x3000 obj:[0x3000-0x4000]", 7, kT1});
    r.amd(
        {"Arg0: float* c = ptr:0x5000 obj:[0x5000-0x6000]", 7, kT1});  // a launch that never logged
    r.amd({"Graph shader name : graph_kernel", 7, kT1});
    r.amd({"ShaderName : no_args_kernel", 7, kT1});
    auto& s = r.done();
    ASSERT_EQ(s.dispatches.size(), 2u);
    EXPECT_EQ(s.dispatches[0].kernel, "graph_kernel");
    ASSERT_EQ(s.dispatches[0].args.size(), 1u);
    EXPECT_EQ(s.dispatches[0].args[0].ptr, 0x5000u);
    EXPECT_TRUE(s.dispatches[1].args.empty());
}

// Hostile review 4, L (tests/data/hip_args/stale.log): Arg lines of a launch that failed
// (its `Returned hipError…`, no ShaderName) are no operands of the thread's next launch, which
// logged no args; they are dropped with a warning. Another thread's pending args stay.
TEST(HipLog, ArgsOfALaunchEndedByItsReturnAreDroppedWithAWarning) {
    Feeder r;
    r.amd({"Arg0: float* x0 = ptr:0x10000000 obj:[0x10000000-0x10001000]", 4242, kT1});
    r.amd({"Arg1: float* x1 = ptr:0x20000000 obj:[0x20000000-0x20001000]", 4242, kT1});
    r.amd({"Arg0: float* y = ptr:0x30000000 obj:[0x30000000-0x30001000]", 4242, kT2});
    r.amd({"hipLaunchKernel: Returned hipErrorInvalidValue : ", 4242, kT1});
    r.amd({"ShaderName : _Z6noargsv", 4242, kT1});
    r.amd({"ShaderName : _Z5otherv", 4242, kT2});
    auto& s = r.done();
    ASSERT_EQ(s.dispatches.size(), 2u);
    EXPECT_EQ(s.dispatches[0].kernel, "_Z6noargsv");
    EXPECT_TRUE(s.dispatches[0].args.empty());
    ASSERT_EQ(s.dispatches[1].args.size(), 1u);
    EXPECT_EQ(s.dispatches[1].args[0].ptr, 0x30000000u);
    ASSERT_EQ(s.warnings.size(), 1u);
    EXPECT_EQ(s.warnings[0].line, 1u);
    EXPECT_EQ(s.warnings[0].message,
              "Arg lines of a launch with no ShaderName (2 pointer arg(s)) ended by the API call's "
              "return at line 4: dropped");
    ASSERT_EQ(s.evidences.size(), 1u);  // the runtime_error itself
    EXPECT_EQ(s.evidences[0].reason, "hipErrorInvalidValue");
}

// L (h.log): indices going back start a new launch (the old one's args dropped, warned); a
// launch past 64 pointer args keeps the first 64 and says how many it did not keep.
TEST(HipLog, ANewLaunchAndArgsPastTheCapAreWarned) {
    Feeder r;
    r.amd({"Arg0: float* x0 = ptr:0x60000000 obj:[0x60000000-0x60001000]", 4242, kT1});
    r.amd({"Arg1: float* x1 = ptr:0x61000000 obj:[0x61000000-0x61001000]", 4242, kT1});
    r.amd({"Arg0: float* x0 = ptr:0x62000000 obj:[0x62000000-0x62001000]", 4242, kT1});
    r.amd({"ShaderName : _Z2k6v", 4242, kT1});
    for (int i = 0; i < 70; ++i)
        r.amd({"Arg" + std::to_string(i) + ": float* x = ptr:0x" + std::to_string(70000000 + i) +
                   " obj:[0x70000000-0x70001000]",
               4242,
               kT2});
    r.amd({"ShaderName : _Z2k7v", 4242, kT2});
    auto& s = r.done();
    ASSERT_EQ(s.dispatches.size(), 2u);
    ASSERT_EQ(s.dispatches[0].args.size(), 1u);
    EXPECT_EQ(s.dispatches[0].args[0].ptr, 0x62000000u);
    EXPECT_EQ(s.dispatches[1].args.size(), 64u);
    ASSERT_EQ(s.warnings.size(), 2u);
    EXPECT_EQ(s.warnings[0].line, 1u);
    EXPECT_EQ(s.warnings[0].message,
              "Arg lines of a launch with no ShaderName (2 pointer arg(s)) ended by a new launch's "
              "Arg lines at line 3: dropped");
    EXPECT_EQ(s.warnings[1].line, 75u);
    EXPECT_EQ(s.warnings[1].message,
              "launch of _Z2k7v: 6 pointer arg(s) past the first 64 not kept as operands");
}

TEST(HipLog, RealDispatchLinesUnnamedArgFixture016) {
    Feeder r;
    r.plain(
        ":3:rocvirtual.cpp           :798 : 4815821610380 us: [pid:2429112 tid:0x70536bbc5640] "
        "Arg0:   = val:1073741824");
    r.plain(
        ":3:rocvirtual.cpp           :723 : 4815821610388 us: [pid:2429112 tid:0x70536bbc5640] "
        "Arg2:   = ptr:0x7051e5a00000 obj:[0x705165a00000-0x705365a00000]");
    r.plain(
        ":3:rocvirtual.cpp           :3016: 4815821610391 us: [pid:2429112 tid:0x70536bbc5640] "
        "ShaderName : _ZN2at6native29vectorized_elementwise_kernel");
    r.plain(
        ":3:hip_module.cpp           :670 : 4815821610396 us: [pid:2429112 tid:0x70536bbc5640] "
        "hipLaunchKernel: Returned hipSuccess : ");
    auto& s = r.done();
    ASSERT_EQ(s.dispatches.size(), 1u);
    EXPECT_EQ(s.dispatches[0].pid, 2429112);
    EXPECT_EQ(s.dispatches[0].runtime_tid, "0x70536bbc5640");
    EXPECT_EQ(s.dispatches[0].time.runtime_us, 4815821610391);
    ASSERT_EQ(s.dispatches[0].args.size(), 1u);
    const DispatchArg& a = s.dispatches[0].args[0];
    EXPECT_EQ(a.index, 2);
    EXPECT_EQ(a.name, "");  // HIP printed no type or name
    EXPECT_EQ(a.ptr, 0x7051e5a00000u);
    EXPECT_EQ(a.obj_lo, 0x705165a00000u);
    EXPECT_EQ(a.obj_hi, 0x705365a00000u);
    EXPECT_TRUE(s.evidences.empty());
}

TEST(HipLog, ThreadTableIsBounded) {
    Feeder r;
    for (int i = 0; i < 300; ++i) {
        r.amd({"Arg0: float* a = ptr:0x1000 obj:[0x1000-0x2000]", i, "0x1"});
    }
    r.amd({"ShaderName : k", 299, "0x1"});
    r.amd({"ShaderName : k", 0, "0x1"});  // evicted: dispatch without args
    auto& s = r.done();
    ASSERT_EQ(s.dispatches.size(), 2u);
    EXPECT_EQ(s.dispatches[0].args.size(), 1u);
    EXPECT_TRUE(s.dispatches[1].args.empty());
}

// Hostile review: Arg lines still waiting for their ShaderName when the input ends are warned
// (once, at their first line), not dropped silently; a finish() on a quiet file (gpufaultd)
// keeps them, so a ShaderName appended later still takes them, and warns only once.
TEST(HipLog, ArgsPendingAtTheEndOfTheInputAreWarnedOnce) {
    Feeder r;
    r.amd({"Arg0: float* x = ptr:0x10000000 obj:[0x10000000-0x10001000]", 4242, kT1});
    r.amd({"ShaderName : _Z1kv", 4242, kT1});
    r.amd({"Arg0: float* y = ptr:0x20000000 obj:[0x20000000-0x20001000]", 4242, kT1});
    r.amd({"Arg1: float* z = ptr:0x30000000 obj:[0x30000000-0x30001000]", 4242, kT1});
    r.amd({"Arg0: int n = val:7", 4243, kT2});  // no pointer arg: warned with 0
    r.m->finish(r.sink);
    r.m->finish(r.sink);  // quiet again: no second warning
    ASSERT_EQ(r.sink.warnings.size(), 2u);
    EXPECT_EQ(r.sink.warnings[0].line, 3u);
    EXPECT_EQ(r.sink.warnings[0].message,
              "Arg lines of a launch with no ShaderName (2 pointer arg(s), pid 4242 thread "
              "0x7f0a1b2c3d40) at the end of the input: not attached to any dispatch (unless its "
              "ShaderName is appended later)");
    EXPECT_EQ(r.sink.warnings[1].line, 5u);
    EXPECT_EQ(r.sink.warnings[1].message,
              "Arg lines of a launch with no ShaderName (0 pointer arg(s), pid 4243 thread "
              "0x7f0a1b2c3e00) at the end of the input: not attached to any dispatch (unless its "
              "ShaderName is appended later)");
    r.amd({"ShaderName : _Z2k2v", 4242, kT1});  // appended after the quiet spell
    auto& s = r.done();
    ASSERT_EQ(s.dispatches.size(), 2u);
    ASSERT_EQ(s.dispatches[1].args.size(), 2u);
    EXPECT_EQ(s.dispatches[1].args[1].ptr, 0x30000000u);
    EXPECT_EQ(s.warnings.size(), 2u);  // thread 2's launch was warned already
}

// Hostile review: more than 256 runtime threads with Arg lines pending at once evict the least
// recently used one; a launch it was listing is dropped with a warning naming the launch and
// the line that evicted it (an evicted thread with no launch pending loses nothing: no warning).
TEST(HipLog, EvictedPendingArgsAreWarned) {
    Feeder r;
    r.amd({"Arg0: float* a = ptr:0x1000 obj:[0x1000-0x2000]", 1, "0x1"});
    r.amd({"ShaderName : k", 1, "0x1"});  // thread (1, 0x1): no launch pending from here on
    for (int i = 2; i <= 257; ++i)
        r.amd({"Arg0: float* a = ptr:0x1000 obj:[0x1000-0x2000]", i, "0x1"});
    // 257 threads met: (1, 0x1), the least recently used, went without a warning.
    EXPECT_TRUE(r.sink.warnings.empty());
    r.amd({"Arg0: float* a = ptr:0x3000 obj:[0x3000-0x4000]", 258, "0x1"});  // line 259
    ASSERT_EQ(r.sink.warnings.size(), 1u);
    EXPECT_EQ(r.sink.warnings[0].line, 3u);  // pid 2's Arg0
    EXPECT_EQ(r.sink.warnings[0].message,
              "Arg lines of a launch with no ShaderName yet (1 pointer arg(s), pid 2 thread 0x1) "
              "dropped at line 259: more than 256 runtime threads had Arg lines pending at once");
    r.amd({"ShaderName : k", 258, "0x1"});
    r.amd({"ShaderName : k", 3, "0x1"});  // still there: its args attach
    r.amd({"ShaderName : k", 2, "0x1"});  // evicted (and now pid 4's launch goes, warned)
    auto& s = r.done();
    ASSERT_EQ(s.dispatches.size(), 4u);
    ASSERT_EQ(s.dispatches[1].args.size(), 1u);
    EXPECT_EQ(s.dispatches[1].args[0].ptr, 0x3000u);
    EXPECT_EQ(s.dispatches[2].args.size(), 1u);
    EXPECT_TRUE(s.dispatches[3].args.empty());
    ASSERT_GE(s.warnings.size(), 2u);
    EXPECT_EQ(s.warnings[1].line, 5u);
    EXPECT_EQ(s.warnings[1].message,
              "Arg lines of a launch with no ShaderName yet (1 pointer arg(s), pid 4 thread 0x1) "
              "dropped at line 262: more than 256 runtime threads had Arg lines pending at once");
}

// "%s: Returned %s : %s" (LOG_API).

TEST(HipLog, ReturnedErrorFoldedWithPidAndTid) {
    Feeder r;
    r.amd({"hipDeviceSynchronize: Returned hipErrorLaunchFailure : ", 77544, kT1, 100});
    r.amd({"hipModuleUnload: Returned hipErrorLaunchFailure : ", 77544, kT1, 101});
    r.amd({"hipModuleUnload: Returned hipErrorLaunchFailure : ", 77544, kT1, 102});
    r.amd({"hipGetDevice: Returned hipSuccess : ", 77544, kT1});
    r.amd({"hipEventQuery: Returned hipErrorNotReady : ", 77544, kT1});
    r.amd({"hipDeviceEnablePeerAccess: Returned hipErrorPeerAccessAlreadyEnabled : ", 77544, kT1});
    r.amd({"hipLaunchKernel: Returned hipSuccess : : duration: 3 us", 77544, kT1});
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 1u);
    const Evidence& e = s.evidences[0];
    EXPECT_EQ(e.kind, Kind::RuntimeError);
    EXPECT_EQ(e.vendor, "amd");
    EXPECT_EQ(e.reason, "hipErrorLaunchFailure");
    EXPECT_EQ(e.pid, 77544);
    EXPECT_FALSE(e.tid);
    EXPECT_EQ(e.runtime_tid, kT1);
    EXPECT_EQ(e.count, 3u);
    EXPECT_EQ(e.line, 1u);
    EXPECT_EQ(e.time.runtime_us, 100);
    EXPECT_EQ(e.attr("api"), "hipDeviceSynchronize");
}

TEST(HipLog, ReturnedNoBinaryIsMissingCodeObject) {
    Feeder r;
    r.amd({"hipModuleLoadData: Returned hipErrorNoBinaryForGpu : ", 5, kT1});
    r.amd({"hipMalloc: Returned hipErrorOutOfMemory : ", 6, kT1});
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 2u);
    EXPECT_EQ(s.evidences[0].kind, Kind::MissingCodeObject);
    EXPECT_EQ(s.evidences[0].reason, "hipErrorNoBinaryForGpu");
    EXPECT_EQ(s.evidences[1].kind, Kind::RuntimeError);
    EXPECT_EQ(s.evidences[1].pid, 6);
}

// Queue callbacks (§3.4).

TEST(HipLog, QueueCallbackCurrentAndOutOfResources) {
    Feeder r;
    r.amd({"Callback: Queue 0x7f3c3c600000 aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_"
           "VIOLATION: The agent attempted to access memory beyond the largest legal address. "
           "code: 0x29",
           18963,
           "0x7f3d5b7fe700",
           2232307098},
          0);
    r.amd(
        {"Callback: Queue 0x7f3c3c600000 Aborting with error : HSA_STATUS_ERROR_OUT_OF_RESOURCES: "
         "The runtime failed to allocate the necessary resources. Code: 0x1008 Available Free mem "
         ": 12 MB",
         18963,
         "0x7f3d5b7fe700"},
        0);
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 2u);
    const Evidence& e = s.evidences[0];
    EXPECT_EQ(e.kind, Kind::HsaQueueError);
    EXPECT_EQ(e.vendor, "amd");
    EXPECT_EQ(e.reason, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION");
    EXPECT_EQ(e.pid, 18963);
    EXPECT_FALSE(e.address);  // the queue pointer is not a fault address
    EXPECT_EQ(e.attr("code"), "0x29");
    EXPECT_EQ(e.attr("queue"), "0x7f3c3c600000");
    EXPECT_EQ(e.time.runtime_us, 2232307098);
    EXPECT_EQ(s.evidences[1].reason, "HSA_STATUS_ERROR_OUT_OF_RESOURCES");
    EXPECT_EQ(s.evidences[1].attr("code"), "0x1008");
}

TEST(HipLog, QueueCallbackOldFormsAndCutName) {
    Feeder r;
    r.plain(
        ":0:rocdevice.cpp :2672: 0696142325 us: 5999 : [tid:0x7f676e4c7640] Device::callbackQueue "
        "aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to "
        "access memory beyond the largest legal address. code: 0x29");
    r.plain(
        ":0:rocdevice.cpp            :2303: 768423197593 us: Device::callbackQueue aborting with "
        "status: 0x100f");
    r.plain(
        ":0:rocdevice.cpp            :3018: 183469315192d us:  Callback: Queue 0x7fb378200000 "
        "aborting with error : HSA[52/1890]");
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 3u);
    EXPECT_EQ(s.evidences[0].pid, 5999);
    EXPECT_EQ(s.evidences[0].runtime_tid, "0x7f676e4c7640");
    EXPECT_EQ(s.evidences[0].reason, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION");
    EXPECT_EQ(s.evidences[0].time.runtime_us, 696142325);
    EXPECT_EQ(s.evidences[1].reason, "HSA_STATUS_ERROR_INVALID_ISA");  // hsa.h's 0x100F
    EXPECT_FALSE(s.evidences[1].pid);
    EXPECT_EQ(s.evidences[1].attr("code"), "0x100f");
    EXPECT_EQ(s.evidences[1].time.runtime_us, 768423197593);
    EXPECT_EQ(s.evidences[2].kind, Kind::HsaQueueError);
    EXPECT_FALSE(s.evidences[2].reason);  // overwritten by tmux: not guessed
}

TEST(HipLog, QuotedAndJsonWrappedLinesFindThePrefix) {
    Feeder r;
    r.plain(
        "> :0:rocdevice.cpp            :2984: 71322719728 us: [pid:8     tid:0x7f53d8bff640] "
        "Callback: "
        "Queue 0x7f53d8200000 aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: "
        "The "
        "agent attempted to access memory beyond the largest legal address. code: 0x29");
    r.plain(
        "{\"event\": \"line\", \"data\": \":0:rocdevice.cpp            :3586: 92087492418 us:  "
        "Callback: "
        "Queue 0x772c40900000 aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation "
        "resulted in a hardware exception. code: 0x1016\\n\", \"pipe\": \"stderr\"}");
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 2u);
    EXPECT_EQ(s.evidences[0].pid, 8);
    EXPECT_EQ(s.evidences[0].time.runtime_us, 71322719728);
    EXPECT_EQ(s.evidences[1].reason, "HSA_STATUS_ERROR_EXCEPTION");
    EXPECT_EQ(s.evidences[1].time.runtime_us, 92087492418);
    EXPECT_EQ(s.evidences[1].attr("code"), "0x1016");
}

// Code objects (§3.3).

TEST(HipLog, CannotFindFunctionBothFormsOneRecordPerKernel) {
    Feeder r;
    r.amd({"Cannot find the function: Cijk_A ", std::nullopt, "", 1}, 1);
    r.amd({"Cannot find the function: Cijk_A for module: 0x8b25960", std::nullopt, "", 2}, 1);
    r.amd({"Cannot find the function: Cijk_B ", std::nullopt, "", 3}, 1);
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 2u);
    EXPECT_EQ(s.evidences[0].kind, Kind::MissingCodeObject);
    EXPECT_EQ(s.evidences[0].kernel, "Cijk_A");
    EXPECT_EQ(s.evidences[0].count, 2u);
    EXPECT_EQ(s.evidences[0].line, 1u);
    EXPECT_FALSE(s.evidences[0].address);
    EXPECT_EQ(s.evidences[1].kernel, "Cijk_B");
}

// hip_global.cpp's guarantee() (FORMATS.md §3.3) at level 0 behind the full build path, and
// plain behind the old `file:line: guarantee(...)` form; the queue callback (§3.4) without its
// AMD prefix. None made a record before.
TEST(HipLog, CannotFindSymbolAndAnUnprefixedQueueCallback) {
    Feeder r;
    r.plain(
        ":0:/build/clr/hipamd/src/hip_global.cpp:62  : 2232307098 us: [pid:18963 "
        "tid:0x7f3d5b7fe700] Cannot find Symbol with name: _Z6kernelPf");
    r.plain(
        "/src/clr/hipamd/src/hip_global.cpp:62: guarantee(symbol != nullptr && \"Cannot find "
        "Symbol with name: _Z4axpyfPfS_\")");
    r.plain(
        "Callback: Queue 0x7f3c3c600000 aborting with error : "
        "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond "
        "the largest legal address. code: 0x29");
    r.plain(
        "Queue callback: Callback: Queue 0x1 aborting with error : HSA_STATUS_ERROR_EXCEPTION:");
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 3u);  // the callback quoted in prose (line 4) is none
    EXPECT_EQ(s.evidences[0].kind, Kind::HsaQueueError);
    EXPECT_EQ(s.evidences[0].line, 3u);
    EXPECT_EQ(s.evidences[0].reason, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION");
    EXPECT_EQ(s.evidences[0].attr("code"), "0x29");
    EXPECT_EQ(s.evidences[0].attr("queue"), "0x7f3c3c600000");
    EXPECT_EQ(s.evidences[1].kind, Kind::MissingCodeObject);
    EXPECT_EQ(s.evidences[1].kernel, "_Z6kernelPf");
    EXPECT_EQ(s.evidences[1].pid, 18963);
    EXPECT_EQ(s.evidences[1].line, 1u);
    EXPECT_EQ(s.evidences[2].kernel, "_Z4axpyfPfS_");
    EXPECT_EQ(s.evidences[2].line, 2u);
}

// HIP's messages of FORMATS.md §3.3 with the AMD prefix lost (pasted, re-printed by a wrapper)
// and the rarer ones with it. None made a record before (helper 131's audit).
TEST(HipLog, StandaloneMessagesWithoutTheirPrefixAndTheRareAllocationTexts) {
    Feeder r;
    r.plain("Cannot find the function: _Z6kernelPfi for module: 0x5c1f2a40");
    r.plain(
        "Allocation failed : Device memory : required :17179869184 | free :1073741824 | "
        "total :68702699520");
    r.plain("Memory allocation has failed!");
    r.amd({"[OCL] Fail to allocate image memory, failed with hsa_status: 4104 ", 4242, kT1, 5}, 1);
    r.amd({"An internal error has occurred. This may be due to insufficient memory.", 4242, kT1, 6},
          0);
    r.amd({"Cannot Register fat binary. FatMagic: 1212764230 version: 2 ", 4242, kT1, 7}, 1);
    // not HIP's: an Arg line and a ShaderName without their prefix stay program output
    r.plain("Arg0: float* a = ptr:0x7f0000001000 obj:[0x7f0000000000-0x7f0000100000]");
    r.plain("Allocation failed because the disk is full");
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 6u);
    EXPECT_EQ(s.evidences[0].kind, Kind::AllocFailure);
    EXPECT_EQ(s.evidences[0].attr("required"), "17179869184");
    EXPECT_EQ(s.evidences[0].attr("memory"), "device");
    EXPECT_EQ(s.evidences[1].kind, Kind::AllocFailure);
    EXPECT_EQ(s.evidences[1].line, 3u);
    EXPECT_EQ(s.evidences[2].attr("memory"), "image");
    EXPECT_EQ(s.evidences[2].attr("hsa_status"), "4104");
    EXPECT_EQ(s.evidences[2].pid, 4242);
    EXPECT_EQ(s.evidences[3].kind, Kind::AllocFailure);
    EXPECT_EQ(s.evidences[3].line, 5u);
    EXPECT_EQ(s.evidences[4].kind, Kind::MissingCodeObject);
    EXPECT_EQ(s.evidences[4].kernel, "_Z6kernelPfi");
    EXPECT_EQ(s.evidences[4].attr("module_handle"), "0x5c1f2a40");
    EXPECT_EQ(s.evidences[5].kind, Kind::MissingCodeObject);
    EXPECT_EQ(s.evidences[5].attr("fat_magic"), "1212764230");
    EXPECT_EQ(s.evidences[5].attr("fat_version"), "2");
}

// The queue callback behind other text (a ROCm 7 report: `rocdevice.cpp Callback: Queue …`), and
// the older `aborting with status: 0x%x`, whose code names the status (hsa.h).
TEST(HipLog, QueueCallbackBehindTextAndAStatusCodeOnly) {
    Feeder r;
    r.plain(
        "rocdevice.cpp Callback: Queue 0x7fc220400000 aborting with error : "
        "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory beyond "
        "the largest legal address. code: 0x29");
    r.amd({"Device::callbackQueue aborting with status: 0x100f"}, 0);
    r.amd({"Device::callbackQueue aborting with status: 0x7777"}, 0);
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 3u);
    EXPECT_EQ(s.evidences[0].reason, "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION");
    EXPECT_EQ(s.evidences[0].attr("queue"), "0x7fc220400000");
    EXPECT_FALSE(s.evidences[0].address);
    EXPECT_EQ(s.evidences[1].reason, "HSA_STATUS_ERROR_INVALID_ISA");
    EXPECT_EQ(s.evidences[1].attr("code"), "0x100f");
    EXPECT_FALSE(s.evidences[2].reason);
    EXPECT_EQ(s.evidences[2].attr("code"), "0x7777");
}

// hip_fatbin.cpp (ROCm 6.x): `No compatible code objects found for: %s, value of
// HIP_FORCE_SPIRV_CODEOBJECT: %d` (a real report: no record for it).
TEST(HipLog, NoCompatibleCodeObjectsNamesTheTarget) {
    Feeder r;
    r.amd({"No compatible code objects found for: gfx1030, value of HIP_FORCE_SPIRV_CODEOBJECT: 0"},
          1);
    r.plain("No compatible code objects found for: gfx90a:sramecc+:xnack-");
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 2u);
    EXPECT_EQ(s.evidences[0].kind, Kind::MissingCodeObject);
    EXPECT_EQ(s.evidences[0].attr("target"), "gfx1030");
    EXPECT_EQ(s.evidences[1].attr("target"), "gfx90a:sramecc+:xnack-");
}

// Helper 135's hostile lines: the messages' words in source code, build logs, prose and a
// program's own output are no record.
TEST(HipLog, HipMessagesQuotedOrInProseAreNoRecord) {
    Feeder r;
    r.plain(
        "rocdevice.cpp:3050:    LogPrintfError(\"Callback: Queue %p aborting with error : %s\",");
    r.plain(
        "hip_global.cpp:62: guarantee(false, \"Cannot find Symbol with name: %s\", name.c_str());");
    r.plain("notes.txt:12: If you see Callback: Queue 0x7f00 aborting with error : X, reboot");
    r.plain("Memory allocation has failed, retrying with a smaller batch");
    r.plain("Allocation failed : falling back to CPU");
    r.plain("Heap buffer allocation failed; using the pool");
    r.plain("HW Exception Error handling is documented in the manual");
    r.plain("Cannot find the function: foo in the plugin table");
    r.plain("Cannot find the function:                ");  // no name (substr past the end)
    EXPECT_TRUE(r.done().evidences.empty());
}

TEST(HipLog, NoBinaryForGpuWithListingAndGuaranteeRepeat) {
    Feeder r;
    r.amd({"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"}, 1);
    r.amd({"  Devices:"}, 1);
    r.amd({"    amdgcn-amd-amdhsa--gfx902:xnack- - [Not Found]"}, 1);
    r.amd({"  Bundled Code Objects:"}, 1);
    r.amd({"    host-x86_64-unknown-linux - [Unsupported]"}, 1);
    r.amd({"    hipv4-amdgcn-amd-amdhsa--gfx1030 - [code object v4 is amdgcn-amd-amdhsa--gfx1030]"},
          1);
    r.plain(
        "/src/HIP-rocm-4.3.1/rocclr/hip_code_object.cpp:486: \"hipErrorNoBinaryForGpu: Unable to "
        "find code object for all current devices!\"");
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 1u);
    const Evidence& e = s.evidences[0];
    EXPECT_EQ(e.kind, Kind::MissingCodeObject);
    EXPECT_EQ(e.reason, "hipErrorNoBinaryForGpu");
    EXPECT_EQ(e.line, 1u);
    EXPECT_EQ(e.count, 2u);
    EXPECT_EQ(e.attr("devices"), "amdgcn-amd-amdhsa--gfx902:xnack- [Not Found]");
    EXPECT_EQ(
        e.attr("bundles"),
        "host-x86_64-unknown-linux [Unsupported]; hipv4-amdgcn-amd-amdhsa--gfx1030 [code object "
        "v4 is amdgcn-amd-amdhsa--gfx1030]");
}

TEST(HipLog, CouldntFindBinaryForms) {
    Feeder r;
    r.amd({"hipErrorNoBinaryForGpu: Couldn't find binary for file: /opt/app/libk.so"}, 1);
    r.plain(
        "/work/HIP/rocclr/hip_code_object.cpp:92: guarantee(false && \"hipErrorNoBinaryForGpu: "
        "Coudn't find binary for current devices!\")");
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 1u);  // same kind, reason and (no) pid: folded
    EXPECT_EQ(s.evidences[0].attr("file"), "/opt/app/libk.so");
    EXPECT_EQ(s.evidences[0].count, 2u);
}

// `"hipErrorNoBinaryForGpu: Couldn't find binary for ptr: 0x%x"` (hip_fatbin.cpp, §3.3): the
// other form of the same failure, at level 1 with a ROCm 5.7–6.2 prefix's pid and tid.
TEST(HipLog, CouldntFindBinaryForPtr) {
    Feeder r;
    r.amd({"hipErrorNoBinaryForGpu: Couldn't find binary for ptr: 0xFFFFFFFF", 4194304, kT2, 0}, 1);
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 1u);
    EXPECT_EQ(s.evidences[0].kind, Kind::MissingCodeObject);
    EXPECT_EQ(s.evidences[0].reason, "hipErrorNoBinaryForGpu");
    EXPECT_EQ(s.evidences[0].pid, 4194304);
    EXPECT_EQ(s.evidences[0].runtime_tid, kT2);
    EXPECT_FALSE(s.evidences[0].tid);  // a runtime thread handle is no kernel tid
    EXPECT_EQ(s.evidences[0].time.runtime_us, 0);
}

// `Allocation failed : … %zu` (§3.3) with values up to INT64_MAX.
TEST(HipLog, AllocationFailureLargeSizes) {
    Feeder r;
    r.amd(
        {"Allocation failed : Device memory : required :9223372036854775807 | free :0 | total :0"},
        1);
    r.amd({"Allocation failed : Pinned Memory, size :9223372036854775807"}, 1);
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 2u);
    EXPECT_EQ(s.evidences[0].attr("required"), "9223372036854775807");
    EXPECT_EQ(s.evidences[0].attr("free"), "0");
    EXPECT_EQ(s.evidences[1].attr("size"), "9223372036854775807");
}

// `%zu` above INT64_MAX (hipMalloc of a negative size computed in size_t) keeps its decimal
// text; the `for ptr: 0x%x` form (hip_fatbin.cpp) keeps its ptr and does not fold with the
// `for file:` form of another binary; a repeated ptr line folds with its own.
TEST(HipLog, AllocationSizeAboveInt64MaxAndNoBinaryPtr) {
    Feeder r;
    r.amd({"Allocation failed : Pinned Memory, size :18446744073709551615"}, 1);
    r.amd({"Allocation failed : Device memory : required :9223372036854775808 | free "
           ":1073741824 | total :68702699520"},
          1);
    r.amd({"hipErrorNoBinaryForGpu: Couldn't find binary for file: /opt/a.so"}, 1);
    r.amd({"hipErrorNoBinaryForGpu: Couldn't find binary for ptr: 0xdeadbeef"}, 1);
    r.amd({"hipErrorNoBinaryForGpu: Couldn't find binary for file: /opt/b.so"}, 1);
    r.amd({"hipErrorNoBinaryForGpu: Couldn't find binary for ptr: 0xdeadbeef"}, 1);
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 5u);
    EXPECT_EQ(s.evidences[0].attr("size"), "18446744073709551615");
    EXPECT_EQ(s.evidences[0].attr("memory"), "pinned");
    EXPECT_EQ(s.evidences[1].attr("required"), "9223372036854775808");
    EXPECT_EQ(s.evidences[1].attr("free"), "1073741824");
    EXPECT_EQ(s.evidences[2].attr("file"), "/opt/a.so");
    EXPECT_FALSE(s.evidences[2].attr("ptr"));
    EXPECT_EQ(s.evidences[2].count, 1u);
    EXPECT_EQ(s.evidences[3].attr("ptr"), "0xdeadbeef");
    EXPECT_FALSE(s.evidences[3].attr("file"));
    EXPECT_EQ(s.evidences[3].count, 2u);
    EXPECT_EQ(s.evidences[4].attr("file"), "/opt/b.so");
    for (size_t i = 2; i < 5; ++i) {
        EXPECT_EQ(s.evidences[i].kind, Kind::MissingCodeObject);
        EXPECT_EQ(s.evidences[i].reason, "hipErrorNoBinaryForGpu");
    }
}

// Allocation failures (§3.3) and HW Exception Error.

TEST(HipLog, AllocationFailures) {
    Feeder r;
    r.amd({"Allocation failed : Device memory : required :17179869184 | free :1073741824 | total "
           ":68702699520",
           4242,
           kT1},
          1);
    r.amd({"Allocation failed : Pinned Memory, size :4096", 4242, kT1}, 1);
    r.amd({"Memory allocation has failed!"}, 1);
    r.plain("Video memory allocation failed!");
    r.plain("Can't allocate memory size - 0x38E00000 bytes!");
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 5u);
    for (auto& e : s.evidences) EXPECT_EQ(e.kind, Kind::AllocFailure);
    EXPECT_EQ(s.evidences[0].attr("required"), "17179869184");
    EXPECT_EQ(s.evidences[0].attr("free"), "1073741824");
    EXPECT_EQ(s.evidences[0].attr("total"), "68702699520");
    EXPECT_EQ(s.evidences[0].pid, 4242);
    EXPECT_EQ(s.evidences[1].attr("size"), "4096");
    EXPECT_EQ(s.evidences[4].attr("size"), "954204160");
    EXPECT_FALSE(s.evidences[4].address);
}

TEST(HipLog, HwExceptionError) {
    Feeder r;
    r.amd({"HW Exception Error", 77544, "0x7fd5af5ff6c0", 48517558015}, 1);
    auto& s = r.done();
    ASSERT_EQ(s.evidences.size(), 1u);
    EXPECT_EQ(s.evidences[0].kind, Kind::HsaQueueError);
    EXPECT_EQ(s.evidences[0].pid, 77544);
    EXPECT_FALSE(s.evidences[0].reason);
}

TEST(HipLog, ApiTraceLinesGiveNothing) {
    Feeder r;
    r.amd({"hipGetLastError (  ) "});
    r.amd({"\x1b[32m hipStreamSynchronize ( 0x3cff3890 ) \x1b[0m"});
    r.amd({"Set Handler: handle(0x772d903fd100), timestamp(0x3d028e00), blocking CB=0"});
    r.amd({"KernargSegmentByteSize = 24 KernargSegmentAlignment = 128"});
    r.plain("hipSyncError: 719");
    auto& s = r.done();
    EXPECT_TRUE(s.evidences.empty());
    EXPECT_TRUE(s.dispatches.empty());
}

}  // namespace
}  // namespace gpufault
