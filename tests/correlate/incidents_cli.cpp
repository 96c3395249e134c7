#include "tests/correlate/incidents_cli.h"

#include <gtest/gtest.h>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {

Incidents incidentsOf(const std::string& db) {
    auto q = run(
        {GPUFAULT_BIN,
         "--db",
         db,
         "query",
         "--json",
         "SELECT m.incident_id AS i, s.path AS p, e.line AS l, m.link AS w FROM incident_evidence "
         "m JOIN evidence e ON e.id = m.evidence_id JOIN sources s ON s.id = e.source_id WHERE "
         "m.role = 'member'"});
    EXPECT_EQ(q.status, 0) << q.err;
    std::map<int64_t, std::set<std::string>> by;
    Incidents out;
    for (auto& row : parseJsonLines(q.out)) {
        std::string p = row["p"].get<std::string>();
        std::string m = p.substr(p.rfind('/') + 1) + ":" + std::to_string(row["l"].get<int64_t>());
        by[row["i"].get<int64_t>()].insert(m);
        out.link[m] = row["w"].get<std::string>();
    }
    for (auto& [i, s] : by) out.groups.insert(s);
    return out;
}

Incidents ingestBothOrders(const std::vector<std::string>& files) {
    TempDir t;
    std::vector<std::string> a = {GPUFAULT_BIN, "--db", t.file("a"), "ingest"},
                             b = {GPUFAULT_BIN, "--db", t.file("b"), "ingest"};
    auto path = [](const std::string& f) {
        return f.find('/') == std::string::npos ? kCorrelateData + f : f;
    };
    for (auto& f : files) a.push_back(path(f));
    for (auto it = files.rbegin(); it != files.rend(); ++it) b.push_back(path(*it));
    auto ra = run(a), rb = run(b);
    EXPECT_EQ(ra.status, 0) << ra.err;
    EXPECT_EQ(rb.status, 0) << rb.err;
    auto ia = incidentsOf(t.file("a")), ib = incidentsOf(t.file("b"));
    EXPECT_EQ(ia.groups, ib.groups);
    EXPECT_EQ(ia.link, ib.link);
    return ia;
}

}  // namespace gpufault::testing
