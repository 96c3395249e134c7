// The kill9 test harness: a daemon configuration tailing logs/app.log*, a ledger writer that
// rotates (by rename or copytruncate), truncates, deletes and recreates the log, and the
// scenario that kills the daemon at random moments and checks the store against the ledger.
//
// gpufaultd under SIGKILL. A writer that never waits for the daemon appends a ledger of lines
// while it rotates the log (by rename; copytruncate in tests of their own), truncates it,
// deletes old rotations and recreates it; the test kills the daemon with SIGKILL at random
// moments and restarts it each time, and freezes it (SIGSTOP) at times so that the writer runs
// ahead, as on a loaded machine. Then it checks the store against the ledger.
//
// The ledger: line N is `[ledger] name=L<N> ptr=<0x10000000 + N*0x1000> size=4096 pad=x…`,
// which the operand-probe parser stores as one row of `operands`, so the rows say exactly which
// lines are stored and how often.
//
// What the daemon can know, and therefore what is asserted:
//  * Duplicates: never. A line's records and its source's checkpoint are committed in one
//    transaction, and records are keyed by (source, line number), so a kill at any instant
//    neither loses a committed line nor stores one twice. Asserted for every line. With
//    copytruncate, a copy (new inode, the original's first line) continues its original's
//    stream where that was read: in memory while the daemon runs, and after a restart from the
//    checkpoint's prefix hash in the store (its bytes before the checkpoint are the original's).
//  * A line that is still in a file when the writer stops (its file was never truncated nor
//    deleted) is stored: renamed files are found again by inode and first line, and reading
//    resumes at the committed checkpoint.
//  * A line that was removed (its file truncated or deleted) may be missing: the daemon may
//    not have looked yet, may have been dead, or may have read it and been killed before the
//    commit. A deleted (or renamed) file the daemon holds open stays readable through its
//    descriptor and is read to its end (DeletedFilesHeldOpenAreReadToTheEnd); a file deleted
//    while the daemon is dead, or before it opened it, is gone for it.
//  * Whatever was stored of a file, removed later or not, is a prefix of its lines: the
//    daemon reads in order, so a stored line after a missing one means it skipped part of a
//    file (as it did when a file was truncated and written past the old read offset between
//    two looks: TruncatedAndRegrownBetweenTwoLooksIsReadFromTheStart).
//  * Reported loss: on truncation the daemon counts lost_bytes += (the size at its last look −
//    its read offset), i.e. bytes it saw and had not read; a deleted file whose first line it
//    never saw complete counts its size; after a restart, a stream whose file is gone (or
//    truncated below its checkpoint) counts the size its last checkpoint recorded − that
//    checkpoint's offset (LostBytesTheDaemonSawAreCountedAlsoAcrossARestart in
//    test_hostile.cpp). What was written after its last look and truncated before its next
//    one, what a file deleted before it opened it held, what was written while it was dead,
//    and what it read but had not committed when it was killed, are all unknowable to it.
//    So reported ≤ missing ≤ removed, where missing is the
//    ledger's count of bytes removed unread (the removed lines the store lacks). Equality
//    holds when the daemon saw everything that was removed unread: asserted exactly in
//    PartialLineSeenThenTruncatedIsReportedLostExactly and the copytruncate tests. "Reported"
//    is the store's sum of sources.lost_bytes: each count is committed with the checkpoint
//    that finishes its stream, and a copy that continues a stream gives back what it holds,
//    so a kill neither drops nor repeats a count. `status` shows those stored totals (per
//    followed file and "(finished files)"): after the last catch-up they add up to the sum.
//
// GPUFAULT_KILL9_SEED=<n> replays a seed (the writer's timing still varies); GPUFAULT_LONG=1
// kills 200 times instead of 50 (and runs 100 periods instead of 20 without kills). Every
// failure names the seed.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

namespace gpufault::testing::kill9 {

using namespace std::chrono_literals;

/// Ledger line `n` with `pad` bytes of padding (its operand: ptr 0x10000000 + n*0x1000, 4096 B).
std::string ledgerLine(uint64_t n, size_t pad);
/// Writes all of `s` to `fd`; false on an error.
bool writeAll(int fd, std::string_view s);
/// Sleeps `d` (nanosleep).
void sleepFor(std::chrono::microseconds d);

/// A test directory with a daemon configuration: logs/app.log* tailed, kmsg off.
struct Setup {
    TempDir dir;
    std::string logs = dir.file("logs"), app = logs + "/app.log", store = dir.file("store.db"),
                sock = dir.file("ctl.sock"), config = dir.file("gpufaultd.conf");
    Setup();
};

/// One stream as `status` shows it.
struct StreamView {
    std::string name, position;
    uint64_t lag = 0, lost = 0;
};
/// The file streams of the daemon's `status` (nullopt: no answer).
std::optional<std::vector<StreamView>> status(const std::string& sock);
/// Every non-empty file under `logs` is committed to its end and no stream lags (`why`: what
/// is not).
bool caughtUp(const std::string& sock, const std::string& logs, std::string* why);
/// SIGSTOP, waiting until it is stopped (false: it is not running any more); SIGCONT.
bool freeze(pid_t pid);
void thaw(pid_t pid);

/// A ledger line's operand rows: how many, and their ptr and end.
struct Stored {
    int64_t rows = 0;
    uint64_t ptr = 0, end = 0;
};
/// Ledger line number → its rows in the store (`error`: what could not be read).
std::map<uint64_t, Stored> storedLedger(const std::string& store, std::string* error);
/// The bytes the store's file sources counted lost (the sum of sources.lost_bytes; `error`:
/// what could not be read).
uint64_t storedLost(const std::string& store, std::string* error);
/// " L0x1 L1x1 …": each stored line with its row count.
std::string storedNames(const std::map<uint64_t, Stored>& m);
/// " Lfrom x1 … L(to-1)x1": each line once.
std::string every(uint64_t from, uint64_t to);

enum class Rotation { Rename, CopyTruncate };

/// What a scenario measured (printed by runScenario).
struct Figures {
    uint64_t seed = 0;
    int kills = 0, freezes = 0;
    uint64_t written = 0, stored = 0, removedBytes = 0, missingBytes = 0;
    uint64_t reportedLost = 0;  ///< the store's sum of sources.lost_bytes
    uint64_t statusLost = 0;    ///< what `status` showed in all after the last catch-up
    uint64_t storedRemoved = 0;  ///< lines stored although their file was removed later
    double seconds = 0;
};

/// `ci` normally, `longRun` with GPUFAULT_LONG=1.
int killsFromEnv(int ci, int longRun);

/// `lives` periods of 0-700 ms while the writer writes and rotates by `rotation`; after each
/// the daemon is killed (SIGKILL) and restarted when `kill`, else it runs on (frozen at
/// times). Then a clean catch-up and the ledger check (the assertions at the top of this file).
void runScenario(Rotation rotation, int lives, bool kill, Figures* fig);

/// One daemon over the Setup, with app.log open for appending: for deterministic cases (the
/// daemon is frozen with SIGSTOP while the files change).
struct Quiet {
    Setup s;
    DaemonProcess d{GPUFAULTD_BIN, s.config, s.dir.path()};
    int fd = -1;
    uint64_t next = 0;
    Quiet();
    ~Quiet();
    bool start() { return d.start() && d.waitNotify("READY=1", 30s); }
    /// start(), then lines(fd, count) and caughtUp(): the daemon has committed them.
    bool startWith(int count);
    /// start(), then caughtUp(): the daemon has committed every file to its end.
    bool startAndCatchUp() { return start() && caughtUp(); }
    /// Appends lines next … next+count-1 to `f`.
    void lines(int f, int count);
    /// Waits until the daemon has read and committed every file to its end.
    bool caughtUp();
    std::optional<StreamView> stream(const std::string& path);
    /// Waits up to 30 s until `status` shows the stream at `path` with `field` (lag: bytes seen,
    /// not read; lost: bytes counted lost) at `bytes`.
    bool shows(const std::string& path, uint64_t StreamView::*field, uint64_t bytes);
    /// shows(path, &StreamView::lag, bytes).
    bool lagShows(const std::string& path, uint64_t bytes) {
        return shows(path, &StreamView::lag, bytes);
    }
    /// shows(path, &StreamView::lost, bytes).
    bool lostShows(const std::string& path, uint64_t bytes) {
        return shows(path, &StreamView::lost, bytes);
    }
    /// Waits up to 30 s until app.log is committed to its current end and `copy` waits for its
    /// first line (its first line has no newline yet).
    bool copyWaitsForAFirstLine(const std::string& copy);
    /// Waits until `copy` waits for app.log ("waiting: a copy of …app.log (…")
    /// while app.log has no lag; `at_end`: and app.log is read to its current end.
    bool copyWaits(const std::string& copy, bool at_end = false);
    /// SIGTERM (exit 0 expected), then the stored ledger lines.
    std::map<uint64_t, Stored> stop();
    /// After stop(): the bytes the store counted lost.
    uint64_t lostInStore();
};

}  // namespace gpufault::testing::kill9
