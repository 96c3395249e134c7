#include "ingest/ingest_alloc.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>

#include "collectors/common/small_file.h"
#include "collectors/preload/alloc_log.h"

namespace gpufault {

namespace {

constexpr size_t kMaxBytes = size_t{1} << 30;

/// FNV-1a of the first line (the `start` record: pid, time, executable): the same process's
/// file is recognised while it grows.
std::string allocFingerprint(std::string_view text) {
    auto first = text.substr(0, text.find('\n'));
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : first) h = (h ^ c) * 1099511628211ull;
    return fmt::format("alloc-{:016x}", h);
}

/// FNV-1a of the bytes already stored (kept in the source's cursor): a file whose stored
/// prefix changed was written again.
std::string prefixHash(std::string_view text) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
    return fmt::format("prefix-{:016x}-{}", h, text.size());
}

}  // namespace

bool isAllocLogFile(const std::string& path) {
    auto f = RegularFile::open(path);
    if (!f) return false;
    char head[32];
    ssize_t n = ::pread(f->fd(), head, sizeof head, 0);
    return n > 0 && alloclog::looksLikeAllocLog(std::string_view(head, static_cast<size_t>(n)));
}

db::Result<AllocIngestSummary> ingestAllocLog(Store& store,
                                              const std::string& path,
                                              std::optional<int64_t> run_id) {
    auto t0 = std::chrono::steady_clock::now();
    auto fail = [&](const std::string& m) { return std::unexpected(db::Error{path + ": " + m}); };
    auto f = RegularFile::open(path);
    if (!f) return fail(f.error().text());
    auto read = f->read(kMaxBytes);
    if (!read) {
        const auto& e = read.error();
        if (e.why != FileError::Why::TooLarge) return fail(e.text());
        return fail(fmt::format("allocation records of {} bytes: over the 1 GiB limit", e.size));
    }
    std::string text = std::move(*read);
    const struct stat& st = f->st();

    AllocIngestSummary sum;
    sum.path = path;
    SourceIdentity id{path,
                      "alloc",
                      static_cast<int64_t>(st.st_dev),
                      static_cast<int64_t>(st.st_ino),
                      allocFingerprint(text)};
    auto log = alloclog::parse(text);
    auto stored = [&]() -> db::Result<void> {
        if (auto r = store.begin(); !r) return r;
        auto s = store.source(id);
        if (!s) return std::unexpected(s.error());
        sum.source_id = s->id;
        auto size = static_cast<int64_t>(text.size());
        bool same = !s->cursor ||
                    (s->offset <= size && *s->cursor == prefixHash(std::string_view(text).substr(
                                                            0, static_cast<size_t>(s->offset))));
        if (s->complete && s->offset == size && same) {
            sum.unchanged = true;
            return store.rollback();
        }
        if (s->offset > size || !same) {
            // Cut short or written again: a new generation. The rows stored so far stay with
            // the old source (retired); the file's rows are added beside them.
            auto kept = store.retireSource(s->id);
            if (!kept) return std::unexpected(kept.error());
            sum.new_generation = true;
            sum.kept_allocations = static_cast<uint64_t>(*kept);
            sum.old_size = static_cast<uint64_t>(s->offset);
            s = store.source(id);
            if (!s) return std::unexpected(s.error());
            sum.source_id = s->id;
        }
        auto n = store.replaceAllocations(s->id, run_id, log);
        if (!n) return std::unexpected(n.error());
        SourceState done = *s;
        done.offset = static_cast<int64_t>(text.size());
        done.line = static_cast<int64_t>(log.lines);
        done.max_line = done.line;
        done.complete = true;
        done.cursor = prefixHash(text);
        if (auto r = store.setPosition(s->id, done, static_cast<int64_t>(text.size())); !r)
            return r;
        return store.commit();
    }();
    if (!stored) {
        (void)store.rollback();
        return fail(stored.error().message);
    }
    if (sum.unchanged) return sum;
    sum.lines = log.lines;
    sum.events = log.events;
    sum.allocations = log.allocations.size();
    for (const auto& a : log.allocations) sum.freed += a.free_line ? 1 : 0;
    sum.failed = log.failed;
    sum.warnings = log.warnings.size();
    sum.processes = log.processes.size();
    for (const auto& p : log.processes) sum.pids.push_back(p.pid);
    if (sum.new_generation)
        sum.warning_texts.push_back(fmt::format(
            "{}: {} since it was ingested ({} bytes then, {} now): a new generation; the {} "
            "allocation(s) stored before are kept",
            path,
            text.size() < sum.old_size ? "cut short" : "written again",
            sum.old_size,
            text.size(),
            sum.kept_allocations));
    for (size_t i = 0; i < log.warnings.size() && i < 10; ++i)
        sum.warning_texts.push_back(
            fmt::format("{}:{}: {}", path, log.warnings[i].line, log.warnings[i].message));
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum;
}

}  // namespace gpufault
