#include "ingest/ingest.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>
#include <vector>

#include "collectors/pipeline.h"
#include "correlate/correlate.h"
#include "ingest/line_batches.h"
#include "ingest/line_reader.h"
#include "ingest/source_identity.h"
#include "ingest/stream.h"
#include "schema/queries.h"
#include "schema/streams.h"

namespace gpufault {

namespace {

constexpr size_t kFingerprintBytes = 4096;
constexpr size_t kMaxLine = LineDecoder::kMaxLine;
constexpr size_t kBatchLines = 2048;  // physical lines per batch between the two threads
constexpr size_t kQueuedBatches = 8;  // batches read but not yet matched (memory bound)

struct Fd {
    int fd = -1;
    ~Fd() {
        if (fd > 0) ::close(fd);
    }
};

/// The reading thread of an ingest (stage 1 of docs/performance.md's "Seventh round"): lines
/// from `reader` (numbered after `lineNo`) in batches of up to `batchLines` to `channel`; the
/// last batch says so or carries the read error. While the channel is full, or before the
/// reader overwrites a buffer (it waits until the batches pointing into it are done), it
/// classifies batches that the matching thread has not claimed (stage 2). Returns early when
/// the channel is closed. `file`: a last line without '\n' is marked LineBatch::unended.
void readLines(
    LineReader& reader, BatchChannel& channel, uint64_t lineNo, size_t batchLines, bool file) {
    struct Unhook {
        LineReader& r;
        ~Unhook() { r.setReuse({}); }
    } unhook{reader};
    LineClassifier classifier;
    uint64_t seq = 0, reuseAfter = 0;
    bool open = true;
    auto push = [&](LineBatch&& b) {
        b.seq = ++seq;
        b.end_offset = reader.consumed();
        open = channel.push(std::move(b), classifier) && open;
    };
    reader.setReuse([&] {
        open = channel.waitDone(reuseAfter, classifier) && open;
        reuseAfter = seq;
    });
    while (open) {
        LineBatch b;
        b.first_line = lineNo + 1;
        b.ends.reserve(batchLines);
        if (const size_t n = reader.takeBuffered(b.ends, batchLines, b.base, b.first_offset)) {
            lineNo += n;
            push(std::move(b));
            continue;
        }
        // A line that does not end in the buffer (or a cut one): one batch of its own.
        uint64_t off = 0;
        bool truncated = false;
        auto l = reader.next(off, truncated);
        if (!l) {
            b.error = l.error();
            return push(std::move(b));
        }
        if (!*l) break;
        ++lineNo;
        b.first_offset = off;
        b.cut = truncated;
        b.unended = file && reader.lastUnended();
        if (reader.inBuffer(**l)) {
            b.base = (*l)->data();
        } else {
            b.owned.assign(**l);
            b.owns = true;
        }
        b.ends.assign(1, static_cast<uint32_t>((*l)->size()));
        push(std::move(b));
    }
    if (!open) return;
    LineBatch end;
    end.first_line = lineNo + 1;
    end.last = true;
    push(std::move(end));
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
    id.rename = false;  // decided below, once the row is found
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
        // A device never ends (/dev/kmsg blocks at the ring's end): nothing would be stored.
        if (S_ISCHR(st.st_mode) && !::isatty(fd.fd))
            return std::unexpected(db::Error{fmt::format(
                "{}: a character device, not a file: ingest reads files and pipes to their end "
                "(a device such as /dev/kmsg never ends; the kernel log: `dmesg | gpufault "
                "ingest -`, or gpufaultd's [kmsg] source)",
                path)});
        id.device = static_cast<int64_t>(st.st_dev);
        id.inode = static_cast<int64_t>(st.st_ino);
    }
    LineReader reader(fd.fd, kMaxLine, {}, opt.read_chunk_bytes);
    // A stop ends the wait for the head on a quiet pipe too (what came is the head).
    if (!S_ISREG(st.st_mode)) reader.setCancel(-1, opt.stop_fd);
    auto head = reader.peek(kFingerprintBytes);
    if (!head) return std::unexpected(db::Error{fmt::format("{}: {}", path, head.error().message)});
    // Compressed logs and cores (journal exports, `dmesg.gz`, `core.zst`) are not text.
    for (auto [magic, name, tool] :
         {std::tuple{std::string_view("\x1f\x8b"), "gzip", "zcat"},
          std::tuple{std::string_view("\x28\xb5\x2f\xfd"), "zstd", "zstdcat"},
          std::tuple{std::string_view("\xfd"
                                      "7zXZ"),
                     "xz",
                     "xzcat"},
          std::tuple{std::string_view("BZh"), "bzip2", "bzcat"},
          std::tuple{std::string_view("\x04\x22\x4d\x18"), "lz4", "lz4cat"}})
        if (head->substr(0, magic.size()) == magic)
            return std::unexpected(db::Error{fmt::format(
                "{}: {}-compressed: decompress it first (a core: {} FILE > core; a log: {} FILE | "
                "gpufault ingest -)",
                path,
                name,
                tool,
                tool)});
    // UTF-16 text (Windows PowerShell's `>`): every other byte NUL, no line would match.
    if (head->starts_with("\xFF\xFE") || head->starts_with("\xFE\xFF"))
        return std::unexpected(db::Error{fmt::format(
            "{}: UTF-16 text: convert it first (iconv -f UTF-16 -t UTF-8 {} | gpufault ingest -)",
            path,
            path)});
    id.fingerprint = sourceFingerprint(*head);
    uint64_t total = S_ISREG(st.st_mode) ? static_cast<uint64_t>(st.st_size) : 0;

    // A file is resumed only while its bytes before the checkpoint are those read (else it is
    // new content: a new source, read from its start); each `ingest -` is a stream of its own.
    FilePrefix prefix(fd.fd);
    SourceState state;
    if (id.kind == "file") {
        auto src = fileSource(store, id, static_cast<int64_t>(total), prefix);
        if (!src) return std::unexpected(src.error());
        state = src->state;
        total = static_cast<uint64_t>(src->size);
        sum.source_id = state.id;
        // Read before under another name (a hard link, a relative path beside gpufaultd's
        // absolute one): the row keeps the name it has while that still names this file;
        // a renamed or rotated file's row takes the new name.
        if (!state.path.empty() && state.path != id.path) {
            struct stat old {};
            if (::stat(state.path.c_str(), &old) != 0 || old.st_dev != st.st_dev ||
                old.st_ino != st.st_ino) {
                if (auto r = store.setSourcePath(state.id, id.path); !r)
                    return std::unexpected(r.error());
            }
        }
        sum.resumed = src->resumed;
        sum.replaced_source = src->replaced;
        sum.replaced_bytes = static_cast<uint64_t>(src->replaced_offset);
        if (src->unchanged) {
            sum.unchanged = true;
            return sum;
        }
        if (state.offset > 0) {
            // Resume: reposition the file at the checkpoint.
            if (::lseek(fd.fd, state.offset, SEEK_SET) < 0)
                return std::unexpected(
                    db::Error{fmt::format("{}: {}", path, std::strerror(errno))});
            reader = LineReader(fd.fd, kMaxLine, {}, opt.read_chunk_bytes);
            reader.setBase(static_cast<uint64_t>(state.offset));
        }
    } else {
        auto src = newStream(store.db(), id);
        if (!src) return std::unexpected(src.error());
        state = *src;
        sum.source_id = state.id;
    }
    sum.name = id.path;
    if (auto r = store.begin(); !r) return std::unexpected(r.error());
    StreamIngest stream(store, state, opt.dispatch_window, sum);
    uint64_t consumedAt = reader.consumed();
    auto batchStart = std::chrono::steady_clock::now();
    auto fail = [&](const db::Error& e) -> db::Result<IngestSummary> {
        (void)store.rollback();
        if (stream.conflicted())
            return std::unexpected(db::Error{fmt::format(
                "another ingest or gpufaultd is writing source {}; nothing of this batch was "
                "stored",
                path)});
        return std::unexpected(db::Error{fmt::format("{}: {}", path, e.message)});
    };
    auto checkpoint = [&](bool complete) -> db::Result<void> {
        auto end = static_cast<int64_t>(consumedAt);
        // A file that grew while being read: its size is what was read (rows stored from
        // bytes past the size at open are covered by the checkpoint's size and read_hash).
        auto size = static_cast<int64_t>(total ? std::max(total, consumedAt) : 0);
        auto hash = [&](SourceState& cp) {
            if (id.kind == "file") hashCheckpoint(prefix, cp, size);
        };
        if (auto r = stream.checkpoint(end, complete, size, hash); !r)
            return r;
        if (auto r = store.commit(); !r) return r;
        stream.committed();
        if (!complete)
            if (auto r = store.begin(); !r) return r;
        return {};
    };

    // Two threads: `front` reads and splits lines into batches (stage 1), this one decodes,
    // matches and stores them in order (stage 3); the classification in between (stage 2: most
    // AMD_LOG_LEVEL=3 lines are API trace lines, dropped there) runs on whichever thread
    // would otherwise wait (BatchChannel).
    BatchChannel channel(kQueuedBatches);
    const size_t batchLines =
        static_cast<size_t>(std::clamp<uint64_t>(opt.batch_lines, 1, kBatchLines));
    // A pipe's read may wait for ever (`journalctl -f | gpufault ingest -`): an ingest that
    // ends early (stopped, failed) ends it through an eventfd.
    Fd cancel;
    if (!S_ISREG(st.st_mode)) {
        cancel.fd = ::eventfd(0, EFD_CLOEXEC);
        reader.setCancel(cancel.fd, opt.stop_fd);
    }
    std::thread front([&, lineNo = static_cast<uint64_t>(state.line)] {
        readLines(reader, channel, lineNo, batchLines, id.kind == "file");
    });
    struct Join {
        BatchChannel& channel;
        std::thread& thread;
        int cancel;
        ~Join() {
            channel.close();
            if (cancel >= 0) (void)::eventfd_write(cancel, 1);
            thread.join();
        }
    } join{channel, front, cancel.fd};

    // Stopped as a kill after this batch's commit would be: what was matched is committed.
    auto stopHere = [&]() -> db::Result<IngestSummary> {
        if (stream.error()) return fail(*stream.error());
        if (auto r = checkpoint(false); !r) return fail(r.error());
        (void)store.rollback();  // the transaction checkpoint() opened, empty
        sum.interrupted = true;
        sum.bytes = consumedAt;
        sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return sum;
    };
    LineClassifier classifier;
    for (;;) {
        auto b = channel.pop(classifier);
        if (!b) return fail(db::Error{"reader stopped"});
        // A read that waited on a quiet pipe, ended by the stop (opt.stop_fd).
        if (b->error) return opt.stop && opt.stop() ? stopHere() : fail(*b->error);
        stream.matchBatch(*b);
        consumedAt = b->end_offset;
        channel.done(b->seq);
        if (b->last) break;
        if (opt.stop && opt.stop()) return stopHere();
        if (stream.uncommittedLines() >= opt.batch_lines ||
            std::chrono::duration<double>(std::chrono::steady_clock::now() - batchStart).count() >
                opt.batch_seconds) {
            if (stream.error()) return fail(*stream.error());
            if (auto r = checkpoint(false); !r) return fail(r.error());
            batchStart = std::chrono::steady_clock::now();
            if (opt.progress) opt.progress(consumedAt, total);
        }
    }
    // A file may still grow: what is unfinished at its end is read again (finish(true)).
    stream.finishBatched(id.kind == "file");
    sum.classified_by_reader = channel.classifiedBy().first;
    sum.classified_by_matcher = channel.classifiedBy().second;
    if (stream.error()) return fail(*stream.error());
    if (auto r = checkpoint(true); !r) return fail(r.error());
    sum.bytes = consumedAt;
    if (opt.progress) opt.progress(sum.bytes, total);
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum;
}

StoreInterrupt::StoreInterrupt(db::Db& d, const std::function<bool()>& stop) : d_(d) {
    if (stop) d_.setInterrupt(&stop);
}
StoreInterrupt::~StoreInterrupt() {
    d_.setInterrupt(nullptr);
}

db::Result<std::vector<IncidentRecord>> correlateStored(Store& store,
                                                        const std::function<bool()>& stop) {
    const db::Error interrupted{"interrupted"};
    StoreInterrupt guard(store.db(), stop);
    EvidenceFilter f;
    f.with_text = false;  // correlation needs neither attrs nor raw
    auto ev = queryEvidence(store.db(), f);
    if (!ev) return std::unexpected(stop && stop() ? interrupted : ev.error());
    ProcessLinks links;
    // Container pids of processes the daemon saw alive (NSpid: host pid first, innermost last).
    auto procs = queryProcesses(store.db());
    if (!procs) return std::unexpected(stop && stop() ? interrupted : procs.error());
    for (const auto& p : *procs) {
        auto ns = nlohmann::json::parse(p.p.nspid, nullptr, false);
        if (ns.is_array() && ns.size() > 1 && ns.back().is_number_integer())
            links.ns_pids[p.p.pid] = ns.back().get<int64_t>();
    }
    // Pids that `gpufault run` jobs spawned, with the source of their captured output.
    auto runs = queryRuns(store.db());
    if (!runs) return std::unexpected(stop && stop() ? interrupted : runs.error());
    for (const auto& r : *runs) {
        auto pids = nlohmann::json::parse(r.run.pids, nullptr, false);
        if (!r.run.source_id || !pids.is_array()) continue;
        for (const auto& p : pids)
            if (p.is_number_integer())
                links.run_sources[p.get<int64_t>()].emplace_back(*r.run.source_id, r.id);
    }
    // The kernel dispatched last before each runtime record that names none (the signature's).
    std::vector<int64_t> undispatched;
    for (const auto& r : *ev)
        if (opensIncident(r.e.kind) && !r.e.kernel && !isKernelSide(r.e.kind))
            undispatched.push_back(r.id);
    auto last = queryLastKernels(store.db(), undispatched);
    if (!last) return std::unexpected(stop && stop() ? interrupted : last.error());
    for (auto& [id, k] : *last)
        if (!k.ambiguous()) links.last_kernels.emplace(id, std::move(k.kernel));
    auto incidents = correlateUnless(stop, *ev, {}, links);
    if (!incidents) return std::unexpected(interrupted);
    return std::move(*incidents);
}

db::Result<size_t> recorrelate(Store& store, const std::function<bool()>& stop) {
    // Read and written in one write transaction: evidence read outside it may be gone by the
    // write (gpufaultd replaces the rows of a line read again), and the incidents written would
    // name rows that are not there (FOREIGN KEY constraint failed beside the daemon).
    if (auto r = store.begin(); !r) return std::unexpected(r.error());
    auto incidents = correlateStored(store, stop);
    if (!incidents) {
        (void)store.rollback();
        return std::unexpected(incidents.error());
    }
    {
        StoreInterrupt guard(store.db(), stop);
        if (auto r = store.replaceIncidents(*incidents, stop); !r) {
            (void)store.rollback();
            return std::unexpected(stop && stop() ? db::Error{"interrupted"} : r.error());
        }
    }
    if (auto r = store.commit(); !r) {
        (void)store.rollback();
        return std::unexpected(r.error());
    }
    return incidents->size();
}

}  // namespace gpufault
