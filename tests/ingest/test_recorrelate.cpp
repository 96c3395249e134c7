// Re-correlation in place (gpufaultd's worker): on the real fixture logs, the incidents it
// leaves are the ones a full replace leaves, whatever was stored before (nothing, an older
// correlation, a pass interrupted halfway); an unchanged store costs no write, and incidents
// that did not change keep their ids.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "ingest/ingest.h"
#include "ingest/recorrelate.h"
#include "schema/incident_rows.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

namespace fs = std::filesystem;

/// An incident as text, without its id: fields, then members sorted (first occurrence wins).
using Canon = std::set<std::string>;

std::string canonOf(int64_t first, const IncidentRecord& r) {
    std::string s = fmt::format(
        "first {} kind {} vendor {} address {} pid {} process {} reason {} "
        "kernel {} signature {}",
        first,
        r.kind,
        r.vendor.value_or("-"),
        r.address ? fmt::format("{:x}", *r.address) : "-",
        r.pid ? std::to_string(*r.pid) : "-",
        r.process.value_or("-"),
        r.reason.value_or("-"),
        r.kernel.value_or("-"),
        r.signature);
    std::map<int64_t, std::string> members;
    for (const auto& m : r.members) members.emplace(m.evidence_id, m.role + " " + m.link);
    for (const auto& [id, what] : members) s += fmt::format("\n  {} {}", id, what);
    return s;
}

Canon stored(Store& s) {
    auto rows = loadIncidents(s.db());
    EXPECT_TRUE(rows.has_value());
    Canon c;
    if (rows)
        for (const auto& r : *rows) c.insert(canonOf(r.first_evidence, r.record));
    return c;
}

Canon fresh(Store& s) {
    auto inc = correlateStored(s);
    EXPECT_TRUE(inc.has_value());
    Canon c;
    if (inc)
        for (const auto& r : *inc) c.insert(canonOf(r.members.front().evidence_id, r));
    return c;
}

std::vector<std::string> realLogs() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(GPUFAULT_SOURCE_DIR "/tests/data/real"))
        if (e.path().extension() == ".txt") out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

TEST(RecorrelateInPlace, AgreesWithAFullReplaceOnTheRealFixtures) {
    TempDir t;
    auto s = Store::open(t.file("db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(s) << s.error().message;
    auto logs = realLogs();
    ASSERT_GT(logs.size(), 50u);
    size_t half = logs.size() / 2;
    for (size_t i = 0; i < half; ++i) ASSERT_TRUE(ingestFile(*s, logs[i])) << logs[i];

    // From no incidents at all, in transactions of 7 rows.
    InPlaceOptions small;
    small.max_rows = 7;
    auto p = recorrelateInPlace(*s, small);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_GT(p->incidents, 20u);
    EXPECT_GE(p->transactions, p->rows / 8);  // 7 rows, or 8 with an incident's first two
    EXPECT_GT(p->transactions, 1u);
    EXPECT_EQ(stored(*s), fresh(*s));

    // Nothing changed: nothing is written.
    p = recorrelateInPlace(*s);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->rows, 0u);
    EXPECT_EQ(p->transactions, 0u);

    // The other half arrives: the incidents of the first half that did not change keep their
    // ids, and the result is what a full replace computes.
    auto before = loadIncidents(s->db());
    ASSERT_TRUE(before);
    for (size_t i = half; i < logs.size(); ++i) ASSERT_TRUE(ingestFile(*s, logs[i])) << logs[i];
    auto all = fresh(*s);
    size_t total = 0;
    for (const auto& c : all)
        total += 1 + static_cast<size_t>(std::count(c.begin(), c.end(), '\n'));
    p = recorrelateInPlace(*s);
    ASSERT_TRUE(p);
    EXPECT_EQ(stored(*s), all);
    EXPECT_GT(p->rows, 0u);
    EXPECT_LT(p->rows, total);  // fewer rows than rewriting every incident and member
    auto after = loadIncidents(s->db());
    ASSERT_TRUE(after);
    std::map<int64_t, std::string> byId;
    for (const auto& r : *after) byId[r.id] = canonOf(r.first_evidence, r.record);
    size_t kept = 0;
    for (const auto& r : *before)
        if (byId.contains(r.id) && byId[r.id] == canonOf(r.first_evidence, r.record)) ++kept;
    EXPECT_GT(kept, before->size() / 2);

    // A full replace (the CLI's way) of the same store holds the same incidents.
    ASSERT_TRUE(recorrelate(*s));
    EXPECT_EQ(stored(*s), all);
}

TEST(RecorrelateInPlace, AnInterruptedPassIsCompletedByTheNext) {
    // Two stores with the same records: on the first, count how often a pass asks `stop`; on
    // the second, cut the pass ten asks before its end, inside its writes (the last asks are
    // the transactions of 5 rows): what was committed stays.
    TempDir t;
    auto counted = Store::open(t.file("a"), Store::Mode::ReadWrite);
    auto s = Store::open(t.file("b"), Store::Mode::ReadWrite);
    ASSERT_TRUE(counted && s);
    for (const auto& log : realLogs()) {
        ASSERT_TRUE(ingestFile(*counted, log)) << log;
        ASSERT_TRUE(ingestFile(*s, log)) << log;
    }
    int asked = 0;
    InPlaceOptions o;
    o.max_rows = 5;
    o.stop = [&] { return ++asked < 0; };
    auto p = recorrelateInPlace(*counted, o);
    ASSERT_TRUE(p);
    ASSERT_GT(p->transactions, 20u);
    int total = asked;
    asked = 0;
    o.stop = [&] { return ++asked > total - 10; };
    p = recorrelateInPlace(*s, o);
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().message, "interrupted");
    auto partial = stored(*s);
    auto all = fresh(*s);
    EXPECT_FALSE(partial.empty());
    EXPECT_NE(partial, all);
    // No record is in two incidents, even halfway.
    auto rows = loadIncidents(s->db());
    ASSERT_TRUE(rows);
    std::set<int64_t> seen;
    for (const auto& r : *rows)
        for (const auto& m : r.record.members) EXPECT_TRUE(seen.insert(m.evidence_id).second);
    p = recorrelateInPlace(*s);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(stored(*s), all);
}

}  // namespace
}  // namespace gpufault::testing
