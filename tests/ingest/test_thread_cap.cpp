// Issue 4: when the unwinder's thread cap (UnwindOptions::max_threads, 1024 by default) is hit,
// the thread total of the core's notes is reported beside the threads kept. A real three-thread
// core (tests/tools/rocr_abort) read with a cap of 2, stored in a real store, printed by the
// built binary's `stack` and `cores --json`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ingest/ingest_core.h"
#include "schema/store.h"
#include "tests/support/process.h"
#include "tests/support/rocr_abort_core.h"

namespace gpufault::testing {
namespace {

TEST(ThreadCap, TheThreadsOfTheNotesAreCountedPastTheCap) {
    TempDir t;
    auto core = rocrAbortCore(t);
    if (core.empty())
        GTEST_SKIP() << "1 test skipped: no core written (kernel.core_pattern is not 'core')";
    const std::string db = t.file("db");
    {
        auto s = Store::open(db, Store::Mode::ReadWrite);
        ASSERT_TRUE(s) << s.error().message;
        coredump::ReadOptions o;
        o.unwind.max_threads = 2;
        auto r = ingestCore(*s, core, o, true);
        ASSERT_TRUE(r) << r.error().message;
        EXPECT_EQ(r->threads, 2u);
        EXPECT_EQ(r->partial, "thread limit reached: 2 of 3 threads unwound");
    }
    auto st = run({GPUFAULT_BIN, "--db", db, "stack", "1"});
    ASSERT_EQ(st.status, 0) << st.err;
    EXPECT_NE(st.out.find("threads    2 of 3 stored: the thread limit was reached\n"),
              std::string::npos)
        << st.out;
    EXPECT_EQ(st.out.find("the stack is partial"), std::string::npos) << st.out;
    auto js = run({GPUFAULT_BIN, "--db", db, "cores", "--json"});
    ASSERT_EQ(js.status, 0) << js.err;
    auto c = nlohmann::json::parse(js.out.substr(0, js.out.find('\n')));
    EXPECT_EQ(c["threads"], 2);
    EXPECT_EQ(c["threads_truncated"], true);
}

}  // namespace
}  // namespace gpufault::testing
