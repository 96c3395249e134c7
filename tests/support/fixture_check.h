// Compares `gpufault events --json` output with a fixture's .expected.jsonl, by the rules of
// tests/data/real/README.md ("How a case is checked").
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpufault::testing {

/// Parses JSON Lines; lines that are not JSON objects are skipped.
std::vector<nlohmann::json> parseJsonLines(const std::string& text);

/// Every problem found: a missing record, a field that differs, an extra strict-kind record.
/// Empty when the case passes.
std::vector<std::string> checkCase(const std::vector<nlohmann::json>& expected,
                                   const std::vector<nlohmann::json>& actual);

}  // namespace gpufault::testing
