// What the daemon's loop asks of a source (the I/O half of a collector).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "schema/sqlite.h"
#include "schema/store.h"

namespace gpufault::daemon {

/// The daemon's single write transaction, shared by all sources: their records and their
/// positions are committed together, so a kill at any instant loses and duplicates nothing.
class Txn {
  public:
    explicit Txn(Store& store) : store_(store) {}
    /// Opens the transaction if none is open.
    db::Result<void> ensure() {
        if (open_) return {};
        auto r = store_.begin();
        open_ = r.has_value();
        return r;
    }
    db::Result<void> commit() {
        if (!open_) return {};
        open_ = false;
        auto r = store_.commit();
        if (!r) (void)store_.rollback();
        return r;
    }
    void rollback() {
        if (open_) (void)store_.rollback();
        open_ = false;
    }
    bool open() const { return open_; }
    Store& store() { return store_; }

  private:
    Store& store_;
    bool open_ = false;
};

/// One followed stream, as `gpufault status` shows it.
struct StreamStatus {
    std::string source;    ///< "kmsg", "file"
    std::string name;      ///< path
    std::string position;  ///< committed position ("offset 1234", "seq 5678 boot …")
    uint64_t lines = 0;    ///< lines read since the daemon started
    uint64_t evidence = 0;
    /// Not read yet: bytes of a file, cores or recordings queued; 0 for kmsg and the journal,
    /// which give no count of unread records (a kmsg source is read until read(2) answers
    /// EAGAIN, at most kRecordsPerPoll records a turn; behind, its `seq` position trails).
    uint64_t lag = 0;
    uint64_t lost_records = 0;  ///< kmsg records overwritten before they were read
    uint64_t lost_bytes = 0;    ///< bytes truncated away before they were read (at least)
    bool active = true;         ///< false once a rotated or deleted file is finished
    std::string error;  ///< why it is not followed ("" = followed): open failed, over a cap, …
    uint64_t not_followed = 0;  ///< files (or patterns) this row stands for that are not followed
    /// Identity across a reload (device:inode for files, the path for kmsg); "" = none:
    /// counters of a stream whose key is the same before and after a reload are carried over.
    std::string key;
};

/// What `status` showed of each stream before a reload, by StreamStatus::key.
using CarriedCounters = std::map<std::string, StreamStatus>;

/// A source of lines: reads what is available, feeds its parsers inside `txn`, and writes its
/// checkpoints when asked. After a failed commit the daemon calls reset(): the source forgets
/// everything in memory and resumes from its committed checkpoints.
class Source {
  public:
    virtual ~Source() = default;
    /// Reads a bounded amount; true when more is ready right away. Errors are store errors
    /// (the caller rolls back and resets).
    virtual db::Result<bool> poll(Txn& txn) = 0;
    /// No line arrived for a while: completes the parsers' open blocks (records may be
    /// written into `txn`).
    virtual db::Result<void> flushIdle(Txn& txn) = 0;
    /// Lines fed since the last checkpoint.
    virtual uint64_t uncommittedLines() const = 0;
    /// Writes pending counts and positions into the open transaction.
    virtual db::Result<void> checkpoint() = 0;
    /// The transaction holding the last checkpoint() was committed.
    virtual void committed() = 0;
    /// Forgets in-memory state after a rollback.
    virtual void reset() = 0;
    virtual std::vector<StreamStatus> status() const = 0;
    /// Store ids of the sources being followed (retention never drops them).
    virtual std::vector<int64_t> sourceIds() const = 0;
    /// Records stored since the daemon started (the loop re-correlates when it grows).
    virtual uint64_t evidenceStored() const = 0;
    /// True when the record at `line` of store source `source_id` came from the kernel itself
    /// (a /dev/kmsg record, a journal entry of `_TRANSPORT=kernel`), which only the kernel can
    /// write: such records alone may make the daemon read /proc/PID of the pid they name.
    virtual bool kernelRecord(int64_t source_id, uint64_t line) const {
        (void)source_id;
        (void)line;
        return false;
    }
    /// A reload replaced the sources (same store): the counters (lines, evidence, lost
    /// records and bytes) of streams that stay, by key, go on from `before` instead of 0.
    /// A source without counters worth keeping leaves it as is.
    virtual void carry(const CarriedCounters& before) { (void)before; }
};

}  // namespace gpufault::daemon
