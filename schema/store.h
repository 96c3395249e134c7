// The store: one SQLite file holding evidence, context, checkpoints and incidents.
// The only code that speaks SQL is in schema/.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "collectors/common/evidence.h"
#include "collectors/coredump/stack.h"
#include "collectors/preload/alloc_log.h"
#include "schema/sqlite.h"

namespace gpufault {

/// How an input stream is recognised again: device + inode + a fingerprint of its first bytes.
struct SourceIdentity {
    std::string path;           ///< as given to `ingest` ("-" for stdin)
    std::string kind = "file";  ///< file | stdin | kmsg | journal
    std::optional<int64_t> device;
    std::optional<int64_t> inode;
    std::string fingerprint;  ///< hex hash of the first bytes (up to 4 KiB)
    /// Store::source() sets a found row's path to `path`; false: the row keeps its path (the
    /// caller checks whether it still names the file: Store::setSourcePath)
    bool rename = true;
};

/// A place in a file stream: `offset` bytes and `line` lines before it, `hash` of its bytes
/// [0, offset) (the daemon's prefix hash).
struct PrefixMark {
    int64_t offset = 0, line = 0;
    uint64_t hash = 0;
};

/// A checkpoint as the store's row holds it, compared by Store::movePosition.
struct StoredPosition {
    int64_t offset = 0, line = 0, max_line = 0;
};

/// A source's checkpoint: where a (resumed) ingest starts.
struct SourceState {
    int64_t id = 0;
    int64_t offset = 0;     ///< bytes: start of the oldest unfinished block
    int64_t line = 0;       ///< lines before `offset`
    int64_t max_line = 0;   ///< highest line whose context (dispatch counts) is stored
    bool complete = false;  ///< the whole stream was ingested
    /// journal sources: the entry `offset` stands for; alloc sources: a hash of bytes [0, offset);
    /// file sources `gpufault ingest` read past 64 MiB: "head:" + the prefix hash of that much
    /// (ingest/source_identity.h, hashCheckpoint)
    std::optional<std::string> cursor;
    int64_t size = 0;  ///< the stream's size (bytes) when the checkpoint was written, 0 unknown
    /// file sources: a hash of the file's bytes [0, offset) (copytruncate; nullopt: not known)
    std::optional<uint64_t> prefix_hash;
    /// file sources: checkpoints committed before this one, newest first (a copy smaller
    /// than `offset` may match one)
    std::vector<PrefixMark> earlier;
    /// The row's checkpoint when this state was read from the store or last written by
    /// movePosition (callers that start elsewhere change offset and line, never this);
    /// nullopt: not read from the store (movePosition then writes unconditionally).
    std::optional<StoredPosition> stored = std::nullopt;
    /// The lines after `line` were stored by a stream that read past its checkpoint and ended
    /// there only for now (`gpufault ingest` at a file's end: a last line without its newline,
    /// a fold, block or dispatch window still open: StreamIngest::finish(true)): the reader
    /// that reads line `line` + 1 again replaces their rows (Store::dropLinesFrom; migration
    /// 022).
    bool unended = false;
    /// file sources with `unended`: a hash of the bytes [0, size) the rows after `line` were
    /// read from (size up to kPrefixHashCap; nullopt: not known): a later reader replaces those
    /// rows only if the file still holds those bytes (checkPrefix, migration 023)
    std::optional<uint64_t> read_hash = std::nullopt;
    /// the row's path as read by Store::source() (before any rename); "" for a new row
    std::string path = "";
};

/// The bytes the file sources of one file (device + inode) counted lost (sources.lost_bytes).
struct FileLoss {
    int64_t device = 0, inode = 0;
    int64_t bytes = 0;
};

/// A file source whose stream was not finished (complete = 0), as a restarted daemon finds it.
struct UnfinishedFile {
    SourceIdentity identity;
    SourceState state;
    int64_t lost = 0;  ///< bytes counted lost so far (sources.lost_bytes; copyCandidates only)
};

/// One correlated incident, as written by correlate/ (ids are assigned by the store).
struct IncidentMember {
    int64_t evidence_id = 0;
    /// "member" | "context" | "candidate" (a record of another incident, in the same 2 MiB
    /// region, that could be this one's as much as another: not joined)
    std::string role;
    std::string link;  ///< why it joined ("first", "same 2 MiB region 0x...", ...)
};
struct IncidentRecord {
    std::string kind;
    std::optional<std::string> vendor;
    std::optional<uint64_t> address;
    std::optional<int64_t> pid;
    std::optional<std::string> process;
    std::optional<std::string> reason;
    std::optional<std::string> kernel;
    std::string signature;
    std::vector<IncidentMember> members;  ///< first member = the record that opened it
};

/// One job observed by `gpufault run` (table runs). Times are UTC ISO 8601 strings.
struct RunRecord {
    std::string command;  ///< JSON array (argv)
    std::string cwd, host, boot_id, started;
    std::optional<std::string> ended;
    std::optional<int64_t> exit_status;  ///< exit code; null when a signal ended it
    std::optional<int64_t> signal;
    std::optional<int64_t> pid;
    std::string pids = "[]";  ///< JSON array
    std::string env = "{}";   ///< JSON object (redacted)
    std::optional<std::string> spool;
    std::optional<int64_t> source_id;
};

/// A snapshot of a live process (table processes, process_modules).
struct ProcessRecord {
    int64_t pid = 0;
    std::string boot_id, taken_at;
    std::optional<int64_t> start_ticks;
    std::string name;
    std::optional<int64_t> ppid, uid;
    std::string nspid = "[]";  ///< JSON array
    std::string cgroup;
    std::string cmdline = "[]";  ///< JSON array
    std::optional<int64_t> evidence_id;
    struct Module {
        std::string path;
        uint64_t start = 0, end = 0;
        bool executable = false;
    };
    std::vector<Module> modules;
};

/// A core as stored (tables cores, threads, frames, core_files); see schema/sql/005_cores.sql.
struct CoreRecord {
    std::string kind = "cpu";  ///< cpu | rocr_gpu | cuda_gpu
    std::string path;
    int64_t size = 0;
    int64_t time = 0;  ///< UTC seconds
    std::string time_from = "mtime";
    std::optional<int64_t> pid, tid, uid, signal, si_code;
    std::optional<std::string> process;
    std::optional<uint64_t> signal_addr;  ///< si_addr (fault signals)
    int64_t e_machine = 0;
    std::optional<std::string> signature;
    std::string signature_frames = "[]";  ///< JSON array
    bool threads_truncated = false;
    std::string modules_missing = "[]";  ///< JSON array
    std::string runtimes = "{}";         ///< JSON object
    std::optional<std::string> meta;     ///< JSON object (GPU core metadata; boot id, unit)
    std::string origin = "file";         ///< file | systemd-coredump | apport (006)
    std::optional<std::string> note;     ///< why the core is missing or partial
    std::optional<std::string> exe;      ///< the executable's path, when the producer said
    /// `core-<FNV-1a of the first 4 KiB>-<size>` of the core's uncompressed bytes, whatever
    /// file it was read from (a `.zst` one: its content): a copy of the core is the same core
    /// (020); nullopt when not known.
    std::optional<std::string> content_fingerprint;
    double seconds = 0;
    std::vector<coredump::Thread> threads;
    struct File {
        std::string path;
        uint64_t start = 0, end = 0;
    };
    std::vector<File> files;
};

/// Read/write access to the store. Opening read-write creates the file and applies migrations
/// (`PRAGMA user_version`); read-only never changes the file.
/// A systemd-coredump journal entry whose core gpufaultd's worker has not unwound yet (table
/// pending_cores, schema/sql/013_pending_cores.sql).
struct PendingCore {
    int64_t id = 0;
    std::string journal;  ///< the journal's directory ("" = the local system journal)
    std::string cursor;   ///< the entry's journal cursor
    std::string fields;   ///< the entry's fields as a JSON object (COREDUMP= left out)
};

/// A dispatch a stream's context window holds behind the line its checkpoint re-reads from
/// (table held_dispatches, schema/sql/018_held_dispatches.sql).
struct HeldDispatch {
    /// line, context_line, time.runtime_us, pid, rank, runtime_tid, kernel, args
    Dispatch d;
    bool stored = false;  ///< its dispatch row is stored already
};

/// What Store::appendAllocations() did with one piece of an allocation file.
struct AllocAppend {
    int64_t added = 0;       ///< allocation rows inserted
    int64_t duplicates = 0;  ///< records of the recording already stored (another file, a re-read)
    /// frees applied to rows stored before: their allocation was read by an earlier piece, or
    /// came through another file of the recording (a copy, an earlier generation)
    int64_t frees = 0;
    int64_t after_end = 0;  ///< records refused: after the stored end of their process
    /// the warnings stored: the log's, less frees without an open allocation in the file that
    /// were found stored, plus one per record refused
    std::vector<alloclog::Warning> warnings;
};

/// A fault record's wall time as an instant.
struct WallInstant {
    int64_t utc_us = 0;  ///< µs since the Unix epoch (of the record's second)
    /// "stated" (the record's zone or epoch) | "local" (ingest's zone) | "local_ambiguous" (a
    /// local time the zone's DST change skipped or repeated: the earlier reading, not joined on)
    const char* zone = "";
};

class Store {
  public:
    enum class Mode { ReadOnly, ReadWrite };

    /// Opens (and for ReadWrite creates/migrates) the store at `path`. Errors name the path.
    static db::Result<Store> open(const std::string& path, Mode mode);

    /// The checkpoint of a source, created on first sight.
    db::Result<SourceState> source(const SourceIdentity& id);
    /// True when a source of this kind, device, inode and fingerprint is stored (nothing is
    /// created).
    db::Result<bool> hasSource(const SourceIdentity& id);
    /// True when a `file` source not complete is stored for this device and inode (whatever
    /// its first line): a stream of that file an earlier run read part of.
    db::Result<bool> hasUnfinishedFile(int64_t device, int64_t inode);
    db::Result<void> begin();
    db::Result<void> commit();
    db::Result<void> rollback();
    /// A savepoint inside the open transaction: what one core writes into the daemon's shared
    /// transaction is kept (release) or undone alone (undoSavepoint: rolled back and released).
    db::Result<void> savepoint();
    db::Result<void> releaseSavepoint();
    db::Result<void> undoSavepoint();

    /// Inserts evidence; a record already stored (same source, kind, line, address, pci, node)
    /// is ignored, so a resumed ingest never duplicates.
    db::Result<void> addEvidence(int64_t source_id, const Evidence& e);
    /// The stored record of `e`'s identity gets `e.count` when that is larger (a folded record
    /// published with a smaller count: rt::Folder::publish(); a fold read again). Call inside
    /// the open transaction.
    db::Result<void> raiseCount(int64_t source_id, const Evidence& e);
    /// Inserts a dispatch row (kept only in the window before faults); returns its id.
    db::Result<int64_t> addDispatch(int64_t source_id, const Dispatch& d);
    db::Result<void> addOperand(int64_t source_id,
                                const Operand& o,
                                std::optional<int64_t> dispatch_id);
    /// Adds `n` dispatches of `kernel` by `pid` seen between `first_line` and `last_line`.
    db::Result<void> addDispatchCount(int64_t source_id,
                                      std::optional<int64_t> pid,
                                      const std::string& kernel,
                                      int64_t n,
                                      int64_t first_line,
                                      int64_t last_line);
    db::Result<void> addWarning(int64_t source_id, const Warning& w);
    /// Every `file` source not complete, oldest first (bounded by `limit`).
    db::Result<std::vector<UnfinishedFile>> unfinishedFiles(int64_t limit);
    /// `file` sources (complete or not) with this fingerprint and a prefix hash, newest first,
    /// at most `limit`: the streams a new file with this first line may be a copy of
    /// (copytruncate).
    db::Result<std::vector<UnfinishedFile>> copyCandidates(const std::string& fingerprint,
                                                           int64_t limit);
    /// Moves source `source_id` to the file `id` (path, device, inode; the fingerprint is the
    /// same) and marks it not complete: the file is a copy of it and continues its stream. A row
    /// that already has that identity keeps its rows under a fingerprint no later file matches
    /// (complete when it recorded nothing). Call inside the open transaction.
    db::Result<void> adoptSource(int64_t source_id, const SourceIdentity& id);
    /// Records the name a source's file has now (a rename: rotation); call inside the open
    /// transaction.
    db::Result<void> setSourcePath(int64_t source_id, const std::string& path);
    /// Commits a checkpoint (call inside the transaction that stored the evidence before it).
    db::Result<void> setPosition(int64_t source_id, const SourceState& st, int64_t size);
    /// setPosition as a compare-and-swap: writes `st` only while the row still holds
    /// `st.stored` (offset, line, max_line; unconditionally when nullopt). False, with nothing
    /// written: another writer (a second `gpufault ingest`, gpufaultd) moved the checkpoint
    /// since, and what this transaction stored from the stream would be counted twice. A row
    /// this Store already wrote in the open transaction (a transaction is BEGIN IMMEDIATE: no
    /// other writer can have moved it since) is compared with what it wrote there, whatever
    /// `st.stored` says: a stream built anew on such a row (gpufaultd: a truncated file's new
    /// numbering, a copy continuing a stream finished in the same transaction) needs no
    /// re-read of the row, and a re-read could not tell another writer's commit from ours.
    db::Result<bool> movePosition(int64_t source_id, const SourceState& st, int64_t size);
    /// Marks source `source_id` complete and changes nothing else: its checkpoint, prefix hash
    /// and `earlier` stay, so a copy of its file (copytruncate) found later still continues it.
    /// Call inside the open transaction.
    db::Result<void> finishSource(int64_t source_id);
    /// Deletes what source `source_id` stored from line `line` on: its records (with their
    /// incident memberships, diagnoses and process links), dispatch rows, operands, warnings
    /// and held dispatches; dispatch counts stay. For a line stored without its newline
    /// (SourceState::unended) that is read again whole. Call inside the open transaction.
    /// `through`: only the lines up to it (those a reader of that stretch has read again).
    db::Result<void> dropLinesFrom(int64_t source_id, int64_t line, int64_t through = INT64_MAX);
    /// (kind, raw) of the records of the kinds named in `kinds_json` (a JSON array of kind
    /// names) with a time (kernel_s or wall) that earlier sources of the same file (kind,
    /// device and inode; a lower id) than `source_id` stored: what a file written again with
    /// other first bytes may hold again (`dmesg > gpu.log` after the ring buffer wrapped). raw
    /// as stored (its first 4 KiB).
    db::Result<std::vector<std::pair<std::string, std::string>>> earlierContentRecords(
        int64_t source_id, const std::string& kinds_json);
    /// Adds `delta` bytes to source `source_id`'s lost_bytes: bytes it saw and had not read when
    /// they were removed; negative when a copy gave back bytes counted before. Call inside the
    /// transaction that finishes (or resumes) the stream.
    db::Result<void> addLostBytes(int64_t source_id, int64_t delta);
    /// Adds `delta` records to source `source_id`'s lost_records (kmsg: records the ring buffer
    /// overwrote before they were read). Call inside the transaction that commits the records
    /// read after the loss.
    db::Result<void> addLostRecords(int64_t source_id, int64_t delta);
    /// Source `source_id`'s lost_records (0 for an unknown id).
    db::Result<int64_t> lostRecords(int64_t source_id);
    /// What `file` sources counted lost, summed per file (device + inode; rows without them
    /// under 0, 0), only files with a count: `gpufault status` shows these stored totals.
    db::Result<std::vector<FileLoss>> fileLosses();
    /// Retention: drops every source last written more than `max_age_s` seconds ago, then,
    /// while the live data exceed `max_bytes`, the least recently written sources; each with
    /// everything it produced (records, dispatches, operands, counts, warnings; runs keep their
    /// row without the source). Sources in `keep` (being followed) are never dropped; 0 turns a
    /// limit off. Free pages are then returned to the file system (incremental vacuum). Run
    /// outside a transaction; re-correlate afterwards. Returns the number of sources dropped.
    db::Result<int> prune(int64_t max_age_s, int64_t max_bytes, const std::vector<int64_t>& keep);
    /// Bytes of pages in use (page count minus free pages, times the page size).
    db::Result<int64_t> usedBytes();
    /// Records a process snapshot with its modules (in the open transaction); a snapshot of the
    /// same process (boot, pid, start time) already stored is kept and its id returned.
    db::Result<int64_t> addProcess(const ProcessRecord& p);
    /// Records a core with its threads, frames and mapped files (in the open transaction);
    /// `evidence_id` is its `coredump` record. A core of the same source is kept: its id is
    /// returned. Implemented in store_cores.cpp.
    db::Result<int64_t> addCore(int64_t source_id,
                                const CoreRecord& c,
                                std::optional<int64_t> evidence_id);
    /// Retires a source whose file was cut short or written again: its rows stay, under a
    /// fingerprint no later file matches (so source() makes a new one). Returns the number of
    /// allocations it keeps. Implemented in store_allocations.cpp.
    db::Result<int64_t> retireSource(int64_t source_id);
    /// Stores a whole re-read of a source's file (its bytes stored before unchanged, in the
    /// open transaction): its warnings are replaced with the log's, its records added as
    /// appendAllocations() adds them (those already stored are merged, none is lost);
    /// `run_id`: the run that recorded them. Implemented in store_allocations.cpp.
    db::Result<AllocAppend> replaceAllocations(int64_t source_id,
                                               std::optional<int64_t> run_id,
                                               const alloclog::Log& log);
    /// Adds what one more piece of a source's file made (in the open transaction): its
    /// recording processes (table alloc_processes, each with its recording key), its
    /// allocations, its frees and its warnings. A record is stored once per recording (a
    /// process's boot id, pid and start ticks) whatever file it came through: one its
    /// recording already holds (same kind, api, ptr, end, tid, wall_us and mono_us) is not
    /// added again, only its free when the stored row has none. A free (`log.late_frees`) is
    /// applied to the latest allocation of its pointer the recording made before it, in any
    /// source. Records of a process whose end is stored are refused (a warning each) when
    /// timed after that end, or, with `read_after_end` (gpufaultd: the bytes were read after
    /// the end was stored), all of them. docs/preload.md "Recordings".
    /// Removes a source's warnings at `line` and after, in the open transaction: an allocation
    /// file's line warned about as cut short is read again whole (store_allocations.cpp).
    db::Result<void> dropWarningsFrom(int64_t source_id, int64_t line);
    db::Result<AllocAppend> appendAllocations(int64_t source_id,
                                              std::optional<int64_t> run_id,
                                              const alloclog::Log& log,
                                              bool read_after_end = false);
    /// Marks the recording processes of `pid` in a source that have no end yet as ended by
    /// now (`wall_us`, `mono_us`: when gpufaultd found /proc/PID gone or another process), and
    /// the rows of the same recording in other sources (earlier generations of a file cut
    /// short or re-created, copies). `running_ticks`: the start ticks of the process that has
    /// the pid now (nullopt: none): its own rows are not marked.
    db::Result<void> markAllocProcessEnded(int64_t source_id,
                                           int64_t pid,
                                           int64_t wall_us,
                                           int64_t mono_us,
                                           std::optional<int64_t> running_ticks = std::nullopt);
    /// Removes the core a source holds with its record, operands, threads, frames and files (in
    /// the open transaction; incidents are recomputed afterwards): a crash first stored from its
    /// journal entry alone is replaced when its core file is read later.
    db::Result<void> dropCoreOf(int64_t source_id);
    /// Queues an entry's core for the worker, in the open transaction (with the journal
    /// cursor that passes the entry); returns its id (the row's of an entry queued already).
    /// Implemented in store_cores.cpp.
    db::Result<int64_t> addPendingCore(const PendingCore& p);
    /// The queued cores of the journal `journal` (its directory, "" = the system journal),
    /// oldest first.
    db::Result<std::vector<PendingCore>> pendingCores(const std::string& journal);
    /// Whether queued core `id` is still queued (false: done meanwhile).
    db::Result<bool> hasPendingCore(int64_t id);
    /// Removes queued core `id` (stored, found stored already, or not readable).
    db::Result<void> removePendingCore(int64_t id);
    /// Records held dispatch `d` of source `source_id` (its pending argument lines parsed
    /// already: `d.args` is what is kept), replacing a row of the same line, in the open
    /// transaction. Implemented in store_held.cpp.
    db::Result<void> putHeldDispatch(int64_t source_id, const Dispatch& d, bool stored);
    /// Marks the held dispatch of `line` stored (its dispatch row was written).
    db::Result<void> setHeldDispatchStored(int64_t source_id, uint64_t line);
    /// Removes the held dispatch of `line` (its window dropped it).
    db::Result<void> removeHeldDispatch(int64_t source_id, uint64_t line);
    /// Removes the held dispatches whose context_line is `from_line` or later (1-based; 0 or 1:
    /// all of the source).
    db::Result<void> removeHeldDispatchesFrom(int64_t source_id, uint64_t from_line);
    /// The held dispatches of source `source_id` whose context_line is before `before_line`,
    /// by line.
    db::Result<std::vector<HeldDispatch>> heldDispatches(int64_t source_id, uint64_t before_line);
    /// The note of the core a source holds (nullopt: none, or no note).
    db::Result<std::optional<std::string>> coreNoteOf(int64_t source_id);
    /// The id of the record of `kind` a source produced first, if any.
    db::Result<std::optional<int64_t>> evidenceIdOf(int64_t source_id, Kind kind);
    /// Records a run; returns its id.
    db::Result<int64_t> addRun(const RunRecord& r);
    /// Replaces all incidents (correlation is recomputed after each ingest). `stop`, asked
    /// every 4096 rows, ends it with the error "interrupted" (the caller rolls back).
    db::Result<void> replaceIncidents(const std::vector<IncidentRecord>& incidents,
                                      const std::function<bool()>& stop = {});

    db::Db& db() { return db_; }
    const std::string& path() const { return path_; }

  private:
    Store(db::Db db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}
    db::Result<void> migrate();
    /// appendAllocations() step 5: each program image of the processes whose `start` records
    /// `log` holds ends at the next image's start (ended_by 'exec'); read from the image
    /// before the log's first, in start order (index alloc_processes_image, migration 026).
    db::Result<void> endImagesByExec(const alloclog::Log& log);
    db::Result<void> prepareWriters();
    db::Result<int64_t> kernelId(const std::string& name);
    /// Deletes what source `source_id` recorded (evidence, incidents built on it, operands,
    /// cores, diagnoses) in the open transaction; `whole`: also its dispatches, counts, warnings,
    /// allocations and the source row (retention), else the source stays (a core replaced).
    db::Result<void> dropSourceRows(int64_t source_id, bool whole);

    db::Db db_;
    std::string path_;
    std::unordered_map<std::string, int64_t> kernelIds_;  ///< cache of kernels(name → id)
    /// Positions written by setPosition()/movePosition() in the open transaction (source id →
    /// what the row holds now); cleared at begin, commit and rollback, restored by
    /// undoSavepoint() to its value at savepoint().
    std::unordered_map<int64_t, StoredPosition> written_, writtenAtSavepoint_;
    bool inTxn_ = false;  ///< begin() opened a transaction not committed or rolled back yet
    /// The instant of a record's wall time (evidence.wall_utc_us, wall_zone): the zone the
    /// record states ("stated"), else a full date read in this process's local zone at ingest
    /// ("local": TZ or /etc/localtime; "local_ambiguous" in a DST gap or overlap); nullopt
    /// without a full date, or for a date that does not exist (`refused` then says why: a
    /// warning of the record). Parsed by prefix::scanIsoStamp (schema/store_wall.cpp).
    std::optional<WallInstant> wallInstant(const TimeInfo& t, std::string& refused);
    /// The upgrade step migration 017 queues (row 'restate-wall-zones' of upgrade_steps; run
    /// by migrate() after the SQL migrations): every evidence row with a wall time, or a raw
    /// line of a file source, gets its wall time as a fresh ingest reads it. A file line is
    /// decoded again (LineDecoder) and its stamp goes through wallInstant(): a stated zone gives
    /// "stated", a zone-less full date this process's local zone ("local", "local_ambiguous");
    /// a stamp refused now (`02-30`, `+0060`, `+1500`) loses its instant and gets a warning of
    /// its source and line. A time not from the line (a journal field, a core) stays when
    /// "stated", and a "local" one is read again. Only changed rows are written, in batches of
    /// 2000 rows, each its own transaction; upgrade_steps.next_id holds the last row id done,
    /// so an interrupted upgrade goes on there, and the queue row is deleted when all are done.
    /// The number of rows changed; 0 when nothing is queued (or the store predates the table).
    /// An error of SQLite; the batch that failed is rolled back.
    db::Result<int64_t> restateWallZones();
    std::string lastWall_;  ///< wallInstant()'s last local date and its result
    std::optional<WallInstant> lastInstant_;
    db::Stmt insEvidence_, insDispatch_, selDispatch_, insOperand_, insCount_, insKernel_,
        selKernel_, insWarning_, updPosition_, casPosition_;
};

/// Trailing zero bits of an address (64 for 0).
int alignLog2(uint64_t address);

}  // namespace gpufault
