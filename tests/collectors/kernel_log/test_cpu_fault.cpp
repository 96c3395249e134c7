#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/kernel_log/cpu_fault.h"

namespace gpufault {
namespace {

std::vector<Evidence> run(const std::vector<std::string>& lines, Origin origin = Origin::Unknown) {
    auto m = makeCpuFaultMatcher();
    CollectSink sink;
    uint64_t n = 0;
    for (const auto& s : lines) {
        LogLine l;
        l.line = ++n;
        l.text = s;
        l.raw = s;
        l.origin = origin;
        l.time.kernel_s = 10.0 * static_cast<double>(n);
        m->feed(l, sink);
    }
    m->finish(sink);
    return sink.evidences;
}

Evidence one(const std::string& line, Origin origin = Origin::Unknown) {
    auto ev = run({line}, origin);
    EXPECT_EQ(ev.size(), 1u) << line;
    return ev.empty() ? Evidence{} : ev[0];
}

// Format strings (FORMATS.md §9.1), constructed.

// Hostile review 17, i2 M1: an address past 64 bits made a record with nothing after it read
// (no module) and no warning.
TEST(CpuFault, AnAddressPast64BitsIsAWarningAndTheRestIsRead) {
    auto m = makeCpuFaultMatcher();
    CollectSink sink;
    const std::string s =
        "python[4321]: segfault at 1ffffffffffffffff ip 00007f00deadbeef sp 00007ffd00000000 "
        "error 4 in libx.so[7f00deadb000+1000]";
    LogLine l;
    l.line = 7;
    l.text = s;
    l.raw = s;
    m->feed(l, sink);
    m->finish(sink);
    ASSERT_EQ(sink.evidences.size(), 1u);
    const auto& e = sink.evidences[0];
    EXPECT_FALSE(e.address);
    EXPECT_EQ(e.pid, 4321);
    EXPECT_EQ(e.module, "libx.so");
    EXPECT_EQ(e.attr("ip"), "0x7f00deadbeef");
    ASSERT_EQ(sink.warnings.size(), 1u);
    EXPECT_EQ(sink.warnings[0].line, 7u);
    EXPECT_EQ(sink.warnings[0].message,
              "segfault: the address 1ffffffffffffffff is not a 64-bit hex value: stored without "
              "an address");
}

TEST(CpuFault, SegfaultOldMappingFormOffsetIsIpMinusStart) {
    auto e =
        one("iperf3[1525756]: segfault at 2d0 ip 00007b49bd09a8fd sp 00007fff39e19e80 error 4 in "
            "libc.so.6[7b49bd028000+188000] likely on CPU 12 (core 24, socket 0)");
    EXPECT_EQ(e.kind, Kind::CpuSegfault);
    EXPECT_EQ(e.process, "iperf3");
    EXPECT_EQ(e.pid, 1525756);
    EXPECT_EQ(e.tid, 1525756);
    EXPECT_EQ(e.address, 0x2d0u);
    EXPECT_EQ(e.address_exact, true);
    EXPECT_EQ(e.module, "libc.so.6");
    EXPECT_EQ(e.module_offset, 0x7b49bd09a8fdull - 0x7b49bd028000ull);
    EXPECT_FALSE(e.vendor);
    EXPECT_EQ(e.attr("ip"), "0x7b49bd09a8fd");
    EXPECT_EQ(e.attr("sp"), "0x7fff39e19e80");
    EXPECT_EQ(e.attr("error"), "0x4");
    EXPECT_EQ(e.attr("cpu"), "12");
    EXPECT_EQ(e.attr("core"), "24");
    EXPECT_EQ(e.attr("socket"), "0");
    EXPECT_EQ(e.attr("map_start"), "0x7b49bd028000");
    EXPECT_EQ(e.attr("map_size"), "0x188000");
    EXPECT_EQ(e.time.kernel_s, 10.0);
}

TEST(CpuFault, Segfault610FileOffsetForm) {
    auto e = one(
        "[ 7763.622966] nvservices[1333]: segfault at 9 ip 00007fa7793e8d30 sp 00007f2435ffb7f0 "
        "error 6 in eden[7e8d30,7fa778d24000+13ba000] likely on CPU 6 (core 2, socket 0)");
    EXPECT_EQ(e.process, "nvservices");
    EXPECT_EQ(e.address, 9u);
    EXPECT_EQ(e.module, "eden");
    EXPECT_EQ(e.module_offset, 0x7e8d30u);  // FILEOFF, not ip - START (0x6c4d30)
    EXPECT_EQ(e.attr("error"), "0x6");
}

TEST(CpuFault, SegfaultWithoutInPart) {
    auto e =
        one("Apr 06 17:30:15 single3 kernel: nft[70030]: segfault at 0 ip 0000000000000000 sp "
            "00007ffebf8c4618 error 14 likely on CPU 2 (core 2, socket 0)");
    EXPECT_EQ(e.process, "nft");
    EXPECT_EQ(e.address, 0u);
    EXPECT_FALSE(e.module);
    EXPECT_FALSE(e.module_offset);
    EXPECT_EQ(e.attr("error"), "0x14");
    EXPECT_EQ(e.attr("cpu"), "2");
}

// ` in MAP` and ` likely on CPU` are KERN_CONT fragments (FORMATS.md §9.1): a console or
// dmesg can show them as lines of their own. They complete the record (hostile review 23, M2:
// the module and its offset were lost); any other next line releases it as it is.
TEST(CpuFault, ASegfaultSplitIntoContinuationLinesIsOneRecord) {
    auto ev = run({"python3[12345]: segfault at 8a ip 00007c7def28a610 sp 00007ffd4a1b2c40 error 4",
                   " in libamdhip64.so.7.2.53211[489610,7c7dee000000+1a00000]",
                   " likely on CPU 5 (core 5, socket 0)",
                   "Code: 2e 0f 1f 84 00 00 00 00 00",
                   "python3[777]: segfault at 0 ip 00007c7def28a610 sp 00007ffd4a1b2c40 error 6",
                   "Code: 2e 0f 1f 84 00 00 00 00 00",
                   "traps: python3[778] general protection fault ip:7f0e1e2a3b4c sp:7ffd error:0",
                   " in libc.so.6[7f0e1e200000+195000]"});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].pid, 12345);
    EXPECT_EQ(ev[0].address, 0x8au);
    EXPECT_EQ(ev[0].module, "libamdhip64.so.7.2.53211");
    EXPECT_EQ(ev[0].module_offset, 0x489610u);
    EXPECT_EQ(ev[0].attr("cpu"), "5");
    EXPECT_EQ(ev[0].line, 1u);
    EXPECT_NE(ev[0].raw.find("\n in libamdhip64"), std::string::npos) << ev[0].raw;
    EXPECT_EQ(ev[1].pid, 777);
    EXPECT_FALSE(ev[1].module);
    EXPECT_EQ(ev[1].raw.find('\n'), std::string::npos);
    EXPECT_EQ(ev[2].pid, 778);
    EXPECT_EQ(ev[2].module, "libc.so.6");
    EXPECT_EQ(ev[2].module_offset, 0xa3b4cu);
}

// A fragment whose mapping does not hold the record's ip is not its own (hostile review 24:
// an `ip 0` segfault took libc's mapping; two tasks' fragments crossed).
TEST(CpuFault, AContinuationWhoseMappingMissesTheIpIsNotTaken) {
    auto ev =
        run({"python3[12345]: segfault at 0 ip 0000000000000000 sp 00007ffd4a1b2c40 error 14",
             " in libc.so.6[34567,7f1111200000+188000]",
             "pt_worker[12346]: segfault at 8 ip 00007f1111234567 sp 00007ffd4a1b2c40 error 4",
             " in libamdhip64.so.7[489610,7c7dee000000+1a00000]"});
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_FALSE(ev[0].module);
    EXPECT_FALSE(ev[1].module);
    EXPECT_EQ(ev[1].pid, 12346);
}

TEST(CpuFault, SegfaultPre2625RipRsp) {
    auto e =
        one("hal-resmgr[13791]: segfault at 3c rip 2b9c8caec182 rsp 7fff1e825d30 error 4 in "
            "libacl.so.1.1.0[2b9c8caea000+6000]");
    EXPECT_EQ(e.process, "hal-resmgr");
    EXPECT_EQ(e.address, 0x3cu);
    EXPECT_EQ(e.attr("ip"), "0x2b9c8caec182");
    EXPECT_EQ(e.attr("sp"), "0x7fff1e825d30");
    EXPECT_EQ(e.module_offset, 0x2182u);
    EXPECT_FALSE(e.attr("cpu"));
}

TEST(CpuFault, CommWithSpacesAndBracketsAnchorsOnLastPid) {
    auto e = one("Web [Content][77]: segfault at 8 ip 0000000000401000 sp 00007ffc00000000 error 4",
                 Origin::Kernel);
    EXPECT_EQ(e.process, "Web [Content]");
    EXPECT_EQ(e.pid, 77);
}

TEST(CpuFault, WildIpBelowMappingGivesNoOffset) {
    auto e =
        one("a[1]: segfault at 10 ip 0000000000001000 sp 00007ffc00000000 error 4 in "
            "libfoo.so[7f0000000000+1000]");
    EXPECT_EQ(e.module, "libfoo.so");
    EXPECT_FALSE(e.module_offset);
}

TEST(CpuFault, TrapsGeneralProtectionFault) {
    auto e = one(
        "traps: python3[41237] general protection fault ip:7f3a9c2969fc sp:7ffd4a1b2c40 error:0 in "
        "libamdhip64.so.6[3a9fc,7f3a9c25c000+2d1000]");
    EXPECT_EQ(e.kind, Kind::CpuSegfault);
    EXPECT_FALSE(e.address);
    EXPECT_FALSE(e.address_exact);
    EXPECT_EQ(e.process, "python3");
    EXPECT_EQ(e.pid, 41237);
    EXPECT_EQ(e.tid, 41237);
    EXPECT_EQ(e.attr("trap"), "general protection fault");
    EXPECT_EQ(e.attr("ip"), "0x7f3a9c2969fc");
    EXPECT_EQ(e.attr("error"), "0x0");
    EXPECT_EQ(e.module, "libamdhip64.so.6");
    EXPECT_EQ(e.module_offset, 0x3a9fcu);
    EXPECT_EQ(e.vendor, "amd");
}

TEST(CpuFault, TrapsTrapNameForm) {
    auto e =
        one("traps: python3[41250] trap invalid opcode ip:7f3a61f3b2c5 sp:7f3a4bffe5d0 error:0 in "
            "libhsa-runtime64.so.1[3b2c5,7f3a61f28000+61000]");
    EXPECT_EQ(e.attr("trap"), "invalid opcode");
    EXPECT_EQ(e.module, "libhsa-runtime64.so.1");
    EXPECT_EQ(e.module_offset, 0x3b2c5u);
    EXPECT_EQ(e.vendor, "amd");
    EXPECT_FALSE(e.address);
}

TEST(CpuFault, OldGeneralProtectionWithoutTrapsPrefix) {
    auto e =
        one("[ 5.1] my prog[9] general protection ip:400123 sp:7ffc00001000 error:0 in "
            "a.out[400000+1000]");
    EXPECT_EQ(e.attr("trap"), "general protection");
    EXPECT_EQ(e.process, "my prog");  // cut after the dmesg stamp, not at the comm's space
    EXPECT_EQ(e.module_offset, 0x123u);
}

TEST(CpuFault, Arm64UnhandledException) {
    auto e =
        one("python3[4242]: unhandled exception: DABT (lower EL), ESR 0x0000000092000006, level 2 "
            "translation fault in libfoo.so[1a2b4,ffff8a7c0000+3f000]");
    EXPECT_EQ(e.kind, Kind::CpuSegfault);
    EXPECT_FALSE(e.address);
    EXPECT_EQ(e.process, "python3");
    EXPECT_EQ(e.pid, 4242);
    EXPECT_EQ(e.attr("esr_class"), "DABT (lower EL)");
    EXPECT_EQ(e.attr("esr"), "0x92000006");
    EXPECT_EQ(e.attr("fault"), "level 2 translation fault");
    EXPECT_EQ(e.module, "libfoo.so");
    EXPECT_EQ(e.module_offset, 0x1a2b4u);
}

TEST(CpuFault, CallbacksSuppressedGoesToNextRecordOnly) {
    auto ev = run({"[ 3521.235737] show_signal_msg: 111 callbacks suppressed",
                   "a[1]: segfault at 18 ip 0000000000001000 sp 0000000000002000 error 4",
                   "a[2]: segfault at 18 ip 0000000000001000 sp 0000000000002000 error 4",
                   "[ 1.0] gmc_v11_0_process_interrupt: 19 callbacks suppressed",
                   "a[3]: segfault at 18 ip 0000000000001000 sp 0000000000002000 error 4"});
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0].attr("callbacks_suppressed"), "111");
    EXPECT_EQ(ev[0].line, 2u);
    EXPECT_FALSE(ev[1].attr("callbacks_suppressed"));
    EXPECT_FALSE(ev[2].attr("callbacks_suppressed"));
}

TEST(CpuFault, UnrelatedLinesAreNoRecord) {
    EXPECT_TRUE(run({"[ 5022.696822] Cannot map memory with base addr 0x7d523e000000",
                     "kernel: Code: 00 00 00 00 e8 9f 95 ff ff 48 8d 74 24 20 31 d2",
                     "[  11.772019] NFS: Registering the id_resolver key type",
                     "foo ip:1234 sp:5678 error:0",
                     "Thread 1 \"python3\" received signal SIGSEGV, Segmentation fault."})
                    .empty());
}

// Real lines from the fixtures.

TEST(CpuFault, RealSyslogOldFormLibamdhip64) {  // 038
    auto e =
        one("kernel: python3[40923]: segfault at 100 ip 00007f2711b2d282 sp 00007fffa29a1530 error "
            "4 in "
            "libamdhip64.so[7f2711a00000+3f3000] likely on CPU 9 (core 1, socket 0)");
    EXPECT_EQ(e.process, "python3");
    EXPECT_EQ(e.address, 0x100u);
    EXPECT_EQ(e.module, "libamdhip64.so");
    EXPECT_EQ(e.module_offset, 0x12d282u);
    EXPECT_EQ(e.vendor, "amd");
}

TEST(CpuFault, RealLibcudaFileoff) {  // 075
    auto e = one(
        "[ 5022.930157] llama-server[16980]: segfault at 20d803fdc ip 00007dbe270a3e47 sp "
        "00007ffff184bf00 error 4 in libcuda.so.570.133.20[4a3e47,7dbe26d79000+d1c000] likely on "
        "CPU 29 (core 14, socket 0)");
    EXPECT_EQ(e.process, "llama-server");
    EXPECT_EQ(e.pid, 16980);
    EXPECT_EQ(e.address, 0x20d803fdcull);
    EXPECT_EQ(e.module, "libcuda.so.570.133.20");
    EXPECT_EQ(e.module_offset, 0x4a3e47u);
    EXPECT_EQ(e.vendor, "nvidia");
}

TEST(CpuFault, RealLineCutInsideBrackets) {  // 098
    auto e =
        one("[88513.869147] zed-editor[1067551]: segfault at 4afd8 ip 00007eb0154c4bdb sp "
            "00007ffdcb952c80 error 4 in libnvidia-glcore.so.575.64.03[ac4bdb,7eb014e00000+c0000");
    EXPECT_EQ(e.module, "libnvidia-glcore.so.575.64.03");
    EXPECT_EQ(e.module_offset, 0xac4bdbu);
    EXPECT_EQ(e.attr("map_start"), "0x7eb014e00000");
    EXPECT_FALSE(e.attr("map_size"));  // cut: not trusted
    EXPECT_EQ(e.vendor, "nvidia");
}

TEST(CpuFault, RealGpTrapInDmesg) {  // 077
    auto e =
        one("[   13.493502] traps: python[2327] general protection fault ip:7f63db8b09df "
            "sp:7f613e9fa850 "
            "error:0 in libamdhip64.so.7.2.70201[2b09df,7f63db623000+481000]");
    EXPECT_EQ(e.process, "python");
    EXPECT_EQ(e.pid, 2327);
    EXPECT_EQ(e.module_offset, 0x2b09dfu);
    EXPECT_FALSE(e.address);
}

}  // namespace
}  // namespace gpufault
