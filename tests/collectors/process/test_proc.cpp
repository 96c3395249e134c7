// /proc/PID parsers, on text laid out as proc(5) and fs/proc/array.c print it.
#include <gtest/gtest.h>

#include "collectors/process/proc.h"

using namespace gpufault;

TEST(ProcStatus, ContainerProcessHasItsNamespacePids) {
    // fs/proc/array.c: "NSpid:" then "\t%d" per pid namespace level, outermost first.
    auto st = parseProcStatus(
        "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t48213\nNgid:\t0\n"
        "Pid:\t48213\nPPid:\t48190\nTracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\n"
        "Gid:\t1000\t1000\t1000\t1000\nNStgid:\t48213\t17\nNSpid:\t48213\t17\nNSpgid:\t48190\t1\n");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->name, "python3");
    EXPECT_EQ(st->tgid, 48213);
    EXPECT_EQ(st->ppid, 48190);
    EXPECT_EQ(st->uid, 1000);
    ASSERT_EQ(st->nspid.size(), 2u);
    EXPECT_EQ(st->nspid[0], 48213);
    EXPECT_EQ(st->nspid[1], 17);
}

TEST(ProcStatus, NameWithSpacesAndNoNamespaceLineAndGarbage) {
    auto st = parseProcStatus("Name:\tpt_main thread\nTgid:\t9\n");
    ASSERT_TRUE(st);
    EXPECT_EQ(st->name, "pt_main thread");
    EXPECT_TRUE(st->nspid.empty());
    EXPECT_FALSE(st->uid);
    EXPECT_FALSE(parseProcStatus("\x01\x02 garbage\n"));
    EXPECT_FALSE(parseProcStatus(""));
}

TEST(ProcMaps, ModulesAreFilesWithTheirRange) {
    // fs/proc/task_mmu.c: "%08lx-%08lx %c%c%c%c %08llx %02x:%02x %lu " then the path padded.
    auto maps = parseProcMaps(
        "55f469afd000-55f469aff000 r--p 00000000 fe:00 247498                     /usr/bin/python3.11\n"
        "55f469aff000-55f469b05000 r-xp 00002000 fe:00 247498                     /usr/bin/python3.11\n"
        "55f46a000000-55f46a021000 rw-p 00000000 00:00 0                          [heap]\n"
        "7f38e8600000-7f38e8700000 r--p 00000000 fe:00 1311                       /opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200\n"
        "7f38e8700000-7f38e8aa0000 r-xp 00100000 fe:00 1311                       /opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200\n"
        "7f38e9000000-7f38e9001000 rw-s 00000000 00:05 12                         /dev/kfd\n"
        "7f38ea000000-7f38ea100000 rw-p 00000000 00:00 0 \n"
        "7f38eb000000-7f38eb001000 r-xp 00000000 fe:00 99                         /tmp/my lib.so (deleted)\n"
        "not a mapping\n"
        "7ffd3f0a0000-7ffd3f0c2000 rw-p 00000000 00:00 0                          [stack]\n");
    ASSERT_EQ(maps.size(), 9u);
    EXPECT_EQ(maps[2].path, "[heap]");
    EXPECT_EQ(maps[6].path, "");
    EXPECT_EQ(maps[4].offset, 0x100000u);
    auto mods = modulesOf(maps);
    ASSERT_EQ(mods.size(), 4u);
    EXPECT_EQ(mods[0].path, "/usr/bin/python3.11");
    EXPECT_EQ(mods[0].start, 0x55f469afd000u);
    EXPECT_EQ(mods[0].end, 0x55f469b05000u);
    EXPECT_TRUE(mods[0].executable);
    EXPECT_EQ(mods[1].path, "/opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200");
    EXPECT_EQ(mods[1].end - mods[1].start, 0x4a0000u);
    EXPECT_EQ(mods[2].path, "/dev/kfd");
    EXPECT_FALSE(mods[2].executable);
    EXPECT_EQ(mods[3].path, "/tmp/my lib.so (deleted)");
}

TEST(ProcCgroup, V2PathElseFirstV1Path) {
    EXPECT_EQ(parseCgroup("0::/system.slice/docker-4f1c.scope\n"), "/system.slice/docker-4f1c.scope");
    EXPECT_EQ(parseCgroup("9:name=systemd:/\n4:memory:/kubepods/pod12/abc\n1:cpu:/\n0::/\n"),
              "/kubepods/pod12/abc");
    EXPECT_EQ(parseCgroup("0::/\n"), "/");
    EXPECT_EQ(parseCgroup(""), "");
}

TEST(ProcStat, StartTimeEvenWithParenthesesInTheName) {
    std::string tail =
        " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 1003664 20 21\n";
    EXPECT_EQ(parseStatStartTicks("6636 (cat)" + tail), 1003664u);
    EXPECT_EQ(parseStatStartTicks("6636 (a) b (c))" + tail), 1003664u);
    EXPECT_FALSE(parseStatStartTicks("6636 (cat) S 1 2"));
    EXPECT_FALSE(parseStatStartTicks("garbage"));
}
