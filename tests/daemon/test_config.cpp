// gpufaultd's configuration: defaults, every key, and errors that name file, line and key.
#include <gtest/gtest.h>

#include "daemon/config.h"

using gpufault::daemon::parseConfig;

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
