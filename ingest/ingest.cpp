#include "ingest/ingest.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "collectors/pipeline.h"
#include "correlate/correlate.h"
#include "ingest/stream.h"
#include "schema/queries.h"

#include <nlohmann/json.hpp>

namespace gpufault {

namespace {

constexpr size_t kFingerprintBytes = 4096;
constexpr size_t kMaxLine = LineDecoder::kMaxLine;
constexpr size_t kChunk = 1 << 22;

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd > 0) ::close(fd);
    }
};

/// Reads a stream in chunks and hands out lines with their byte offsets.
class LineReader {
  public:
    explicit LineReader(int fd) : fd_(fd), buf_(kChunk) {}
    /// Fills the buffer's first bytes without consuming them (for the fingerprint).
    db::Result<std::string_view> peek(size_t n) {
        while (end_ < n) {
            auto r = fill();
            if (!r) return std::unexpected(r.error());
            if (!*r) break;
        }
        return std::string_view(buf_.data(), std::min(n, end_));
    }
    /// Tells the reader that its fd was positioned at `offset` (resume), so offsets stay absolute.
    void setBase(uint64_t offset) { base_ = offset; }
    /// Next line (without '\n'); nullopt at end. `truncated` is set for lines over kMaxLine.
    db::Result<std::optional<std::string_view>> next(uint64_t& line_offset, bool& truncated) {
        truncated = false;
        for (;;) {
            const char* s = buf_.data() + pos_;
            if (auto* nl = static_cast<const char*>(std::memchr(s, '\n', end_ - pos_))) {
                line_offset = base_ + pos_;
                size_t len = static_cast<size_t>(nl - s);
                pos_ += len + 1;
                if (skipping_) {
                    skipping_ = false;
                    truncated = true;
                    return std::optional<std::string_view>(std::string_view(long_));
                }
                if (len > kMaxLine) {
                    truncated = true;
                    len = kMaxLine;
                }
                return std::optional<std::string_view>(std::string_view(s, len));
            }
            // No newline in the buffer: keep the partial line, read more.
            if (end_ - pos_ >= kMaxLine || skipping_) {
                if (!skipping_) {
                    long_.assign(s, kMaxLine);
                    longOffset_ = base_ + pos_;
                    skipping_ = true;
                }
                base_ += end_;
                pos_ = end_ = 0;
            } else if (pos_ > 0) {
                std::memmove(buf_.data(), s, end_ - pos_);
                base_ += pos_;
                end_ -= pos_;
                pos_ = 0;
            }
            auto r = fill();
            if (!r) return std::unexpected(r.error());
            if (!*r) {
                if (skipping_) {
                    skipping_ = false;
                    truncated = true;
                    line_offset = longOffset_;
                    return std::optional<std::string_view>(std::string_view(long_));
                }
                if (end_ > pos_) {  // last line without '\n'
                    line_offset = base_ + pos_;
                    std::string_view v(buf_.data() + pos_, end_ - pos_);
                    pos_ = end_;
                    return std::optional<std::string_view>(v);
                }
                return std::optional<std::string_view>();
            }
        }
    }
    uint64_t consumed() const { return base_ + pos_; }

  private:
    db::Result<bool> fill() {
        if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
        for (;;) {
            ssize_t n = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return std::unexpected(db::Error{std::strerror(errno)});
            end_ += static_cast<size_t>(n);
            return n > 0;
        }
    }
    int fd_;
    std::vector<char> buf_;
    size_t pos_ = 0, end_ = 0;
    uint64_t base_ = 0;
    bool skipping_ = false;
    std::string long_;
    uint64_t longOffset_ = 0;
};

}  // namespace

db::Result<IngestSummary> ingestFile(Store& store,
                                     const std::string& path,
                                     const IngestOptions& opt) {
    auto t0 = std::chrono::steady_clock::now();
    IngestSummary sum;
    sum.path = path;
    Fd fd;
    SourceIdentity id;
    id.path = path;
    struct stat st {};
    if (path == "-") {
        fd.fd = 0;
        id.kind = "stdin";
    } else {
        fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd.fd < 0)
            return std::unexpected(db::Error{fmt::format("{}: {}", path, std::strerror(errno))});
        if (::fstat(fd.fd, &st) != 0)
            return std::unexpected(db::Error{fmt::format("{}: {}", path, std::strerror(errno))});
        if (S_ISDIR(st.st_mode))
            return std::unexpected(db::Error{fmt::format("{}: is a directory", path)});
        id.device = static_cast<int64_t>(st.st_dev);
        id.inode = static_cast<int64_t>(st.st_ino);
    }
    LineReader reader(fd.fd);
    auto head = reader.peek(kFingerprintBytes);
    if (!head) return std::unexpected(db::Error{fmt::format("{}: {}", path, head.error().message)});
    id.fingerprint = sourceFingerprint(*head);
    uint64_t total = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;

    auto src = store.source(id);
    if (!src) return std::unexpected(src.error());
    SourceState state = *src;
    sum.source_id = state.id;
    if (state.complete && id.kind == "file" && total == static_cast<uint64_t>(state.offset)) {
        sum.unchanged = true;
        return sum;
    }
    if (state.offset > 0 && id.kind == "file" && static_cast<uint64_t>(state.offset) <= total) {
        // Resume: reposition the file at the checkpoint.
        if (::lseek(fd.fd, state.offset, SEEK_SET) < 0)
            return std::unexpected(db::Error{fmt::format("{}: {}", path, std::strerror(errno))});
        reader = LineReader(fd.fd);
        reader.setBase(static_cast<uint64_t>(state.offset));
        sum.resumed = !state.complete;
    } else if (id.kind == "file" && static_cast<uint64_t>(state.offset) > total) {
        // Truncated and written again under the same first line: new content, numbered after
        // the lines already stored so that none of it is taken for a duplicate.
        state.offset = 0;
        state.line = state.max_line;
    } else {
        state.offset = state.line = 0;  // stdin again: the same lines are not duplicated
    }

    if (auto r = store.begin(); !r) return std::unexpected(r.error());
    StreamIngest stream(store, state, opt.dispatch_window, sum);
    auto batchStart = std::chrono::steady_clock::now();
    auto fail = [&](const db::Error& e) -> db::Result<IngestSummary> {
        (void)store.rollback();
        return std::unexpected(db::Error{fmt::format("{}: {}", path, e.message)});
    };
    auto checkpoint = [&](bool complete) -> db::Result<void> {
        auto end = static_cast<int64_t>(reader.consumed());
        if (auto r = stream.checkpoint(end, complete, static_cast<int64_t>(total)); !r) return r;
        if (auto r = store.commit(); !r) return r;
        stream.committed();
        if (!complete)
            if (auto r = store.begin(); !r) return r;
        return {};
    };

    for (;;) {
        uint64_t off = 0;
        bool truncated = false;
        auto l = reader.next(off, truncated);
        if (!l) return fail(l.error());
        if (!*l) break;
        stream.feed(**l, static_cast<int64_t>(off), truncated);
        uint64_t pending = stream.uncommittedLines();
        if (pending >= opt.batch_lines ||
            (pending % 1024 == 0 &&
             std::chrono::duration<double>(std::chrono::steady_clock::now() - batchStart).count() >
                 opt.batch_seconds)) {
            if (stream.error()) return fail(*stream.error());
            if (auto r = checkpoint(false); !r) return fail(r.error());
            batchStart = std::chrono::steady_clock::now();
            if (opt.progress) opt.progress(reader.consumed(), total);
        }
    }
    stream.finish();
    if (stream.error()) return fail(*stream.error());
    if (auto r = checkpoint(true); !r) return fail(r.error());
    sum.bytes = reader.consumed();
    if (opt.progress) opt.progress(sum.bytes, total);
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum;
}

db::Result<size_t> recorrelate(Store& store) {
    EvidenceFilter f;
    f.with_text = false;  // correlation needs neither attrs nor raw
    auto ev = queryEvidence(store.db(), f);
    if (!ev) return std::unexpected(ev.error());
    ProcessLinks links;
    // Container pids of processes the daemon saw alive (NSpid: host pid first, innermost last).
    auto procs = queryProcesses(store.db());
    if (!procs) return std::unexpected(procs.error());
    for (const auto& p : *procs) {
        auto ns = nlohmann::json::parse(p.p.nspid, nullptr, false);
        if (ns.is_array() && ns.size() > 1 && ns.back().is_number_integer())
            links.ns_pids[p.p.pid] = ns.back().get<int64_t>();
    }
    // Pids that `gpufault run` jobs spawned, with the source of their captured output.
    auto runs = queryRuns(store.db());
    if (!runs) return std::unexpected(runs.error());
    for (const auto& r : *runs) {
        auto pids = nlohmann::json::parse(r.run.pids, nullptr, false);
        if (!r.run.source_id || !pids.is_array()) continue;
        for (const auto& p : pids)
            if (p.is_number_integer())
                links.run_sources[p.get<int64_t>()].emplace_back(*r.run.source_id, r.id);
    }
    auto incidents = correlate(*ev, {}, links);
    if (auto r = store.begin(); !r) return std::unexpected(r.error());
    if (auto r = store.replaceIncidents(incidents); !r) {
        (void)store.rollback();
        return std::unexpected(r.error());
    }
    if (auto r = store.commit(); !r) return std::unexpected(r.error());
    return incidents.size();
}

}  // namespace gpufault
