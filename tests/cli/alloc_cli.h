// The `gpufault` command lines shared by the allocation tests of test_run: a query of the
// store, a stand-in job run under the real preload shim, a row of `show`'s allocation table.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <string>

#include "tests/support/process.h"

namespace gpufault::testing {

/// `gpufault --db DB query SQL`: its standard output (a header line, then tab-separated rows,
/// NULL as "NULL"); a non-zero exit is a test failure.
inline std::string query(const std::string& db, const std::string& sql) {
    auto q = run({GPUFAULT_BIN, "--db", db, "query", sql});
    EXPECT_EQ(q.status, 0) << q.err;
    return q.out;
}

/// `gpufault --db DB run --spool SPOOL --record-allocations --preload <the shim> -- <preload
/// host> <stand-in framework> <stand-in runtime> MODE`: the stand-in job `mode` under the
/// real shim, recorded into `db`.
inline ProcessResult runUnderShim(const std::string& db,
                                  const std::string& spool,
                                  const std::string& mode) {
    return run({GPUFAULT_BIN,
                "--db",
                db,
                "run",
                "--spool",
                spool,
                "--record-allocations",
                "--preload",
                PRELOAD_SHIM,
                "--",
                PRELOAD_HOST,
                STANDIN_FW,
                STANDIN_RT,
                mode});
}

/// The last line of `show`'s allocation table for the hipMalloc at `ptr` (printed as
/// 0x%016x); "" when there is none.
inline std::string hipMallocRow(const std::string& show, uint64_t ptr) {
    std::string row;
    std::istringstream in(show);
    for (std::string l; std::getline(in, l);)
        if (l.find(fmt::format("0x{:016x}", ptr)) != std::string::npos &&
            l.starts_with("hipMalloc"))
            row = l;
    return row;
}

}  // namespace gpufault::testing
