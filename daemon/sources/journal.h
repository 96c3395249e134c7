// Reads the systemd journal (libsystemd sd-journal): the kernel transport and the output of
// configured units, resumed by cursor.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "daemon/core_marker.h"
#include "daemon/source.h"
#include "daemon/worker.h"
#include "ingest/ingest_crash.h"
#include "ingest/stream.h"

typedef struct sd_journal sd_journal;

namespace gpufault::daemon {

/// Queued cores the store refused (full, busy, locked, an I/O error), to be handed to the worker
/// again by their source after 1, 2, 4 … 64 s (hostile review 157, F2: only the next start did).
/// Shared by the source (loop thread) and its jobs (worker thread).
struct CoreRetries {
    std::mutex mu;
    struct Due {
        PendingCore core;
        int attempts = 0;
        std::chrono::steady_clock::time_point at;
    };
    std::vector<Due> due;
    std::map<int64_t, int> attempts;  ///< by queued core id
    /// Called by a job: `p` again later.
    void later(const PendingCore& p);
    /// Called by the source: the cores whose time has come.
    std::vector<PendingCore> take();
};

/// Follows `_TRANSPORT=kernel` entries, systemd-coredump's entries (MESSAGE_ID
/// fc2e22bc6ee647b6b90729ab34a250b1: stored as cores, ingest/ingest_crash.h) plus
/// `_SYSTEMD_UNIT=` each of `units`, in the local
/// system journal or the journal files of `directory`. An entry becomes lines the decoder
/// reads (journalLinePrefix). The checkpoint is a cursor (sources.cursor) with sources.offset 0
/// = resume at that entry (the oldest block a parser has not finished starts there) or 1 =
/// after it; on restart sd_journal_seek_cursor() and sd_journal_test_cursor() tell whether the
/// entry is still there (an entry removed by journal vacuuming is counted as lost). The system
/// journal is read from the start of the current boot the first time.
class JournalSource final : public Source {
  public:
    JournalSource(Store& store, std::string directory, std::vector<std::string> units,
                  std::string boot_id, int window);
    ~JournalSource() override;

    /// Opens the journal and sets the matches; errors name the journal.
    db::Result<void> open();
    /// A descriptor that becomes readable when the journal changes (sd_journal_get_fd), -1
    /// when none; call changed() after it fired.
    int fd() const;
    void changed();

    db::Result<bool> poll(Txn& txn) override;
    db::Result<void> flushIdle(Txn& txn) override;
    uint64_t uncommittedLines() const override;
    db::Result<void> checkpoint() override;
    void committed() override;
    void reset() override;
    std::vector<StreamStatus> status() const override;
    uint64_t evidenceStored() const override;
    std::vector<int64_t> sourceIds() const override;
    void carry(const CarriedCounters& before) override;
    /// Lines fed from `_TRANSPORT=kernel` entries (this process's recent ones) are kernel
    /// records; a unit's output, whatever it prints, is not.
    bool kernelRecord(int64_t source_id, uint64_t line) const override;

    /// How systemd-coredump's core files are read (decompression cap, temporary directory).
    CrashOptions& crashOptions() { return crash_; }
    /// Cores are read and unwound by jobs handed to `submit` (the worker thread), not on the
    /// loop: a systemd-coredump entry with a core (COREDUMP_FILENAME or COREDUMP=) is queued
    /// in the store (pending_cores) in the transaction that commits the cursor past it and
    /// handed over once that is committed; entries still queued from an earlier run are handed
    /// over when the source starts. Without it they are unwound on the loop, in its transaction.
    void unwindOn(std::function<void(WorkerJob)> submit) { submit_ = std::move(submit); }
    /// Each queued core is named in `marker` while a job reads it. `killers`: the cores that
    /// killed earlier runs; a queued one that killed kMaxCoreReadAttempts runs is dropped from
    /// the queue unread (logged).
    void guardReads(std::shared_ptr<CoreReadMarker> marker, std::vector<MarkedCore> killers) {
        marker_ = std::move(marker);
        killers_ = std::move(killers);
    }

  private:
    /// Stores the systemd-coredump entry the journal is positioned on (in `txn`).
    db::Result<void> storeCoredump(Txn& txn);
    /// True when journald's own fields of the current entry show it was written by
    /// systemd-coredump: _UID=0 and _COMM=systemd-coredum (or SYSLOG_IDENTIFIER).
    bool fromSystemdCoredump();
    db::Result<void> start(Txn& txn);
    std::string name() const { return directory_.empty() ? "system journal" : directory_; }

    Store& store_;
    std::string directory_, bootId_;
    std::vector<std::string> units_;
    int window_;
    sd_journal* j_ = nullptr;
    IngestSummary sum_;
    std::unique_ptr<StreamIngest> stream_;
    bool pendingFirst_ = false;  ///< positioned on an entry not read yet
    int64_t counter_ = 0;        ///< position of the last entry read (this process)
    std::deque<std::pair<int64_t, std::string>> cursors_;  ///< (position, cursor), recent
    std::string lastCursor_;
    uint64_t lost_ = 0;
    StreamStatus carried_;  ///< counters from before a reload
    /// Line ranges [first, last] fed from kernel-transport entries, oldest first (bounded).
    std::deque<std::pair<uint64_t, uint64_t>> kernelLines_;
    CrashOptions crash_;
    uint64_t cores_ = 0;  ///< systemd-coredump entries stored on the loop
    uint64_t coresUncommitted_ = 0;
    std::function<void(WorkerJob)> submit_;
    std::shared_ptr<CoreReadMarker> marker_;
    std::vector<MarkedCore> killers_;
    std::vector<PendingCore> queued_;  ///< queued in the open transaction, handed over at commit
    std::shared_ptr<CoreRetries> retries_ = std::make_shared<CoreRetries>();
};

/// The COREDUMP= core (Storage=journal) of the entry `j` is positioned on, read whole (no data
/// threshold) into a temporary file capped by `limits`; or why not (`error`).
JournalCore journalCoreHere(sd_journal* j, const UnpackLimits& limits);

/// The worker's job for queued core `p` (Store::addPendingCore): reads the core (its
/// COREDUMP_FILENAME file, else its COREDUMP= field, from its own handle on the journal, found
/// by the cursor), unwinds and stores it as `where` ("journal:…") with ingestCoredumpEntry in a
/// transaction of its own, then removes `p` from the queue. A core stored before (a kill after
/// the store and before the removal, or queued twice) is left as it is; a store error leaves
/// `p` queued for the next start, and in `retries` (may be null) to be tried again by this run.
/// True when records were stored.
/// `marker` (may be null) names `p` while it is read; `deaths`, the runs that died reading it:
/// at kMaxCoreReadAttempts it is removed from the queue unread, with a log line.
WorkerJob unwindJournalCore(PendingCore p,
                            std::string where,
                            CrashOptions opt,
                            std::shared_ptr<CoreReadMarker> marker = nullptr,
                            int deaths = 0,
                            std::shared_ptr<CoreRetries> retries = nullptr);

}  // namespace gpufault::daemon
