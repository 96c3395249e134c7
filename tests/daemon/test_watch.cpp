// `watch` against the real gpufaultd: a record already read into the loop's open transaction
// when the watcher connects is still told once committed (the cursor is the last commit's, not
// max(id) inside the transaction), an incident that gains a record is told again as
// `incident_update` (JSON and the CLI's text), records without an address are shown (issue 3),
// and the CLI's watch exits 1 when the daemon stops.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/daemon/followed_log.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

constexpr const char* kRocrFault =
    "Memory access fault by GPU node-1 (Agent handle: 0x55d4c0a1b2c0) on address 0x7f6459a00000. "
    "Reason: Page not present or supervisor privilege.";

struct WatchFixture : FollowedLog {
    /// A daemon following logs/*.log; `commit` is the [commit] table's extra keys.
    void configure(const std::string& commit) {
        writeConfig("*.log", 100, "", "[commit]\ncorrelate_ms = 50\n" + commit);
    }
    void append(const std::string& name, const std::string& text) const {
        std::ofstream(logs + "/" + name, std::ios::app) << text << std::flush;
    }
    /// Records the daemon has read from `name` (committed or not), from `status`; -1: none.
    int64_t readRecords(const std::string& name) const {
        auto st = nlohmann::json::parse(controlRequest(sock, "status"), nullptr, false);
        if (!st.is_object()) return -1;
        for (const auto& s : st["streams"])
            if (s.value("name", "") == logs + "/" + name) return s.value("evidence", int64_t{-1});
        return -1;
    }
    int64_t committedFaults() const {
        return storeCount(store, "SELECT count(*) FROM evidence WHERE kind = 'rocr_memory_fault'");
    }
};

/// The next line of `w` whose type is `type` (others skipped); null after `timeout`.
nlohmann::json nextOfType(Watcher& w, const std::string& type, std::chrono::milliseconds timeout) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        auto j = w.next(std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now()));
        if (j.is_null()) break;
        if (j.value("type", "") == type) return j;
    }
    return nullptr;
}

}  // namespace

// The start race of `gpufault watch` just before a file is copied: the daemon has read the fault
// into its open transaction (status counts it, the store does not hold it yet) when the watcher
// connects; the record is told when the transaction commits. A writer keeps the log busy so the
// transaction stays open (the commit comes 200 ms after the last line); a round in which the
// commit came first anyway (a loaded machine) proves nothing and is run again.
TEST(Watch, ARecordReadBeforeTheWatcherConnectedIsToldWhenCommitted) {
    WatchFixture f;
    f.configure("batch_ms = 60000\nbatch_lines = 10000000\n");
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    bool exercised = false;
    for (int round = 0; round < 5 && !exercised; ++round) {
        std::string name = fmt::format("job{}.log", round);
        int64_t before = f.committedFaults();
        std::atomic<bool> stop{false};
        f.append(name, std::string(kRocrFault) + "\n");
        std::thread writer([&] {
            for (int i = 0; !stop; ++i) {
                f.append(name, fmt::format("step {} loss 0.{}\n", i, i));
                std::this_thread::sleep_for(20ms);
            }
        });
        bool read = eventually([&] { return f.readRecords(name) >= 1; }, 10s);
        if (!read || f.committedFaults() != before) {  // committed before the watcher came
            stop = true;
            writer.join();
            continue;
        }
        Watcher w(f.sock);
        ASSERT_TRUE(isWatching(w));
        bool uncommitted = f.committedFaults() == before;  // still: the commit comes after
        stop = true;
        writer.join();
        if (!uncommitted) continue;
        exercised = true;
        auto ev = nextOfType(w, "evidence", 10s);
        ASSERT_FALSE(ev.is_null())
            << "the record read before the watcher connected was not told" << d.stderrText();
        EXPECT_EQ(ev["kind"], "rocr_memory_fault");
        EXPECT_EQ(ev["source"], f.logs + "/" + name);
        EXPECT_EQ(ev["line"], 1);
        EXPECT_EQ(f.committedFaults(), before + 1);
    }
    if (!exercised) GTEST_SKIP() << "the daemon committed before every watcher connected";
}

// An incident that gains a record is told again: `incident_update` with the record counts, in
// JSON and as the CLI's UPDATE line (the real `gpufault watch` beside a raw watcher).
TEST(Watch, AnIncidentThatGainsARecordIsToldAsAnUpdate) {
    WatchFixture f;
    f.configure("");
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    Watcher w(f.sock);
    ASSERT_TRUE(isWatching(w));
    ProcessResult cli;
    std::thread cliWatch([&] { cli = run({GPUFAULT_BIN, "watch", "--socket", f.sock}, 60); });
    ASSERT_TRUE(eventually(
        [&] {
            auto st = nlohmann::json::parse(controlRequest(f.sock, "status"), nullptr, false);
            return st.is_object() && st["control"].value("watchers", 0) == 2;
        },
        10s));

    // The real case 012: ROCr's line first, the kernel's page-fault block of the same fault
    // (same 2 MiB region) later in the same log.
    f.append("job.log",
             "Memory access fault by GPU node-1 (Agent handle: 0x59aef28eb440) on address "
             "0x7a5895227000. Reason: Page not present or supervisor privilege.\n");
    auto first = nextOfType(w, "incident", 10s);
    ASSERT_FALSE(first.is_null()) << d.stderrText();
    EXPECT_EQ(first["members"], 1);
    EXPECT_EQ(first["kinds"], "rocr_memory_fault");
    f.append("job.log",
             "Feb 09 23:39:51 host kernel: amdgpu 0000:0a:00.0: amdgpu: [gfxhub] page fault "
             "(src_id:0 ring:24 vmid:8 pasid:32772, for process llama-bench pid 4528 thread "
             "llama-bench pid 4528)\n"
             "Feb 09 23:39:51 host kernel: amdgpu 0000:0a:00.0: amdgpu:   in page starting at "
             "address 0x00007a5895200000 from client 0x1b (UTCL2)\n"
             "Feb 09 23:39:51 host kernel: amdgpu 0000:0a:00.0: amdgpu: "
             "GCVM_L2_PROTECTION_FAULT_STATUS:0x00801031\n"
             "Feb 09 23:39:51 host kernel: amdgpu 0000:0a:00.0: amdgpu:          Faulty UTCL2 "
             "client ID: TCP (0x8)\n");
    auto update = nextOfType(w, "incident_update", 10s);
    ASSERT_FALSE(update.is_null()) << d.stderrText();
    EXPECT_EQ(update["members"], 2);
    EXPECT_EQ(update["members_before"], 1);
    EXPECT_EQ(update["kinds"], "amdgpu_page_fault,rocr_memory_fault");
    EXPECT_EQ(update["address"], "0x7a5895227000");
    EXPECT_TRUE(nextOfType(w, "incident", 1s).is_null());  // not told as a new incident

    d.signal(SIGTERM);  // the CLI's watch ends when the daemon closes: 1, not done
    ASSERT_TRUE(d.waitExit(10s));
    cliWatch.join();
    EXPECT_EQ(cli.status, 1) << cli.err;
    EXPECT_NE(cli.err.find(f.sock + ": gpufaultd closed the connection"), std::string::npos)
        << cli.err;
    EXPECT_NE(cli.out.find(fmt::format("INCIDENT #{} rocr_memory_fault", first["id"].dump())),
              std::string::npos)
        << cli.out;
    EXPECT_NE(cli.out.find(fmt::format("UPDATE   #{} rocr_memory_fault", update["id"].dump())),
              std::string::npos)
        << cli.out;
    EXPECT_NE(cli.out.find("2 records, 1 before: amdgpu_page_fault,rocr_memory_fault"),
              std::string::npos)
        << cli.out;
}

// Records that state no address (nor most other fields) are told with null fields, and both
// `gpufault watch` and `gpufault watch --json` show them (issue 3: the first such record ended
// watch with "malformed gpufaultd reply (address: expected a string)"): an NVIDIA Xid 79 and a
// HIP runtime error appended to followed files. When the daemon stops, both exit 1.
TEST(Watch, RecordsWithoutAnAddressAreShown) {
    WatchFixture f;
    f.configure("");
    DaemonProcess d(GPUFAULTD_BIN, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    Watcher w(f.sock);
    ASSERT_TRUE(isWatching(w));
    ProcessResult text, json;
    std::thread textWatch([&] { text = run({GPUFAULT_BIN, "watch", "--socket", f.sock}, 60); });
    std::thread jsonWatch([&] {
        json = run({GPUFAULT_BIN, "watch", "--socket", f.sock, "--json"}, 60);
    });
    ASSERT_TRUE(eventually(
        [&] {
            auto st = nlohmann::json::parse(controlRequest(f.sock, "status"), nullptr, false);
            return st.is_object() && st["control"].value("watchers", 0) == 3;
        },
        10s));

    f.append("kern.log", "NVRM: Xid (PCI:0000:01:00): 79, pid=1234, GPU has fallen off the bus.\n");
    f.append("job.log", "error: hipErrorIllegalAddress at foo.cpp:12\n");
    // The raw watcher's lines until both records and an incident came.
    nlohmann::json xid, hip, inc;
    auto end = std::chrono::steady_clock::now() + 20s;
    while ((xid.is_null() || hip.is_null() || inc.is_null()) &&
           std::chrono::steady_clock::now() < end) {
        auto j = w.next(1s);
        if (!j.is_object()) continue;
        if (j.value("type", "") == "incident") inc = j;
        if (j.value("type", "") != "evidence") continue;
        (j.value("kind", "") == "nvidia_xid" ? xid : hip) = j;
    }
    ASSERT_FALSE(xid.is_null()) << d.stderrText();
    EXPECT_TRUE(xid["address"].is_null()) << xid;
    EXPECT_TRUE(xid["access"].is_null()) << xid;
    EXPECT_EQ(xid["xid"], 79);
    EXPECT_EQ(xid["pid"], 1234);
    ASSERT_FALSE(hip.is_null()) << d.stderrText();
    EXPECT_EQ(hip["kind"], "runtime_error");
    EXPECT_EQ(hip["reason"], "hipErrorIllegalAddress");
    EXPECT_TRUE(hip["address"].is_null()) << hip;
    EXPECT_TRUE(hip["pid"].is_null()) << hip;
    // Each opens an incident (or one, if correlated): told without an address.
    ASSERT_FALSE(inc.is_null()) << d.stderrText();
    EXPECT_FALSE(inc.contains("address")) << inc;

    d.signal(SIGTERM);  // the lines were sent to every watcher together, before it stops
    ASSERT_TRUE(d.waitExit(10s));
    textWatch.join();
    jsonWatch.join();
    for (const auto* r : {&text, &json}) {
        EXPECT_EQ(r->status, 1) << r->err;
        EXPECT_EQ(r->err.find("malformed"), std::string::npos) << r->err;
        EXPECT_NE(r->err.find(f.sock + ": gpufaultd closed the connection"), std::string::npos)
            << r->err;
    }
    for (const auto* r : {&xid, &hip})
        EXPECT_NE(text.out.find(fmt::format("record   #{} {:<20} {:<18} {}:1\n",
                                            (*r)["id"].dump(),
                                            (*r)["kind"].get<std::string>(),
                                            "-",
                                            (*r)["source"].get<std::string>())),
                  std::string::npos)
            << text.out;
    EXPECT_NE(text.out.find(fmt::format("INCIDENT #{} ", inc["id"].dump())), std::string::npos)
        << text.out;
    // --json prints the daemon's lines as they came: the two records, nulls kept.
    std::vector<nlohmann::json> told;
    size_t at = 0;
    for (size_t nl; (nl = json.out.find('\n', at)) != std::string::npos; at = nl + 1) {
        auto j = nlohmann::json::parse(json.out.substr(at, nl - at), nullptr, false);
        ASSERT_TRUE(j.is_object()) << json.out;
        if (j.value("type", "") == "evidence") told.push_back(j);
    }
    ASSERT_EQ(told.size(), 2u) << json.out;
    EXPECT_TRUE((told[0] == xid && told[1] == hip) || (told[0] == hip && told[1] == xid))
        << json.out;
}
