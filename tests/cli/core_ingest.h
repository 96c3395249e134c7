// The `gpufault ingest` command line shared by the core tests: the fixture core's executable and
// its separate debug file (tests/data/cores, see its recipe) are named on it.
#pragma once

#include <string>
#include <vector>

namespace gpufault::testing {

/// Directory of the fixture core, its executable `crashmain` and `buildid/` debug tree.
inline const std::string kCoreDir = GPUFAULT_SOURCE_DIR "/tests/data/cores/";

/// `gpufault --db DB ingest --exe crashmain --debuginfo-path buildid FILES…`.
inline std::vector<std::string> coreIngestArgs(const std::string& db,
                                               const std::vector<std::string>& files) {
    std::vector<std::string> a{GPUFAULT_BIN,
                               "--db",
                               db,
                               "ingest",
                               "--exe",
                               kCoreDir + "crashmain",
                               "--debuginfo-path",
                               kCoreDir + "buildid"};
    a.insert(a.end(), files.begin(), files.end());
    return a;
}

}  // namespace gpufault::testing
