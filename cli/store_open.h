// Opening the store for a subcommand, with the messages a user needs.
#pragma once

#include <optional>

#include "cli/commands.h"
#include "schema/store.h"

namespace gpufault::cli {

/// Opens the store read-only for queries; prints the error and returns nullopt on failure.
std::optional<Store> openForQuery(const Global& g);

}  // namespace gpufault::cli
