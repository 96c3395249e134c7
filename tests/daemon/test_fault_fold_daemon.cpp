// Hostile review 9 (HIGH): a fold of identical runtime errors spanned a ROCr fault (the end of
// a process: a log appended to by a second run). A record that ends a process now closes the
// folds of its process at its line, a fixed input position: the real daemon, killed with
// SIGKILL after it read the file and started again, stores the records and counts that one
// `gpufault ingest` of the same file stores.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/daemon/followed_log.h"

using namespace gpufault::testing;

namespace {

/// 100 000 lines: PyTorch `HIP error:` lines at 10 and 5 000 (one run), a ROCr fault at 6 000,
/// errors at 6 010 and 9 000 (the next run), one at 19 999 right before a ROCr fault in another
/// region at 20 000, errors at 20 005 and 21 000; the others are program output.
std::string foldLog() {
    std::string out;
    for (uint64_t n = 1; n <= 100000; ++n) {
        if (n == 10 || n == 5000 || n == 6010 || n == 9000 || n == 19999 || n == 20005 ||
            n == 21000)
            out += "RuntimeError: HIP error: an illegal memory access was encountered\n";
        else if (n == 6000 || n == 20000)
            out += fmt::format(
                "Memory access fault by GPU node-2 (Agent handle: 0x55d5b2d4a780) on address "
                "0x7f{:02x}59a01000. Reason: Page not present or supervisor privilege.\n",
                n / 1000);
        else
            out += fmt::format("step {} loss {:.3f}\n", n, 1.0 / static_cast<double>(n));
    }
    return out;
}

}  // namespace

TEST(DaemonFaultFold, FoldsClosedByAFaultAcrossAKill9StoreTheRowsOfOneIngest) {
    // No fold spans a fault: 10 and 5 000 fold; 6 010, 9 000 and 19 999 (the line before the
    // second fault, held back for its next line); 20 005 and 21 000.
    ASSERT_NO_FATAL_FAILURE(
        expectFoldAcrossKill9(GPUFAULTD_BIN,
                              GPUFAULT_BIN,
                              foldLog(),
                              {"10|1|2", "6000|0|1", "6010|1|3", "20000|0|1", "20005|1|2"}));
}
