// gpufaultd's configuration: defaults, every key, errors that name file, line and key, and hostile
// files (FIFO, directory, /dev/zero, NUL bytes, long socket paths) refused by the real daemon.
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/followed_log.h"
#include "tests/support/process.h"

using gpufault::daemon::loadConfig;
using gpufault::daemon::parseConfig;
using namespace gpufault::testing;
using namespace std::string_literals;

TEST(DaemonConfig, EmptyFileGivesTheDocumentedDefaults) {
    auto c = parseConfig("", "x.conf");
    ASSERT_TRUE(c) << c.error().text();
    EXPECT_EQ(c->store_path, "/var/lib/gpufault/gpufault.db");
    EXPECT_EQ(c->batch_lines, 10000u);
    EXPECT_EQ(c->batch_ms, 50u);
    EXPECT_TRUE(c->kmsg);
    EXPECT_EQ(c->socket_path, "/run/gpufault/gpufaultd.sock");
    EXPECT_TRUE(c->file_globs.empty());
    EXPECT_EQ(c->files_max_open, 512u);
    EXPECT_FALSE(c->follow_hardlinks);
    EXPECT_EQ(c->max_clients, 64u);
    EXPECT_EQ(c->idle_timeout_ms, 10000u);
    EXPECT_EQ(c->max_watchers, 16u);
    EXPECT_EQ(c->watch_queue_kib, 4096u);
    EXPECT_EQ(c->alloc_dir, "/run/gpufault-alloc");
}

TEST(DaemonConfig, EveryKeyIsRead) {
    auto c = parseConfig(R"(
[store]
path = "/srv/g.db"
max_size_mib = 512
max_age_days = 30
[commit]
batch_lines = 500
batch_ms = 20
dispatch_window = 16
correlate_ms = 250
[kmsg]
enabled = false
path = "/dev/kmsg"
[journal]
enabled = true
directory = "/var/log/journal/remote"
units = ["train.service", "slurmd.service"]
[files]
globs = ["/var/log/jobs/*.log*", "/tmp/hip_*"]
poll_interval_ms = 250
inotify = false
max_open = 100
follow_hardlinks = true
[allocations]
directory = "/srv/alloc"
[control]
socket = "/run/g.sock"
group = "wheel"
max_clients = 8
idle_timeout_ms = 2000
max_watchers = 2
watch_queue_kib = 256
[metrics]
path = "/var/lib/node_exporter/gpufault.prom"
interval_ms = 5000
)",
                         "full.conf");
    ASSERT_TRUE(c) << c.error().text();
    EXPECT_EQ(c->store_path, "/srv/g.db");
    EXPECT_EQ(c->max_store_mib, 512u);
    EXPECT_EQ(c->max_age_days, 30u);
    EXPECT_EQ(c->batch_lines, 500u);
    EXPECT_EQ(c->batch_ms, 20u);
    EXPECT_EQ(c->dispatch_window, 16);
    EXPECT_EQ(c->correlate_ms, 250u);
    EXPECT_FALSE(c->kmsg);
    EXPECT_TRUE(c->journal);
    EXPECT_EQ(c->journal_dir, "/var/log/journal/remote");
    ASSERT_EQ(c->journal_units.size(), 2u);
    EXPECT_EQ(c->journal_units[1], "slurmd.service");
    ASSERT_EQ(c->file_globs.size(), 2u);
    EXPECT_EQ(c->file_globs[1], "/tmp/hip_*");
    EXPECT_EQ(c->poll_ms, 250u);
    EXPECT_FALSE(c->inotify);
    EXPECT_EQ(c->socket_path, "/run/g.sock");
    EXPECT_EQ(c->socket_group, "wheel");
    EXPECT_EQ(c->files_max_open, 100u);
    EXPECT_TRUE(c->follow_hardlinks);
    EXPECT_EQ(c->max_clients, 8u);
    EXPECT_EQ(c->idle_timeout_ms, 2000u);
    EXPECT_EQ(c->max_watchers, 2u);
    EXPECT_EQ(c->watch_queue_kib, 256u);
    EXPECT_EQ(c->metrics_path, "/var/lib/node_exporter/gpufault.prom");
    EXPECT_EQ(c->metrics_ms, 5000u);
    EXPECT_EQ(c->alloc_dir, "/srv/alloc");
    auto off = parseConfig("[allocations]\ndirectory = \"\"\n", "off.conf");
    ASSERT_TRUE(off) << off.error().text();
    EXPECT_EQ(off->alloc_dir, "");
    auto rel = parseConfig("[allocations]\ndirectory = \"alloc\"\n", "rel.conf");
    ASSERT_FALSE(rel);
    EXPECT_EQ(rel.error().text(),
              "rel.conf:2: allocations.directory: 'alloc' is not an absolute path");
}

TEST(DaemonConfig, UnknownKeyNamesFileLineAndKey) {
    auto c = parseConfig("[store]\npath = \"/x.db\"\n\n[kmsg]\nenabeld = false\n", "/etc/g.conf");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().file, "/etc/g.conf");
    EXPECT_EQ(c.error().line, 5);
    EXPECT_EQ(c.error().key, "kmsg.enabeld");
    EXPECT_EQ(c.error().text(), "/etc/g.conf:5: kmsg.enabeld: unknown key");
}

TEST(DaemonConfig, UnknownSectionIsAnError) {
    auto c = parseConfig("[journald]\nunits = []\n", "g.conf");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().key, "journald");
    EXPECT_EQ(c.error().line, 1);
}

TEST(DaemonConfig, WrongTypeAndRangeAreErrors) {
    auto t = parseConfig("[commit]\nbatch_ms = \"50\"\n", "g.conf");
    ASSERT_FALSE(t);
    EXPECT_EQ(t.error().text(), "g.conf:2: commit.batch_ms: expected an integer");
    auto r = parseConfig("[commit]\nbatch_lines = 0\n", "g.conf");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().text(), "g.conf:2: commit.batch_lines: 0 is out of range [1, 10000000]");
    auto b = parseConfig("[kmsg]\nenabled = 1\n", "g.conf");
    ASSERT_FALSE(b);
    EXPECT_EQ(b.error().key, "kmsg.enabled");
}

TEST(DaemonConfig, GlobsMustBeAbsoluteStrings) {
    auto rel = parseConfig("[files]\nglobs = [\"logs/*.log\"]\n", "g.conf");
    ASSERT_FALSE(rel);
    EXPECT_EQ(rel.error().text(), "g.conf:2: files.globs: 'logs/*.log' is not an absolute path");
    auto num = parseConfig("[files]\nglobs = [1]\n", "g.conf");
    ASSERT_FALSE(num);
    EXPECT_EQ(num.error().key, "files.globs");
}

TEST(DaemonConfig, SyntaxErrorNamesTheLine) {
    auto c = parseConfig("[store]\npath = \"/x.db\"\n[files\n", "g.conf");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().file, "g.conf");
    EXPECT_EQ(c.error().line, 3);
    EXPECT_FALSE(c.error().message.empty());
}

TEST(DaemonConfig, MissingFileIsAnError) {
    auto c = gpufault::daemon::loadConfig("/nonexistent/gpufaultd.conf");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().text(), "/nonexistent/gpufaultd.conf: No such file or directory");
}

TEST(DaemonConfig, SocketPathMustFitSunPath) {
    // sun_path holds 108 bytes with the terminating NUL: 107 is the longest path.
    std::string fits = "/run/" + std::string(102, 's');
    auto ok = parseConfig("[control]\nsocket = \"" + fits + "\"\n", "g.conf");
    ASSERT_TRUE(ok) << ok.error().text();
    EXPECT_EQ(ok->socket_path.size(), 107u);
    auto c = parseConfig("[control]\nsocket = \"" + fits + "x\"\n", "g.conf");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().text(), "g.conf:2: control.socket: path longer than 107 bytes");
}

TEST(DaemonConfig, ControlServerRefusesALongPathWithAnErrorValue) {
    // The daemon's start-up step gets an error, not Asio's length_error exception.
    gpufault::daemon::State s;
    s.cfg.socket_path = "/tmp/" + std::string(200, 's') + ".sock";
    auto srv = gpufault::daemon::ControlServer::open(s);
    ASSERT_FALSE(srv);
    EXPECT_EQ(srv.error(), s.cfg.socket_path + ": a socket path must be 1 to 107 bytes long");
}

TEST(DaemonConfig, NulByteInAnyStringValueIsRefused) {
    struct Row {
        std::string toml;
        std::string text;
    };
    const Row rows[] = {
        {"[store]\npath = \"/var/lib/g\\u0000.db\"\n", "g.conf:2: store.path: contains a NUL byte"},
        {"[kmsg]\npath = \"/dev/kmsg\\u0000\"\n", "g.conf:2: kmsg.path: contains a NUL byte"},
        {"[journal]\ndirectory = \"/j\\u0000\"\n",
         "g.conf:2: journal.directory: contains a NUL byte"},
        {"[journal]\nunits = [\"a.service\", \"b\\u0000.service\"]\n",
         "g.conf:2: journal.units: contains a NUL byte"},
        {"[files]\nglobs = [\"/var/log/\\u0000*.log\"]\n",
         "g.conf:2: files.globs: contains a NUL byte"},
        {"\n[control]\nsocket = \"/run/g\\u0000.sock\"\n",
         "g.conf:3: control.socket: contains a NUL byte"},
        {"[control]\ngroup = \"gpu\\u0000fault\"\n",
         "g.conf:2: control.group: contains a NUL byte"},
        {"[metrics]\npath = \"/m\\u0000.prom\"\n", "g.conf:2: metrics.path: contains a NUL byte"},
        {"[allocations]\ndirectory = \"/a\\u0000\"\n",
         "g.conf:2: allocations.directory: contains a NUL byte"},
    };
    for (const auto& r : rows) {
        auto c = parseConfig(r.toml, "g.conf");
        ASSERT_FALSE(c) << r.toml;
        EXPECT_EQ(c.error().text(), r.text) << r.toml;
    }
    // A quoted key with a NUL byte is unknown, and shown whole.
    auto key = parseConfig("[store]\n\"pa\\u0000th\" = \"/x.db\"\n", "g.conf");
    ASSERT_FALSE(key);
    EXPECT_EQ(key.error().text(), "g.conf:2: store.pa\\0th: unknown key");
    auto section = parseConfig("[\"st\\u0000ore\"]\npath = \"/x.db\"\n", "g.conf");
    ASSERT_FALSE(section);
    EXPECT_EQ(section.error().text(), "g.conf:1: st\\0ore: unknown section or key");
    // A raw NUL byte outside a string is a syntax error on its line.
    auto raw = parseConfig("[store]\n\0path = \"/x.db\"\n"s, "g.conf");
    ASSERT_FALSE(raw);
    EXPECT_EQ(raw.error().line, 2) << raw.error().text();
}

TEST(DaemonConfig, OnlyARegularFileOfAtMostOneMiBIsRead) {
    TempDir d;
    std::string fifo = d.file("fifo.conf");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto f = loadConfig(fifo);  // no writer: reading it would wait forever
    ASSERT_FALSE(f);
    EXPECT_EQ(f.error().text(), fifo + ": not a regular file (a FIFO)");
    auto dir = loadConfig(d.path());
    ASSERT_FALSE(dir);
    EXPECT_EQ(dir.error().text(), d.path() + ": not a regular file (a directory)");
    auto zero = loadConfig("/dev/zero");  // endless bytes
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().text(), "/dev/zero: not a regular file (a character device)");

    // Exactly 1 MiB (a comment) is read; one byte more is refused.
    std::string big = "#" + std::string((1u << 20) - 2, 'x') + "\n";
    writeFile(d.file("1mib.conf"), big);
    auto ok = loadConfig(d.file("1mib.conf"));
    EXPECT_TRUE(ok) << ok.error().text();
    writeFile(d.file("big.conf"), big + "\n");
    auto over = loadConfig(d.file("big.conf"));
    ASSERT_FALSE(over);
    EXPECT_EQ(over.error().text(),
              d.file("big.conf") + ": larger than 1048576 bytes (1 MiB): not a configuration file");
}

// The real gpufaultd: every hostile config is refused with exit 2 and a message, by
// --check-config and at start-up alike (before, a long socket path passed the check and then
// aborted the daemon with an uncaught Asio exception, exit 134).
TEST(DaemonConfig, HostileConfigFilesExit2FromTheRealDaemon) {
    TempDir d;
    std::string fifo = d.file("fifo.conf"), longSock = d.file("long.conf");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    writeFile(longSock,
              "[store]\npath = \"" + d.file("g.db") +
                  "\"\n[kmsg]\nenabled = false\n"
                  "[control]\nsocket = \"" +
                  d.path() + "/" + std::string(120, 's') + "\"\n");
    writeFile(d.file("nul.conf"), "[store]\npath = \"/tmp/g\\u0000.db\"\n");
    struct Row {
        std::string file, message;
    };
    const Row rows[] = {
        {fifo, fifo + ": not a regular file (a FIFO)"},
        {d.path(), d.path() + ": not a regular file (a directory)"},
        {"/dev/zero", "/dev/zero: not a regular file (a character device)"},
        {longSock, longSock + ":6: control.socket: path longer than 107 bytes"},
        {d.file("nul.conf"), d.file("nul.conf") + ":2: store.path: contains a NUL byte"},
    };
    for (const auto& r : rows) {
        for (bool check : {true, false}) {
            std::vector<std::string> argv = {GPUFAULTD_BIN, "--config", r.file};
            if (check) argv.push_back("--check-config");
            auto p = run(argv, 30);  // 30 s: only a hang would reach it (then status 137)
            EXPECT_EQ(p.status, 2) << r.file << (check ? " --check-config: " : ": ") << p.err;
            EXPECT_NE(p.err.find(r.message), std::string::npos) << p.err;
        }
    }
}

// SIGHUP with the config file replaced by a FIFO (reading it used to wait forever, the whole
// daemon with it) or naming a socket path too long: refused, the running daemon goes on.
TEST(DaemonConfig, AReloadRefusesAFifoAndALongSocketAndKeepsRunning) {
    using namespace std::chrono_literals;
    TempDir d;
    std::string conf = d.file("g.conf"), sock = d.file("ctl.sock");
    std::string good = "[store]\npath = \"" + d.file("g.db") + "\"\n[kmsg]\nenabled = false\n" +
                       "[control]\nsocket = \"" + sock + "\"\ngroup = \"\"\n";
    writeFile(conf, good);
    DaemonProcess daemon(GPUFAULTD_BIN, conf, d.path());
    ASSERT_TRUE(startedReady(daemon));

    ASSERT_EQ(::unlink(conf.c_str()), 0);
    ASSERT_EQ(::mkfifo(conf.c_str(), 0600), 0);
    daemon.signal(SIGHUP);
    EXPECT_TRUE(eventually(
        [&] {
            return daemon.stderrText().find("reload: " + conf +
                                            ": not a regular file (a FIFO); "
                                            "keeping the running configuration") !=
                   std::string::npos;
        },
        5s))
        << daemon.stderrText();
    EXPECT_NE(controlRequest(sock, "status").find("\"pid\":"), std::string::npos);

    ASSERT_EQ(::unlink(conf.c_str()), 0);
    writeFile(conf, "[control]\nsocket = \"" + d.path() + "/" + std::string(120, 'x') + "\"\n");
    daemon.signal(SIGHUP);
    EXPECT_TRUE(eventually(
        [&] {
            return daemon.stderrText().find(conf +
                                            ":2: control.socket: path longer than 107 "
                                            "bytes; keeping") != std::string::npos;
        },
        5s))
        << daemon.stderrText();
    EXPECT_NE(controlRequest(sock, "status").find("\"pid\":"), std::string::npos);
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.waitExit(5s), 0) << daemon.stderrText();
}

TEST(DaemonConfig, CoreDirectoriesAndTheirCap) {
    auto d = parseConfig("", "x.conf");
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->core_dirs.empty());
    EXPECT_EQ(d->core_max_mib, 16384u);
    EXPECT_EQ(d->core_unwind_seconds, 60u);
    auto c = parseConfig(
        "[cores]\ndirectories = [\"/var/lib/systemd/coredump\", \"/var/crash\"]\n"
        "max_unpacked_mib = 2048\ntemp_dir = \"/srv/tmp\"\nunwind_seconds = 300\n",
        "x.conf");
    ASSERT_TRUE(c) << c.error().text();
    EXPECT_EQ(c->core_dirs, (std::vector<std::string>{"/var/lib/systemd/coredump", "/var/crash"}));
    EXPECT_EQ(c->core_max_mib, 2048u);
    EXPECT_EQ(c->core_tmp_dir, "/srv/tmp");
    EXPECT_EQ(c->core_unwind_seconds, 300u);
    auto rel = parseConfig("[cores]\ndirectories = [\"crash\"]\n", "x.conf");
    ASSERT_FALSE(rel);
    EXPECT_EQ(rel.error().text(), "x.conf:2: cores.directories: 'crash' is not an absolute path");
    auto zero = parseConfig("[cores]\nmax_unpacked_mib = 0\n", "x.conf");
    ASSERT_FALSE(zero);
    EXPECT_EQ(zero.error().key, "cores.max_unpacked_mib");
    auto noTime = parseConfig("[cores]\nunwind_seconds = 0\n", "x.conf");
    ASSERT_FALSE(noTime);
    EXPECT_EQ(noTime.error().key, "cores.unwind_seconds");
}

TEST(DaemonConfig, DiagnoseSection) {
    auto d = parseConfig("", "x.conf");
    ASSERT_TRUE(d);
    EXPECT_TRUE(d->diagnose);
    EXPECT_EQ(d->sysfs_root, "/sys");
    EXPECT_EQ(d->proc_root, "/proc");
    auto c = parseConfig(
        "[diagnose]\nenabled = false\nsysfs_root = \"/srv/sys\"\nproc_root = \"/srv/proc\"\n",
        "x.conf");
    ASSERT_TRUE(c) << c.error().text();
    EXPECT_FALSE(c->diagnose);
    EXPECT_EQ(c->sysfs_root, "/srv/sys");
    EXPECT_EQ(c->proc_root, "/srv/proc");
    auto typo = parseConfig("[diagnose]\nenable = false\n", "x.conf");
    ASSERT_FALSE(typo);
    EXPECT_EQ(typo.error().key, "diagnose.enable");
}

// Hostile review of gpufaultd (issue 3, LOW): a file with two bad keys reported only the first.
TEST(DaemonConfig, EveryErrorOfAFileIsReportedInFileOrder) {
    auto c = parseConfig(
        "[store]\npath = \"/x.db\"\n[kmsg]\nenabeld = false\n[commit]\nbatch_ms = \"50\"\n"
        "[nosuch]\nx = 1\n",
        "g.conf");
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().line, 4);
    EXPECT_EQ(c.error().key, "kmsg.enabeld");
    EXPECT_EQ(c.error().text(),
              "g.conf:4: kmsg.enabeld: unknown key\n"
              "g.conf:6: commit.batch_ms: expected an integer\n"
              "g.conf:7: nosuch: unknown section or key");
    auto one = parseConfig("[kmsg]\nenabeld = false\n", "g.conf");
    ASSERT_FALSE(one);
    EXPECT_TRUE(one.error().more.empty());
}

// control.group naming a group that does not exist (the daemon used to warn and go on, only
// root could connect) and metrics.path in a directory that does not exist are errors naming
// file, line and key, with exit 2, at --check-config and at start; with another bad key too,
// every error is printed.
TEST(DaemonConfig, AMissingGroupOrMetricsDirectoryIsAnErrorOfTheRealDaemon) {
    TempDir d;
    const std::string conf = d.file("g.conf");
    writeFile(conf,
              "[store]\npath = \"" + d.file("g.db") +
                  "\"\n[kmsg]\nenabled = false\n[control]\nsocket = \"" + d.file("ctl.sock") +
                  "\"\ngroup = \"nosuchgroup-gpufault\"\n[metrics]\npath = \"" +
                  d.file("nodir/gpufault.prom") + "\"\n");
    const std::string group = conf +
                              ":7: control.group: group 'nosuchgroup-gpufault' does not exist "
                              "(create it, or set group = \"\": only root may connect)";
    const std::string metrics =
        conf + ":9: metrics.path: directory " + d.file("nodir") + " does not exist";
    for (bool check : {true, false}) {
        std::vector<std::string> argv = {GPUFAULTD_BIN, "--config", conf};
        if (check) argv.push_back("--check-config");
        auto p = run(argv, 30);
        EXPECT_EQ(p.status, 2) << p.err;
        EXPECT_NE(p.err.find(group + "\n"), std::string::npos) << p.err;
        EXPECT_NE(p.err.find(metrics + "\n"), std::string::npos) << p.err;
        EXPECT_FALSE(std::filesystem::exists(d.file("ctl.sock")));
    }
    // Fixed, both pass; a group that exists (the file's owner's primary group) too.
    struct group* g = ::getgrgid(::getgid());
    ASSERT_NE(g, nullptr);
    ASSERT_EQ(::mkdir(d.file("nodir").c_str(), 0755), 0);
    std::string text = readFile(conf);
    text.replace(text.find("nosuchgroup-gpufault"), 20, g->gr_name);
    writeFile(conf, text);
    auto ok = run({GPUFAULTD_BIN, "--config", conf, "--check-config"}, 30);
    EXPECT_EQ(ok.status, 0) << ok.err;
    EXPECT_EQ(ok.out, conf + ": valid\n");
}

// hostile3b L9: store.path naming a directory passed --check-config, then the daemon exited 1
// with "unable to open database file" naming no line or key.
TEST(DaemonConfig, AStorePathThatIsADirectoryIsAnErrorNamingTheKey) {
    TempDir d;
    const std::string conf = d.file("g.conf");
    ::mkdir(d.file("store").c_str(), 0755);
    writeFile(conf, "[store]\npath = \"" + d.file("store") + "\"\n[kmsg]\nenabled = false\n");
    const std::string want = conf + ":2: store.path: " + d.file("store") +
                             " is not a regular file (a directory or a device: name the store "
                             "file itself, e.g. " +
                             d.file("store") + "/gpufault.db)";
    for (bool check : {true, false}) {
        std::vector<std::string> argv = {GPUFAULTD_BIN, "--config", conf};
        if (check) argv.push_back("--check-config");
        auto p = run(argv, 30);
        EXPECT_EQ(p.status, 2) << p.err;
        EXPECT_NE(p.err.find(want + "\n"), std::string::npos) << p.err;
    }
}
