// The pid a journal states for a program's line (`python[5353]:`): kept as the runtime record's
// attr `journal_pid`, never as its `pid` (the producer did not blame it; under a launcher it is
// the launcher's), joining the kernel's record of that pid in the same journal
// (docs/correlation.md link 3), and never contradicting the pids the AMD log prefix states.
// Real-shaped journald lines (tests/data/correlate/journal-*.log) through the built binary into a
// real store, ingested in two orders where there are two files.
#include <gtest/gtest.h>

#include "tests/correlate/incidents_cli.h"
#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault {
namespace {

using Groups = std::set<std::set<std::string>>;
using testing::ingestBothOrders;
using testing::kCorrelateData;

/// `events --json` of a fresh store holding `file` (in tests/data/correlate/).
std::vector<nlohmann::json> eventsOf(const std::string& file, testing::TempDir& t) {
    auto in = testing::run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", kCorrelateData + file});
    EXPECT_EQ(in.status, 0) << in.err;
    auto ev = testing::run({GPUFAULT_BIN, "--db", t.file("db"), "events", "--json"});
    EXPECT_EQ(ev.status, 0) << ev.err;
    return testing::parseJsonLines(ev.out);
}

TEST(CorrelateJournal, CudaErrorJoinsTheXidOfItsJournalPid) {
    // Xid 31 of pid 4242 (GPU 3b), Xid 31 of pid 5353 (GPU 3c), then python[5353]'s CUDA error.
    testing::TempDir t;
    auto ev = eventsOf("journal-xid-cuda.log", t);
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[2]["kind"], "runtime_error");
    EXPECT_EQ(ev[2]["reason"], "cudaErrorIllegalAddress");
    EXPECT_TRUE(ev[2]["pid"].is_null()) << ev[2].dump();
    EXPECT_EQ(ev[2]["attrs"]["journal_pid"], "5353");
    EXPECT_FALSE(ev[0]["attrs"].contains("journal_pid"));  // `kernel:` states no pid

    auto inc = ingestBothOrders({"journal-xid-cuda.log"});
    EXPECT_EQ(
        inc.groups,
        (Groups{{"journal-xid-cuda.log:1"}, {"journal-xid-cuda.log:2", "journal-xid-cuda.log:3"}}));
    EXPECT_EQ(inc.link["journal-xid-cuda.log:3"],
              "same pid 5353 in one journal, within 1 s (wall clock)");
    auto list = testing::run({GPUFAULT_BIN, "--db", t.file("db"), "incidents", "--json"});
    auto rows = testing::parseJsonLines(list.out);
    ASSERT_EQ(rows.size(), 2u) << list.out;
    EXPECT_EQ(rows[1]["pid"], 5353);
    EXPECT_EQ(rows[1]["kind"], "nvidia_xid");
}

TEST(CorrelateJournal, AJournalPidDaysApartJoinsNothingAcrossTheNewYearItDoes) {
    // hostile12a HIGH-3: a service gets pid 4242 again days later (journald `short`: no year);
    // a stamp of Dec 31 23:59:59 and one of Jan 01 00:00:00 are a second apart.
    auto inc = ingestBothOrders({"journal-pid-days-apart.log"});
    const std::string f = "journal-pid-days-apart.log:";
    EXPECT_EQ(inc.groups, (Groups{{f + "1"}, {f + "2"}, {f + "3", f + "4"}}));
    EXPECT_EQ(inc.link[f + "4"], "same pid 5151 in one journal, within 1 s (wall clock)");
}

TEST(CorrelateJournal, AJournalPidNeverContradictsAPidTheLineStates) {
    // A launcher's stream (torchrun[4242]): ROCr's line states no pid of its own, the worker's
    // AMD log line states 4250, the kernel's fault is 4250's. One fault, one incident.
    testing::TempDir t;
    auto ev = eventsOf("journal-stream-of-launcher.log", t);
    ASSERT_EQ(ev.size(), 3u);
    std::map<int64_t, nlohmann::json> byLine;
    for (auto& e : ev) byLine[e["line"].get<int64_t>()] = e;
    EXPECT_TRUE(byLine[4]["pid"].is_null());  // ROCr states none; the journal's is an attr
    EXPECT_EQ(byLine[4]["attrs"]["journal_pid"], "4242");
    EXPECT_EQ(byLine[5]["pid"], 4250);  // the AMD log prefix's, the journal's kept as attr
    EXPECT_EQ(byLine[5]["attrs"]["journal_pid"], "4242");

    auto inc = ingestBothOrders({"journal-stream-of-launcher.log"});
    const std::string f = "journal-stream-of-launcher.log:";
    EXPECT_EQ(inc.groups, (Groups{{f + "1", f + "4", f + "5"}}));
    EXPECT_EQ(inc.link[f + "5"], "same stream, 0 s apart (wall clock)");
    // The incident names the pid a line stated (the kernel's, the worker's), not the launcher's.
    auto list = testing::run({GPUFAULT_BIN, "--db", t.file("db"), "incidents", "--json"});
    auto rows = testing::parseJsonLines(list.out);
    ASSERT_EQ(rows.size(), 1u) << list.out;
    EXPECT_EQ(rows[0]["pid"], 4250);
    EXPECT_EQ(rows[0]["process"], "python3");
}

}  // namespace
}  // namespace gpufault
