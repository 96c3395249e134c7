// Hostile review 4, M: a record line over 1 MiB is handled alike by `gpufault ingest`
// (alloclog::parse of the whole file) and by gpufaultd's reader (storeAllocLogInTxn, 1 MiB
// blocks): not read, a warning of its line, the lines around it read. A real file, a real store.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "ingest/ingest_alloc.h"
#include "schema/store.h"
#include "tests/support/process.h"

namespace gpufault::testing {
namespace {

std::string rec(const std::string& ptr, size_t pad, char fill) {
    std::string s = "gpufault.alloc 1 alloc api=hipMalloc ptr=" + ptr +
                    " size=4096 mem=device device=0 rc=0 wall_us=1796032801000000 "
                    "mono_us=2000000 pid=4800 tid=4800 stack=";
    if (pad > s.size()) s += std::string(pad - s.size(), fill);
    return s + "\n";
}

TEST(AllocLongLine, TheDaemonsReaderAndTheCliAgreeOnLinesOver1MiB) {
    TempDir dir;
    std::string f = dir.file("gpufault-alloc.4800.log");
    constexpr size_t kMiB = size_t{1} << 20;
    // 1 MiB exactly (read), 1 MiB + 1 (not), 1.5 MiB across two blocks (not), 1 MiB - 200
    // straddling a block boundary (read), a short one (read).
    std::string text =
        "gpufault.alloc 1 start pid=4800 ppid=1 wall_us=1796032800000000 mono_us=1 exe=/x\n" +
        rec("0x7e0000000000", kMiB, 'a') + rec("0x7e0000100000", kMiB + 1, 'b') +
        rec("0x7e0000200000", kMiB + kMiB / 2, 'c') + rec("0x7e0000300000", kMiB - 200, 'd') +
        rec("0x7e0000400000", 0, '-');
    writeFile(f, text);

    auto cli = alloclog::parse(text);
    std::vector<uint64_t> cliLines;
    for (const auto& a : cli.allocations) cliLines.push_back(a.line);
    EXPECT_EQ(cliLines, (std::vector<uint64_t>{2, 5, 6}));
    std::vector<std::pair<uint64_t, std::string>> cliWarnings;
    for (const auto& w : cli.warnings) cliWarnings.emplace_back(w.line, w.message);
    const std::vector<std::pair<uint64_t, std::string>> want{
        {3, "line longer than 1 MiB: not read"}, {4, "line longer than 1 MiB: not read"}};
    EXPECT_EQ(cliWarnings, want);

    auto store = Store::open(dir.file("g.db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(store) << store.error().message;
    AllocFollowState state;
    ASSERT_TRUE(store->begin());
    auto sum = storeAllocLogInTxn(*store, f, AllocFollowOptions{}, state);
    ASSERT_TRUE(sum) << sum.error().message;
    ASSERT_TRUE(store->commit());
    EXPECT_EQ(sum->lines, 6u);
    EXPECT_EQ(sum->allocations, 3u);
    EXPECT_EQ(sum->warnings, 2u);
    auto rows = [&](const std::string& sql) {
        auto s = store->db().prepare(sql);
        EXPECT_TRUE(s);
        std::vector<std::pair<uint64_t, std::string>> out;
        while (s && s->step().value_or(false))
            out.emplace_back(static_cast<uint64_t>(s->i64(0)), s->str(1));
        return out;
    };
    EXPECT_EQ(rows("SELECT line, printf('0x%x', ptr) FROM allocations ORDER BY line"),
              (std::vector<std::pair<uint64_t, std::string>>{
                  {2, "0x7e0000000000"}, {5, "0x7e0000300000"}, {6, "0x7e0000400000"}}));
    EXPECT_EQ(rows("SELECT line, message FROM warnings ORDER BY line"), want);
}

// Hostile review 155, MED 4: a `start` line over 4 KiB (a long exe=) made the CLI say "no whole
// record" and gpufaultd never read the file. LOW 5: the pid of many `start` records once.
TEST(AllocLongLine, AStartLineOver4KiBIsTheFilesIdentityAndItsPidIsSaidOnce) {
    TempDir dir;
    std::string f = dir.file("gpufault-alloc.4800.log");
    const std::string start =
        "gpufault.alloc 1 start pid=4800 ppid=1 wall_us=1796032800000000 "
        "mono_us=1 exe=/opt/" +
        std::string(4300, 'x') + "\n";
    writeFile(f,
              start + start + rec("0x7e0000000000", 0, '-') +
                  "gpufault.alloc 1 start pid=4800 ppid=1 wall_us=1796032800000009 mono_us=9 "
                  "exe=/x\n");
    ASSERT_GT(start.size(), 4096u);
    auto store = Store::open(dir.file("g.db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(store) << store.error().message;
    auto cli = ingestAllocLog(*store, f);
    ASSERT_TRUE(cli) << cli.error().message;
    EXPECT_EQ(cli->allocations, 1u);
    EXPECT_EQ(cli->processes, 3u);
    EXPECT_EQ(cli->pids, std::vector<int64_t>{4800});
    auto id = allocSourceIdentity(f);
    ASSERT_TRUE(id);
    EXPECT_EQ(id->fingerprint.size(), std::string("alloc-0123456789abcdef").size());
    // The daemon's reader on a file of its own: the same records.
    std::string g = dir.file("gpufault-alloc.4801.log");
    writeFile(g, start + rec("0x7e0000000000", 0, '-'));
    AllocFollowState state;
    ASSERT_TRUE(store->begin());
    auto d = storeAllocLogInTxn(*store, g, AllocFollowOptions{}, state);
    ASSERT_TRUE(d) << d.error().message;
    ASSERT_TRUE(store->commit());
    EXPECT_FALSE(d->unchanged);
    EXPECT_EQ(d->lines, 2u);
    EXPECT_EQ(d->allocations, 1u);
}

// Hostile review 155, MED 3: `gpufault ingest` stored "record cut short" for a line being
// written; gpufaultd then read it whole and the warning stayed.
TEST(AllocLongLine, TheDaemonReadingALineTheCliFoundCutDropsItsWarning) {
    TempDir dir;
    std::string f = dir.file("gpufault-alloc.4800.log");
    const std::string head =
        "gpufault.alloc 1 start pid=4800 ppid=1 wall_us=1796032800000000 mono_us=1 exe=/x\n" +
        rec("0x7e0000000000", 0, '-');
    const std::string last = rec("0x7e0000100000", 0, '-');
    writeFile(f, head + last.substr(0, 40));
    auto store = Store::open(dir.file("g.db"), Store::Mode::ReadWrite);
    ASSERT_TRUE(store) << store.error().message;
    auto cli = ingestAllocLog(*store, f);
    ASSERT_TRUE(cli) << cli.error().message;
    auto warnings = [&] {
        auto s = store->db().prepare("SELECT line || ' ' || message FROM warnings");
        std::vector<std::string> out;
        while (s && s->step().value_or(false)) out.push_back(s->str(0));
        return out;
    };
    EXPECT_EQ(warnings(),
              std::vector<std::string>{"3 record cut short (no newline at the end of the file)"});
    writeFile(f, head + last);
    AllocFollowState state;
    ASSERT_TRUE(store->begin());
    auto d = storeAllocLogInTxn(*store, f, AllocFollowOptions{}, state);
    ASSERT_TRUE(d) << d.error().message;
    ASSERT_TRUE(store->commit());
    EXPECT_EQ(d->allocations, 2u);
    EXPECT_TRUE(warnings().empty()) << warnings().front();
}

}  // namespace
}  // namespace gpufault::testing
