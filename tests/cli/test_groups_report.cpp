// `gpufault groups` and what `report` says of the target, versions and the kind of incident,
// through the built binary on real fixtures; plural agreement and hints of the CLI.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kReal = GPUFAULT_SOURCE_DIR "/tests/data/real/";
const std::string k012 = kReal + "012-llamabench-rocr-fault-plus-journalctl.txt";
const std::string k003 = kReal + "003-journald-cachyos-rx6800xt-kwin.txt";
const std::string k004 = kReal + "004-no-timestamp-cosmic-comp.txt";
const std::string k080 = kReal + "080-cri-log-quoted-rocr-faults-eight-nodes-unknown-reason.txt";

std::string hostName() {
    char h[256] = {};
    ::gethostname(h, sizeof h - 1);
    return h;
}

// Real fixtures: two amdgpu faults of the same kind and client on two machines (003: kwin on an
// RX 6800 XT, 004: cosmic-comp), eight ROCr faults of one job in a CRI log with stated times
// (080), and a ROCr fault with its amdgpu block recorded by `gpufault run` (012).
TEST(CliGroups, IncidentsWithOneSignatureAreOneRowMostFrequentFirst) {
    TempDir t;
    std::string db = t.file("db");
    auto r = run({GPUFAULT_BIN, "--db", db, "run", "--spool", t.file("spool"), "--", "cat", k012});
    ASSERT_EQ(r.status, 0) << r.err;
    auto in = run({GPUFAULT_BIN, "--db", db, "ingest", k003, k004, k080});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_NE(in.out.find("\n11 incidents in "), std::string::npos) << in.out;
    r = run({GPUFAULT_BIN, "--db", db, "groups", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto g = parseJsonLines(r.out);
    ASSERT_EQ(g.size(), 3u) << r.out;
    // 080: eight incidents, one input, no pid, times stated in UTC.
    EXPECT_EQ(g[0]["incidents"], 8) << r.out;
    EXPECT_EQ(g[0]["kind"], "rocr_memory_fault");
    EXPECT_EQ(g[0]["reason"], "Unknown");
    EXPECT_EQ(g[0]["sources"], 1);
    EXPECT_EQ(g[0]["processes"], 0);
    EXPECT_EQ(g[0]["runs"], 0);
    EXPECT_EQ(g[0]["hosts"], nlohmann::json::array());
    EXPECT_EQ(g[0]["first_seen"], "2026-08-31T17:43:36Z");
    EXPECT_EQ(g[0]["last_seen"], "2026-08-31T17:43:36Z");
    EXPECT_EQ(g[0]["first_seen_utc_us"], 1788198216000000);
    EXPECT_EQ(g[0]["timed_incidents"], 8);
    // 003 and 004: one signature, two processes, two inputs; no full date.
    EXPECT_EQ(g[1]["incidents"], 2);
    EXPECT_EQ(g[1]["kind"], "amdgpu_page_fault");
    EXPECT_EQ(g[1]["vendor"], "amd");
    EXPECT_EQ(g[1]["processes"], 2);
    EXPECT_EQ(g[1]["sources"], 2);
    EXPECT_TRUE(g[1]["first_seen"].is_null());
    EXPECT_EQ(g[1]["timed_incidents"], 0);  // journald `short`: no year, no instant
    // 012 through `gpufault run`: the run and its host.
    EXPECT_EQ(g[2]["incidents"], 1);
    EXPECT_EQ(g[2]["kinds"], "amdgpu_page_fault,rocr_memory_fault");
    EXPECT_EQ(g[2]["reason"], "Page not present or supervisor privilege");
    EXPECT_EQ(g[2]["runs"], 1);
    EXPECT_EQ(g[2]["processes"], 1);
    EXPECT_EQ(g[2]["hosts"], nlohmann::json::array({hostName()}));
    // The signatures are the incidents' own: each group's ids are the first three of the
    // incidents with its signature (ids follow the order of the inputs, which the paths set).
    auto inc = parseJsonLines(run({GPUFAULT_BIN, "--db", db, "incidents", "--json"}).out);
    ASSERT_EQ(inc.size(), 11u);
    std::map<std::string, std::vector<int64_t>> ids;
    for (const auto& i : inc)
        ids[i["signature"].get<std::string>()].push_back(i["id"].get<int64_t>());
    std::vector<std::string> idText;
    for (const auto& x : g) {
        const auto& all = ids[x["signature"].get<std::string>()];
        ASSERT_EQ(static_cast<int64_t>(all.size()), x["incidents"].get<int64_t>());
        std::vector<int64_t> first(all.begin(), all.begin() + std::min<size_t>(3, all.size()));
        EXPECT_EQ(x["example_incidents"], nlohmann::json(first));
        std::string t;
        for (auto id : first) t += (t.empty() ? "" : ",") + std::to_string(id);
        idText.push_back(all.size() > 3 ? t + ",…" : t);
    }

    auto text = run({GPUFAULT_BIN, "--db", db, "groups"});
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_EQ(text.out,
              "INCIDENTS\tSIGNATURE\tKIND\tWHAT\tPROCESSES\tINPUTS\tRUNS\tHOSTS\tFIRST "
              "SEEN (UTC)\tLAST SEEN (UTC)\tTIMED\tINCIDENT IDS\n8\t" +
                  g[0]["signature"].get<std::string>() +
                  "\trocr_memory_fault\tamd; Unknown\t0\t1\t0\tunknown\t2026-08-31T17:43:36Z\t"
                  "2026-08-31T17:43:36Z\t8/8\t" +
                  idText[0] + "\n2\t" + g[1]["signature"].get<std::string>() +
                  "\tamdgpu_page_fault\tamd; client " + g[1]["client"].get<std::string>() +
                  "\t2\t2\t0\tunknown\t-\t-\t0/2\t" + idText[1] + "\n1\t" +
                  g[2]["signature"].get<std::string>() +
                  "\trocr_memory_fault\tamd; Page not present or supervisor privilege; client "
                  "TCP\t1\t1\t1\t" +
                  hostName() + "\t-\t-\t0/1\t" + idText[2] + "\n");
}

TEST(CliGroups, AStoreWithoutIncidentsPrintsTheHeaderOnly) {
    TempDir t;
    writeFile(t.file("quiet.log"), "nothing happened\n");
    auto in = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("quiet.log")});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_NE(in.out.find(": 1 line, 0 evidence, 0 dispatches (0 kept), 0 operands, 0 warnings, "),
              std::string::npos)
        << in.out;
    EXPECT_NE(in.out.find("\n0 incidents in "), std::string::npos) << in.out;
    EXPECT_EQ(in.err, "");  // nothing crash-like: no hint
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "groups"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out,
              "INCIDENTS\tSIGNATURE\tKIND\tWHAT\tPROCESSES\tINPUTS\tRUNS\tHOSTS\tFIRST SEEN "
              "(UTC)\tLAST SEEN (UTC)\tTIMED\tINCIDENT IDS\n");
}

// newuser11: Xids of different numbers (a GPU fallen off the bus, an application's warp
// exception) are not "the same fault": the Xid number is part of the signature. Lines from the
// format `NVRM: Xid (PCI:%s): %d, pid=%s, name=%s, %s`.
TEST(CliGroups, XidsOfDifferentNumbersAreDifferentGroups) {
    TempDir t;
    const std::string off = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, "
                            "GPU has fallen off the bus.\n";
    const std::string sm = "NVRM: Xid (PCI:0000:5e:00): 13, pid=4242, name=python, Graphics SM "
                           "Warp Exception on (GPC 1, TPC 4, SM 0): Misaligned Address\n";
    writeFile(t.file("a.log"), "[  100.000000] " + sm);
    writeFile(t.file("b.log"), "[  300.000000] " + off);
    writeFile(t.file("c.log"), "[  500.000000] " + sm);
    writeFile(t.file("d.log"), "[  700.000000] " + off);
    writeFile(t.file("e.log"), "[  900.000000] " + sm);
    auto in = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", t.file("a.log"), t.file("b.log"),
                   t.file("c.log"), t.file("d.log"), t.file("e.log")});
    ASSERT_EQ(in.status, 0) << in.err;
    EXPECT_NE(in.out.find("\n5 incidents in "), std::string::npos) << in.out;
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "groups", "--json"});
    ASSERT_EQ(r.status, 0) << r.err;
    auto g = parseJsonLines(r.out);
    ASSERT_EQ(g.size(), 2u) << r.out;
    EXPECT_EQ(g[0]["incidents"], 3) << r.out;  // the Xid 13 of pid 4242
    EXPECT_EQ(g[0]["processes"], 1) << r.out;
    EXPECT_EQ(g[1]["incidents"], 2) << r.out;  // the two Xid 79, no pid
    EXPECT_EQ(g[1]["processes"], 0) << r.out;
    EXPECT_NE(g[0]["signature"], g[1]["signature"]);
}

}  // namespace
}  // namespace gpufault::testing
