// Ingest: one input stream → parsers → the store, in batches committed with the checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "schema/sqlite.h"
#include "schema/store.h"

namespace gpufault {

struct IngestOptions {
    int dispatch_window = 64;      ///< dispatches kept per (process, runtime thread)
    /// Commit after this many lines ... (gpufaultd's own default is 10 000: commit.batch_lines;
    /// 100 000 here: ~12 % less wall time on 2 GiB than 10 000, docs/performance.md "Tenth round")
    uint64_t batch_lines = 100000;
    double batch_seconds = 0.05;   ///< ... or this long after the first uncommitted line
    /// Bytes of each of the reader's two buffers; 0: LineReader::kChunk (bench/ingest_split
    /// --chunk-kib sweeps it).
    size_t read_chunk_bytes = 0;
    /// Progress callback: bytes read so far, total bytes (0 when unknown). May be empty.
    std::function<void(uint64_t, uint64_t)> progress;
    /// Asked after each batch of lines and when a read waiting on a pipe is ended (stop_fd);
    /// true: what was read is committed with the checkpoint, as a batch is, and the ingest
    /// ends with IngestSummary::interrupted (the same ingest of a file goes on from there).
    /// May be empty.
    std::function<bool()> stop;
    /// Readable once `stop` says true (an eventfd the signal handler writes): a read that waits
    /// on a quiet pipe ends then, and what was read is stored. -1: none.
    int stop_fd = -1;
};

/// What one ingest did.
struct IngestSummary {
    std::string path;
    /// The source's stored path, as `events` prints it in WHERE: `path`, or for stdin the
    /// stream's own name `-#N` (each `ingest -` is a new stream, N counting them in the store).
    std::string name;
    int64_t source_id = 0;  ///< the source row in the store
    uint64_t lines = 0;     ///< lines read in this run
    uint64_t bytes = 0;
    std::map<std::string, uint64_t> evidence;  ///< new records by kind
    /// New records of every kind.
    uint64_t evidenceTotal() const {
        uint64_t n = 0;
        for (const auto& [k, v] : evidence) n += v;
        return n;
    }
    uint64_t dispatches = 0;     ///< dispatch lines counted
    uint64_t dispatch_rows = 0;  ///< dispatch rows kept (windows)
    uint64_t operands = 0;
    uint64_t warnings = 0;
    uint64_t truncated_lines = 0;  ///< lines over 1 MiB, parsed and stored cut to 1 MiB
    /// Kernel-log records (a kernel_s or wall time) the file's earlier content held, stored then
    /// and not again (StoreSink: a file written again, `dmesg > gpu.log` after a wrap).
    uint64_t repeated = 0;
    /// Batches of lines classified by the reading thread and by the matching thread (each
    /// classifies what the other has not claimed when it would otherwise wait).
    uint64_t classified_by_reader = 0, classified_by_matcher = 0;
    bool resumed = false;          ///< started from an earlier, interrupted run's checkpoint
    bool unchanged = false;        ///< already ingested completely; nothing read
    bool interrupted = false;      ///< IngestOptions::stop said so: stopped at a checkpoint
    /// The file's stored source was written for other bytes (rewritten in place under the same
    /// first line, or cut short): it was retired with its records, and the file read from its
    /// start as a new source. Its id (0: none) and the bytes it had read.
    int64_t replaced_source = 0;
    uint64_t replaced_bytes = 0;
    double seconds = 0;
};

/// Ingests a file (or "-" for stdin). Resumes from the source's checkpoint while the file's
/// bytes before it are those read (fileSource(): else a new source read from the start); a file
/// ingested completely and unchanged is skipped; stdin is a new stream each time. Errors
/// (unreadable file, store failure) name the file; what was committed before an error stays in
/// the store.
db::Result<IngestSummary> ingestFile(Store& store,
                                     const std::string& path,
                                     const IngestOptions& opt = {});

/// While it lives, `stop` (kept by the caller) interrupts the queries of `d` (SQLite's
/// progress handler, every 10 000 VM steps).
class StoreInterrupt {
  public:
    StoreInterrupt(db::Db& d, const std::function<bool()>& stop);
    ~StoreInterrupt();
    StoreInterrupt(const StoreInterrupt&) = delete;
    StoreInterrupt& operator=(const StoreInterrupt&) = delete;

  private:
    db::Db& d_;
};

/// Correlates every stored record (with the /proc snapshots' NSpid and the runs' pids) without
/// writing anything; the error "interrupted" as soon as `stop` returns true.
db::Result<std::vector<IncidentRecord>> correlateStored(Store& store,
                                                        const std::function<bool()>& stop = {});

/// Recomputes incidents from all evidence in the store (one transaction). `stop`, asked
/// every few thousand steps of the queries, the correlation and the writes, ends it early with
/// the error "interrupted" and the stored incidents unchanged.
db::Result<size_t> recorrelate(Store& store, const std::function<bool()>& stop = {});

}  // namespace gpufault
