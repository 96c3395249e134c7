// Ingest of one allocation record file written by libgpufault-preload.so
// (gpufault-alloc.<pid>.log): parsed whole (collectors/preload/alloc_log) and stored in one
// transaction with the source's checkpoint. A file that grew since it was ingested (its stored
// bytes unchanged) is read again and its allocations replaced; a file that shrank or whose
// stored bytes changed is a new generation: the rows stored before are kept, the new ones added.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/store.h"

namespace gpufault {

/// What one allocation-file ingest did.
struct AllocIngestSummary {
    std::string path;
    int64_t source_id = 0;
    bool unchanged = false;         ///< already ingested at this size: nothing read
    bool new_generation = false;    ///< cut short or written again since the last ingest
    uint64_t kept_allocations = 0;  ///< rows of the earlier generation, kept
    uint64_t old_size = 0;          ///< bytes the earlier generation had
    uint64_t lines = 0, events = 0, allocations = 0, freed = 0, failed = 0, warnings = 0;
    uint64_t processes = 0;                  ///< `start` records
    std::vector<int64_t> pids;               ///< of the `start` records
    std::vector<std::string> warning_texts;  ///< the first 10, as "PATH:LINE: message"
    double seconds = 0;
};

/// True when the file at `path` starts with a gpufault.alloc record (reads its first bytes;
/// false for anything that is not a readable regular file).
bool isAllocLogFile(const std::string& path);

/// Reads and stores the file (at most 1 GiB); `run_id`: the run whose job wrote it. Errors name
/// the file; nothing is stored then.
db::Result<AllocIngestSummary> ingestAllocLog(Store& store,
                                              const std::string& path,
                                              std::optional<int64_t> run_id = std::nullopt);

}  // namespace gpufault
