// Reads the kernel log from /dev/kmsg: one record per read(2), resumed by (boot id, sequence).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "daemon/source.h"
#include "ingest/stream.h"

namespace gpufault::daemon {

/// Follows /dev/kmsg (Documentation/ABI/testing/dev-kmsg): each read returns one record
/// `PRI,SEQ,USEC,FLAGS;text\n` plus ` KEY=value\n` continuation lines, which the line decoder
/// parses. The source is identified by the boot id (/proc/sys/kernel/random/boot_id), so a new
/// boot starts at the first record; within a boot it resumes at the checkpointed sequence
/// number. EPIPE (records overwritten in the ring buffer before they were read) and sequence
/// gaps (also the records overwritten while no daemon ran) are counted as lost records, stored
/// with the checkpoint (sources.lost_records, per boot), and reading goes on.
class KmsgSource final : public Source {
  public:
    /// `path` is /dev/kmsg (tests may not substitute another file: the semantics are the
    /// kernel's). `boot_id` names the boot; `window` as in StreamIngest.
    KmsgSource(Store& store, std::string path, std::string boot_id, int window);
    ~KmsgSource() override;

    /// Opens the device (non-blocking). Errors name the path (e.g. EPERM under
    /// ProtectKernelLogs=, ENOENT under PrivateDevices=).
    db::Result<void> open();
    /// The open descriptor (the event loop waits for it to become readable), -1 when closed.
    int fd() const { return fd_; }

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
    /// Every /dev/kmsg record is the kernel's (only root may write into the ring buffer).
    bool kernelRecord(int64_t source_id, uint64_t line) const override;

  private:
    Store& store_;
    std::string path_, bootId_;
    int window_;
    int fd_ = -1;
    IngestSummary sum_;
    std::unique_ptr<StreamIngest> stream_;
    uint64_t resumeSeq_ = 0;  ///< records below this were stored before
    uint64_t nextSeq_ = 0;    ///< the sequence number expected next
    bool haveNext_ = false;
    uint64_t lost_ = 0;        ///< records lost since the last commit
    uint64_t storedLost_ = 0;  ///< sources.lost_records of this boot's row, as committed
    StreamStatus carried_;  ///< counters from before a reload
    std::vector<char> buf_;
};

/// This boot's id (/proc/sys/kernel/random/boot_id), "" when unreadable.
std::string readBootId();

}  // namespace gpufault::daemon
