#include "daemon/sources/kmsg.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

namespace gpufault::daemon {

namespace {

constexpr size_t kRecordMax = 16384;  ///< printk records are at most ~8 KiB with dictionary
constexpr int kRecordsPerPoll = 4096;

/// The SEQ field of a record header `PRI,SEQ,USEC,FLAGS;`; nullopt if malformed.
std::optional<uint64_t> recordSeq(std::string_view rec) {
    auto c1 = rec.find(',');
    if (c1 == std::string_view::npos) return std::nullopt;
    auto c2 = rec.find(',', c1 + 1);
    if (c2 == std::string_view::npos) return std::nullopt;
    uint64_t seq = 0;
    auto [p, ec] = std::from_chars(rec.data() + c1 + 1, rec.data() + c2, seq);
    if (ec != std::errc() || p != rec.data() + c2) return std::nullopt;
    return seq;
}

}  // namespace

std::string readBootId() {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string id;
    std::getline(in, id);
    return id;
}

KmsgSource::KmsgSource(Store& store, std::string path, std::string boot_id, int window)
    : store_(store),
      path_(std::move(path)),
      bootId_(std::move(boot_id)),
      window_(window),
      buf_(kRecordMax) {}

KmsgSource::~KmsgSource() {
    if (fd_ >= 0) ::close(fd_);
}

db::Result<void> KmsgSource::open() {
    if (fd_ >= 0) return {};
    fd_ = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) return std::unexpected(db::Error{fmt::format("{}: {}", path_, std::strerror(errno))});
    return {};
}

db::Result<bool> KmsgSource::poll(Txn& txn) {
    if (fd_ < 0) return false;
    if (!stream_) {
        if (auto r = txn.ensure(); !r) return std::unexpected(r.error());
        SourceIdentity id;
        id.path = path_;
        id.kind = "kmsg";
        id.fingerprint = "boot " + bootId_;
        auto src = store_.source(id);
        if (!src) return std::unexpected(src.error());
        resumeSeq_ = static_cast<uint64_t>(src->offset);
        haveNext_ = src->offset > 0;
        auto stored = store_.lostRecords(src->id);
        if (!stored) return std::unexpected(stored.error());
        storedLost_ = static_cast<uint64_t>(*stored);
        lost_ = 0;
        nextSeq_ = resumeSeq_;
        stream_ = std::make_unique<StreamIngest>(store_, *src, window_, sum_);
        ::lseek(fd_, 0, SEEK_SET);  // from the oldest record still in the ring buffer
    }
    for (int i = 0; i < kRecordsPerPoll; ++i) {
        ssize_t n = ::read(fd_, buf_.data(), buf_.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EPIPE) continue;  // overwritten: the next record shows the gap
        if (n < 0 && errno == EAGAIN) return false;
        if (n < 0) return std::unexpected(db::Error{fmt::format("{}: {}", path_, std::strerror(errno))});
        if (n == 0) return false;
        std::string_view rec(buf_.data(), static_cast<size_t>(n));
        auto seq = recordSeq(rec);
        if (!seq) continue;
        if (*seq < resumeSeq_) continue;  // stored before the restart
        if (haveNext_ && *seq > nextSeq_) lost_ += *seq - nextSeq_;
        nextSeq_ = *seq + 1;
        haveNext_ = true;
        if (auto r = txn.ensure(); !r) return std::unexpected(r.error());
        size_t start = 0;
        while (start < rec.size()) {
            size_t nl = rec.find('\n', start);
            if (nl == std::string_view::npos) nl = rec.size();
            if (nl > start)
                stream_->feed(rec.substr(start, nl - start), static_cast<int64_t>(*seq), false);
            start = nl + 1;
        }
        if (stream_->error()) return std::unexpected(*stream_->error());
    }
    return true;
}

db::Result<void> KmsgSource::flushIdle(Txn& txn) {
    if (!stream_) return {};
    if (auto r = txn.ensure(); !r) return r;
    stream_->flushIdle();
    if (stream_->error()) return std::unexpected(*stream_->error());
    return {};
}

uint64_t KmsgSource::uncommittedLines() const {
    return stream_ ? stream_->uncommittedLines() : 0;
}

db::Result<void> KmsgSource::checkpoint() {
    if (!stream_ || (stream_->uncommittedLines() == 0 && lost_ == 0)) return {};
    if (auto r = store_.addLostRecords(stream_->state().id, static_cast<int64_t>(lost_)); !r)
        return r;
    return stream_->checkpoint(static_cast<int64_t>(nextSeq_), false, 0);
}

void KmsgSource::committed() {
    if (!stream_) return;
    stream_->committed();
    storedLost_ += lost_;
    lost_ = 0;
}

void KmsgSource::reset() {
    stream_.reset();
    sum_ = IngestSummary{};
    haveNext_ = false;
    lost_ = 0;  // counted again when the records after the checkpoint are read again
}

std::vector<StreamStatus> KmsgSource::status() const {
    StreamStatus s;
    s.source = "kmsg";
    s.name = path_;
    s.position = stream_ ? fmt::format("seq {} (boot {})", stream_->state().offset, bootId_)
                         : std::string(fd_ < 0 ? "closed" : "not started");
    s.key = s.source + " " + s.name;
    s.lines = carried_.lines + sum_.lines;
    s.evidence = carried_.evidence + sum_.evidenceTotal();
    // The boot's count from the store (every daemon before this one, a reload included) and
    // what was counted since the last commit.
    s.lost_records = storedLost_ + lost_;
    return {s};
}

void KmsgSource::carry(const CarriedCounters& before) {
    auto now = status();
    if (auto it = before.find(now.front().key); it != before.end()) carried_ = it->second;
}

std::vector<int64_t> KmsgSource::sourceIds() const {
    if (!stream_) return {};
    return {stream_->state().id};
}

bool KmsgSource::kernelRecord(int64_t source_id, uint64_t line) const {
    (void)line;
    return stream_ && source_id == stream_->state().id;
}

uint64_t KmsgSource::evidenceStored() const {
    return sum_.evidenceTotal();
}

}  // namespace gpufault::daemon
