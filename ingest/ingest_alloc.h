// Ingest of one allocation record file written by libgpufault-preload.so
// (gpufault-alloc.<pid>.log): parsed in blocks (collectors/preload/alloc_log) and stored in one
// transaction with the source's checkpoint. A file that grew since it was ingested (its stored
// bytes unchanged) is read again and its new records added; a file that shrank or whose stored
// bytes changed is a new generation: the rows stored before are kept, the new ones added. The
// records of one recording process are stored once, whatever file, copy or generation they came
// through (Store::appendAllocations()).
// `gpufault ingest` and gpufaultd both read from the checkpoint (storeAllocLogInTxn).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/preload/alloc_log.h"
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
    /// records its recording already held (stored from another file or generation): not
    /// stored again (a free they carry is added to the stored row)
    uint64_t duplicates = 0;
    uint64_t after_end = 0;           ///< records refused: after the stored end of their process
    uint64_t processes = 0;           ///< `start` records
    std::vector<int64_t> pids;        ///< of the `start` records; none stored: of the allocations
    bool pids_without_start = false;  ///< `pids` are the allocations' (no `start` stored)
    std::vector<std::string> warning_texts;  ///< the first 10, as "PATH:LINE: message"
    double seconds = 0;
    uint64_t bytes_read = 0;  ///< storeAllocLogInTxn: bytes of the file read by this call
    /// Lines and allocations of the source stored by earlier reads (storeAllocLogInTxn: the
    /// file grew; `lines`, `events`, `freed`, `failed` and `warnings` are this read's, and
    /// `allocations` the source's total).
    uint64_t lines_before = 0, allocations_before = 0;
};

/// True when the file at `path` starts with a gpufault.alloc record (reads its first bytes;
/// false for anything that is not a readable regular file).
bool isAllocLogFile(const std::string& path);

/// Reads and stores the file (at most 1 GiB) in one transaction, as storeAllocLogInTxn() with
/// `to_end` (in 1 MiB blocks: memory holds the parser's open allocations, not the file);
/// `run_id`: the run whose job wrote it. A file named by the shim (gpufault-alloc.PID.log)
/// counts only for that pid. Errors name the file; nothing is stored then.
db::Result<AllocIngestSummary> ingestAllocLog(Store& store,
                                              const std::string& path,
                                              std::optional<int64_t> run_id = std::nullopt);

/// The source identity `path` has in the store (kind `alloc`, device, inode, its `start` line's
/// hash), read from its first line without following a link; nullopt when it cannot be read or
/// has no whole first line yet.
std::optional<SourceIdentity> allocSourceIdentity(const std::string& path);

/// How gpufaultd stores a file it follows (daemon/sources/alloc_dir.h).
struct AllocFollowOptions {
    /// The file's owner must be this uid (checked on the open descriptor): a file replaced
    /// since it was trusted is refused. nullopt: not checked.
    std::optional<uint32_t> owner;
    /// Only records of this pid are stored; others become warnings ("record of pid X in the
    /// file of pid P: refused"). nullopt: every pid.
    std::optional<int64_t> only_pid;
    /// The run whose job wrote the file (`gpufault run`, `ingest --run`).
    std::optional<int64_t> run_id;
    /// A symbolic link is followed (`gpufault ingest LINK`); gpufaultd refuses one.
    bool follow_links = false;
    /// Records of a process whose end is stored are all refused: they were read after it
    /// (gpufaultd). false: only those timed after the end (Store::appendAllocations()).
    bool read_after_end = true;
    /// `gpufault ingest`: the file is read to its end once. A last line without its newline
    /// is stored as the warning "record cut short …" at its line and left after the
    /// checkpoint (a later read takes it whole and drops that warning); a file without one
    /// whole line is an error.
    bool to_end = false;
};

/// What gpufaultd keeps of a followed file between reads: the parser with its open allocations
/// (so a later free pairs with a stored allocation) and where it stopped. It is rebuilt from the
/// file's stored bytes when it does not match the store's checkpoint (a restarted daemon, a
/// rolled-back transaction, a file the CLI ingested meanwhile).
struct AllocFollowState {
    int64_t source_id = 0;
    int64_t offset = -1;       ///< bytes [0, offset) parsed and stored (whole lines); -1: none
    uint64_t lines = 0;        ///< lines in [0, offset)
    uint64_t hash = 0;         ///< FNV-1a 64 of bytes [0, offset)
    uint64_t allocations = 0;  ///< allocations of this source stored (of the followed pid)
    /// the last `start` record's /proc starttime (clock ticks after boot), when the shim wrote it
    std::optional<int64_t> start_ticks;
    /// that record's boot id and pid namespace inode (newer shims), when written
    std::optional<std::string> boot;
    std::optional<uint64_t> pidns;
    std::optional<int64_t> start_pid;  ///< that record's pid
    alloclog::Parser parser;
    /// Takes `p` (a `start` record read) as the file's last one.
    void lastStart(const alloclog::Process& p) {
        start_pid = p.pid;
        start_ticks = p.start_ticks;
        boot = p.boot_id;
        pidns = p.pidns;
    }
};

/// The daemon's form of ingestAllocLog(): inside the transaction the caller holds (no
/// begin/commit: the caller checkpoints and commits), incremental: only the bytes after the
/// stored checkpoint are read, in 1 MiB blocks, up to the file's last newline (a record being
/// written is read on the next call); their allocations are added, the frees of allocations
/// stored before update those rows, and the checkpoint (offset, lines, a hash of the bytes up
/// to it) is written with them. A file whose identity changed (device, inode, `start` line) is
/// another source; one cut below the checkpoint, or whose stored bytes no longer hash to the
/// checkpoint when `state` is rebuilt, is a new generation (as ingestAllocLog() says). The same
/// source identity, cursor and recording rules as ingestAllocLog(), so the CLI and the daemon
/// never store a record twice; records of a process whose end is stored are refused (they were
/// read after it). Nothing new: `unchanged`. Errors name the file (the caller undoes
/// its savepoint and drops `state`).
db::Result<AllocIngestSummary> storeAllocLogInTxn(Store& store,
                                                  const std::string& path,
                                                  const AllocFollowOptions& opt,
                                                  AllocFollowState& state);

}  // namespace gpufault
