// The shipped unit against the shipped configuration, and each directive that would cut off a
// source.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "daemon/hardening.h"

using namespace gpufault::daemon;

namespace {

std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

const std::string kUnitPath = std::string(GPUFAULT_SOURCE_DIR) + "/packaging/gpufaultd.service";
const std::string kConfPath = std::string(GPUFAULT_SOURCE_DIR) + "/packaging/gpufaultd.conf";

Config shippedConfig() {
    auto c = loadConfig(kConfPath);
    EXPECT_TRUE(c) << c.error().text();
    return c ? *c : Config{};
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += x + "\n";
    return s;
}

}  // namespace

TEST(Hardening, ShippedUnitKeepsEverySourceOfTheShippedConfig) {
    std::string unit = slurp(kUnitPath);
    ASSERT_FALSE(unit.empty());
    Config c = shippedConfig();
    EXPECT_TRUE(c.kmsg);
    // The package follows the crash stores of systemd-coredump and apport out of the box.
    EXPECT_EQ(c.core_dirs,
              (std::vector<std::string>{
                  "/var/lib/systemd/coredump", "/var/crash", "/var/lib/apport/coredump"}));
    auto problems = unitContradictions(unit, c);
    EXPECT_TRUE(problems.empty()) << joined(problems);
    // The documented metrics directory and a job-log directory are fine too.
    c.metrics_path = "/var/lib/prometheus/node-exporter/gpufault.prom";
    c.file_globs = {"/var/log/gpu-jobs/*.log*", "/home/*/runs/*.log"};
    problems = unitContradictions(unit, c);
    EXPECT_TRUE(problems.empty()) << joined(problems);
}

TEST(Hardening, ShippedTmpfilesCreatesTheAllocationDirectoryStickyAndWritableByJobs) {
    // The shipped configuration follows the shim's directory; tmpfiles.d must create it where
    // every job may create its file (wx for all) but none may list, rename or remove another's.
    Config c = shippedConfig();
    ASSERT_EQ(c.alloc_dir, "/run/gpufault-alloc");
    std::istringstream tmpfiles(
        slurp(std::string(GPUFAULT_SOURCE_DIR) + "/packaging/gpufault.tmpfiles"));
    std::string line, found;
    for (std::string l; std::getline(tmpfiles, l);) {
        std::istringstream w(l);
        std::string type, path, mode, user, group, age;
        if (w >> type >> path >> mode >> user >> group >> age && path == c.alloc_dir)
            found = type + " " + mode + " " + user + " " + group;
    }
    EXPECT_EQ(found, "d 1733 root root");
    // The unit must neither hide it nor drop the capability that reads jobs' 0600 files.
    std::string unit = slurp(kUnitPath);
    EXPECT_NE(unit.find("CAP_DAC_READ_SEARCH"), std::string::npos);
    auto cut = unit;
    cut.replace(cut.find(" CAP_DAC_READ_SEARCH"), 20, "");
    auto p = unitContradictions(cut, c);
    ASSERT_EQ(p.size(), 2u) << joined(p);
    EXPECT_EQ(p[0],
              "CapabilityBoundingSet= lacks CAP_DAC_READ_SEARCH: jobs' allocation files (mode "
              "0600) are unreadable (allocations.directory)");
    EXPECT_EQ(p[1],
              "CapabilityBoundingSet= lacks CAP_DAC_READ_SEARCH: other users' cores are "
              "unreadable (cores.directories)");
    c.alloc_dir = "/tmp/alloc";
    p = unitContradictions(unit, c);
    ASSERT_EQ(p.size(), 1u) << joined(p);
    EXPECT_EQ(p[0],
              "PrivateTmp=yes gives the service its own /tmp: '/tmp/alloc' sees no job's files "
              "(allocations.directory)");
}

TEST(Hardening, PrivateTmpHidesLogsUnderTmp) {
    Config c = shippedConfig();
    c.file_globs = {"/tmp/hip_log_*"};
    auto p = unitContradictions(slurp(kUnitPath), c);
    ASSERT_EQ(p.size(), 1u) << joined(p);
    EXPECT_EQ(p[0],
              "PrivateTmp=yes gives the service its own /tmp: '/tmp/hip_log_*' sees no job's "
              "files (files.globs)");
}

TEST(Hardening, CoreDirectoriesNeedTheirPathsAndCapability) {
    Config c = shippedConfig();
    c.core_dirs = {"/tmp/cores", "/home/ci/cores", "/var/crash"};
    std::string unit = slurp(kUnitPath);
    unit +=
        "\n[Service]\nProtectHome=yes\nInaccessiblePaths=/var/crash\n"
        "CapabilityBoundingSet=\nCapabilityBoundingSet=CAP_SYSLOG\n";
    auto p = unitContradictions(unit, c);
    auto has = [&](const std::string& s) { return std::find(p.begin(), p.end(), s) != p.end(); };
    EXPECT_TRUE(
        has("PrivateTmp=yes gives the service its own /tmp: '/tmp/cores' sees no core "
            "(cores.directories)"))
        << joined(p);
    EXPECT_TRUE(
        has("ProtectHome=yes hides '/home/ci/cores' (cores.directories; read-only would "
            "do)"))
        << joined(p);
    EXPECT_TRUE(has("InaccessiblePaths= hides '/var/crash' (cores.directories)")) << joined(p);
    EXPECT_TRUE(
        has("CapabilityBoundingSet= lacks CAP_DAC_READ_SEARCH: other users' cores are "
            "unreadable (cores.directories)"))
        << joined(p);
}

TEST(Hardening, KernelLogDirectivesCutOffKmsg) {
    Config c = shippedConfig();
    std::string unit = slurp(kUnitPath);
    auto p = unitContradictions(unit + "[Service]\nProtectKernelLogs=yes\nPrivateDevices=yes\n", c);
    ASSERT_EQ(p.size(), 2u) << joined(p);
    EXPECT_EQ(p[0], "ProtectKernelLogs=yes hides /dev/kmsg (kmsg.enabled)");
    EXPECT_EQ(p[1], "PrivateDevices=yes hides /dev/kmsg (kmsg.enabled)");
    // A unit may repeat [Service] (drop-ins do). An empty assignment resets DeviceAllow=: the closed policy then takes /dev/kmsg away.
    p = unitContradictions(unit + "[Service]\nDeviceAllow=\n", c);
    ASSERT_EQ(p.size(), 1u) << joined(p);
    EXPECT_EQ(p[0], "DevicePolicy=closed without DeviceAllow=/dev/kmsg r (kmsg.enabled)");
    p = unitContradictions("[Service]\nCapabilityBoundingSet=CAP_CHOWN\n", c);
    ASSERT_EQ(p.size(), 4u) << joined(p);
    EXPECT_NE(p[0].find("lacks CAP_SYSLOG"), std::string::npos);
    EXPECT_NE(p[1].find("lacks CAP_SYS_PTRACE"), std::string::npos);
    EXPECT_NE(p[2].find("lacks CAP_DAC_READ_SEARCH"), std::string::npos);  // allocation files
    EXPECT_NE(p[3].find("lacks CAP_DAC_READ_SEARCH"), std::string::npos);  // cores
    p = unitContradictions("[Service]\nCapabilityBoundingSet=~CAP_SYSLOG CAP_SYS_ADMIN\n", c);
    ASSERT_EQ(p.size(), 1u) << joined(p);
    EXPECT_NE(p[0].find("lacks CAP_SYSLOG"), std::string::npos);
    p = unitContradictions(unit + "[Service]\nProtectProc=invisible\n", c);
    ASSERT_EQ(p.size(), 1u) << joined(p);
    EXPECT_EQ(p[0], "ProtectProc=invisible hides faulting processes' /proc/PID (process snapshots)");
    // With the kernel log off, none of this matters.
    c.kmsg = false;
    EXPECT_TRUE(unitContradictions(unit + "[Service]\nProtectKernelLogs=yes\n", c).empty());
}

TEST(Hardening, ReadOnlySystemNeedsWritableStoreSocketAndMetrics) {
    Config c;
    c.kmsg = false;
    c.metrics_path = "/var/lib/node_exporter/g.prom";
    auto p = unitContradictions("[Service]\nProtectSystem=strict\nReadWritePaths=/run/gpufault\n", c);
    ASSERT_EQ(p.size(), 2u) << joined(p);
    EXPECT_EQ(p[0],
              "ProtectSystem=strict makes the store /var/lib/gpufault/gpufault.db read-only "
              "(store.path)");
    EXPECT_EQ(p[1], "ProtectSystem=strict makes /var/lib/node_exporter read-only (metrics.path)");
    p = unitContradictions(
        "[Service]\nProtectSystem=strict\nStateDirectory=gpufault\nReadWritePaths=/run/gpufault "
        "-/var/lib/node_exporter\n",
        c);
    EXPECT_TRUE(p.empty()) << joined(p);
}

TEST(Hardening, HomeAndAddressFamilies) {
    Config c;
    c.kmsg = false;
    c.file_globs = {"/home/*/job.log"};
    auto p = unitContradictions(
        "[Service]\nProtectHome=yes\nRestrictAddressFamilies=AF_INET AF_INET6\n", c);
    ASSERT_EQ(p.size(), 2u) << joined(p);
    EXPECT_EQ(p[0], "ProtectHome=yes hides '/home/*/job.log' (files.globs; read-only would do)");
    EXPECT_NE(p[1].find("forbids AF_UNIX"), std::string::npos);
    EXPECT_TRUE(unitContradictions("[Service]\nProtectHome=read-only\n", c).empty());
    // Directives outside [Service] do not count.
    EXPECT_TRUE(unitContradictions("[Unit]\nProtectHome=yes\n", c).empty());
}
