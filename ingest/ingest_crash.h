// Ingest of crash reports that carry or stand for a core: systemd-coredump's journal entries
// (from `journalctl -o export` / `-o json` files, or the daemon's journal source) and its
// files (`core.COMM.UID.BOOTID.PID.USEC.zst`), and apport's `.crash` reports. Each crash is one
// source (kind `coredump` for systemd-coredump: the journal entry and the file of one crash
// are the same source, stored once; kind `core` for apport reports).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/coredump/systemd_coredump.h"
#include "ingest/core_unpack.h"
#include "ingest/ingest_core.h"

namespace gpufault {

struct CrashOptions {
    coredump::ReadOptions read;
    UnpackLimits unpack;
};

/// What a file of journal entries gave.
struct JournalCoresSummary {
    std::string path;
    uint64_t entries = 0;                  ///< entries read
    std::vector<CoreIngestSummary> cores;  ///< one per systemd-coredump entry
    /// "entry N (byte offset O): …": crashes not stored and fields stored as unknown, and why.
    std::vector<std::string> warnings;
};

/// The kinds of crash input `ingest` recognises by content.
enum class CrashInput { None, JournalExport, JournalJson, SystemdCoreFile, Apport };
/// What `path` holds, from its first bytes (and name, for compressed systemd-coredump files).
CrashInput crashInputOf(const std::string& path);

/// A core systemd-coredump stored in its journal entry (Storage=journal: the `COREDUMP=`
/// field), copied into a size-capped temporary file (unpack limits), or why it could not be.
struct JournalCore {
    std::optional<TempFile> file;
    std::string error;  ///< "" when `file` holds the whole core
};

/// Stores one systemd-coredump entry (`where` is the source path: the export file, or
/// "journal"). When COREDUMP_FILENAME names a readable file, that core is read and unwound
/// (decompressed into a temporary file); else, when `journal_core` holds the entry's
/// `COREDUMP=` core, that one; otherwise the entry alone is stored, with its stack text and
/// why there is no core. A crash already stored (same boot id, pid and timestamp) is left
/// alone (`unchanged`).
db::Result<CoreIngestSummary> ingestCoredumpEntry(Store& store,
                                                  const coredump::CoredumpEntry& e,
                                                  const std::string& where,
                                                  const CrashOptions& opt,
                                                  bool own_txn,
                                                  const JournalCore* journal_core = nullptr);

/// Reads a file of journal entries (export format or JSON lines) and stores its
/// systemd-coredump entries; a `COREDUMP=` core (export format) is copied into a temporary
/// file as it is read, capped by `opt.unpack`, and unwound. Errors name the file and the byte
/// offset (export format; JSON lines that are not objects are skipped: the text ingest reads them).
db::Result<JournalCoresSummary> ingestJournalCores(Store& store,
                                                   const std::string& path,
                                                   CrashInput kind,
                                                   const CrashOptions& opt);

/// Stores a systemd-coredump core file (`.zst`, or uncompressed): its pid, comm, uid, boot id
/// and time from its name. `.lz4` and `.xz` files are an error that says so.
db::Result<CoreIngestSummary> ingestSystemdCoreFile(Store& store,
                                                    const std::string& path,
                                                    const CrashOptions& opt,
                                                    bool own_txn);

/// Stores an apport report: its CoreDump decoded into a temporary file and unwound, with the
/// report's pid (ProcStatus), signal, executable and Date; a report without CoreDump is stored
/// from its fields with a note. Errors name the file and line.
db::Result<CoreIngestSummary> ingestApportReport(Store& store,
                                                 const std::string& path,
                                                 const CrashOptions& opt,
                                                 bool own_txn);

/// The `coredump` record of a systemd-coredump entry without its core (pure).
Evidence coredumpEntryEvidence(const coredump::CoredumpEntry& e);

}  // namespace gpufault
