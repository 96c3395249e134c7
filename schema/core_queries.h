// Read side of the core tables (schema/sql/005_cores.sql): `gpufault cores`, `stack`, and the
// stacks `show`, `faults` and `events` print.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schema/sqlite.h"
#include "schema/store.h"

namespace gpufault {

/// A stored core (threads and frames not loaded) with the incident its record belongs to.
struct CoreRow {
    int64_t id = 0;
    std::optional<int64_t> evidence_id;
    std::optional<int64_t> incident;
    int64_t threads = 0;  ///< threads stored
    CoreRecord core;      ///< `threads` and `files` left empty
};

/// Cores, oldest ingest first; `id` set: that one only.
db::Result<std::vector<CoreRow>> queryCores(db::Db& d, std::optional<int64_t> id = std::nullopt);

/// The cores whose `coredump` record is a member of `incident`.
db::Result<std::vector<CoreRow>> queryIncidentCores(db::Db& d, int64_t incident);

/// The threads of a core with their frames, the crashing thread first (`all` false: only it).
db::Result<std::vector<coredump::Thread>> queryCoreThreads(db::Db& d, int64_t core, bool all);

/// For `faults`/`events`: evidence id → the stack signature of the core in its incident.
db::Result<std::map<int64_t, std::string>> queryStackSignatures(db::Db& d);

/// The core already stored from a file of the same content as a core whose content fingerprint
/// (`core2-<hash of every byte>-<size>` of its uncompressed bytes) is `fingerprint`: a
/// copy, a `gpucore.N`-named link or copy, a `.zst` copy or the file a `.zst` one was
/// decompressed from (cores.content_fingerprint, 020): its id and path; nullopt when none.
db::Result<std::optional<std::pair<int64_t, std::string>>> queryCoreByFingerprint(
    db::Db& d, const std::string& fingerprint);

/// The source a stored core was read from (cores.source_id); nullopt when no core `core`.
db::Result<std::optional<int64_t>> queryCoreSource(db::Db& d, int64_t core);

/// A stored core that may be the same as a new one: id, path, and the pid and crashing thread
/// its notes named (NULL when unknown).
struct CoreCandidate {
    int64_t id = 0;
    std::string path;
    std::optional<int64_t> pid, tid;
};
/// Cores stored before content fingerprints were `core2-` (cores.content_fingerprint NULL or
/// `core-<FNV-1a of the first 4 KiB>-<size>`) whose stored head fingerprint is `head`
/// (theirs or their `core` source's), oldest first. Candidates only: two crashes may share
/// their first 4 KiB.
db::Result<std::vector<CoreCandidate>> queryCoresByHeadFingerprint(db::Db& d,
                                                                   const std::string& head);

/// A stored core of the same crash as a new one, by its notes: id, source, path and content
/// fingerprint (`core2-<hash>-<size>`).
struct CrashCandidate {
    int64_t id = 0, source_id = 0;
    std::string path, content_fingerprint;
};
/// Cores with a `core2-` content fingerprint whose notes named the crashing thread `tid`, the
/// signal `signal`, the fault address `fault_address` (siginfo si_addr) (both NULL when unknown) and the command
/// `process`, oldest first. Candidates only: the caller proves one's bytes a prefix of the
/// other's.
db::Result<std::vector<CrashCandidate>> queryCoresOfCrash(db::Db& d,
                                                          int64_t tid,
                                                          std::optional<int64_t> signal,
                                                          std::optional<int64_t> fault_address,
                                                          const std::string& process);

/// A stored core of the same crash as a journal entry or apport report without a core (or as
/// a core file, for one stored without): id, source, path, origin.
struct EntryCrashCandidate {
    int64_t id = 0, source_id = 0;
    std::string path, origin;
    int64_t time = 0;                ///< UTC seconds
    std::optional<std::string> exe;  ///< the executable's path, when stored
};
/// CPU cores whose pid is `pid`, signal `signal` and command `process` (≤ 15 characters, as
/// COREDUMP_COMM and a core's NT_PRPSINFO keep it), oldest first: `with_file` true, those read
/// from a core file (content fingerprint set); false, those stored without one from
/// systemd-coredump or apport (`core not kept`, no CoreDump). Candidates only: the caller
/// compares times or stacks.
db::Result<std::vector<EntryCrashCandidate>> queryCoresOfEntryCrash(
    db::Db& d, int64_t pid, int64_t signal, const std::string& process, bool with_file);

/// A core stored from an apport report, found by its crash (queryApportCoresOfCrash).
struct ApportCandidate {
    int64_t id = 0, source_id = 0;
    std::string path;
    bool entry_only = false;  ///< stored without its CoreDump (no content fingerprint)
};
/// Cores of origin `apport` of the crash of `exe` at `time` (UTC s, the report's Date) whose pid
/// is `pid` (either unknown: any), oldest first: a report read before its CoreDump was written
/// and the whole report of the same crash.
db::Result<std::vector<ApportCandidate>> queryApportCoresOfCrash(db::Db& d,
                                                                 const std::string& exe,
                                                                 int64_t time,
                                                                 std::optional<int64_t> pid);

}  // namespace gpufault
