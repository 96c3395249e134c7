// Crash ingest on real files and a real SQLite store (the h2 hostile review, issue 4/5): the work
// one journal entry costs does not grow with the store, and crash inputs that are not regular
// files are refused from the one descriptor they are read from.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "ingest/ingest_crash.h"
#include "schema/store.h"
#include "tests/support/crash_files.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kBoot = "0123456789abcdef0123456789abcdef";

/// `n` systemd-coredump entries (pids from `first`) whose cores were not kept, each with a
/// two-thread "Stack trace of thread" MESSAGE, as journald exports them.
std::string crashes(int first, int n) {
    std::string out;
    for (int pid = first; pid < first + n; ++pid) {
        std::string msg = fmt::format("Process {} (python3) of user 1000 dumped core.\n\n", pid);
        for (int t = 0; t < 2; ++t) {
            msg += fmt::format("Stack trace of thread {}:\n", pid + t);
            for (int k = 0; k < 6; ++k)
                msg += fmt::format("#{}  0x00007f00{:08x} fn_{} (libamdhip64.so.6 + 0x{:x})\n",
                                   k,
                                   k,
                                   k,
                                   0x1000 + k * 16);
        }
        out += exportEntry({{"__CURSOR", fmt::format("s={}", pid)},
                            {"_BOOT_ID", kBoot},
                            {"_UID", "0"},
                            {"_COMM", "systemd-coredum"},
                            {"MESSAGE_ID", "fc2e22bc6ee647b6b90729ab34a250b1"},
                            {"COREDUMP_PID", std::to_string(pid)},
                            {"COREDUMP_UID", "1000"},
                            {"COREDUMP_SIGNAL", "11"},
                            {"COREDUMP_TIMESTAMP", std::to_string(1764000000000000ull + pid)},
                            {"COREDUMP_COMM", "python3"}},
                           msg);
    }
    return out;
}

int countStep(void* n) {
    ++*static_cast<uint64_t*>(n);
    return 0;
}

/// SQLite VM instructions executed while `path` (one entry) is ingested into `store`.
uint64_t vmSteps(Store& store, const std::string& path) {
    uint64_t n = 0;
    sqlite3_progress_handler(store.db().handle(), 1, countStep, &n);
    auto r = ingestJournalCores(store, path, CrashInput::JournalExport, {});
    sqlite3_progress_handler(store.db().handle(), 0, nullptr, nullptr);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (r) {
        EXPECT_EQ(r->cores.size(), 1u);
    }
    return n;
}

TEST(IngestCrash, OneMoreJournalCrashCostsTheSameInAStoreTenTimesLarger) {
    // 10,000 entries took 23.7 s: finding each new crash's record walked every coredump record
    // of the store. Counted in SQLite VM instructions (not time): the 201st crash and the
    // 2,001st must cost about the same.
    TempDir t;
    auto store = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(store) << store.error().message;
    writeFile(t.file("first.export"), crashes(1000, 200));
    auto first = ingestJournalCores(*store, t.file("first.export"), CrashInput::JournalExport, {});
    ASSERT_TRUE(first) << first.error().message;
    ASSERT_EQ(first->cores.size(), 200u);
    writeFile(t.file("one.export"), crashes(5000, 1));
    uint64_t small = vmSteps(*store, t.file("one.export"));
    writeFile(t.file("more.export"), crashes(10000, 1800));
    ASSERT_TRUE(ingestJournalCores(*store, t.file("more.export"), CrashInput::JournalExport, {}));
    writeFile(t.file("two.export"), crashes(20000, 1));
    uint64_t large = vmSteps(*store, t.file("two.export"));
    EXPECT_GT(small, 100u);
    EXPECT_LT(large, small + small / 4) << "201st crash: " << small << " steps, 2,002nd: " << large;
}

TEST(IngestCrash, CrashInputThatIsAFifoIsRefusedNotRead) {
    // A report path replaced by a FIFO after it was seen as a regular file (the daemon scans,
    // then ingests): it must be refused from the descriptor it is opened as, not read from
    // whoever writes the FIFO.
    TempDir t;
    auto store = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(store) << store.error().message;
    // The writer's open() returns as soon as the ingest opens the FIFO to check it; when the
    // ingest has closed it again before the write and the test's reader is not open yet, the
    // write meets no reader: EPIPE, and SIGPIPE would kill the test (seen in CI).
    struct IgnoreSigpipe {
        struct sigaction old {};
        IgnoreSigpipe() {
            struct sigaction ign {};
            ign.sa_handler = SIG_IGN;
            ::sigaction(SIGPIPE, &ign, &old);
        }
        ~IgnoreSigpipe() { ::sigaction(SIGPIPE, &old, nullptr); }
    } ignore_sigpipe;
    for (const auto* name : {"_usr_bin_x.0.crash", "crashes.export"}) {
        auto fifo = t.file(name);
        ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
        std::string content = std::string(name).ends_with(".crash")
                                  ? "ProblemType: Crash\nProcStatus:\n Pid:\t77\nSignal: 11\n"
                                  : crashes(77, 1);
        std::thread writer([&] {
            int fd = ::open(fifo.c_str(), O_WRONLY);  // blocks until a reader opens it
            if (fd < 0) return;
            (void)!::write(fd, content.data(), content.size());
            ::close(fd);
        });
        std::string err;
        bool stored = false;
        if (std::string(name).ends_with(".crash")) {
            auto r = ingestApportReport(*store, fifo, {}, true);
            stored = r.has_value();
            if (!r) err = r.error().message;
        } else {
            auto r = ingestJournalCores(*store, fifo, CrashInput::JournalExport, {});
            stored = r && !r->cores.empty();
            if (!r) err = r.error().message;
        }
        // A reader lets the writer's open() return whenever it comes; what it writes fits the
        // pipe's buffer, so it finishes without anyone reading.
        int rd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
        ASSERT_GE(rd, 0);
        writer.join();
        ::close(rd);
        EXPECT_FALSE(stored) << name;
        EXPECT_EQ(err, fifo + ": not a regular file") << name;
    }
    EXPECT_EQ(crashInputOf(t.file("crashes.export")), CrashInput::None);
}

}  // namespace
}  // namespace gpufault::testing
