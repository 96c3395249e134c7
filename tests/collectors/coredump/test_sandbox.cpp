// The limited child: a result comes back; a crash, a hang or a memory blow-up is an error value.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <vector>

#include "collectors/coredump/sandbox.h"

namespace gpufault::coredump {
namespace {

TEST(Sandbox, ResultComesBack) {
    auto r = runInChild([] { return std::string(100000, 'x') + "end"; }, {});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->size(), 100003u);
    EXPECT_EQ(r->substr(r->size() - 3), "end");
}

TEST(Sandbox, CrashIsAnError) {
    auto r = runInChild(
        []() -> std::string {
            ::raise(SIGSEGV);
            return "never";
        },
        {});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("the reader died of Segmentation fault"), std::string::npos)
        << r.error().message;
}

TEST(Sandbox, HangIsKilledAtTheTimeLimit) {
    ChildLimits l;
    l.seconds = 0.5;
    auto t0 = std::chrono::steady_clock::now();
    auto r = runInChild(
        [] {
            for (;;) ::pause();
            return std::string();
        },
        l);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "gave up after 0.5 s (time limit)");
    EXPECT_LT(s, 5.0);
}

TEST(Sandbox, MemoryLimitStopsABlowUp) {
    ChildLimits l;
    l.address_space = 256ull << 20;
    auto r = runInChild(
        [] {
            std::vector<std::string> hog;
            for (int i = 0; i < 64; ++i) hog.emplace_back(64u << 20, 'x');  // 4 GiB
            return std::string("unreachable");
        },
        l);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "the reader ran out of memory (limit 256 MiB)");
}

TEST(Sandbox, OversizedResultIsRefused) {
    ChildLimits l;
    l.max_output = 1000;
    auto r = runInChild([] { return std::string(5000, 'y'); }, l);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "result larger than 1000 bytes");
}

}  // namespace
}  // namespace gpufault::coredump
