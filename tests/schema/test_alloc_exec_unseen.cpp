// F5 of issue 4: a process that exec()s into an image without the shim writes no second `start`
// record (its pid and start ticks stay), so its recording would stay the process's image and its
// buffers "live". gpufaultd's /proc snapshot of a fault's process lists the files it maps
// executable: when none has the base name of the recording's `exe=`, the process runs another
// image and rule 1 (`process`) does not join them (migration 021). A real store (SQLite file),
// records parsed by the shim's parser.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectors/preload/alloc_log.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using testing::TempDir;

const std::string kBoot = "0d5e9c1a-1111-4222-8333-944455556666";
constexpr uint64_t kP = 0x7f0000000000;

/// Pid 4528 (start ticks 777) runs /usr/bin/launcher under the shim from 1 s and allocates P at
/// 2 s; nothing more is recorded (an exec into an image without the shim writes nothing).
const std::string kRecording =
    "gpufault.alloc 1 start pid=4528 ppid=1 wall_us=1000000 mono_us=1000000 boot=" + kBoot +
    " start_ticks=777 pidns=4026531836 exe=/usr/bin/launcher\n"
    "gpufault.alloc 1 alloc api=hipMalloc ptr=0x7f0000000000 size=1048576 rc=0 "
    "wall_us=2000000 mono_us=2000000 pid=4528 tid=4528\n";

/// The allocations a fault at 9 s inside P is measured against, when gpufaultd's snapshot of
/// pid 4528 (start ticks 777) maps `modules` executable: "ptr how inside", or "none".
std::string measured(const std::vector<std::string>& modules) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    EXPECT_TRUE(s);
    if (!s) return "";
    auto a = s->source(SourceIdentity{"gpufault-alloc.4528.log", "alloc", 1, 3, "a"});
    auto k = s->source(SourceIdentity{"kern.log", "file", 1, 4, "kern"});
    EXPECT_TRUE(a && k && s->begin());
    EXPECT_TRUE(s->appendAllocations(a->id, std::nullopt, alloclog::parse(kRecording), true));
    Evidence e;
    e.kind = Kind::AmdgpuPageFault;
    e.vendor = "amd";
    e.line = 1;
    e.address = kP + 0x10;
    e.address_exact = true;
    e.raw = "amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault ...";
    e.pid = 4528;
    e.time.wall = "1970-01-01T00:00:09";
    e.time.wall_utc_s = 9;
    EXPECT_TRUE(s->addEvidence(k->id, e));
    ProcessRecord p;
    p.pid = 4528;
    p.boot_id = kBoot;
    p.taken_at = "1970-01-01T00:00:09Z";
    p.start_ticks = 777;
    p.name = "worker";
    p.evidence_id = 1;
    uint64_t at = 0x400000;
    for (const auto& m : modules) {
        p.modules.push_back({m, at, at + 0x1000, true});
        at += 0x100000;
    }
    p.modules.push_back({"/usr/share/data.bin", at, at + 0x1000, false});  // not executable
    EXPECT_TRUE(s->addProcess(p));
    EXPECT_TRUE(s->commit());
    auto st = s->db().prepare(
        "SELECT ifnull(group_concat(printf('%x', ptr) || ' ' || how || ' ' || inside, '; '), "
        "'none') FROM fault_allocation_distance WHERE evidence_id = 1");
    EXPECT_TRUE(st && st->step().value_or(false));
    return st ? st->str(0) : "";
}

TEST(AllocExecUnseen, AProcessThatMapsAnotherExecutableIsNotTheRecordedImage) {
    // After the exec: /usr/bin/sleep and libc, not the launcher.
    EXPECT_EQ(measured({"/usr/bin/sleep", "/usr/lib/x86_64-linux-gnu/libc.so.6"}), "none");
}

TEST(AllocExecUnseen, TheRecordedExecutableStillMappedIsTheImage) {
    EXPECT_EQ(measured({"/usr/bin/launcher", "/usr/lib/x86_64-linux-gnu/libc.so.6"}),
              "7f0000000000 process 1");
    // Deleted since (an upgrade), or under another root (a container's mount namespace): its
    // base name is the recording's.
    EXPECT_EQ(measured({"/usr/bin/launcher (deleted)"}), "7f0000000000 process 1");
    EXPECT_EQ(measured({"/var/lib/containers/overlay/x/usr/bin/launcher"}),
              "7f0000000000 process 1");
    // A snapshot without executable mappings (maps unreadable) tells nothing: joined as before.
    EXPECT_EQ(measured({}), "7f0000000000 process 1");
}

}  // namespace
}  // namespace gpufault
