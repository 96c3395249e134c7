// Incidents of a real store built by the gpufault binary, for the correlation tests: which
// records (`file:line`) each incident holds, and why each joined.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace gpufault::testing {

/// tests/data/correlate/, where the correlation tests' constructed logs lie.
inline const std::string kCorrelateData = GPUFAULT_SOURCE_DIR "/tests/data/correlate/";

/// What a store's incidents hold: members (`file:line`, file without directory) per incident,
/// and each member's link.
struct Incidents {
    std::set<std::set<std::string>> groups;
    std::map<std::string, std::string> link;
    bool operator==(const Incidents&) const = default;
};

/// The incidents of the store at `db` (read with `gpufault query`).
Incidents incidentsOf(const std::string& db);

/// Ingests `files` (names in tests/data/correlate/ or paths) into a fresh store in the order
/// given, then in the reverse order into another; expects the same incidents and returns them.
Incidents ingestBothOrders(const std::vector<std::string>& files);

}  // namespace gpufault::testing
