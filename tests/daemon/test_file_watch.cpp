// inotify instead of polling the patterns (daemon/sources/file_watch.h): what a batch of real
// events means, which filesystems inotify sees every change on, and gpufaultd expanding the
// patterns of a watched directory on its events only — new files, rotation, a directory removed
// and made again, a slot freed under files.max_open — while appends to followed files cost no
// expansion. The watched directory is on /dev/shm (tmpfs), so these run in the watched mode
// whatever filesystem TMPDIR is on.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "daemon/sources/file_watch.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using gpufault::daemon::drainWatchEvents;
using gpufault::daemon::inotifySeesEveryChange;
using gpufault::daemon::WatchEvents;
using namespace std::chrono_literals;

namespace {

constexpr const char* kRocrFault =
    "Memory access fault by GPU node-1 (Agent handle: 0x55d4c0a1b2c0) on address 0x7f6459a00000. "
    "Reason: Page not present or supervisor privilege.";

/// The filesystem type name stat(1) gives for `path` (coreutils' own table: an oracle
/// independent of file_watch.cpp's magic numbers); "" when it fails.
std::string fsTypeName(const std::string& path) {
    std::string out;
    if (FILE* p = ::popen(fmt::format("stat -f -c %T '{}' 2>/dev/null", path).c_str(), "r")) {
        std::array<char, 256> b{};
        while (std::fgets(b.data(), b.size(), p)) out += b.data();
        ::pclose(p);
    }
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
}

/// A directory of its own under /dev/shm (removed with what it holds); ok() is false where
/// /dev/shm is no tmpfs.
struct ShmDir {
    std::string path;
    ShmDir() {
        if (fsTypeName("/dev/shm") != "tmpfs") return;
        std::string t = "/dev/shm/gpufault-watch-XXXXXX";
        if (::mkdtemp(t.data())) path = t;
    }
    ~ShmDir() {
        std::error_code ec;
        if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
    bool ok() const { return !path.empty(); }
};

struct InotifyFd {
    int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    ~InotifyFd() { ::close(fd); }
};

constexpr uint32_t kMask = IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
                           IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF;  // gpufaultd's

}  // namespace

// A real directory's events, one kind at a time.
TEST(FileWatch, EventsOfARealDirectorySayWhatTheyAskFor) {
    TempDir t;
    std::string dir = t.file("w");
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    InotifyFd in;
    ASSERT_GE(in.fd, 0);
    const int wd = ::inotify_add_watch(in.fd, dir.c_str(), kMask);
    ASSERT_GE(wd, 0);
    auto none = drainWatchEvents(in.fd);  // nothing happened yet
    EXPECT_FALSE(none.names || none.contents || none.lost);

    int fd = ::open((dir + "/a.log").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    auto created = drainWatchEvents(in.fd);
    EXPECT_TRUE(created.names);
    EXPECT_FALSE(created.contents);
    EXPECT_FALSE(created.lost);

    ASSERT_EQ(::write(fd, "x\n", 2), 2);
    auto written = drainWatchEvents(in.fd);
    EXPECT_FALSE(written.names);
    EXPECT_TRUE(written.contents);
    ASSERT_EQ(written.written.size(), 1u);  // which file, under which watch
    EXPECT_EQ(written.written[0], std::make_pair(wd, std::string("a.log")));
    EXPECT_FALSE(written.manyWritten);
    ASSERT_EQ(::ftruncate(fd, 0), 0);  // a truncation is a write too
    auto truncated = drainWatchEvents(in.fd);
    EXPECT_FALSE(truncated.names);
    EXPECT_TRUE(truncated.contents);
    ::close(fd);
    auto closed = drainWatchEvents(in.fd);
    EXPECT_TRUE(closed.contents);
    EXPECT_FALSE(closed.names);

    ASSERT_EQ(::rename((dir + "/a.log").c_str(), (dir + "/a.log.1").c_str()), 0);
    auto renamed = drainWatchEvents(in.fd);
    EXPECT_TRUE(renamed.names);
    EXPECT_FALSE(renamed.lost);
    ASSERT_EQ(::unlink((dir + "/a.log.1").c_str()), 0);
    auto deleted = drainWatchEvents(in.fd);
    EXPECT_TRUE(deleted.names);
    EXPECT_FALSE(deleted.lost);

    ASSERT_EQ(::rmdir(dir.c_str()), 0);  // the watched directory itself
    auto gone = drainWatchEvents(in.fd);
    EXPECT_TRUE(gone.lost);
    EXPECT_TRUE(gone.names);
    EXPECT_EQ(gone.lostWatches, std::vector<int>{wd});  // IN_DELETE_SELF, IN_IGNORED: once
}

// Many events in one read: all of them are parsed (a rename among 2 000 writes is seen).
TEST(FileWatch, ABatchOfManyEventsIsReadToItsEnd) {
    TempDir t;
    InotifyFd in;
    ASSERT_GE(::inotify_add_watch(in.fd, t.path().c_str(), kMask), 0);
    int fd = ::open(t.file("a.log").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    (void)drainWatchEvents(in.fd);
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(::write(fd, "x\n", 2), 2);  // coalesced or not
    ::close(fd);
    ASSERT_EQ(::rename(t.file("a.log").c_str(), t.file("b.log").c_str()), 0);
    auto w = drainWatchEvents(in.fd);
    EXPECT_TRUE(w.contents);
    EXPECT_TRUE(w.names);
    EXPECT_FALSE(drainWatchEvents(in.fd).names);  // drained
}

// More files written in one batch than it lists: the first kWrittenMax, each once, and
// manyWritten (the daemon then reads every followed file).
TEST(FileWatch, ABatchListsItsWrittenFilesUpToACap) {
    TempDir t;
    InotifyFd in;
    ASSERT_GE(::inotify_add_watch(in.fd, t.path().c_str(), kMask), 0);
    const size_t n = WatchEvents::kWrittenMax + 44;
    for (size_t i = 0; i < n; ++i) std::ofstream(t.file(fmt::format("f{}.log", i))) << "x\n";
    auto w = drainWatchEvents(in.fd);
    EXPECT_TRUE(w.names);  // created
    EXPECT_EQ(w.written.size(), WatchEvents::kWrittenMax);
    EXPECT_TRUE(w.manyWritten);
    EXPECT_EQ(w.written.front().second, "f0.log");
    for (int i = 0; i < 3; ++i)  // three writes, one file: listed once
        std::ofstream(t.file("f0.log"), std::ios::app) << "y\n";
    auto again = drainWatchEvents(in.fd);
    ASSERT_EQ(again.written.size(), 1u);
    EXPECT_FALSE(again.manyWritten);
}

// More events than the kernel queues (fs.inotify.max_queued_events) while nobody read: the
// overflow asks for a full look and for the watches again (a dropped event may have been a
// watched directory's own move).
TEST(FileWatch, AnOverflowAsksForTheWatchesAgain) {
    const std::string max = readFile("/proc/sys/fs/inotify/max_queued_events");
    const long queued = std::atol(max.c_str());
    if (queued <= 0 || queued > 100000) GTEST_SKIP() << "max_queued_events " << max;
    TempDir t;
    InotifyFd in;
    ASSERT_GE(::inotify_add_watch(in.fd, t.path().c_str(), kMask), 0);
    for (long i = 0; i < queued + 10; ++i) {
        int fd =
            ::open(t.file(fmt::format("f{}", i)).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT_GE(fd, 0);
        ::close(fd);  // IN_CREATE, no IN_CLOSE_WRITE (nothing written)
    }
    WatchEvents w;
    for (int i = 0; i < 100 && !w.lost; ++i) {  // 64 reads of 16 KiB a call
        auto b = drainWatchEvents(in.fd);
        w.lost = w.lost || b.lost;
        w.names = w.names || b.names;
        w.lostWatches.insert(w.lostWatches.end(), b.lostWatches.begin(), b.lostWatches.end());
    }
    EXPECT_TRUE(w.names);
    EXPECT_TRUE(w.lost);
    EXPECT_EQ(w.lostWatches, std::vector<int>{-1});  // the overflow, not a watch
}

// Where inotify is trusted, against stat(1)'s name of the filesystem.
TEST(FileWatch, FilesystemsWhereInotifySeesEveryChange) {
    EXPECT_FALSE(inotifySeesEveryChange("/proc"));
    EXPECT_FALSE(inotifySeesEveryChange("/sys"));
    EXPECT_FALSE(inotifySeesEveryChange("/nonexistent/gpufault"));
    TempDir t;
    for (const std::string& dir : {std::string("/dev/shm"), t.path(), std::string("/")}) {
        std::string name = fsTypeName(dir);
        if (name.empty()) continue;
        bool local = name == "ext2/ext3" || name == "xfs" || name == "btrfs" || name == "tmpfs" ||
                     name == "f2fs" || name == "zfs";
        EXPECT_EQ(inotifySeesEveryChange(dir), local) << dir << " is " << name;
    }
}

namespace {

/// gpufaultd following SHM/logs/*.log (or `globs`), kmsg off, store and socket in a TempDir.
struct Watched {
    ShmDir shm;
    TempDir dir;
    std::string logs = shm.path + "/logs", store = dir.file("store.db"),
                sock = dir.file("ctl.sock"), conf = dir.file("gpufaultd.conf");
    std::unique_ptr<DaemonProcess> d;
    Watched() {
        if (shm.ok()) ::mkdir(logs.c_str(), 0755);
    }
    bool start(uint64_t poll_ms,
               const std::string& files_extra = "",
               const std::string& globs = "") {
        writeFile(conf,
                  fmt::format("[store]\npath = \"{}\"\n[kmsg]\nenabled = false\n[files]\n"
                              "globs = [\"{}\"]\npoll_interval_ms = {}\n{}"
                              "[control]\nsocket = \"{}\"\ngroup = \"\"\n",
                              store,
                              globs.empty() ? logs + "/*.log" : globs,
                              poll_ms,
                              files_extra,
                              sock));
        d = std::make_unique<DaemonProcess>(GPUFAULTD_BIN, conf, dir.path());
        return d->start() && d->waitNotify("READY=1", 30s);
    }
    void append(const std::string& name, const std::string& text) const {
        std::ofstream(logs + "/" + name, std::ios::app) << text << std::flush;
    }
    nlohmann::json files() const {
        auto j = nlohmann::json::parse(controlRequest(sock, "status"), nullptr, false);
        return j.is_object() && j.contains("files") ? j["files"] : nlohmann::json();
    }
    uint64_t scans() const {
        auto f = files();
        return f.is_object() ? f.value("scans", uint64_t{0}) : 0;
    }
    /// Records from files whose stored path is logs/`name` (a LIKE pattern).
    int64_t evidenceOf(const std::string& name) const {
        return storeCount(store,
                          fmt::format("SELECT count(*) FROM evidence e JOIN sources s ON "
                                      "s.id = e.source_id WHERE s.path LIKE '{}/{}'",
                                      logs,
                                      name));
    }
    bool stop() {
        d->signal(SIGTERM);
        auto rc = d->waitExit(30s);
        return rc && *rc == 0;
    }
};

}  // namespace

// Every pattern's directory watched on tmpfs: the poll tick (100 ms) expands nothing; a new
// file and a rename do; appends to a followed file do not, and are read.
TEST(DaemonFileWatch, AWatchedDirectoryIsExpandedOnItsNameEventsOnly) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    w.append("a.log", fmt::format("a.log started\n{}\n", kRocrFault));
    ASSERT_TRUE(w.start(100));
    ASSERT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 1; }, 10s)) << w.d->stderrText();
    auto f = w.files();
    ASSERT_TRUE(f.is_object());
    EXPECT_EQ(f["watched"], true);
    EXPECT_EQ(f["poll_interval_ms"], 100);
    EXPECT_NE(w.d->stderrText().find("files: inotify watches every pattern's directory"),
              std::string::npos)
        << w.d->stderrText();

    // 20 appends, each read and committed: no expansion of the patterns, neither by their
    // events nor by the ticks meanwhile (one allowed: the 30 s full look, on a slow machine).
    const uint64_t before = w.scans();
    for (int i = 0; i < 20; ++i) {
        w.append("a.log", std::string(kRocrFault) + "\n");
        ASSERT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 2 + i; }, 10s));
    }
    EXPECT_LE(w.scans(), before + 1);

    // A new file and a rotation by rename are name events: expanded, and followed.
    w.append("b.log", fmt::format("b.log started\n{}\n", kRocrFault));
    ASSERT_TRUE(eventually([&] { return w.evidenceOf("b.log") == 1; }, 10s));
    ASSERT_EQ(::rename((w.logs + "/b.log").c_str(), (w.logs + "/b.log.1").c_str()), 0);
    w.append("b.log", fmt::format("b.log started again\n{}\n", kRocrFault));
    ASSERT_TRUE(eventually([&] { return w.evidenceOf("b.log%") == 2; }, 10s)) << w.d->stderrText();
    EXPECT_GT(w.scans(), before + 1);
    EXPECT_TRUE(w.stop());
}

// The same directory with inotify off: expanded at every tick (the fallback for NFS & co.).
TEST(DaemonFileWatch, WithoutInotifyThePatternsAreExpandedAtEveryTick) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    ASSERT_TRUE(w.start(100, "inotify = false\n"));
    EXPECT_EQ(w.files()["watched"], false);
    EXPECT_TRUE(eventually([&] { return w.scans() >= 10; }, 20s)) << w.scans();
    w.append("a.log", fmt::format("a.log started\n{}\n", kRocrFault));
    EXPECT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 1; }, 10s));
    EXPECT_TRUE(w.stop());
}

// A pattern whose directory has a wildcard is not watched: every tick expands the patterns.
TEST(DaemonFileWatch, AWildcardDirectoryIsPolled) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    ASSERT_TRUE(w.start(100, "", w.shm.path + "/log*/*.log"));
    EXPECT_EQ(w.files()["watched"], false);
    EXPECT_NE(w.d->stderrText().find("files: patterns expanded at every poll tick"),
              std::string::npos)
        << w.d->stderrText();
    EXPECT_TRUE(eventually([&] { return w.scans() >= 10; }, 20s)) << w.scans();
    w.append("a.log", fmt::format("a.log started\n{}\n", kRocrFault));
    EXPECT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 1; }, 10s));
    EXPECT_TRUE(w.stop());
}

// The watched directory is removed and made again: its watch went with it; the next tick adds
// it again, and a file in the new directory is followed.
TEST(DaemonFileWatch, ARemovedAndRemadeDirectoryIsWatchedAgain) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    ASSERT_TRUE(w.start(100));
    ASSERT_EQ(w.files()["watched"], true);
    std::error_code ec;
    std::filesystem::remove_all(w.logs, ec);
    ASSERT_FALSE(ec);
    ASSERT_TRUE(eventually([&] { return w.files()["watched"] == false; }, 10s));
    ASSERT_EQ(::mkdir(w.logs.c_str(), 0755), 0);
    ASSERT_TRUE(eventually([&] { return w.files()["watched"] == true; }, 10s));
    w.append("c.log", fmt::format("c.log started\n{}\n", kRocrFault));
    EXPECT_TRUE(eventually([&] { return w.evidenceOf("c.log") == 1; }, 10s)) << w.d->stderrText();
    EXPECT_TRUE(w.stop());
}

// files.max_open = 1: the file left out is followed once the followed one is deleted and
// finished (2 s idle), though no name event comes then and the next full look is 30 s away.
TEST(DaemonFileWatch, AFileOverMaxOpenIsFollowedWhenASlotFrees) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    w.append("a.log", fmt::format("a.log started\n{}\n", kRocrFault));
    w.append("b.log", fmt::format("b.log started\n{}\n", kRocrFault));
    ASSERT_TRUE(w.start(500, "max_open = 1\n"));
    ASSERT_EQ(w.files()["watched"], true);
    std::string in, out;
    ASSERT_TRUE(eventually(
        [&] {
            for (auto [x, y] : {std::pair{"a.log", "b.log"}, std::pair{"b.log", "a.log"}})
                if (w.evidenceOf(x) == 1) {
                    in = x;
                    out = y;
                    return true;
                }
            return false;
        },
        10s));
    EXPECT_EQ(w.evidenceOf(out), 0);
    ASSERT_EQ(::unlink((w.logs + "/" + in).c_str()), 0);
    EXPECT_TRUE(eventually([&] { return w.evidenceOf(out) == 1; }, 15s)) << w.d->stderrText();
    EXPECT_TRUE(w.stop());
}

// Watched, with a tick a minute away: a followed file's appends are read on their events alone
// (the poll reads the files reported written, not every followed file).
TEST(DaemonFileWatch, AppendsAreReadOnTheirEventsAlone) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    for (int i = 0; i < 50; ++i)  // other followed files, never written again
        w.append(fmt::format("idle-{}.log", i), fmt::format("idle {} started\n", i));
    w.append("a.log", fmt::format("a.log started\n{}\n", kRocrFault));
    ASSERT_TRUE(w.start(60000));
    ASSERT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 1; }, 10s)) << w.d->stderrText();
    for (int i = 0; i < 5; ++i) {
        w.append("a.log", std::string(kRocrFault) + "\n");
        ASSERT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 2 + i; }, 10s)) << i;
    }
    EXPECT_TRUE(w.stop());
}

// A followed file written through a hard link in a directory no watch sees (follow_hardlinks):
// no event reports it; the tick's poll reads every followed file, so its lines come within a
// tick (500 ms) all the same.
TEST(DaemonFileWatch, AFileWrittenWhereNoWatchSeesItIsReadAtTheTick) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    w.append("a.log", fmt::format("a.log started\n{}\n", kRocrFault));
    std::string other = w.shm.path + "/elsewhere";
    ASSERT_EQ(::mkdir(other.c_str(), 0755), 0);
    ASSERT_EQ(::link((w.logs + "/a.log").c_str(), (other + "/a.log").c_str()), 0);
    ASSERT_TRUE(w.start(500, "follow_hardlinks = true\n"));
    ASSERT_EQ(w.files()["watched"], true);
    ASSERT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 1; }, 10s)) << w.d->stderrText();
    std::ofstream(other + "/a.log", std::ios::app) << kRocrFault << "\n" << std::flush;
    EXPECT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 2; }, 10s)) << w.d->stderrText();
    EXPECT_TRUE(w.stop());
}

// A parent of the watched directory renamed and made again (hostile review 160, MED 1): no event
// reaches the watch, which stays on the old directory; the tick sees the path lead elsewhere,
// watches the new directory and expands the patterns.
TEST(DaemonFileWatch, AParentRenamedAndMadeAgainIsWatchedAgain) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    const std::string p = w.shm.path + "/p", logs = p + "/logs";
    ASSERT_EQ(::mkdir(p.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(logs.c_str(), 0755), 0);
    ASSERT_TRUE(w.start(200, "", logs + "/*.log"));
    ASSERT_EQ(w.files()["watched"], true);
    ASSERT_EQ(::rename(p.c_str(), (p + ".old").c_str()), 0);
    ASSERT_EQ(::mkdir(p.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(logs.c_str(), 0755), 0);
    for (const char* name : {"c.log", "d.log"}) {  // the first, and one after the new watch
        std::ofstream(logs + "/" + name) << name << " started\n" << kRocrFault << "\n";
        EXPECT_TRUE(eventually(
            [&] {
                return storeCount(w.store,
                                  fmt::format("SELECT count(*) FROM evidence e JOIN sources s "
                                              "ON s.id = e.source_id WHERE s.path = '{}/{}'",
                                              logs,
                                              name)) == 1;
            },
            10s))
            << name << "\n"
            << w.d->stderrText();
    }
    EXPECT_EQ(w.files()["watched"], true);
    EXPECT_TRUE(w.stop());
}

// files.follow_hardlinks = false: a file with another link elsewhere is not followed; that
// link removed where no watch sees it (hostile review 160, MED 2), the file is followed at the
// next tick (a file not followed for its links keeps the ticks expanding the patterns).
TEST(DaemonFileWatch, AFileWhoseOtherLinkGoesIsFollowed) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    w.append("a.log", fmt::format("a.log started\n{}\n", kRocrFault));
    const std::string other = w.shm.path + "/elsewhere";
    ASSERT_EQ(::mkdir(other.c_str(), 0755), 0);
    ASSERT_EQ(::link((w.logs + "/a.log").c_str(), (other + "/a.log").c_str()), 0);
    ASSERT_TRUE(w.start(200));
    ASSERT_TRUE(eventually([&] { return w.files()["retrying"] == true; }, 10s));
    EXPECT_EQ(w.evidenceOf("a.log"), 0);
    ASSERT_EQ(::unlink((other + "/a.log").c_str()), 0);
    EXPECT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 1; }, 10s)) << w.d->stderrText();
    EXPECT_TRUE(eventually([&] { return w.files()["retrying"] == false; }, 10s));
    EXPECT_TRUE(w.stop());
}

// files.max_open = 1, held by a file whose first bytes are not enough to know it: once they
// show it compressed (never read, its descriptor closed), the file over the cap is followed
// (hostile review 160, MED 3: that slot started no look).
TEST(DaemonFileWatch, ASlotFreedByACompressedFileIsTaken) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    w.append("z.log", std::string("\x1f"));  // gzip's first byte only
    ASSERT_TRUE(w.start(500, "max_open = 1\n"));
    w.append("b.log", fmt::format("b.log started\n{}\n", kRocrFault));
    ASSERT_TRUE(eventually(
        [&] {
            auto st = nlohmann::json::parse(controlRequest(w.sock, "status"), nullptr, false);
            return st.is_object() && st.dump().find("files.max_open = 1") != std::string::npos;
        },
        10s));
    EXPECT_EQ(w.evidenceOf("b.log"), 0);
    w.append("z.log", std::string("\x8b\x08\x00\x00\x00\x00", 6));  // now a gzip header
    EXPECT_TRUE(eventually([&] { return w.evidenceOf("b.log") == 1; }, 10s)) << w.d->stderrText();
    EXPECT_TRUE(w.stop());
}

// Two patterns whose paths lead to one directory (`current` a symbolic link to `app`), then
// `current` moved to `app2` (hostile review 161, MED A): app keeps its watch — the one its
// path and, until then, current's led to — and app2 gets one; new files in both are followed.
TEST(DaemonFileWatch, APathMovedOffASharedDirectoryLeavesItsWatch) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    const std::string app = w.shm.path + "/app", app2 = w.shm.path + "/app2",
                      current = w.shm.path + "/current";
    ASSERT_EQ(::mkdir(app.c_str(), 0755), 0);
    ASSERT_EQ(::mkdir(app2.c_str(), 0755), 0);
    ASSERT_EQ(::symlink("app", current.c_str()), 0);
    ASSERT_TRUE(w.start(200, "", app + "/*.log\", \"" + current + "/*.log"));
    ASSERT_EQ(w.files()["watched"], true);
    ASSERT_EQ(::symlink("app2", (current + ".new").c_str()), 0);
    ASSERT_EQ(::rename((current + ".new").c_str(), current.c_str()), 0);  // ln -sfn, atomically
    auto rows = [&](const std::string& path) {
        return storeCount(w.store,
                          fmt::format("SELECT count(*) FROM evidence e JOIN sources s ON "
                                      "s.id = e.source_id WHERE s.path = '{}'",
                                      path));
    };
    ::usleep(600'000);  // two ticks: the move is seen and the watches are added again
    // (app2's file is found, and stored, under the pattern's path: current/b.log)
    for (const std::string& f : {current + "/b.log", app + "/c.log", app + "/d.log"}) {
        std::ofstream(f) << f << " started\n" << kRocrFault << "\n";
        EXPECT_TRUE(eventually([&] { return rows(f) == 1; }, 10s)) << f << "\n"
                                                                   << w.d->stderrText();
    }
    EXPECT_EQ(w.files()["watched"], true);
    EXPECT_TRUE(w.stop());
}

// A followed file deleted while its writer keeps writing (hostile review 161, LOW C): inotify
// names the write by the deleted name; with no file there now, the followed file of that path
// is read on the event, not at the tick (a minute away here).
TEST(DaemonFileWatch, ADeletedFileStillWrittenIsReadOnItsEvents) {
    Watched w;
    if (!w.shm.ok()) GTEST_SKIP() << "/dev/shm is no tmpfs here";
    const std::string a = w.logs + "/a.log";
    int fd = ::open(a.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    const std::string first = fmt::format("a.log started\n{}\n", kRocrFault);
    ASSERT_EQ(::write(fd, first.data(), first.size()), static_cast<ssize_t>(first.size()));
    ASSERT_TRUE(w.start(60000));
    ASSERT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 1; }, 10s)) << w.d->stderrText();
    ASSERT_EQ(::unlink(a.c_str()), 0);
    const std::string more = std::string(kRocrFault) + "\n";
    ASSERT_EQ(::write(fd, more.data(), more.size()), static_cast<ssize_t>(more.size()));
    EXPECT_TRUE(eventually([&] { return w.evidenceOf("a.log") == 2; }, 10s)) << w.d->stderrText();
    ::close(fd);
    EXPECT_TRUE(w.stop());
}
