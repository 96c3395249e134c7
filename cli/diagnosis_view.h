// The diagnoses of one incident (analysis/diagnosis.h), as `show` and `report` print them first.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "schema/sqlite.h"

namespace gpufault::cli {

/// `Diagnosis …` lines for `show` ("" when the incident has none or the query fails).
std::string diagnosisText(db::Db& d, int64_t incident);
/// A `### Diagnosis` section for `report --format md` ("" when none).
std::string diagnosisMarkdown(db::Db& d, int64_t incident);
/// An array of diagnoses with their findings for `report --format json`.
nlohmann::json diagnosisJson(db::Db& d, int64_t incident);

}  // namespace gpufault::cli
