// What a resumed stream must know of the fault records it does not read again: the flood
// rule of ingest/store_sink.h asks for the line of the previous fault record.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "schema/sqlite.h"

namespace gpufault {

/// The greatest line of a source's fault records of one process and rank.
struct LastFaultLine {
    std::optional<int64_t> pid;   ///< nullopt: the records that name no process
    std::optional<int64_t> rank;  ///< `[rankN]:`; nullopt: the records that state none
    int64_t line = 0;             ///< 1-based line of the stream
};

/// For source `source_id`: per (pid, rank), a missing pid or rank counting as one value, the
/// greatest `line` in (`after`, `through`] of an evidence row whose kind is one of `kinds` (kind
/// names, `rocr_memory_fault`, ...). Ordered by pid then rank, missing first; empty when there
/// is none. Errors:
/// SQLite's (the store cannot be read).
db::Result<std::vector<LastFaultLine>> lastFaultLines(db::Db& d,
                                                      int64_t source_id,
                                                      int64_t after,
                                                      int64_t through,
                                                      std::span<const std::string_view> kinds);

}  // namespace gpufault
