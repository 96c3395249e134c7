#include "tests/daemon/followed_log.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <csignal>

namespace gpufault::testing {

using namespace std::chrono_literals;

FollowedLog::FollowedLog() {
    ::mkdir(logs.c_str(), 0755);
    writeConfig("*.log", 100);
}

void FollowedLog::writeConfig(const std::string& glob,
                              int poll_ms,
                              const std::string& files_extra,
                              const std::string& tables) {
    writeFile(conf,
              fmt::format("[store]\npath = \"{}\"\n[kmsg]\nenabled = false\n[files]\nglobs = "
                          "[\"{}/{}\"]\npoll_interval_ms = {}\n{}[control]\nsocket = \"{}\"\n"
                          "group = \"\"\n{}[allocations]\ndirectory = \"\"\n",
                          store,
                          logs,
                          glob,
                          poll_ms,
                          files_extra,
                          sock,
                          tables));
}

std::string hipDispatchLines(int i, std::string_view tid) {
    uint64_t us = 1000000000ull + static_cast<uint64_t>(i) * 37;
    return fmt::format(
        ":3:hip_module.cpp           :669 : {:010} us: [pid:4242  tid:{}]  "
        "hipLaunchKernel ( 0x7056a988e9d0, {{1048576,1,1}}, {{256,1,1}}, 0x70536bbc2fa0, 0, "
        "stream:<null> ) \n"
        ":3:rocvirtual.cpp           :723 : {:010} us: [pid:4242  tid:{}] Arg0:   "
        "= ptr:0x7051e5a{:05x} obj:[0x7051e5a00000-0x705365a00000]\n"
        ":3:rocvirtual.cpp           :3016: {:010} us: [pid:4242  tid:{}] "
        "ShaderName : kernel_{}\n",
        us,
        tid,
        us + 1,
        tid,
        (i * 16) & 0xfffff,
        us + 2,
        tid,
        i);
}

std::string rocrFaultText(int n) {
    return fmt::format(
        "Memory access fault by GPU node-1 (Agent handle: 0x55d5b2d4a780) on address "
        "0x7f64{:08x}. Reason: Page not present or supervisor privilege.",
        n * 0x200000);
}

::testing::AssertionResult isWatching(Watcher& w) {
    if (!w.ok()) return ::testing::AssertionFailure() << "the watch request failed";
    auto first = w.next(5s);
    if (!first.is_object() || first.value("type", "") != "watching")
        return ::testing::AssertionFailure() << "first line " << first.dump();
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult startedReady(DaemonProcess& d, std::chrono::milliseconds timeout) {
    if (!d.start()) return ::testing::AssertionFailure() << "gpufaultd did not start";
    if (!d.waitNotify("READY=1", timeout))
        return ::testing::AssertionFailure() << "no READY=1; stderr:\n" << d.stderrText();
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult storeReaches(DaemonProcess& d,
                                        const std::string& store,
                                        const std::string& sql,
                                        int64_t want,
                                        std::chrono::milliseconds timeout) {
    int64_t last = -1;
    if (eventually([&] { return (last = storeCount(store, sql)) == want; }, timeout))
        return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << sql << " gave " << last << ", not " << want << "; stderr:\n"
           << d.stderrText();
}

::testing::AssertionResult stoppedCleanly(DaemonProcess& d, std::chrono::milliseconds timeout) {
    d.signal(SIGTERM);
    auto status = d.waitExit(timeout);
    if (status == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << "gpufaultd "
           << (status ? "exited with " + std::to_string(*status) : std::string("did not exit"))
           << " after SIGTERM; stderr:\n"
           << d.stderrText();
}

std::vector<std::string> foldRecords(const std::string& store) {
    std::vector<std::string> out;
    for (int i = 0; i < 16; ++i) {
        const std::string nth =
            fmt::format(" FROM evidence ORDER BY line, kind LIMIT 1 OFFSET {}", i);
        int64_t line = storeCount(store, "SELECT line" + nth);
        if (line < 0) break;
        out.push_back(fmt::format("{}|{}|{}",
                                  line,
                                  storeCount(store, "SELECT kind = 'runtime_error'" + nth),
                                  storeCount(store, "SELECT count" + nth)));
    }
    return out;
}

void expectFoldAcrossKill9(const std::string& gpufaultd_bin,
                           const std::string& gpufault_bin,
                           const std::string& text,
                           const std::vector<std::string>& expected,
                           const std::function<void(const std::string& store)>& after_kill) {
    FollowedLog f;
    writeFile(f.log, text);
    const std::string ref = f.dir.file("ref.db");
    auto ing = run({gpufault_bin, "--db", ref, "ingest", f.log});
    ASSERT_EQ(ing.status, 0) << ing.err;
    ASSERT_EQ(foldRecords(ref), expected);
    const auto lines = static_cast<int64_t>(std::count(text.begin(), text.end(), '\n'));

    DaemonProcess d(gpufaultd_bin, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(d));
    ASSERT_TRUE(storeReaches(d, f.store, "SELECT max_line FROM sources", lines, 30s));
    d.kill9();
    if (after_kill) after_kill(f.store);

    DaemonProcess again(gpufaultd_bin, f.conf, f.dir.path());
    ASSERT_TRUE(startedReady(again));
    ASSERT_TRUE(eventually([&] { return foldRecords(f.store).size() == expected.size(); }, 30s))
        << again.stderrText();
    EXPECT_EQ(foldRecords(f.store), expected);
    again.signal(SIGTERM);
    EXPECT_EQ(again.waitExit(10s), 0) << again.stderrText();
    EXPECT_EQ(foldRecords(f.store), expected);
}

}  // namespace gpufault::testing
