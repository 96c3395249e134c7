// main() of test_daemon_kill9: GoogleTest's, plus `--long` (the name for the long run:
// 200 kills instead of 50), which sets GPUFAULT_LONG=1 as the environment variable does.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--long") == 0) {
            ::setenv("GPUFAULT_LONG", "1", 1);
            continue;
        }
        argv[kept++] = argv[i];
    }
    argv[kept] = nullptr;
    ::testing::InitGoogleTest(&kept, argv);
    return RUN_ALL_TESTS();
}
