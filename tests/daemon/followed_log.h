// A gpufaultd configuration following a directory of logs, and the scenarios that several
// daemon tests run over it: start and READY, a store count reached, a kill -9 and a restart.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

namespace gpufault::testing {

/// A test directory with logs/ and a gpufaultd configuration (gpufaultd.conf) that follows
/// logs/*.log into store.db: kmsg and allocations off, polled every 100 ms, control socket
/// ctl.sock (group ""). `log` is logs/job.log (not written).
struct FollowedLog {
    TempDir dir;
    std::string conf = dir.file("gpufaultd.conf"), store = dir.file("store.db"),
                logs = dir.file("logs"), log = logs + "/job.log", sock = dir.file("ctl.sock");
    FollowedLog();
    /// Writes the configuration again: [files] globs = ["<logs>/<glob>"], poll_interval_ms =
    /// `poll_ms` (milliseconds), then `files_extra` (whole lines, each ending in '\n') in
    /// [files]; `tables` (whole tables, e.g. "[commit]\ncorrelate_ms = 50\n") after [control].
    void writeConfig(const std::string& glob,
                     int poll_ms,
                     const std::string& files_extra = "",
                     const std::string& tables = "");
};

/// Dispatch `i` of pid 4242's HIP thread `tid` as AMD_LOG_LEVEL=3 logs it: its hipLaunchKernel,
/// Arg0 and ShaderName (kernel_<i>) lines, each with its newline, at 1 000 000 000 + 37·i µs;
/// Arg0 points at 0x7051e5a00000 + (16·i mod 2^20).
std::string hipDispatchLines(int i, std::string_view tid = "0x7f0a1b2c3d40");

/// ROCr's fault line on GPU node 1 (FORMATS.md §2.1) at address 0x7f6400000000 + n·0x200000,
/// without its newline.
std::string rocrFaultText(int n);

/// `w` is connected and its first line, within 5 s, is {"type": "watching"}.
::testing::AssertionResult isWatching(Watcher& w);

/// Starts `d` and waits up to `timeout` for its READY=1; a failure says which step failed
/// and holds the daemon's stderr.
::testing::AssertionResult startedReady(
    DaemonProcess& d, std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// Waits up to `timeout` until storeCount(`store`, `sql`) is `want`; a failure holds the last
/// value and `d`'s stderr.
::testing::AssertionResult storeReaches(DaemonProcess& d,
                                        const std::string& store,
                                        const std::string& sql,
                                        int64_t want,
                                        std::chrono::milliseconds timeout);

/// Sends SIGTERM to `d` and waits up to `timeout` for its exit; a failure (no exit, or a status
/// other than 0) holds the status and the daemon's stderr.
::testing::AssertionResult stoppedCleanly(
    DaemonProcess& d, std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// "line|kind|count" of each record of the store at `store`, by line then kind (at most 16):
/// kind is 1 for a runtime_error record, else 0; count is its fold count.
std::vector<std::string> foldRecords(const std::string& store);

/// The kill -9 fold scenario (hostile reviews 3 and 9): `text` (whole lines) written to
/// logs/job.log; `gpufault ingest` of it (`gpufault_bin`) must store `expected`
/// (foldRecords). A daemon (`gpufaultd_bin`) reads it to its last line and is killed with
/// SIGKILL; `after_kill` (when set) checks the store at that point; a second daemon must then
/// store `expected`, and still `expected` after its SIGTERM (exit 0). Reports gtest failures:
/// call it under ASSERT_NO_FATAL_FAILURE.
void expectFoldAcrossKill9(const std::string& gpufaultd_bin,
                           const std::string& gpufault_bin,
                           const std::string& text,
                           const std::vector<std::string>& expected,
                           const std::function<void(const std::string& store)>& after_kill = {});

}  // namespace gpufault::testing
