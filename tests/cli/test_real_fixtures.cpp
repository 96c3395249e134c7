// Every real fixture (tests/data/real) through the built binary, checked as the corpus README
// says: `gpufault --db TMP ingest CASE.txt`, then `events --json` against CASE.expected.jsonl.
// A ratchet: cases listed in tests/cli/fixtures_pending.txt may still fail (they are skipped with
// the differences printed); a listed case that passes fails the test until it is removed from
// the list, and an unlisted case that fails is a regression.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kData = GPUFAULT_SOURCE_DIR "/tests/data/real";
/// Excerpts of public bug reports that we found ourselves (tests/data/reports/README.md), checked
/// the same way.
const std::string kReports = GPUFAULT_SOURCE_DIR "/tests/data/reports";

std::vector<std::string> cases(const std::string& dir = kData) {
    std::vector<std::string> out;
    for (auto& e : std::filesystem::directory_iterator(dir)) {
        std::string n = e.path().filename().string();
        const std::string suffix = ".expected.jsonl";
        if (n.size() > suffix.size() && n.ends_with(suffix))
            out.push_back(n.substr(0, n.size() - suffix.size()));
    }
    std::sort(out.begin(), out.end());
    return out;
}

std::set<std::string> pending() {
    std::set<std::string> out;
    std::ifstream in(GPUFAULT_SOURCE_DIR "/tests/cli/fixtures_pending.txt");
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        out.insert(line.substr(0, line.find_first_of(" \t")));
    }
    return out;
}

/// The problems of case `name` of `dir` (CASE.txt through the binary against CASE.expected.jsonl).
std::string checkOne(const std::string& dir, const std::string& name) {
    TempDir tmp;
    std::string db = tmp.file("db");
    auto ing = run({GPUFAULT_BIN, "--db", db, "ingest", dir + "/" + name + ".txt"}, 20);
    if (ing.status != 0) return "  ingest failed: " + ing.err + "\n";
    auto ev = run({GPUFAULT_BIN, "--db", db, "events", "--json"}, 20);
    if (ev.status != 0) return "  events failed: " + ev.err + "\n";
    auto problems = checkCase(parseJsonLines(readFile(dir + "/" + name + ".expected.jsonl")),
                              parseJsonLines(ev.out));
    std::string report;
    for (auto& p : problems) report += "  " + p + "\n";
    return report;
}

class RealFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(RealFixture, EventsMatchExpected) {
    const std::string name = GetParam();
    const std::string report = checkOne(kData, name);
    const bool ok = report.empty();
    bool isPending = pending().count(name) > 0;
    if (isPending) {
        if (ok) FAIL() << name << " passes now: remove it from tests/cli/fixtures_pending.txt";
        GTEST_SKIP() << "pending (tests/cli/fixtures_pending.txt):\n" << report;
    }
    EXPECT_TRUE(ok) << name << " regressed:\n" << report;
}

class ReportExcerpt : public ::testing::TestWithParam<std::string> {};

TEST_P(ReportExcerpt, EventsMatchExpected) {
    const std::string report = checkOne(kReports, GetParam());
    EXPECT_TRUE(report.empty()) << GetParam() << ":\n" << report;
}

INSTANTIATE_TEST_SUITE_P(Reports,
                         ReportExcerpt,
                         ::testing::ValuesIn(cases(kReports)),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                             return "report_" + i.param.substr(0, 2);
                         });

INSTANTIATE_TEST_SUITE_P(Corpus,
                         RealFixture,
                         ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                             std::string s = "case_" + i.param.substr(0, 3);
                             return s;
                         });

TEST(RealFixtureList, PendingListNamesExistingCases) {
    auto all = cases();
    ASSERT_EQ(all.size(), 79u) << "the corpus in tests/data/real changed size";
    for (auto& p : pending())
        EXPECT_TRUE(std::find(all.begin(), all.end(), p) != all.end()) << p << " is not a case";
}

}  // namespace
}  // namespace gpufault::testing
