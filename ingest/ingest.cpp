#include "ingest/ingest.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "collectors/pipeline.h"
#include "correlate/correlate.h"
#include "ingest/line_batches.h"
#include "ingest/line_reader.h"
#include "ingest/store_sink.h"

namespace gpufault {

namespace {

constexpr size_t kFingerprintBytes = 4096;
constexpr size_t kMaxLine = LineDecoder::kMaxLine;
constexpr size_t kBatchLines = 2048;  // physical lines per batch between the two threads

/// FNV-1a over the first bytes of a stream, with their count: the source fingerprint.
std::string fingerprint(const char* p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
    return fmt::format("{:016x}-{}", h, n);
}

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd > 0) ::close(fd);
    }
};

/// The reading thread of an ingest: lines from `reader` (numbered after `lineNo`) through the
/// decoder half of `pipe`, in batches of `batchLines` to `channel`; the last batch says so or
/// carries the read error. Before the reader overwrites a buffer it waits until the batches
/// pointing into it are done. Returns early when the channel is closed.
void readAndDecode(LineReader& reader,
                   TextPipeline& pipe,
                   BatchChannel& channel,
                   uint64_t lineNo,
                   size_t batchLines) {
    struct Unhook {
        LineReader& r;
        ~Unhook() { r.setReuse({}); }
    } unhook{reader};
    LineBatch batch;
    batch.first_line = lineNo + 1;
    batch.offsets.reserve(batchLines);
    batch.kept.reserve(batchLines / 2);
    uint64_t seq = 0, endOffset = reader.consumed(), reuseAfter = 0;
    bool open = true;
    auto flush = [&](bool last) {
        batch.seq = ++seq;
        batch.end_offset = endOffset;
        batch.last = last;
        open = channel.push(std::move(batch)) && open;
        batch = LineBatch{};
        batch.first_line = lineNo + 1;
        batch.offsets.reserve(batchLines);
        batch.kept.reserve(batchLines / 2);
    };
    reader.setReuse([&] {
        if (!batch.offsets.empty() || !batch.kept.empty()) flush(false);
        open = channel.waitDone(reuseAfter) && open;
        reuseAfter = seq;
    });
    auto inBuffer = [&reader](std::string_view v) { return reader.inBuffer(v); };
    auto keep = [&](const LogLine& l) { batch.keep(l, inBuffer); };
    while (open) {
        uint64_t off = 0;
        bool truncated = false;
        auto l = reader.next(off, truncated);
        if (!l) {
            batch.error = l.error();
            return flush(true);
        }
        if (!*l) break;
        ++lineNo;
        batch.offsets.push_back(off);
        if (truncated) batch.truncated.emplace_back(lineNo, batch.kept.size());
        pipe.decode(lineNo, **l, keep);
        endOffset = reader.consumed();
        if (batch.offsets.size() >= batchLines) flush(false);
    }
    if (!open) return;
    pipe.decodeFinish(keep);
    flush(true);
}

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
    LineReader reader(fd.fd, kMaxLine);
    auto head = reader.peek(kFingerprintBytes);
    if (!head) return std::unexpected(db::Error{fmt::format("{}: {}", path, head.error().message)});
    id.fingerprint = fingerprint(head->data(), head->size());
    uint64_t total = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;

    auto src = store.source(id);
    if (!src) return std::unexpected(src.error());
    SourceState state = *src;
    if (state.complete && id.kind == "file" && total == static_cast<uint64_t>(state.offset)) {
        sum.unchanged = true;
        return sum;
    }
    uint64_t skipLines = 0;
    if (state.offset > 0 && id.kind == "file" && static_cast<uint64_t>(state.offset) <= total) {
        // Resume: reposition the file at the checkpoint.
        if (::lseek(fd.fd, state.offset, SEEK_SET) < 0)
            return std::unexpected(db::Error{fmt::format("{}: {}", path, std::strerror(errno))});
        reader = LineReader(fd.fd, kMaxLine);
        reader.setBase(static_cast<uint64_t>(state.offset));
        skipLines = static_cast<uint64_t>(state.line);
        sum.resumed = !state.complete;
    }

    if (auto r = store.begin(); !r) return std::unexpected(r.error());
    StoreSink sink(
        store, state.id, opt.dispatch_window, static_cast<uint64_t>(state.max_line), sum);
    TextPipeline pipe(sink);
    // Byte offsets of recent lines, to turn "the oldest open block starts at line L" into a
    // resumable position.
    std::deque<std::pair<uint64_t, uint64_t>> offsets;
    uint64_t lineNo = skipLines, pending = 0, consumedAt = reader.consumed();
    auto batchStart = std::chrono::steady_clock::now();
    auto fail = [&](const db::Error& e) -> db::Result<IngestSummary> {
        (void)store.rollback();
        return std::unexpected(db::Error{fmt::format("{}: {}", path, e.message)});
    };
    auto checkpoint = [&](bool complete) -> db::Result<void> {
        sink.flushCounts();
        if (sink.error()) return std::unexpected(*sink.error());
        SourceState cp = state;
        cp.max_line = static_cast<int64_t>(lineNo);
        cp.complete = complete;
        if (complete) {
            cp.offset = static_cast<int64_t>(consumedAt);
            cp.line = static_cast<int64_t>(lineNo);
        } else {
            // Resume where the oldest unfinished block starts (it must be among the remembered
            // line offsets, else the previous checkpoint stays), or earlier where a held
            // dispatch of the context window starts (clamped to what is remembered).
            std::optional<uint64_t> open;
            for (const auto& m : pipe.matchers())
                if (auto o = m->openSince(); o && (!open || *o < *open)) open = o;
            uint64_t resumeLine = open ? *open : lineNo + 1;
            if (auto held = sink.oldestHeldLine(); held && *held < resumeLine)
                resumeLine = std::max(*held, offsets.empty() ? *held : offsets.front().first);
            if (resumeLine > lineNo) {
                cp.offset = static_cast<int64_t>(consumedAt);
                cp.line = static_cast<int64_t>(lineNo);
            } else if (!offsets.empty() && resumeLine >= offsets.front().first) {
                const auto& [ln, off] = offsets[resumeLine - offsets.front().first];
                cp.offset = static_cast<int64_t>(off);
                cp.line = static_cast<int64_t>(ln - 1);
            }
        }
        if (auto r = store.setPosition(state.id, cp, static_cast<int64_t>(total)); !r) return r;
        if (auto r = store.commit(); !r) return r;
        state = cp;
        if (!complete)
            if (auto r = store.begin(); !r) return r;
        return {};
    };

    // Two threads: this one matches and stores; `front` reads and decodes, and hands over the
    // lines the matchers must see (most AMD_LOG_LEVEL=3 lines are API trace lines it drops).
    BatchChannel channel(4);
    const size_t batchLines = static_cast<size_t>(std::clamp<uint64_t>(opt.batch_lines, 1, kBatchLines));
    std::thread front([&, lineNo = skipLines] {
        readAndDecode(reader, pipe, channel, lineNo, batchLines);
    });
    struct Join {
        BatchChannel& channel;
        std::thread& thread;
        ~Join() {
            channel.close();
            thread.join();
        }
    } join{channel, front};

    for (;;) {
        auto b = channel.pop();
        if (!b) return fail(db::Error{"reader stopped"});
        if (b->error) return fail(*b->error);
        size_t t = 0;
        auto truncation = [&] {  // in the order the single-threaded pipeline had it
            uint64_t ln = b->truncated[t++].first;
            ++sum.truncated_lines;
            sink.markTruncated(ln);
            sink.warning(
                Warning{ln, fmt::format("line longer than {} bytes: stored truncated", kMaxLine)});
        };
        for (size_t k = 0; k < b->kept.size(); ++k) {
            while (t < b->truncated.size() && b->truncated[t].second <= k) truncation();
            pipe.match(b->kept[k]);
        }
        while (t < b->truncated.size()) truncation();
        for (size_t i = 0; i < b->offsets.size(); ++i) {
            offsets.emplace_back(b->first_line + i, b->offsets[i]);
            if (offsets.size() > 65536) offsets.pop_front();
        }
        lineNo += b->offsets.size();
        sum.lines += b->offsets.size();
        pending += b->offsets.size();
        consumedAt = b->end_offset;
        channel.done(b->seq);
        if (b->last) break;
        if (pending >= opt.batch_lines ||
            std::chrono::duration<double>(std::chrono::steady_clock::now() - batchStart).count() >
                opt.batch_seconds) {
            if (sink.error()) return fail(*sink.error());
            if (auto r = checkpoint(false); !r) return fail(r.error());
            pending = 0;
            batchStart = std::chrono::steady_clock::now();
            if (opt.progress) opt.progress(consumedAt, total);
        }
    }
    pipe.matchFinish();
    sink.flushWindows();
    if (sink.error()) return fail(*sink.error());
    if (auto r = checkpoint(true); !r) return fail(r.error());
    sum.bytes = consumedAt;
    if (opt.progress) opt.progress(sum.bytes, total);
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum;
}

db::Result<size_t> recorrelate(Store& store) {
    EvidenceFilter f;
    f.with_text = false;  // correlation needs neither attrs nor raw
    auto ev = queryEvidence(store.db(), f);
    if (!ev) return std::unexpected(ev.error());
    auto incidents = correlate(*ev);
    if (auto r = store.begin(); !r) return std::unexpected(r.error());
    if (auto r = store.replaceIncidents(incidents); !r) {
        (void)store.rollback();
        return std::unexpected(r.error());
    }
    if (auto r = store.commit(); !r) return std::unexpected(r.error());
    return incidents.size();
}

}  // namespace gpufault
