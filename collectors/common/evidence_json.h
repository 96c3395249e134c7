// JSON form of evidence records: the `gpufault events --json` contract (docs/evidence.md).
#pragma once

#include <nlohmann/json.hpp>

#include "collectors/common/evidence.h"

namespace gpufault {

/// The evidence as a JSON object with every contract field present (null when not stated);
/// `id` and `source` are added by the caller. `align_2mib` is derived from `address`.
nlohmann::json toJson(const Evidence& e);
/// TimeInfo as `{"kernel_s":..,"wall":..,"runtime_us":..}` with only the set keys; null if empty.
nlohmann::json toJson(const TimeInfo& t);

}  // namespace gpufault
