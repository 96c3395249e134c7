// The Prometheus textfile gpufaultd writes, read back from disk: every metric family has one
// `# HELP` (what it counts, with its unit) and one `# TYPE` before its samples, as
// node_exporter's textfile collector and the exposition format ask.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "tests/daemon/daemon_harness.h"
#include "tests/daemon/followed_log.h"
#include "tests/support/process.h"

using namespace gpufault::testing;
using namespace std::chrono_literals;

namespace {

struct Family {
    std::string help, type;
    int helps = 0, types = 0, samples = 0;
    bool sampleBeforeHead = false;
};

/// The metric name of a sample line: up to `{` or the space before the value.
std::string sampleName(const std::string& line) {
    return line.substr(0, line.find_first_of("{ "));
}

}  // namespace

TEST(DaemonMetrics, EveryFamilyHasHelpWithItsUnitAndType) {
    TempDir dir;
    std::string logs = dir.file("logs"), metrics = dir.file("gpufault.prom");
    ::mkdir(logs.c_str(), 0755);
    writeFile(logs + "/job.log",
              "Memory access fault by GPU node-1 (Agent handle: 0x55d4c0a1b2c0) on address "
              "0x7f6459a00000. Reason: Page not present or supervisor privilege.\n");
    writeFile(dir.file("gpufaultd.conf"),
              fmt::format("[store]\npath = \"{}\"\n[kmsg]\nenabled = false\n[files]\nglobs = "
                          "[\"{}/*.log\"]\n[control]\nsocket = \"{}\"\ngroup = \"\"\n[metrics]\n"
                          "path = \"{}\"\ninterval_ms = 100\n[allocations]\ndirectory = \"\"\n",
                          dir.file("store.db"),
                          logs,
                          dir.file("ctl.sock"),
                          metrics));
    DaemonProcess d(GPUFAULTD_BIN, dir.file("gpufaultd.conf"), dir.path());
    ASSERT_TRUE(startedReady(d));
    const std::string fault = "gpufault_evidence{kind=\"rocr_memory_fault\",gpu=\"node-1\"} 1\n";
    ASSERT_TRUE(eventually([&] { return readFile(metrics).find(fault) != std::string::npos; }, 5s))
        << readFile(metrics) << d.stderrText();
    std::string text = readFile(metrics);
    d.signal(SIGTERM);
    EXPECT_EQ(d.waitExit(2s), 0);

    std::map<std::string, Family> fams;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
            std::string rest = line.substr(7);
            size_t sp = rest.find(' ');
            ASSERT_NE(sp, std::string::npos) << line;
            Family& f = fams[rest.substr(0, sp)];
            if (line[2] == 'H') {
                f.help = rest.substr(sp + 1);
                ++f.helps;
            } else {
                f.type = rest.substr(sp + 1);
                ++f.types;
            }
            continue;
        }
        ASSERT_FALSE(line.empty() || line[0] == '#') << "unexpected line: " << line;
        Family& f = fams[sampleName(line)];
        if (f.helps == 0 || f.types == 0) f.sampleBeforeHead = true;
        ++f.samples;
    }
    // The unit (or what is counted) each family's HELP must name; a family missing from this
    // list, or one the file lacks, fails the test.
    const std::map<std::string, std::pair<std::string, std::string>> want = {
        {"gpufault_evidence", {"gauge", "a count of records"}},
        {"gpufault_incidents", {"gauge", "a count of incidents"}},
        {"gpufault_source_lines_total", {"counter", "Lines read"}},
        {"gpufault_source_lag", {"gauge", "bytes for a file"}},
        {"gpufault_source_lost_records_total", {"counter", "Records lost"}},
        {"gpufault_source_lost_bytes_total", {"counter", "Bytes of a file"}},
        {"gpufault_files_not_followed", {"gauge", "a count of files"}},
        {"gpufault_store_bytes", {"gauge", "in bytes"}},
        {"gpufault_store_error", {"gauge", "else 0"}},
        {"gpufault_commits_total", {"counter", "transactions committed"}},
    };
    std::set<std::string> seen;
    for (const auto& [name, f] : fams) {
        seen.insert(name);
        SCOPED_TRACE(name);
        EXPECT_EQ(f.helps, 1);
        EXPECT_EQ(f.types, 1);
        EXPECT_FALSE(f.sampleBeforeHead);
        auto it = want.find(name);
        ASSERT_NE(it, want.end()) << "a metric without an expected unit: " << name;
        EXPECT_EQ(f.type, it->second.first);
        EXPECT_NE(f.help.find(it->second.second), std::string::npos) << f.help;
        EXPECT_EQ(name.ends_with("_total"), f.type == "counter");
        // The exposition format: HELP text escapes only `\` and newlines; none is written.
        EXPECT_EQ(f.help.find('\\'), std::string::npos) << f.help;
        EXPECT_GE(f.help.size(), 30u) << f.help;
    }
    for (const auto& [name, _] : want) EXPECT_TRUE(seen.contains(name)) << name << " missing";
    // The followed file's stream: its lines and its lag (all read) as samples.
    EXPECT_NE(text.find(fmt::format(
                  "gpufault_source_lines_total{{source=\"file\",name=\"{}/job.log\"}} 1\n", logs)),
              std::string::npos)
        << text;
    EXPECT_NE(text.find(fmt::format(
                  "gpufault_source_lag{{source=\"file\",name=\"{}/job.log\"}} 0\n", logs)),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("gpufault_store_error 0\n"), std::string::npos) << text;
}
