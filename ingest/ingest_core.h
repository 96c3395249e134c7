// Ingest of one core file: read (collectors/coredump), then its `coredump` record, its threads,
// frames and mapped files stored in one transaction with the source's checkpoint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "collectors/common/evidence.h"
#include "collectors/coredump/core_reader.h"
#include "schema/store.h"

namespace gpufault {

/// What one core ingest did.
struct CoreIngestSummary {
    std::string path;
    int64_t core_id = 0;
    bool unchanged = false;  ///< this core was already stored: nothing read
    std::string kind;        ///< cpu | rocr_gpu | cuda_gpu
    size_t threads = 0;
    size_t frames = 0;      ///< frames of the crashing thread
    std::string signature;  ///< stack signature, "" for GPU cores
    std::string top;        ///< the first frame that is not generic (describeFrame)
    double seconds = 0;
};

/// The `coredump` record of a CPU core (pure): pid, comm, crashing tid, si_addr as the address,
/// the signal as the reason, frame #0's module and offset (what the kernel's segfault line
/// prints), and attrs `signal`, `si_code`, `stack` (signature), `frame` (first non-generic
/// frame), `threads`. `wall` is the core's time as local `YYYY-MM-DDTHH:MM:SS`.
Evidence coreEvidence(const coredump::CoreReport& r, const std::string& wall);

/// The rows of the core tables for a report (pure; mapped files folded to one row per path).
CoreRecord coreRecord(const coredump::CoreReport& r);

/// Reads and stores the core at `path` (the path as given: it is stored as the source path;
/// the cores table keeps its absolute form). A core already stored (same device, inode,
/// first 4 KiB and size) is not read again. Errors name the file; nothing is stored then.
db::Result<CoreIngestSummary> ingestCore(Store& store,
                                         const std::string& path,
                                         const coredump::ReadOptions& opt = {});

}  // namespace gpufault
