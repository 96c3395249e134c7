// No loss, no duplicates: an ingest killed with SIGKILL at several instants and run again must
// leave exactly the store a single clean ingest leaves (evidence, operands, dispatch counts).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "schema/sqlite.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

/// An AMD_LOG_LEVEL=3 log with kernel-log blocks and ROCr faults mixed in (formats of
/// FORMATS.md §1.1, §2.1, §3.1–3.2; ROCm 6.2 prefix).
std::string makeLog(int rounds) {
    std::string s;
    for (int i = 0; i < rounds; ++i) {
        uint64_t us = 1000000000ull + static_cast<uint64_t>(i) * 37;
        s += fmt::format(
            ":3:hip_module.cpp           :669 : {:010} us: [pid:4242  tid:0x7f0a1b2c3d40]  "
            "hipLaunchKernel ( 0x7056a988e9d0, {{1048576,1,1}}, {{256,1,1}}, 0x70536bbc2fa0, 0, "
            "stream:<null> ) \n",
            us);
        s += fmt::format(
            ":3:rocvirtual.cpp           :723 : {:010} us: [pid:4242  tid:0x7f0a1b2c3d40] Arg0:   "
            "= ptr:0x7051e5a{:05x} obj:[0x7051e5a00000-0x705365a00000]\n",
            us + 1,
            (i % 4096) * 16);
        s += fmt::format(
            ":3:rocvirtual.cpp           :3016: {:010} us: [pid:4242  tid:0x7f0a1b2c3d40] "
            "ShaderName : Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_K{}\n",
            us + 2,
            i % 7);
        if (i % 997 == 500) {
            s += fmt::format(
                "[dequant_probe] name=W{} shape=(21504, 5376) dtype=torch.bfloat16 "
                "ptr=0x7ef9{:08x} end=0x7efa{:08x}\n",
                i,
                i * 4096,
                i * 4096);
            s += fmt::format(
                "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address "
                "0x7f64{:08x}. Reason: Page not present or supervisor privilege.\n",
                i * 0x1000);
        }
        if (i % 1499 == 700) {
            s += fmt::format(
                "[ {}.000001] amdgpu 0000:c1:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 "
                "ring:24 vmid:8 pasid:32772)\n",
                1000 + i);
            s += fmt::format(
                "[ {}.000002] amdgpu 0000:c1:00.0: amdgpu:  Process python3 pid 4242 thread "
                "python3 pid 4250\n",
                1000 + i);
            s += fmt::format(
                "[ {}.000003] amdgpu 0000:c1:00.0: amdgpu:   in page starting at address "
                "0x00007f3a{:08x} from IH client 0x1b (UTCL2)\n",
                1000 + i,
                i * 0x1000);
            s += fmt::format(
                "[ {}.000004] amdgpu 0000:c1:00.0: amdgpu: "
                "VM_L2_PROTECTION_FAULT_STATUS:0x00B01031\n",
                1000 + i);
            s += fmt::format("[ {}.000005] amdgpu 0000:c1:00.0: amdgpu: \t RW: 0x1\n", 1000 + i);
        }
    }
    return s;
}

std::string dump(const std::string& db) {
    // Everything but row ids, in a stable order.
    std::string out;
    for (const char* sql :
         {"SELECT kind, line, address, pid, reason, raw FROM evidence ORDER BY line, kind",
          "SELECT line, name, ptr, end, origin FROM operands ORDER BY line, name",
          "SELECT k.name, c.pid, c.n, c.first_line, c.last_line FROM dispatch_counts c JOIN "
          "kernels k ON k.id = c.kernel_id ORDER BY k.name",
          "SELECT line, runtime_tid FROM dispatches ORDER BY line",
          "SELECT complete, max_line FROM sources"}) {
        auto r = run({GPUFAULT_BIN, "--db", db, "query", "--json", sql});
        EXPECT_EQ(r.status, 0) << r.err;
        out += r.out + "--\n";
    }
    return out;
}

/// The committed offset of the one file source of `db` (-1: no store or no source yet), read
/// beside a running ingest (WAL).
int64_t checkpointOf(const std::string& db) {
    if (::access(db.c_str(), F_OK) != 0) return -1;
    auto d = db::Db::open(db, true, false);
    if (!d) return -1;
    auto q = d->prepare("SELECT max(offset) FROM sources WHERE kind='file'");
    if (!q) return -1;
    auto r = q->step();
    return r && *r && !q->isNull(0) ? q->i64(0) : -1;
}

TEST(Resume, KilledIngestsResumeToTheSameStore) {
    TempDir t;
    std::string log = t.file("amd.log");
    writeFile(log, makeLog(150000));
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", t.file("clean.db"), "ingest", log}).status, 0);
    std::string clean = dump(t.file("clean.db"));
    ASSERT_NE(clean.find("rocr_memory_fault"), std::string::npos);
    ASSERT_NE(clean.find("amdgpu_page_fault"), std::string::npos);

    // Each run is killed once the store shows it past the previous run's checkpoint (so every
    // kill lands mid-ingest, however loaded the machine), a few milliseconds into its next batch.
    int killed = 0, midway = 0;
    int64_t reached = -1;
    for (int extraMs : {0, 3, 6, 9, 12, 15}) {
        pid_t pid = ::fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            int devnull = ::open("/dev/null", O_WRONLY);
            ::dup2(devnull, 1);
            ::execl(GPUFAULT_BIN,
                    GPUFAULT_BIN,
                    "--db",
                    t.file("killed.db").c_str(),
                    "ingest",
                    "-q",
                    log.c_str(),
                    static_cast<char*>(nullptr));
            ::_exit(127);
        }
        int st = 0;
        bool exited = false;
        for (;;) {
            if (::waitpid(pid, &st, WNOHANG) == pid) {
                exited = true;
                break;
            }
            if (checkpointOf(t.file("killed.db")) > reached) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (!exited) {
            std::this_thread::sleep_for(std::chrono::milliseconds(extraMs));
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &st, 0);
        }
        killed += WIFSIGNALED(st) ? 1 : 0;
        reached = checkpointOf(t.file("killed.db"));
        auto c = run({GPUFAULT_BIN, "--db", t.file("killed.db"), "query", "--csv",
                      "SELECT complete FROM sources"});
        midway += c.out.find("\n0") != std::string::npos ? 1 : 0;
    }
    EXPECT_GE(killed, 3) << "too few runs were interrupted: the test proves nothing";
    auto final = run({GPUFAULT_BIN, "--db", t.file("killed.db"), "ingest", log});
    ASSERT_EQ(final.status, 0) << final.err;
    EXPECT_GE(midway, 1) << "no kill left the ingest unfinished: the test proves nothing";
    EXPECT_EQ(dump(t.file("killed.db")), clean);
}

}  // namespace
}  // namespace gpufault::testing
