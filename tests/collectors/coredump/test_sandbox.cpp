// The limited child: a result comes back; a crash, a hang or a memory blow-up is an error value.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
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

// Hostile review 155, LOW 7: the child held gpufaultd's listening control socket; after a kill
// -9 of the daemon the next start could find "another gpufaultd listening". Sockets are closed
// in the child; files (the core it reads) stay open.
TEST(Sandbox, TheChildHoldsNoSocketButKeepsFiles) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    int file = ::open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(file, 0);
    auto r = runInChild(
        [&] {
            std::string s;
            for (int fd : {sv[0], sv[1], file})
                s += ::fcntl(fd, F_GETFD) == -1 && errno == EBADF ? "closed " : "open ";
            return s;
        },
        {});
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, "closed closed open ");
    // The parent's stay open.
    EXPECT_NE(::fcntl(sv[0], F_GETFD), -1);
    ::close(sv[0]);
    ::close(sv[1]);
    ::close(file);
}

}  // namespace
}  // namespace gpufault::coredump
