// What `faults`, `show`, `report` and `groups` print for triage (issue 2, review cli3): the last
// kernel decided once for all three (ambiguous stays ambiguous), the Xid number of a group, an
// incident's first and last time, and the operand table's ties. The real binary, real stores.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kReal = GPUFAULT_SOURCE_DIR "/tests/data/real/";
const std::string kCorr = GPUFAULT_SOURCE_DIR "/tests/data/correlate/";

std::string ingested(TempDir& t, const std::vector<std::string>& files) {
    std::string db = t.file("db");
    std::vector<std::string> args{GPUFAULT_BIN, "--db", db, "ingest"};
    args.insert(args.end(), files.begin(), files.end());
    auto in = run(args);
    EXPECT_EQ(in.status, 0) << in.err;
    return db;
}

/// The line of `text` that starts with `prefix` ("" when none).
std::string lineStarting(const std::string& text, const std::string& prefix) {
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
        if (l.starts_with(prefix)) return l;
    return "";
}

/// The id of the incident whose first record is line `line` of the file named `file`.
std::string incidentAt(const std::string& db, const std::string& file, int line) {
    auto q = run({GPUFAULT_BIN,
                  "--db",
                  db,
                  "query",
                  "SELECT i.id FROM incidents i JOIN evidence e ON e.id = i.first_evidence JOIN "
                  "sources s ON s.id = e.source_id WHERE s.path LIKE '%/" +
                      file + "' AND e.line = " + std::to_string(line)});
    EXPECT_EQ(q.status, 0) << q.err;
    std::string id = q.out.substr(q.out.find('\n') + 1);
    return id.substr(0, id.find('\n'));
}

// pid 100 dispatches kernel1, pid 200 kernel2, then a ROCr line that states no pid: `show` and
// `report` call the kernel ambiguous, and so does `faults` (it named kernel2 before).
TEST(TriageOutput, FaultsSaysTheLastKernelIsAmbiguousAsShowDoes) {
    TempDir t;
    std::string db = ingested(t, {kCorr + "two-processes-one-stream.log"});
    auto f = run({GPUFAULT_BIN, "--db", db, "faults"});
    ASSERT_EQ(f.status, 0) << f.err;
    EXPECT_NE(f.out.find("\trocr_memory_fault\t0x00007f0000601000\tno\t-\t-\t? (2 candidates)\n"),
              std::string::npos)
        << f.out;
    EXPECT_EQ(f.out.find("kernel2"), std::string::npos) << f.out;
    auto js = run({GPUFAULT_BIN, "--db", db, "faults", "--json"});
    ASSERT_EQ(js.status, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    EXPECT_TRUE(j["last_kernel"].is_null());
    EXPECT_TRUE(j["kernel"].is_null());  // the record names none (EVIDENCE.md)
    ASSERT_EQ(j["kernel_candidates"].size(), 2u);
    EXPECT_EQ(j["kernel_candidates"][0]["pid"], 200);
    EXPECT_EQ(j["kernel_candidates"][0]["kernel"], "_Z7kernel2Pf");
    EXPECT_EQ(j["kernel_candidates"][1]["pid"], 100);
    EXPECT_EQ(j["kernel_candidates"][1]["kernel"], "_Z7kernel1Pf");
    // `show --dispatches 1` displays one dispatch but decides from the same window
    auto show = run({GPUFAULT_BIN, "--db", db, "show", "1", "--dispatches", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("last ShaderName  ambiguous: 2 processes"), std::string::npos)
        << show.out;
}

TEST(TriageOutput, FaultsNamesAnUnambiguousLastKernel) {
    TempDir t;
    std::string db = ingested(t, {kCorr + "rocr-after-kernel-a.log"});
    auto js = run({GPUFAULT_BIN, "--db", db, "faults", "--json"});
    ASSERT_EQ(js.status, 0) << js.err;
    auto j = nlohmann::json::parse(js.out);
    EXPECT_EQ(j["last_kernel"], "_Z7kernelAPf");
    EXPECT_EQ(j["last_kernel_demangled"], "kernelA(float*)");
    EXPECT_FALSE(j.contains("kernel_candidates"));
    auto f = run({GPUFAULT_BIN, "--db", db, "faults"});
    EXPECT_NE(f.out.find("\tkernelA\n"), std::string::npos) << f.out;
}

// Real fixtures: Xid 79 (fallen off the bus), Xid 13 and Xid 31 incidents.
TEST(TriageOutput, GroupsShowTheXidNumber) {
    TempDir t;
    std::string db = ingested(t,
                              {kReal + "112-nvidia-xid79-fallen-off-bus-continuation-lines-aer.txt",
                               kReal + "051-nvidia-journald-plus-kernel-timestamp-xid13.txt"});
    auto g = run({GPUFAULT_BIN, "--db", db, "groups"});
    ASSERT_EQ(g.status, 0) << g.err;
    EXPECT_NE(g.out.find("\tnvidia_xid 79\tnvidia\t"), std::string::npos) << g.out;
    EXPECT_NE(g.out.find("\tnvidia_xid 13\tnvidia\t"), std::string::npos) << g.out;
    auto js = run({GPUFAULT_BIN, "--db", db, "groups", "--json"});
    ASSERT_EQ(js.status, 0) << js.err;
    std::vector<int64_t> xids;
    std::istringstream in(js.out);
    for (std::string l; std::getline(in, l);) xids.push_back(nlohmann::json::parse(l)["xid"]);
    std::sort(xids.begin(), xids.end());
    EXPECT_EQ(xids, (std::vector<int64_t>{13, 79}));
}

TEST(TriageOutput, ShowAndReportPrintTheFirstAndLastRecordTime) {
    TempDir t;
    // 080: CRI log lines with stated UTC times; 067: dmesg seconds since boot (incident 5:
    // an Xid 13 and its 43 at 41.254067 and 41.257555 s).
    std::string db =
        ingested(t,
                 {kReal + "080-cri-log-quoted-rocr-faults-eight-nodes-unknown-reason.txt",
                  kReal + "067-nvidia-h200-dmesg-xid31-read-write-null-xid13-43.txt"});
    std::string xid13 =
        incidentAt(db, "067-nvidia-h200-dmesg-xid31-read-write-null-xid13-43.txt", 6);
    std::string cri =
        incidentAt(db, "080-cri-log-quoted-rocr-faults-eight-nodes-unknown-reason.txt", 2);
    auto s1 = run({GPUFAULT_BIN, "--db", db, "show", cri});
    ASSERT_EQ(s1.status, 0) << s1.err;
    EXPECT_EQ(lineStarting(s1.out, "  time "), "  time       2026-08-31T17:43:36Z (UTC)") << s1.out;
    auto s = run({GPUFAULT_BIN, "--db", db, "show", xid13});
    ASSERT_EQ(s.status, 0) << s.err;
    EXPECT_EQ(lineStarting(s.out, "  time "),
              "  time       first 41.254067 s, last 41.257555 s since boot (the boot " + kReal +
                  "067-nvidia-h200-dmesg-xid31-read-write-null-xid13-43.txt covers)")
        << s.out;
    auto md = run({GPUFAULT_BIN, "--db", db, "report", xid13, "--format", "md"});
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_NE(lineStarting(md.out, "- Time: first 41.254067 s, last 41.257555 s since boot"), "")
        << md.out;
    auto js = run({GPUFAULT_BIN, "--db", db, "report", cri, "--format", "json"});
    ASSERT_EQ(js.status, 0) << js.err;
    EXPECT_EQ(nlohmann::json::parse(js.out)["time"], "2026-08-31T17:43:36Z (UTC)");
}

// Two operands of one buffer (first, then second) at the same distance: the one logged last
// before the fault (ORDER 2) comes first; before, the file's line order put `first` first.
TEST(TriageOutput, OperandTiesAreOrderedByOrder) {
    TempDir t;
    std::string db = ingested(t, {kCorr + "operand-ties.log"});
    auto s = run({GPUFAULT_BIN, "--db", db, "show", "1"});
    ASSERT_EQ(s.status, 0) << s.err;
    auto table = s.out.substr(s.out.find("Operands by |distance|"));
    auto second = table.find("\nsecond\t"), first = table.find("\nfirst\t"),
         far = table.find("\nfar\t");
    ASSERT_NE(second, std::string::npos) << s.out;
    EXPECT_LT(second, first);
    EXPECT_LT(first, far);
    EXPECT_NE(table.find("+1,052,672 B (+1.00 MiB) above end\tno\t2\t"), std::string::npos);
    EXPECT_NE(table.find("+1,052,672 B (+1.00 MiB) above end\tno\t3\t"), std::string::npos);
    auto js = run({GPUFAULT_BIN, "--db", db, "report", "1", "--format", "json"});
    auto ops = nlohmann::json::parse(js.out)["operands"];
    ASSERT_EQ(ops.size(), 3u);
    EXPECT_EQ(ops[0]["name"], "second");
    EXPECT_EQ(ops[1]["name"], "first");
    EXPECT_EQ(ops[0]["distance"], 1052672);
}

}  // namespace
}  // namespace gpufault::testing
