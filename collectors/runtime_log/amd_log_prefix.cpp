#include "collectors/runtime_log/amd_log_prefix.h"

namespace gpufault {

// Placeholder until the runtime-log parsers land.
std::optional<AmdLogPrefix> parseAmdLogPrefix(std::string_view) { return std::nullopt; }

}  // namespace gpufault
