// Issue 2 §3, source identity (hostile review 11): `gpufault ingest` of a file found again by
// device + inode + first line resumes only while its bytes before the checkpoint are those it
// read; a file written again in place (same inode, same first line: `dmesg > crash.txt` after
// a reboot) is new content, read from its start as a new source. Each `ingest -` is a stream
// of its own, named `-#N`.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tests/support/fixture_check.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

const std::string kReal = GPUFAULT_SOURCE_DIR "/tests/data/real/";
/// The first line of every `dmesg` since boot, whatever came after it.
const std::string kBoot =
    "[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02-amd64-075) "
    "(x86_64-linux-gnu-gcc-13) #45-Ubuntu SMP PREEMPT_DYNAMIC\n";

std::string real(const std::string& name) {
    std::string s = readFile(kReal + name);
    EXPECT_FALSE(s.empty()) << name;
    return s;
}

int64_t inode(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
    return static_cast<int64_t>(st.st_ino);
}

/// `events --json` of `db` without the store's ids and the source's path: what the records
/// say (kind, line, address, …), in the store's order (source, then line).
std::vector<nlohmann::json> records(const std::string& db) {
    auto r = run({GPUFAULT_BIN, "--db", db, "events", "--json"});
    EXPECT_EQ(r.status == 0 || r.status == 1, true) << r.err;
    auto rows = parseJsonLines(r.out);
    for (auto& j : rows) {
        j.erase("id");
        j.erase("source");
    }
    return rows;
}

/// How many incidents `db` holds.
size_t incidents(const std::string& db) {
    return parseJsonLines(run({GPUFAULT_BIN, "--db", db, "incidents", "--json"}).out).size();
}

/// The records of `content` ingested alone into a fresh store.
std::vector<nlohmann::json> alone(const TempDir& t,
                                  const std::string& name,
                                  const std::string& content) {
    std::string log = t.file(name + ".log"), db = t.file(name + ".db");
    writeFile(log, content);
    auto r = run({GPUFAULT_BIN, "--db", db, "ingest", log});
    EXPECT_EQ(r.status, 0) << r.err;
    return records(db);
}

std::vector<nlohmann::json> concat(std::vector<nlohmann::json> a,
                                   const std::vector<nlohmann::json>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

/// `later` without the kernel-log records (a kernel_s or wall time) that `earlier` holds with
/// the same kind and text, each matched once: the same kernel message dumped again into the
/// same file is stored once (StoreSink::heldBefore).
std::vector<nlohmann::json> withoutRepeatedKernelRecords(const std::vector<nlohmann::json>& earlier,
                                                         std::vector<nlohmann::json> later) {
    std::multiset<std::pair<std::string, std::string>> seen;
    for (const auto& j : earlier)
        if (j["time"].is_object() && (j["time"].contains("kernel_s") || j["time"].contains("wall")))
            seen.insert({j["kind"].get<std::string>(), j["raw"].get<std::string>()});
    std::erase_if(later, [&](const nlohmann::json& j) {
        auto it = seen.find({j["kind"].get<std::string>(), j["raw"].get<std::string>()});
        if (it == seen.end() || !j["time"].is_object()) return false;
        seen.erase(it);
        return true;
    });
    return later;
}

/// Ingests `first` as `log`, writes `second` over it in place (same inode), ingests again:
/// the store must hold what ingesting each alone holds, the second under its own lines, less
/// the kernel messages the first held already.
void rewriteCase(const std::string& first, const std::string& second) {
    TempDir t;
    std::string log = t.file("crash.txt"), db = t.file("db");
    writeFile(log, first);
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", log}).status, 0);
    int64_t ino = inode(log);
    writeFile(log, second);
    ASSERT_EQ(inode(log), ino) << "not written in place";
    auto again = run({GPUFAULT_BIN, "--db", db, "ingest", log});
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.out.find("crash.txt: written again since it was ingested"), std::string::npos)
        << again.out;
    EXPECT_EQ(again.out.find("unchanged"), std::string::npos) << again.out;
    auto before = alone(t, "first", first);
    auto want = concat(before, withoutRepeatedKernelRecords(before, alone(t, "second", second)));
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(records(db), want);
    // A third ingest finds the new source complete and unchanged.
    auto third = run({GPUFAULT_BIN, "--db", db, "ingest", log});
    ASSERT_EQ(third.status, 0) << third.err;
    EXPECT_NE(third.out.find("already ingested, unchanged"), std::string::npos) << third.out;
    EXPECT_EQ(records(db), want);
}

TEST(SourceIdentity, RewrittenLongerUnderTheSameFirstLineIsReadFromItsStart) {
    // The repro's case: the new crash is past the old end of file, the first line the same.
    rewriteCase(kBoot + real("001-amdgpu-gfxhub0-noretry-tcp.txt"),
                kBoot + real("014-two-gpus-dmesg-plus-amdlog-pid-in-container.txt"));
}

TEST(SourceIdentity, RewrittenShorterKeepsTheFilesOwnLineNumbers) {
    // Was: the new lines numbered after the old ones (`run.log:59` for the file's line 7).
    rewriteCase(kBoot + real("001-amdgpu-gfxhub0-noretry-tcp.txt"),
                kBoot + real("019-miopen-info-prefixed-rocr-fault-node7.txt"));
}

TEST(SourceIdentity, RewrittenWithTheSameSizeIsNotUnchanged) {
    std::string first = kBoot + real("001-amdgpu-gfxhub0-noretry-tcp.txt");
    std::string second = first;
    // Another fault address, byte for byte as long: the page address line's last hex digit.
    auto at = second.find("page starting at address 0x");
    ASSERT_NE(at, std::string::npos);
    auto digit = second.find_first_of(" \n", at + 27) - 4;
    second[digit] = second[digit] == '1' ? '2' : '1';
    ASSERT_EQ(first.size(), second.size());
    ASSERT_NE(first, second);
    rewriteCase(first, second);
}

/// An amdgpu block at the end of a log: held open there (its checkpoint before it; the rows
/// after it stored, to be replaced by the next reader once the file grows).
std::string blockAtEnd(const std::string& pid, const std::string& page) {
    return "[ 4778.915423] amdgpu 0000:0a:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 "
           "vmid:8 pasid:32772, for process python3 pid " +
           pid + " thread python3 pid " + pid +
           ")\n[ 4778.915430] amdgpu 0000:0a:00.0: amdgpu:   in page starting at address "
           "0x0000" +
           page +
           " from client 0x1b (UTCL2)\n[ 4778.915433] amdgpu 0000:0a:00.0: amdgpu: "
           "GCVM_L2_PROTECTION_FAULT_STATUS:0x00801031\n";
}

const std::string kCmdline =
    "[    0.000000] Command line: BOOT_IMAGE=/vmlinuz root=UUID=1234 ro\n";

// Hostile review 17, i2 H1: a re-ingest resumed at the checkpoint before a block held open at
// the end and replaced the rows stored past it with what the file held there now: `dmesg >
// crash.txt` after a reboot deleted the stored fault of pid 4528 without a word.
TEST(SourceIdentity, CutPastTheCheckpointOfABlockHeldOpenKeepsItsRecords) {
    rewriteCase(kBoot + kCmdline + blockAtEnd("4528", "7a5895200000"),
                kBoot + kCmdline + "[    0.000001] x86/fpu: Supporting XSAVE feature 0x001\n");
}

TEST(SourceIdentity, RewrittenLongerPastTheCheckpointOfABlockHeldOpenIsNewContent) {
    std::string other;
    for (int i = 0; i < 20; ++i)
        other += "[    1.00000" + std::to_string(i % 10) + "] pci 0000:00:01." +
                 std::to_string(i) + ": [1022:1483] type 01 class 0x060400 PCIe Root Port\n";
    rewriteCase(kBoot + kCmdline + blockAtEnd("4528", "7a5895200000"),
                kBoot + kCmdline + other + blockAtEnd("777", "7a5895400000"));
}

TEST(SourceIdentity, RealLogCutInsideItsLastBlockKeepsTheWholeRecord) {
    std::string whole = real("012-llamabench-rocr-fault-plus-journalctl.txt");
    size_t at = 0;
    for (int i = 0; i < 12; ++i) at = whole.find('\n', at) + 1;
    ASSERT_LT(at, whole.size());
    rewriteCase(whole, whole.substr(0, at));
}

// Hostile review 17, i3 H1: `dmesg > gpu.log` again once the ring buffer has wrapped starts
// at another line: a new source, and every kernel message still in the ring was stored twice.
TEST(SourceIdentity, ADmesgDumpedAgainAfterTheRingWrappedStoresEachMessageOnce) {
    TempDir t;
    std::string log = t.file("gpu.log"), db = t.file("db");
    std::string whole = real("001-amdgpu-gfxhub0-noretry-tcp.txt");
    writeFile(log, whole);
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", log}).status, 0);
    auto stored = records(db);
    ASSERT_EQ(stored.size(), 2u);
    size_t at = 0;
    for (int i = 0; i < 10; ++i) at = whole.find('\n', at) + 1;  // from the second block on
    writeFile(log, whole.substr(at) + "[ 4790.000001] amdgpu 0000:c6:00.0: amdgpu: ring gfx_0.0.0 "
                                      "timeout, signaled seq=1, emitted seq=3\n");
    auto again = run({GPUFAULT_BIN, "--db", db, "ingest", log});
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.out.find("(1 kernel record already stored from its earlier content)"),
              std::string::npos)
        << again.out;
    auto now = records(db);
    ASSERT_GE(now.size(), 2u);
    EXPECT_EQ(std::vector<nlohmann::json>(now.begin(), now.begin() + 2), stored);
    for (size_t i = 2; i < now.size(); ++i) EXPECT_NE(now[i]["kind"], "amdgpu_page_fault") << now[i];
}

// Hostile review 17 (re-check), i2 H1: the ring wrapped inside a block: the block's last lines
// made a header-less record, stored again. And a journald-stamped runtime line is no kernel
// message: written again, it is a new record (its fold counted anew).
TEST(SourceIdentity, ARingWrappedInsideABlockStoresNoPartOfItAgain) {
    TempDir t;
    std::string log = t.file("gpu.log"), db = t.file("db");
    std::string whole = real("001-amdgpu-gfxhub0-noretry-tcp.txt");
    writeFile(log, whole);
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", log}).status, 0);
    auto stored = records(db);
    size_t at = whole.find('\n', whole.find('\n') + 1) + 1;  // from the first block's line 3
    writeFile(log, whole.substr(at));
    auto again = run({GPUFAULT_BIN, "--db", db, "ingest", log});
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.out.find("(2 kernel records already stored from its earlier content)"),
              std::string::npos)
        << again.out;
    EXPECT_EQ(records(db), stored);

    std::string job = t.file("job.log"), jdb = t.file("jdb");
    auto line = [](int s) {
        return fmt::format("Dec 01 10:00:{:02} node1 python[4242]: RuntimeError: CUDA error: an "
                           "illegal memory access was encountered\n",
                           s);
    };
    writeFile(job, "Dec 01 09:59:00 node1 systemd[1]: Started job.service.\n" + line(1) + line(2));
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", jdb, "ingest", job}).status, 0);
    writeFile(job, "Dec 01 09:59:30 node1 python[4242]: starting\n" + line(1) + line(2) + line(3));
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", jdb, "ingest", job}).status, 0);
    auto rows = records(jdb);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0]["count"], 2);
    EXPECT_EQ(rows[1]["count"], 3);
}

TEST(SourceIdentity, BigFileRewrittenInItsFirst64MiBIsNewContent) {
    // Past 64 MiB the checkpoint keeps the hash of the first 64 MiB only (the cost of a
    // re-ingest stays bounded): a file written again whose head differs is still new content.
    auto filler = [](const std::string& tag) {
        std::string s;
        s.reserve((66u << 20) + 4096);
        for (int i = 0; s.size() < (66u << 20); ++i)
            s += tag + " step " + std::to_string(i) + " loss 2.0 " + std::string(60, '.') + "\n";
        return s;
    };
    std::string fault = real("019-miopen-info-prefixed-rocr-fault-node7.txt");
    std::string first = kBoot + filler("train") + real("001-amdgpu-gfxhub0-noretry-tcp.txt");
    // Longer than the first (else its size alone tells): another fault after the same filler.
    std::string second = kBoot + filler("tune") + fault +
                         real("014-two-gpus-dmesg-plus-amdlog-pid-in-container.txt") +
                         real("001-amdgpu-gfxhub0-noretry-tcp.txt");
    ASSERT_GT(second.size(), first.size());
    rewriteCase(first, second);
}

TEST(SourceIdentity, AppendedFileResumesAfterWhatWasRead) {
    TempDir t;
    std::string log = t.file("grow.log"), db = t.file("db");
    std::string first = kBoot + real("001-amdgpu-gfxhub0-noretry-tcp.txt");
    std::string more = real("014-two-gpus-dmesg-plus-amdlog-pid-in-container.txt");
    writeFile(log, first);
    ASSERT_EQ(run({GPUFAULT_BIN, "--db", db, "ingest", log}).status, 0);
    // The checkpoint: the start of what the first ingest left unfinished (the file may grow:
    // its last amdgpu block is read again).
    auto cp = run({GPUFAULT_BIN, "--db", db, "query", "--csv", "SELECT line FROM sources"});
    ASSERT_EQ(cp.status, 0) << cp.err;
    const size_t firstLines = static_cast<size_t>(std::count(first.begin(), first.end(), '\n'));
    const size_t checkpoint = std::stoul(cp.out.substr(cp.out.find('\n') + 1));
    EXPECT_LT(checkpoint, firstLines);
    EXPECT_GT(checkpoint, 0u);
    writeFile(log, first + more);
    auto again = run({GPUFAULT_BIN, "--db", db, "ingest", log});
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(again.out.find("written again"), std::string::npos) << again.out;
    // Only the lines from the checkpoint on were read.
    size_t appended =
        static_cast<size_t>(std::count(more.begin(), more.end(), '\n')) + firstLines - checkpoint;
    EXPECT_NE(again.out.find("grow.log: " + std::to_string(appended) + " lines"), std::string::npos)
        << again.out;
    EXPECT_EQ(records(db), alone(t, "whole", first + more));
}

TEST(SourceIdentity, EachStdinIngestIsAStreamOfItsOwn) {
    TempDir t;
    std::string db = t.file("db");
    // Three unrelated runs whose output starts with the same line.
    const std::vector<std::string> logs = {
        "012-llamabench-rocr-fault-plus-journalctl.txt",
        "019-miopen-info-prefixed-rocr-fault-node7.txt",
        "065-rocm-build-says-cuda-error-hipErrorIllegalAddress.txt"};
    std::vector<nlohmann::json> want;
    size_t apart = 0;  // incidents of the runs ingested each into a store of its own
    for (size_t i = 0; i < logs.size(); ++i) {
        std::string sh = "{ echo 'Loading model'; cat '" + kReal + logs[i] + "'; } | exec " +
                         GPUFAULT_BIN + " --db " + db + " ingest -";
        auto r = run({"/bin/sh", "-c", sh});
        ASSERT_EQ(r.status, 0) << r.err;
        std::string name = "-#" + std::to_string(i + 1);
        EXPECT_EQ(r.out.rfind(name + ": ", 0), 0u) << r.out;
        auto one = alone(t, std::to_string(i), "Loading model\n" + real(logs[i]));
        ASSERT_FALSE(one.empty()) << logs[i];
        apart += incidents(t.file(std::to_string(i) + ".db"));
        for (auto& j : one) j["source"] = name;
        want.insert(want.end(), one.begin(), one.end());
    }
    // Each stream's records under its own name and its own line numbers.
    auto got = parseJsonLines(run({GPUFAULT_BIN, "--db", db, "events", "--json"}).out);
    for (auto& j : got) j.erase("id");
    EXPECT_EQ(got, want);
    // No incident joins records of two streams (was: run 3's error joined run 2's fault).
    EXPECT_EQ(incidents(db), apart);
    auto mixed = run({GPUFAULT_BIN,
                      "--db",
                      db,
                      "query",
                      "SELECT count(*) FROM (SELECT ie.incident_id FROM incident_evidence ie JOIN "
                      "evidence e ON e.id = ie.evidence_id GROUP BY ie.incident_id HAVING "
                      "count(DISTINCT e.source_id) > 1)"});
    ASSERT_EQ(mixed.status, 0) << mixed.err;
    EXPECT_NE(mixed.out.find('0'), std::string::npos) << mixed.out;
    EXPECT_EQ(mixed.out.find_first_of("123456789"), std::string::npos) << mixed.out;
    // `--source -` selects every stdin stream, `--source -#2` one.
    auto all =
        parseJsonLines(run({GPUFAULT_BIN, "--db", db, "events", "--json", "--source", "-"}).out);
    EXPECT_EQ(all.size(), want.size());
    auto second =
        parseJsonLines(run({GPUFAULT_BIN, "--db", db, "events", "--json", "--source", "-#2"}).out);
    ASSERT_FALSE(second.empty());
    for (const auto& j : second) EXPECT_EQ(j["source"], "-#2");
}

}  // namespace
}  // namespace gpufault::testing
