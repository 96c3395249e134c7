// Every real fixture with amdgpu page faults (tests/data/real), newest line first as
// `journalctl -r` or `tac` print it (alone, and before a forward copy of itself), through the
// built binary: the same amdgpu_page_fault records as the fixture read forward (all fields but
// the record's line, raw text and ids, which depend on the reading order). docs/formats.md,
// Kernel log, says how the order is told.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kData = GPUFAULT_SOURCE_DIR "/tests/data/real";

// The cases whose expected records include an amdgpu page fault.
std::vector<std::string> amdgpuCases() {
    std::vector<std::string> out;
    const std::string suffix = ".expected.jsonl";
    for (auto& e : std::filesystem::directory_iterator(kData)) {
        std::string n = e.path().filename().string();
        if (n.size() <= suffix.size() || !n.ends_with(suffix)) continue;
        if (readFile(e.path().string()).find("\"amdgpu_page_fault\"") == std::string::npos)
            continue;
        out.push_back(n.substr(0, n.size() - suffix.size()));
    }
    std::sort(out.begin(), out.end());
    return out;
}

// The lines of `text` last first (`tac`: each line keeps its own ending).
std::string reversedLines(const std::string& text) {
    std::vector<std::string> lines;
    size_t b = 0;
    while (b < text.size()) {
        size_t e = text.find('\n', b);
        e = e == std::string::npos ? text.size() : e + 1;
        lines.push_back(text.substr(b, e - b));
        b = e;
    }
    if (!lines.empty() && !lines.back().ends_with('\n')) lines.back() += '\n';
    std::string out;
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) out += *it;
    return out;
}

// The amdgpu_page_fault records of `file` ingested into a new store, each without the fields
// that name its place in the file, sorted.
std::vector<std::string> amdgpuRecords(const TempDir& tmp,
                                       const std::string& db,
                                       const std::string& file) {
    auto ing = run({GPUFAULT_BIN, "--db", tmp.file(db), "ingest", file}, 20);
    EXPECT_EQ(ing.status, 0) << ing.err;
    auto ev =
        run({GPUFAULT_BIN, "--db", tmp.file(db), "events", "--json", "--kind", "amdgpu_page_fault"},
            20);
    EXPECT_EQ(ev.status, 0) << ev.err;
    std::vector<std::string> out;
    for (auto& r : parseJsonLines(ev.out)) {
        for (const char* k : {"id", "line", "raw", "source"}) r.erase(k);
        out.push_back(r.dump());
    }
    std::sort(out.begin(), out.end());
    return out;
}

class RealFixtureReversed : public ::testing::TestWithParam<std::string> {};

TEST_P(RealFixtureReversed, AmdgpuFaultsMatchForward) {
    const std::string txt = kData + "/" + GetParam() + ".txt";
    TempDir tmp;
    writeFile(tmp.file("reversed.txt"), reversedLines(readFile(txt)));
    auto forward = amdgpuRecords(tmp, "fwd.db", txt);
    ASSERT_FALSE(forward.empty());
    auto reversed = amdgpuRecords(tmp, "rev.db", tmp.file("reversed.txt"));
    EXPECT_EQ(reversed, forward);
}

// The fixture newest first, then the fixture again oldest first, in one file (`journalctl -r`
// pasted before `journalctl`): every forward record twice, none cut or merged at the seam.
TEST_P(RealFixtureReversed, NewestFirstThenForwardCopyGivesEveryRecordTwice) {
    const std::string txt = kData + "/" + GetParam() + ".txt";
    std::string text = readFile(txt);
    if (!text.empty() && !text.ends_with('\n')) text += '\n';
    TempDir tmp;
    writeFile(tmp.file("mixed.txt"), reversedLines(text) + text);
    auto forward = amdgpuRecords(tmp, "fwd.db", txt);
    ASSERT_FALSE(forward.empty());
    std::vector<std::string> twice;
    for (const auto& r : forward) twice.insert(twice.end(), 2, r);
    EXPECT_EQ(amdgpuRecords(tmp, "mixed.db", tmp.file("mixed.txt")), twice);
}

INSTANTIATE_TEST_SUITE_P(Corpus,
                         RealFixtureReversed,
                         ::testing::ValuesIn(amdgpuCases()),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                             return "case_" + i.param.substr(0, 3);
                         });

}  // namespace
}  // namespace gpufault::testing
