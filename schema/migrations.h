// Embedded schema migrations (schema/sql/NNN_*.sql), applied in order by user_version.
#pragma once

#include <string_view>
#include <vector>

namespace gpufault {

/// Migration scripts; entry i brings the store from user_version i to i+1.
const std::vector<std::string_view>& migrations();

}  // namespace gpufault
