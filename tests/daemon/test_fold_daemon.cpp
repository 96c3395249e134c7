// Hostile review 3, MEDIUM 4: a folded runtime record (identical errors counted into one) held
// gpufaultd's checkpoint at its first line for the life of the file. Folds now close kFoldLines
// (32 768) after their first line, in gpufaultd as in `gpufault ingest`: the real daemon, killed
// with SIGKILL after it read the file and started again, stores the records and counts that one
// `gpufault ingest` of the same file stores.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/daemon/followed_log.h"

using namespace gpufault::testing;

namespace {

/// 100 000 lines: a HIP API error at lines 1, 20 000, 50 000, 60 000 and 95 000, a PyTorch
/// `HIP error:` line at 10 000 and 45 000; the others are program output.
std::string foldLog() {
    std::string out;
    for (uint64_t n = 1; n <= 100000; ++n) {
        if (n == 1 || n == 20000 || n == 50000 || n == 60000 || n == 95000)
            out += fmt::format(
                ":3:hip_module.cpp           :85  : {:010} us: [pid:4242  tid:0x7f0a1b2c3d40]  "
                "hipModuleGetFunction: Returned hipErrorNotFound : \n",
                1000000000 + n);
        else if (n == 10000 || n == 45000)
            out += "RuntimeError: HIP error: an illegal memory access was encountered\n";
        else
            out += fmt::format("step {} loss {:.3f}\n", n, 1.0 / static_cast<double>(n));
    }
    return out;
}

}  // namespace

TEST(DaemonFold, AFoldAcrossAKill9StoresTheRecordsAndCountsOfOneIngest) {
    // 1 and 20 000 fold (count 2); that fold closes before line 32 769, so 50 000 starts
    // another, which 60 000 joins; 95 000 is 45 000 lines after 50 000: a third.
    ASSERT_NO_FATAL_FAILURE(expectFoldAcrossKill9(
        GPUFAULTD_BIN,
        GPUFAULT_BIN,
        foldLog(),
        {"1|1|2", "10000|1|1", "45000|1|1", "50000|1|2", "95000|1|1"},
        [](const std::string& store) {
            // Whatever the kill left (the last fold open or stored): no fold older than two
            // spans holds the checkpoint (the fold of line 1 held it at 0 before).
            EXPECT_GE(storeCount(store, "SELECT line FROM sources"), 100000 - 2 * 32768);
        }));
}
