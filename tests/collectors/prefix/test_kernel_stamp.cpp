// dmesg, /dev/kmsg, journald and syslog prefixes (FORMATS.md §1.9, §9.2, §9.3) through the decoder.
#include <gtest/gtest.h>

#include <string>

#include "tests/collectors/prefix/decode_helper.h"

namespace gpufault::testing {
namespace {

const std::string kFault =
    "amdgpu 0000:65:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:88 vmid:8 pasid:32787)";

void expectKernelS(const Decoded& d, double s) {
    ASSERT_TRUE(d.time.kernel_s) << d.raw;
    EXPECT_NEAR(*d.time.kernel_s, s, 5e-7) << d.raw;
}

// ---- util-linux dmesg (sys-utils/dmesg.c print_record) ----

TEST(Dmesg, RawStamp) {
    auto d = decodeOne(cfmt("[%5ld.%06ld] ", 229L, 550864L) + kFault);
    EXPECT_EQ(d.text, kFault);
    expectKernelS(d, 229.550864);
    EXPECT_EQ(d.origin, Origin::Kernel);
    EXPECT_FALSE(d.time.wall);
    auto big = decodeOne("[101431.765755] amdgpu 0000:3d:00.0: amdgpu: \t MORE_FAULTS: 0x1");
    EXPECT_EQ(big.text, "amdgpu 0000:3d:00.0: amdgpu: \t MORE_FAULTS: 0x1");
    expectKernelS(big, 101431.765755);
}

TEST(Dmesg, RawStampIsTheDoubleNearestThePrintedDecimal) {
    // Fixture 067's Xid 43 stamp: 41 + 0.257555 was 41.257554999999996; one division is exact.
    auto d = decodeOne(cfmt("[%5ld.%06ld] ", 41L, 257555L) + kFault);
    ASSERT_TRUE(d.time.kernel_s);
    EXPECT_EQ(*d.time.kernel_s, 41.257555);
    auto big = decodeOne(cfmt("[%5ld.%06ld] ", 101431L, 765755L) + kFault);
    ASSERT_TRUE(big.time.kernel_s);
    EXPECT_EQ(*big.time.kernel_s, 101431.765755);
}

TEST(Dmesg, RawStampOnSegfaultLineKeepsTheTask) {
    auto d = decodeOne(
        "[  231.101010] python3[4242]: segfault at 0 ip 0000000000000000 sp "
        "00007ffd4a1b2c40 error 14 likely on CPU 3 (core 3, socket 0)");
    EXPECT_EQ(d.origin, Origin::Kernel);
    EXPECT_TRUE(d.ident.empty());
    EXPECT_TRUE(d.text.starts_with("python3[4242]: segfault at 0"));
    expectKernelS(d, 231.101010);
}

// FORMATS.md §9.1: comm may hold spaces. `[%5lu.%06lu] Web Content[7]: segfault at …` is dmesg,
// not journalctl short-monotonic's `[STAMP] HOST IDENT[PID]: ` (journald tags it `kernel: `).
TEST(Dmesg, RawStampOnTwoWordTaskIsNoJournalHeader) {
    for (const std::string msg : {"segfault at 10 ip 00007fc6465e0b41 sp 00007ffccd3249f0 error 6",
                                  "unhandled exception: level 3 translation fault"}) {
        auto d =
            decodeOne(cfmt("[%5lu.%06lu] ", 12345678UL, 999999UL) + "Web Content[4194304]: " + msg);
        EXPECT_EQ(d.origin, Origin::Kernel) << msg;
        EXPECT_TRUE(d.ident.empty()) << msg;
        EXPECT_EQ(d.text, "Web Content[4194304]: " + msg);
        expectKernelS(d, 12345678.999999);
    }
    // A program's own line in short-monotonic keeps its header.
    auto j = decodeOne("[  229.550864] gpu-node-7 python3[4242]: segfault handler installed");
    EXPECT_EQ(j.ident, "python3");
    EXPECT_EQ(j.text, "segfault handler installed");
}

TEST(Dmesg, CtimeEnglish) {
    auto d = decodeOne("[" + cstrftime("%a %b %e %H:%M:%S %Y") + "] " + kFault);
    EXPECT_EQ(d.text, kFault);
    EXPECT_EQ(d.time.wall, "2025-09-09T02:30:28");
    EXPECT_EQ(d.origin, Origin::Kernel);
    // real: 113, two-digit day and `%e` padding
    auto r = decodeOne("[Mon Aug  5 03:54:13 2024] NVRM: GPU Board Serial Number: SERIAL");
    EXPECT_EQ(r.time.wall, "2024-08-05T03:54:13");
    EXPECT_EQ(r.text, "NVRM: GPU Board Serial Number: SERIAL");
}

TEST(Dmesg, CtimeLocalizedMonths) {
    auto de = decodeOne("[Fr Dez 26 08:58:01 2025] " + kFault);
    EXPECT_EQ(de.text, kFault);
    EXPECT_EQ(de.time.wall, "2025-12-26T08:58:01");
    EXPECT_EQ(decodeOne("[Mo M\xc3\xa4r  3 10:00:00 2025] x").time.wall, "2025-03-03T10:00:00");
    // Spanish: the weekday `mar` (martes) must not be taken for March.
    EXPECT_EQ(decodeOne("[mar sep  9 02:30:28 2025] x").time.wall, "2025-09-09T02:30:28");
    EXPECT_EQ(decodeOne("[mar. sept.  9 02:30:28 2025] x").time.wall, "2025-09-09T02:30:28");
    // ja_JP: `%a %b %e` = `火  9月  9`
    EXPECT_EQ(decodeOne("[\xe7\x81\xab  9\xe6\x9c\x88  9 02:30:28 2025] x").time.wall,
              "2025-09-09T02:30:28");
    // An unknown month name is still stripped, without a wall time.
    auto unk = decodeOne("[Xx Qqq  9 02:30:28 2025] " + kFault);
    EXPECT_EQ(unk.text, kFault);
    EXPECT_FALSE(unk.time.wall);
    EXPECT_EQ(unk.origin, Origin::Kernel);
}

TEST(Dmesg, ShowDeltaForms) {
    auto d = decodeOne(cfmt("[%5ld.%06ld <%12.06f>] ", 123L, 456789L, 0.000042) + kFault);
    EXPECT_EQ(d.text, kFault);
    expectKernelS(d, 123.456789);
    auto td = decodeOne("[" + cstrftime("%a %b %e %H:%M:%S %Y") + cfmt(" <%12.06f>] ", 0.000042) +
                        kFault);
    EXPECT_EQ(td.text, kFault);
    EXPECT_EQ(td.time.wall, "2025-09-09T02:30:28");
    auto only = decodeOne(cfmt("[<%12.06f>] ", 0.000042) + kFault);
    EXPECT_EQ(only.text, kFault);
    EXPECT_EQ(only.origin, Origin::Kernel);
    EXPECT_TRUE(only.time.empty());
}

TEST(Dmesg, HumanBreaksAndDeltas) {
    for (const char* stamp : {"[Sep 9 02:30] ",
                              "[Sep10 02:30] ",
                              "[Dez26 08:58] ",
                              "[12\xe6\x9c\x88"
                              "25 19:09] ",
                              "[  +0.000007] ",
                              "[  +0,000007] ",
                              "[ +12.345678] "}) {
        auto d = decodeOne(stamp + kFault);
        EXPECT_EQ(d.text, kFault) << stamp;
        EXPECT_EQ(d.origin, Origin::Kernel) << stamp;
    }
    EXPECT_EQ(decodeOne(cfmt("[  %+8.06f] ", 0.000012) + kFault).text, kFault);
    EXPECT_EQ(decodeOne(cfmt("[ %+9.06f] ", 12.5) + kFault).text, kFault);
    // real: 095
    auto r = decodeOne(
        "[  +0.000006] amdgpu 0000:03:00.0: amdgpu:  in process python3 pid 5748 "
        "thread python3 pid 5748)");
    EXPECT_EQ(r.text,
              "amdgpu 0000:03:00.0: amdgpu:  in process python3 pid 5748 thread python3 "
              "pid 5748)");
}

TEST(Dmesg, IsoDecodeRawAndCaller) {
    auto iso = decodeOne(
        "2025-09-09T02:30:28,123456+02:00 amdgpu 0000:65:00.0: amdgpu: "
        "VM_L2_PROTECTION_FAULT_STATUS:0x00B01031");
    EXPECT_EQ(iso.text, "amdgpu 0000:65:00.0: amdgpu: VM_L2_PROTECTION_FAULT_STATUS:0x00B01031");
    EXPECT_EQ(iso.time.wall, "2025-09-09T02:30:28");
    EXPECT_EQ(iso.origin, Origin::Kernel);
    EXPECT_EQ(decodeOne("2013-06-13T22:11:00,123456+0100 x").time.wall, "2013-06-13T22:11:00");

    auto x = decodeOne(cfmt("%-6s:%-6s: ", "kern", "err") + cfmt("[%5ld.%06ld] ", 229L, 550870L) +
                       "amdgpu 0000:65:00.0: amdgpu: \t MORE_FAULTS: 0x1");
    EXPECT_EQ(x.text, "amdgpu 0000:65:00.0: amdgpu: \t MORE_FAULTS: 0x1");
    expectKernelS(x, 229.550870);
    EXPECT_EQ(x.origin, Origin::Kernel);
    auto user = decodeOne("user  :notice: [  231.000001] systemd[1]: Started foo.");
    EXPECT_EQ(user.origin, Origin::Other);
    EXPECT_EQ(user.text, "systemd[1]: Started foo.");

    auto r = decodeOne(cfmt("<%d>[%5ld.%06ld] ", 3, 229L, 550864L) + kFault);
    EXPECT_EQ(r.text, kFault);
    expectKernelS(r, 229.550864);

    auto c = decodeOne("[  229.550864] [  T4242] " + kFault);
    EXPECT_EQ(c.text, kFault);
    expectKernelS(c, 229.550864);
    EXPECT_EQ(decodeOne("[    T1] " + kFault).text, kFault);
    EXPECT_EQ(decodeOne("[C3] " + kFault).text, kFault);
}

TEST(Dmesg, BracketedMessageTextIsNotAStamp) {
    for (const std::string line :
         {"[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout",
          "[gfxhub0] retry page fault",
          "[drm] PCIE GART of 256M enabled",
          "[2024-07-10 11:18:53,785] [INFO] [logging.py:96:log_dist] [Rank 0] step=1",
          "[Hardware Error]: aca entry[00].STATUS=0x0",
          "[  629",
          "[",
          "[12:30] chat",
          "[1.5] release notes",
          "<unknown> token",
          "kern: not a decode prefix",
          "[Build 12:30:45 2024] done",
          "[v1.2 12:30] tag",
          "[see 12:30] x"}) {
        auto d = decodeOne(line);
        EXPECT_EQ(d.text, line);
        EXPECT_EQ(d.origin, Origin::Unknown) << line;
        EXPECT_TRUE(d.time.empty()) << line;
    }
}

TEST(Dmesg, IndentedExcerpt) {
    auto d = decodeOne("    [ 4778.915423] amdgpu 0000:c6:00.0: amdgpu: x");
    EXPECT_EQ(d.text, "amdgpu 0000:c6:00.0: amdgpu: x");
    expectKernelS(d, 4778.915423);
    EXPECT_EQ(decodeOne("    [T1] x").text, "    [T1] x");
}

// ---- /dev/kmsg (Documentation/ABI/testing/dev-kmsg) ----

TEST(Kmsg, RecordsEscapesAndContinuationLines) {
    auto v = decodeAll({
        "3,48213,229550864052,-;" + kFault,
        " SUBSYSTEM=pci",
        " DEVICE=+pci:0000:65:00.0",
        "3,48217,229550864087,-;amdgpu 0000:65:00.0: amdgpu: \\x09 MORE_FAULTS: 0x0",
        " SUBSYSTEM=pci",
        " DEVICE=+pci:0000:65:00.0",
        "4,48301,229652878954,-,caller=T5521;amdgpu: Freeing queue vital buffer 0x70db22c00000, "
        "queue evicted",
        "6,48302,229652878999,c;back\\x5cslash \\xzz",
        " SUBSYSTEM=pci",
        "",
        " SUBSYSTEM=not-after-a-record",
    });
    ASSERT_EQ(v.size(), 6u);
    EXPECT_EQ(v[0].line, 1u);
    EXPECT_EQ(v[0].text, kFault);
    expectKernelS(v[0], 229550.864052);
    EXPECT_EQ(v[0].origin, Origin::Kernel);
    EXPECT_EQ(v[1].line, 4u);
    EXPECT_EQ(v[1].text, "amdgpu 0000:65:00.0: amdgpu: \t MORE_FAULTS: 0x0");
    EXPECT_EQ(v[2].line, 7u);
    EXPECT_EQ(v[2].text, "amdgpu: Freeing queue vital buffer 0x70db22c00000, queue evicted");
    expectKernelS(v[2], 229652.878954);
    EXPECT_EQ(v[3].text, "back\\slash \\xzz");
    EXPECT_EQ(v[4].text, "");
    EXPECT_EQ(v[5].text, " SUBSYSTEM=not-after-a-record");
}

TEST(Kmsg, UserSpaceRecordIsOther) {
    auto d = decodeOne("30,1234,5678901,-;systemd[1]: Started Process Core Dump.");
    EXPECT_EQ(d.origin, Origin::Other);
    EXPECT_EQ(d.text, "systemd[1]: Started Process Core Dump.");
    expectKernelS(d, 5.678901);
}

TEST(Kmsg, HugeSequenceNumberIsNoOverflow) {
    // 19 digits above INT64_MAX used to overflow a signed accumulator (UBSan): now no record
    // header, the line passes through as text; 19 digits within range still parse.
    std::string over = "6,9999999999999999999,5678901,-;amdgpu: x";
    auto d = decodeOne(over);
    EXPECT_EQ(d.text, over);
    EXPECT_EQ(d.origin, Origin::Unknown);
    auto ok = decodeOne("6,9223372036854775807,5678901,-;amdgpu: x");
    EXPECT_EQ(ok.text, "amdgpu: x");
    expectKernelS(ok, 5.678901);
    auto usec = decodeOne("6,1," + std::string(30, '9') + ",-;amdgpu: x");
    EXPECT_EQ(usec.origin, Origin::Unknown);
}

// ---- journalctl short* (systemd logs-show.c) ----

TEST(Journald, ShortAndShortPrecise) {
    auto d = decodeOne(cstrftime("%b %d %H:%M:%S") + " gpu-node-7 kernel: " + kFault);
    EXPECT_EQ(d.text, kFault);
    EXPECT_EQ(d.origin, Origin::Kernel);
    EXPECT_EQ(d.ident, "kernel");
    EXPECT_FALSE(d.ident_pid);
    EXPECT_EQ(d.time.wall, "09-09T02:30:28");  // no year printed
    auto p = decodeOne(cstrftime("%b %d %H:%M:%S") + cfmt(".%06d", 123456) +
                       " gpu-node-7 kernel: amdgpu 0000:65:00.0: amdgpu:         MORE_FAULTS: 0x1");
    EXPECT_EQ(p.text, "amdgpu 0000:65:00.0: amdgpu:         MORE_FAULTS: 0x1");
    EXPECT_EQ(p.time.wall, "09-09T02:30:28.123456");  // short-precise keeps its fraction
}

TEST(Journald, LowerCaseMonthAndOtherIdentifiers) {
    // real: 005
    auto d = decodeOne(
        "nov 04 13:30:18 host kernel: amdgpu 0000:0d:00.0: amdgpu: [gfxhub] page "
        "fault (src_id:0 ring:24 vmid:3 pasid:32770)");
    EXPECT_EQ(d.text,
              "amdgpu 0000:0d:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:3 "
              "pasid:32770)");
    EXPECT_EQ(d.origin, Origin::Kernel);
    EXPECT_EQ(d.time.wall, "11-04T13:30:18");
    // real: 013
    auto c = decodeOne(
        "Jan 09 18:55:45 host systemd-coredump[134090]: Process 91762 (python) of "
        "user 60105 terminated abnormally with signal 6/ABRT, processing...");
    EXPECT_EQ(c.origin, Origin::Other);
    EXPECT_EQ(c.ident, "systemd-coredump");
    EXPECT_EQ(c.ident_pid, 134090);
    EXPECT_TRUE(c.text.starts_with("Process 91762 (python)"));
    auto s = decodeOne(
        "Sep 09 02:30:29 gpu-node-7 python3[4242]: Memory access fault by GPU "
        "node-1 (Agent handle: 0x55d5b2d4a780) on address 0x7f3a12340000. Reason: "
        "Page not present or supervisor privilege.");
    EXPECT_EQ(s.ident, "python3");
    EXPECT_EQ(s.ident_pid, 4242);
    EXPECT_EQ(s.origin, Origin::Other);
    EXPECT_TRUE(s.text.starts_with("Memory access fault by GPU node-1"));
    // cut line (013): no `:` after the identifier → plain text
    auto cut = decodeOne("Jan 09 18:55:45 host kernel");
    EXPECT_EQ(cut.origin, Origin::Unknown);
    EXPECT_EQ(cut.text, "Jan 09 18:55:45 host kernel");
}

TEST(Journald, IsoFullUnixMonotonicDelta) {
    auto iso = decodeOne(cstrftime("%Y-%m-%dT%H:%M:%S") + cfmt("%+03d:%02d", 2, 0) +
                         " gpu-node-7 kernel: " + kFault);
    EXPECT_EQ(iso.text, kFault);
    EXPECT_EQ(iso.time.wall, "2025-09-09T02:30:28");
    auto isop = decodeOne(cstrftime("%Y-%m-%dT%H:%M:%S") + cfmt(".%06d", 123456) +
                          cfmt("%+03d:%02d", 2, 0) + " gpu-node-7 kernel: " + kFault);
    EXPECT_EQ(isop.text, kFault);
    EXPECT_EQ(isop.time.wall, "2025-09-09T02:30:28");
    EXPECT_EQ(decodeOne("2025-09-09T02:30:28+0200 host kernel: x").text, "x");  // old `%z`

    auto full = decodeOne(
        "Tue 2025-09-09 02:30:28 CEST gpu-node-7 kernel: amdgpu 0000:65:00.0: "
        "amdgpu:  Process python3 pid 4242 thread python3 pid 4250");
    EXPECT_EQ(full.text,
              "amdgpu 0000:65:00.0: amdgpu:  Process python3 pid 4242 thread python3 "
              "pid 4250");
    EXPECT_EQ(full.time.wall, "2025-09-09T02:30:28");
    EXPECT_EQ(full.origin, Origin::Kernel);

    auto unix_ = decodeOne(cfmt("%10lu.%06lu", 1757377828UL, 123456UL) + " gpu-node-7 kernel: x");
    EXPECT_EQ(unix_.text, "x");
    EXPECT_EQ(unix_.time.wall, "2025-09-09T00:30:28");  // UTC

    auto mono = decodeOne(cfmt("[%5lu.%06lu]", 229UL, 550864UL) + " gpu-node-7 kernel: " + kFault);
    EXPECT_EQ(mono.text, kFault);
    EXPECT_EQ(mono.ident, "kernel");
    expectKernelS(mono, 229.550864);
    auto delta = decodeOne("[  229.550864 <    0.000035 >] gpu-node-7 kernel: " + kFault);
    EXPECT_EQ(delta.text, kFault);
    EXPECT_EQ(delta.ident, "kernel");

    auto nohost = decodeOne("Sep 09 02:30:28 kernel: " + kFault);
    EXPECT_EQ(nohost.text, kFault);
    EXPECT_EQ(nohost.origin, Origin::Kernel);
}

TEST(Journald, StampPlusPrintkStamp) {
    // real: 051
    auto d = decodeOne(
        "Feb 15 17:37:45 host kernel: [82659.755847] NVRM: Xid (PCI:0000:41:00): 13, "
        "Graphics Exception: ESR 0x5067b0=0x9 0x5067b4=0x24");
    EXPECT_EQ(d.text,
              "NVRM: Xid (PCI:0000:41:00): 13, Graphics Exception: ESR 0x5067b0=0x9 "
              "0x5067b4=0x24");
    expectKernelS(d, 82659.755847);
    EXPECT_EQ(d.time.wall, "02-15T17:37:45");
    EXPECT_EQ(d.origin, Origin::Kernel);
}

// ---- rsyslog files and forwarding (rsconf.c templates, RFC 3164/5424) ----

TEST(Syslog, TraditionalAndRfc3339WithPrintkStamp) {
    auto t = decodeOne(
        "May  2 14:51:13 iZm5eeq3torqgjpx1v4keuZ kernel: [5870170.864740] "
        "turnserver[15494]: segfault at bd ip 00007f559238d562 sp 00007f554fbb4bc0 "
        "error 4 in libc-2.23.so[7f5592309000+1c0000]");
    EXPECT_TRUE(t.text.starts_with("turnserver[15494]: segfault at bd"));
    expectKernelS(t, 5870170.864740);
    EXPECT_EQ(t.time.wall, "05-02T14:51:13");
    EXPECT_EQ(t.origin, Origin::Kernel);

    auto r = decodeOne(
        "2024-08-20T17:38:27.488639+00:00 sonic kernel: [   90.864905] runc[7180]: "
        "segfault at 7f5bcbc36f78 ip 00007f5bf39d67da sp 00007f5bcbc36f80 error 6");
    EXPECT_TRUE(r.text.starts_with("runc[7180]: segfault at 7f5bcbc36f78"));
    expectKernelS(r, 90.864905);
    EXPECT_EQ(r.time.wall, "2024-08-20T17:38:27");
    EXPECT_EQ(r.origin, Origin::Kernel);

    // real: 102 (RFC 3339 with +01:00, no printk stamp)
    auto m = decodeOne(
        "2025-08-10T19:55:33.635860+01:00 hostname kernel: amdgpu 0000:c1:00.0: "
        "amdgpu: MES failed to respond to msg=REMOVE_QUEUE");
    EXPECT_EQ(m.text, "amdgpu 0000:c1:00.0: amdgpu: MES failed to respond to msg=REMOVE_QUEUE");
    EXPECT_EQ(m.time.wall, "2025-08-10T19:55:33");
    EXPECT_FALSE(m.time.kernel_s);
}

TEST(Syslog, ForwardedAndBareKernelTag) {
    auto p = decodeOne("<3>1 2025-09-09T02:30:28.123456+02:00 gpu-node-7 kernel - - - " + kFault);
    EXPECT_EQ(p.text, kFault);
    EXPECT_EQ(p.origin, Origin::Kernel);
    EXPECT_EQ(p.time.wall, "2025-09-09T02:30:28");
    auto sd = decodeOne("<30>1 2025-09-09T02:30:28Z h python3 4242 ID47 [x@1 a=\"b\\]\"] msg");
    EXPECT_EQ(sd.text, "msg");
    EXPECT_EQ(sd.ident, "python3");
    EXPECT_EQ(sd.ident_pid, 4242);
    EXPECT_EQ(sd.origin, Origin::Other);
    // MSG = [BOM] text (RFC 5424 §6.4), PRI at its maximum, a millisecond stamp.
    auto bom = decodeOne("<191>1 2025-12-31T23:59:59.999Z h kernel - - - \xEF\xBB\xBF" + kFault);
    EXPECT_EQ(bom.text, kFault);
    EXPECT_EQ(bom.ident, "kernel");
    EXPECT_EQ(bom.time.wall, "2025-12-31T23:59:59");
    auto f = decodeOne("<4>Sep  9 02:30:28 host kernel: " + kFault);
    EXPECT_EQ(f.text, kFault);
    EXPECT_EQ(f.origin, Origin::Kernel);
    // real: 087
    auto k = decodeOne(
        "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch "
        "00000001 caused by previous Xid 149");
    EXPECT_TRUE(k.text.starts_with("NVRM: Xid (PCI:0000:dc:00): 45"));
    EXPECT_EQ(k.origin, Origin::Kernel);
    EXPECT_EQ(k.ident, "kernel");
}

TEST(Syslog, ProgramTextIsNotASyslogHeader) {
    for (const std::string line :
         {"Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address 0x7f",
          "RuntimeError: CUDA error: an illegal memory access was encountered",
          "Epoch 1/30",
          "user@host:~$ sudo dmesg -T | grep -iE 'amdgpu' | tail -68",
          "2019-01-29 22:25:46.392668: I tensorflow/core/kernels/conv_grad_input_ops.cc:1023] x"}) {
        auto d = decodeOne(line);
        EXPECT_EQ(d.text, line);
        EXPECT_EQ(d.origin, Origin::Unknown) << line;
        EXPECT_TRUE(d.ident.empty()) << line;
    }
}

}  // namespace
}  // namespace gpufault::testing
