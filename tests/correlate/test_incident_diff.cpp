// diffIncidents (pure): which rows gpufaultd's worker writes to bring stored incidents to a new
// correlation. Incidents are matched by the record that opened them.
#include <gtest/gtest.h>

#include "correlate/incident_diff.h"

namespace gpufault {
namespace {

IncidentRecord incident(std::vector<IncidentMember> members, std::string signature = "s") {
    IncidentRecord r;
    r.kind = "rocr_memory_fault";
    r.signature = std::move(signature);
    r.members = std::move(members);
    return r;
}

StoredIncident stored(int64_t id, IncidentRecord r) {
    StoredIncident s;
    s.id = id;
    s.first_evidence = r.members.front().evidence_id;
    s.record = std::move(r);
    return s;
}

TEST(IncidentDiff, SameIncidentsChangeNothing) {
    auto a = incident({{1, "member", "first"}, {2, "member", "same stream, 1 lines apart"}});
    auto b = incident({{5, "member", "first"}, {6, "context", "reset of 0000:03:00.0"}});
    auto ch = diffIncidents({stored(10, a), stored(11, b)}, {a, b});
    EXPECT_TRUE(ch.empty());
    EXPECT_EQ(ch.rows({a, b}), 0u);
}

TEST(IncidentDiff, AMemberMovesAndLinksChange) {
    // Stored: 10 = {1, 2, 3}, 11 = {5}. Fresh: {1, 2 (new link)}, {5, 3}, and a new {7, 8, 8}.
    auto s10 = incident({{1, "member", "first"}, {2, "member", "a"}, {3, "member", "b"}});
    auto s11 = incident({{5, "member", "first"}});
    auto f1 = incident({{1, "member", "first"}, {2, "member", "a2"}});
    auto f2 = incident({{5, "member", "first"}, {3, "member", "c"}}, "t");
    auto f3 = incident({{7, "member", "first"}, {8, "member", "x"}, {8, "context", "y"}});
    std::vector<IncidentRecord> fresh{f1, f2, f3};
    auto ch = diffIncidents({stored(10, s10), stored(11, s11)}, fresh);
    EXPECT_TRUE(ch.drop.empty());
    ASSERT_EQ(ch.drop_members.size(), 1u);
    EXPECT_EQ(ch.drop_members[0], (std::pair<int64_t, int64_t>{10, 3}));
    ASSERT_EQ(ch.update.size(), 1u);  // 11's signature changed
    EXPECT_EQ(ch.update[0], (std::pair<int64_t, size_t>{11, 1}));
    ASSERT_EQ(ch.put.size(), 2u);
    EXPECT_EQ(ch.put[0].first, 10);
    EXPECT_EQ(ch.put[0].second.evidence_id, 2);
    EXPECT_EQ(ch.put[0].second.link, "a2");
    EXPECT_EQ(ch.put[1].first, 11);
    EXPECT_EQ(ch.put[1].second.evidence_id, 3);
    ASSERT_EQ(ch.add.size(), 1u);
    EXPECT_EQ(ch.add[0], 2u);
    // 1 member drop, 1 update, 2 puts, and the new incident's row and its 3 listed members.
    EXPECT_EQ(ch.rows(fresh), 1u + 1u + 2u + 4u);
}

TEST(IncidentDiff, StoredIncidentsWithoutAFreshOneAreDropped) {
    // Two stored incidents opened by the same record (a pass cut halfway could leave that):
    // the second goes; one whose record opens nothing now goes too.
    auto a = incident({{1, "member", "first"}});
    auto gone = incident({{4, "member", "first"}});
    auto ch = diffIncidents({stored(10, a), stored(11, a), stored(12, gone)}, {a});
    EXPECT_EQ(ch.drop, (std::vector<int64_t>{11, 12}));
    EXPECT_TRUE(ch.put.empty());
    EXPECT_TRUE(ch.add.empty());
}

}  // namespace
}  // namespace gpufault
