// Issue 3 (hostile review, findings 1, 2/F4 and F5): `gpufault ingest` of a file a job may still
// write to. At its end the CLI stores what is unfinished (a fold of repeated errors, an open
// amdgpu block, the dispatch windows, a last line without its newline), but checkpoints at the
// start of the oldest of them with sources.unended: the next ingest, once the file grew,
// replaces those rows instead of adding to them. So two ingests with growth between store what
// one ingest of the grown file stores. A record made from an unended line says that a value in
// it may be cut.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kBin = GPUFAULT_BIN;

/// A HIP API error the runtime_error matcher folds (pid 4242).
const std::string kHipError =
    ":3:hip_module.cpp           :85  : 1000000001 us: [pid:4242  tid:0x7f0a1b2c3d40]  "
    "hipModuleGetFunction: Returned hipErrorNotFound : ";
/// ROCr's fault line (no pid).
const std::string kFault =
    "Memory access fault by GPU node-1 (Agent handle: 0x55d4c0a1b2c0) on address "
    "0x7f6459a00000. Reason: Page not present or supervisor privilege.";
/// Where kFault is cut in the middle of its address (it then names 0x7f6459).
constexpr size_t kCut = 84;
/// The journal prefix of the amdgpu lines.
const std::string kKern = "Nov 30 10:24:16 node7 kernel: amdgpu 0000:0a:00.0: amdgpu: ";

/// An AMD_LOG_LEVEL=3 dispatch line of pid 4242.
std::string shader(const std::string& kernel, int i) {
    return fmt::format(
        ":3:rocvirtual.cpp           :3016: {:010} us: [pid:4242  tid:0x7f0a1b2c3d40] "
        "ShaderName : {}",
        1000000000 + i * 37,
        kernel);
}

/// A log file ingested into a store, grown between ingests; `whole()` ingests the file as it
/// is now into a fresh store (what one ingest of the grown file stores).
class Grown {
  public:
    explicit Grown(const std::string& text) { writeFile(log_, text); }
    void append(const std::string& text) const {
        std::ofstream(log_, std::ios::app) << text << std::flush;
    }
    ProcessResult ingest(const std::string& db) const {
        auto r = run({kBin, "--db", db, "ingest", log_});
        EXPECT_EQ(r.status, 0) << r.err;
        return r;
    }
    ProcessResult ingest() const { return ingest(db_); }
    /// Rows of `sql` in `db` (query --json), each its columns `cols` joined by `|` (null: "-").
    std::vector<std::string> rows(const std::string& sql,
                                  const std::vector<std::string>& cols,
                                  const std::string& db) const {
        auto r = run({kBin, "--db", db, "query", "--json", sql});
        EXPECT_EQ(r.status, 0) << r.err;
        std::vector<std::string> out;
        for (size_t start = 0, e; start < r.out.size(); start = e + 1) {
            e = r.out.find('\n', start);
            if (e == std::string::npos) e = r.out.size();
            if (e == start) continue;
            auto j = nlohmann::json::parse(r.out.substr(start, e - start));
            std::string row;
            for (const auto& c : cols) {
                if (!row.empty()) row += '|';
                const auto& v = j.at(c);
                row += v.is_null() ? "-" : v.is_string() ? v.get<std::string>() : v.dump();
            }
            out.push_back(row);
        }
        return out;
    }
    std::vector<std::string> rows(const std::string& sql,
                                  const std::vector<std::string>& cols) const {
        return rows(sql, cols, db_);
    }
    /// offset|line|max_line|complete|unended of the file's source.
    std::string position() const {
        auto r = rows("SELECT offset, line, max_line, complete, unended FROM sources",
                      {"offset", "line", "max_line", "complete", "unended"});
        return r.size() == 1 ? r[0] : fmt::format("{} rows", r.size());
    }
    /// `events --json` of `db` without the store's ids: what the records say, in order.
    std::vector<nlohmann::json> events(const std::string& db) const {
        auto r = run({kBin, "--db", db, "events", "--json"});
        EXPECT_EQ(r.status, 0) << r.err;
        std::vector<nlohmann::json> out;
        for (size_t start = 0, e; start < r.out.size(); start = e + 1) {
            e = r.out.find('\n', start);
            if (e == std::string::npos) e = r.out.size();
            if (e == start) continue;
            auto j = nlohmann::json::parse(r.out.substr(start, e - start));
            j.erase("id");
            j.erase("incident");
            out.push_back(std::move(j));
        }
        return out;
    }
    /// The grown file ingested once into a fresh store: that store's path.
    std::string whole() const {
        ingest(wholeDb_);
        return wholeDb_;
    }
    const std::string& db() const { return db_; }

  private:
    TempDir dir_;
    std::string log_ = dir_.file("job.log");
    std::string db_ = dir_.file("s.db");
    std::string wholeDb_ = dir_.file("whole.db");
};

const std::string kFolds =
    "SELECT line, count FROM evidence WHERE kind = 'runtime_error' ORDER BY line";

}  // namespace

// Finding 1 (HIGH): lines 2 and 3 are one HIP error, line 6 repeats it without its newline;
// the file grows (line 6 ends, line 7 repeats it again). Before: "2|3" and "6|2" (four lines
// counted five times, the record split); now one record of count 4, as one ingest stores.
TEST(GrowingFile, AnUnendedRepeatOfAnOpenFoldIsCountedOnce) {
    Grown g("start\n" + kHipError + "\n" + kHipError + "\nstep 4\nstep 5\n" + kHipError);
    g.ingest();
    EXPECT_EQ(g.rows(kFolds, {"line", "count"}), std::vector<std::string>{"2|3"});
    // Checkpointed at the fold's first line (offset 6, after "start\n"), its rows replaceable.
    EXPECT_EQ(g.position(), "6|1|5|1|1");
    // The unchanged file: nothing read again.
    auto again = g.ingest();
    EXPECT_NE(again.out.find("unchanged"), std::string::npos) << again.out;
    EXPECT_EQ(g.rows(kFolds, {"line", "count"}), std::vector<std::string>{"2|3"});

    g.append("\n" + kHipError + "\n");
    g.ingest();
    EXPECT_EQ(g.rows(kFolds, {"line", "count"}), std::vector<std::string>{"2|4"});
    EXPECT_EQ(g.rows(kFolds, {"line", "count"}, g.whole()), std::vector<std::string>{"2|4"});
    EXPECT_EQ(g.events(g.db()), g.events(g.whole()));
}

// Finding 2: a fold closed by the CLI's end of stream and continued by lines written later is
// one record, not two.
TEST(GrowingFile, AFoldContinuedAfterTheEndOfAnIngestStaysOneRecord) {
    Grown g("start\n" + kHipError + "\n" + kHipError + "\n");
    g.ingest();
    EXPECT_EQ(g.rows(kFolds, {"line", "count"}), std::vector<std::string>{"2|2"});
    g.append("step 4\n" + kHipError + "\n");
    g.ingest();
    EXPECT_EQ(g.rows(kFolds, {"line", "count"}), std::vector<std::string>{"2|3"});
    // Nothing open at the end any more but the fold: still its first line.
    EXPECT_EQ(g.position(), "6|1|5|1|1");
    EXPECT_EQ(g.events(g.db()), g.events(g.whole()));
}

// Finding 2 (F4): the log ends inside an amdgpu page-fault block (header and address line
// written, the status and client lines not yet). Before: the header's half-record, then a second
// record of the status lines alone; now the block's one record, completed.
TEST(GrowingFile, AnAmdgpuBlockCutByTheEndIsOneRecordOnceItIsWritten) {
    Grown g("boot\n" + kKern +
            "[gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32772, for process python3 pid "
            "4242 thread python3 pid 4242)\n" +
            kKern + "  in page starting at address 0x00007f6459a00000 from client 0x1b (UTCL2)\n");
    const std::string sql =
        "SELECT line, printf('0x%x', address) AS address, vmid, pid, "
        "json_extract(attrs, '$.client_id') AS client FROM evidence WHERE kind = "
        "'amdgpu_page_fault' ORDER BY line";
    const std::vector<std::string> cols{"line", "address", "vmid", "pid", "client"};
    g.ingest();
    // The user sees the fault at once, without the lines not written yet.
    EXPECT_EQ(g.rows(sql, cols), std::vector<std::string>{"2|0x7f6459a00000|8|4242|-"});
    EXPECT_EQ(g.position(), "5|1|3|1|1");
    g.append(kKern + "GCVM_L2_PROTECTION_FAULT_STATUS:0x00801031\n" + kKern +
             "         Faulty UTCL2 client ID: TCP (0x8)\nafter\n");
    g.ingest();
    EXPECT_EQ(g.rows(sql, cols), std::vector<std::string>{"2|0x7f6459a00000|8|4242|0x8"});
    EXPECT_EQ(g.events(g.db()), g.events(g.whole()));
}

// Finding 2: the dispatch windows the CLI wrote at its end (the last 64 dispatches of the
// thread) are the window a fault written later needs: before, the second ingest stored the
// first one's 64 rows plus the fault's own (67); now the fault's window of 64, as one ingest.
TEST(GrowingFile, TheDispatchWindowBeforeALaterFaultIsTheWindowOfOneIngest) {
    std::string text;
    for (int i = 0; i < 70; ++i) text += shader(fmt::format("K_{}", i), i) + "\n";
    Grown g(text);
    g.ingest();
    const std::string sql =
        "SELECT count(*) AS n, min(d.line) AS first, max(d.line) AS last FROM dispatches d";
    const std::vector<std::string> cols{"n", "first", "last"};
    EXPECT_EQ(g.rows(sql, cols), std::vector<std::string>{"64|7|70"});
    text.clear();
    for (int i = 70; i < 73; ++i) text += shader(fmt::format("K_{}", i), i) + "\n";
    g.append(text + kFault + "\n");
    g.ingest();
    EXPECT_EQ(g.rows(sql, cols), std::vector<std::string>{"64|10|73"});
    EXPECT_EQ(g.rows(sql, cols, g.whole()), std::vector<std::string>{"64|10|73"});
    // Every dispatch counted once.
    EXPECT_EQ(g.rows("SELECT sum(n) AS n FROM dispatch_counts", {"n"}),
              std::vector<std::string>{"73"});
    EXPECT_EQ(g.events(g.db()), g.events(g.whole()));
}

// F5: a record made from a last line without its newline holds what the line said so far (an
// address cut to 0x7f6459): it carries `unended=1` and `events`/`show` say a value may be cut;
// once the line is whole, its record replaces that one and says nothing of the kind.
TEST(GrowingFile, ARecordFromAnUnendedLineSaysItsValueMayBeCut) {
    Grown g("starting\n" + kFault.substr(0, kCut));
    g.ingest();
    const std::string sql =
        "SELECT line, printf('0x%x', address) AS address, json_extract(attrs, '$.unended') AS u "
        "FROM evidence ORDER BY line";
    EXPECT_EQ(g.rows(sql, {"line", "address", "u"}), std::vector<std::string>{"2|0x7f6459|1"});
    auto events = run({kBin, "--db", g.db(), "events"});
    EXPECT_NE(events.out.find("from a last line without its newline: a value may be cut"),
              std::string::npos)
        << events.out;
    auto show = run({kBin, "--db", g.db(), "show", "1"});
    EXPECT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find("a value may be cut"), std::string::npos) << show.out;

    g.append(kFault.substr(kCut) + "\n");
    g.ingest();
    EXPECT_EQ(g.rows(sql, {"line", "address", "u"}),
              std::vector<std::string>{"2|0x7f6459a00000|-"});
    events = run({kBin, "--db", g.db(), "events"});
    EXPECT_EQ(events.out.find("may be cut"), std::string::npos) << events.out;
    EXPECT_EQ(g.events(g.db()), g.events(g.whole()));
}

}  // namespace gpufault::testing
