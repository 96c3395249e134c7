// Embedded schema migrations (schema/sql/NNN_*.sql), applied in order by user_version.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace gpufault {

/// Migration scripts; entry i brings the store from user_version i to i+1.
const std::vector<std::string_view>& migrations();

/// What all of migrations() build on an empty database (schema objects in creation order, then
/// the rows they insert), as one script; generated at build time by schema/schema_squash.cpp.
/// A new store runs it in place of the migrations (the same store; tests/schema/
/// test_fresh_schema.cpp compares the two), which re-parse every view at each ALTER TABLE.
std::string_view freshSchema();

/// The user_version freshSchema() brings an empty database to: migrations().size() when built.
size_t freshSchemaVersion();

}  // namespace gpufault
