// Issue 4: a core too big for the unwind limit still gives a stack. A real three-thread core
// (tests/tools/rocr_abort) read with the unwinding child's own deadline already passed keeps the
// crashing thread, unwound first, and says "unwind limit reached after 1 of 3 threads"; the usual
// limit unwinds all three. The partial stack goes through a real store to `stack`, `show`,
// `report` and `cores --json` of the built binary.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ingest/ingest_core.h"
#include "schema/store.h"
#include "tests/support/process.h"
#include "tests/support/rocr_abort_core.h"

namespace gpufault::testing {
namespace {

constexpr const char* kPartial = "unwind limit reached after 1 of 3 threads (0 s)";

bool hasSymbol(const coredump::Thread& t, const std::string& symbol) {
    for (const auto& f : t.frames)
        if (f.symbol == symbol) return true;
    return false;
}

/// A read whose own deadline has passed before the first thread is unwound.
coredump::ReadOptions expired() {
    coredump::ReadOptions o;
    o.unwind.seconds = 0;
    return o;
}

TEST(UnwindLimit, ChildDeadlineIsAMarginBeforeTheParentsKill) {
    EXPECT_DOUBLE_EQ(coredump::childDeadline(60), 55);  // at most 5 s early
    EXPECT_DOUBLE_EQ(coredump::childDeadline(10), 9);   // 10 % early
    EXPECT_DOUBLE_EQ(coredump::childDeadline(1), 0.9);
}

TEST(UnwindLimit, DeadlinePassedKeepsTheCrashingThreadAndSaysSo) {
    TempDir t;
    auto core = rocrAbortCore(t);
    if (core.empty()) GTEST_SKIP() << "no core written (kernel.core_pattern is not 'core')";
    auto r = coredump::readCore(core, expired());
    ASSERT_TRUE(r) << r.error().message;
    ASSERT_EQ(r->layout.notes.tids.size(), 3u);
    ASSERT_TRUE(r->stack);
    ASSERT_EQ(r->stack->threads.size(), 1u);
    const auto& th = r->stack->threads.front();
    EXPECT_TRUE(th.crashed);
    EXPECT_EQ(th.tid, r->layout.notes.tids.front());
    EXPECT_TRUE(hasSymbol(th, "(anonymous namespace)::eventThread(void*)"));
    EXPECT_TRUE(hasSymbol(th, "abort"));
    EXPECT_TRUE(r->stack->threads_truncated);
    EXPECT_EQ(r->stack->partial, kPartial);
    EXPECT_FALSE(r->signature.hash.empty());  // the signature comes from the crashing thread
}

TEST(UnwindLimit, UsualLimitUnwindsEveryThreadCrashingFirst) {
    TempDir t;
    auto core = rocrAbortCore(t);
    if (core.empty()) GTEST_SKIP() << "no core written (kernel.core_pattern is not 'core')";
    auto whole = coredump::readCore(core);
    ASSERT_TRUE(whole) << whole.error().message;
    ASSERT_TRUE(whole->stack);
    ASSERT_EQ(whole->stack->threads.size(), 3u);
    EXPECT_TRUE(whole->stack->threads.front().crashed);
    EXPECT_FALSE(whole->stack->threads[1].crashed);
    EXPECT_FALSE(whole->stack->threads[2].crashed);
    EXPECT_FALSE(whole->stack->threads_truncated);
    EXPECT_FALSE(whole->stack->partial);
    bool hip = false;
    for (const auto& th : whole->stack->threads) hip |= hasSymbol(th, "hipDeviceSynchronize");
    EXPECT_TRUE(hip);
    // The partial read's crashing thread is the whole read's, frame for frame.
    auto part = coredump::readCore(core, expired());
    ASSERT_TRUE(part && part->stack);
    const auto& a = part->stack->threads.front().frames;
    const auto& b = whole->stack->threads.front().frames;
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].pc, b[i].pc) << i;
        EXPECT_EQ(a[i].symbol, b[i].symbol) << i;
    }
    EXPECT_EQ(part->signature.hash, whole->signature.hash);
}

TEST(UnwindLimit, PartialStackIsStoredAndStackShowAndCoresSayWhy) {
    TempDir t;
    auto core = rocrAbortCore(t);
    if (core.empty()) GTEST_SKIP() << "no core written (kernel.core_pattern is not 'core')";
    {
        auto store = Store::open(t.file("db"), Store::Mode::ReadWrite);
        ASSERT_TRUE(store) << store.error().message;
        auto r = ingestCore(*store, core, expired());
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->threads, 1u);
        EXPECT_EQ(r->partial, kPartial);
    }
    // The binary ingests the same core again: unchanged (stored once), then correlates.
    auto again = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", core});
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_NE(again.out.find("core already ingested, unchanged"), std::string::npos) << again.out;

    const std::string line = std::string("  partial    the stack is partial: ") + kPartial;
    auto stack = run({GPUFAULT_BIN, "--db", t.file("db"), "stack", "1", "--all-threads"});
    ASSERT_EQ(stack.status, 0) << stack.err;
    EXPECT_NE(stack.out.find(line), std::string::npos) << stack.out;
    EXPECT_NE(stack.out.find(" (crashed):\n"), std::string::npos) << stack.out;
    EXPECT_NE(stack.out.find("eventThread(void*)"), std::string::npos) << stack.out;
    EXPECT_EQ(stack.out.find("hipDeviceSynchronize"), std::string::npos) << stack.out;

    auto show = run({GPUFAULT_BIN, "--db", t.file("db"), "show", "1"});
    ASSERT_EQ(show.status, 0) << show.err;
    EXPECT_NE(show.out.find(line), std::string::npos) << show.out;

    auto md = run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1"});
    ASSERT_EQ(md.status, 0) << md.err;
    EXPECT_NE(md.out.find(line.substr(2)), std::string::npos) << md.out;
    auto js = run({GPUFAULT_BIN, "--db", t.file("db"), "report", "1", "--format", "json"});
    ASSERT_EQ(js.status, 0) << js.err;
    EXPECT_EQ(nlohmann::json::parse(js.out)["cores"][0]["stack_partial"], kPartial) << js.out;

    auto cores = run({GPUFAULT_BIN, "--db", t.file("db"), "cores", "--json"});
    ASSERT_EQ(cores.status, 0) << cores.err;
    auto j = nlohmann::json::parse(cores.out.substr(0, cores.out.find('\n')));
    EXPECT_EQ(j["threads"], 1);
    EXPECT_EQ(j["threads_truncated"], true);
    EXPECT_EQ(j["stack_partial"], kPartial);
}

TEST(UnwindLimit, IngestTakesTheLimitAndKeepsItInRange) {
    TempDir t;
    auto core = rocrAbortCore(t);
    if (core.empty()) GTEST_SKIP() << "no core written (kernel.core_pattern is not 'core')";
    auto r = run({GPUFAULT_BIN, "--db", t.file("db"), "ingest", "--unwind-seconds", "30", core});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(", 3 threads, "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("partial"), std::string::npos) << r.out;
    auto zero = run({GPUFAULT_BIN, "--db", t.file("db2"), "ingest", "--unwind-seconds", "0", core});
    EXPECT_NE(zero.status, 0);
    EXPECT_NE(zero.err.find("--unwind-seconds"), std::string::npos) << zero.err;
}

}  // namespace
}  // namespace gpufault::testing
