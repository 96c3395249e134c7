#include "ingest/ingest_alloc.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
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

namespace {

/// The file's bytes (at most kMaxBytes) and its stat. `nofollow`: a symbolic link is refused.
struct FileText {
    std::string text;
    struct stat st {};
};

db::Result<FileText> readAllocFile(const std::string& path, bool nofollow) {
    auto fail = [&](const std::string& m) { return std::unexpected(db::Error{path + ": " + m}); };
    auto f = RegularFile::open(path, nofollow);
    if (!f) return fail(f.error().text());
    auto read = f->read(kMaxBytes);
    if (!read) {
        const auto& e = read.error();
        if (e.why != FileError::Why::TooLarge) return fail(e.text());
        return fail(fmt::format("allocation records of {} bytes: over the 1 GiB limit", e.size));
    }
    return FileText{std::move(*read), f->st()};
}

/// Stores `text` (the file's bytes, or its whole lines) as the allocations of its source, in
/// the open transaction. `file_size`: the bytes the file has (a checkpoint up to it, over the
/// same prefix, is `unchanged` even when `text` stops at the last newline).
db::Result<void> storeAllocText(Store& store,
                                AllocIngestSummary& sum,
                                const SourceIdentity& id,
                                std::string_view text,
                                size_t file_size,
                                const alloclog::Log& log,
                                std::optional<int64_t> run_id) {
    auto s = store.source(id);
    if (!s) return std::unexpected(s.error());
    sum.source_id = s->id;
    auto size = static_cast<int64_t>(text.size());
    auto prefixSame = [&](int64_t upto) {
        return upto <= static_cast<int64_t>(file_size) && s->cursor &&
               *s->cursor == prefixHash(std::string_view(text.data(), file_size)
                                            .substr(0, static_cast<size_t>(upto)));
    };
    bool same = !s->cursor || (s->offset <= size && prefixSame(s->offset));
    if (s->complete && s->offset >= size && (s->offset == size ? same : prefixSame(s->offset))) {
        sum.unchanged = true;
        return {};
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
    done.offset = size;
    done.line = static_cast<int64_t>(log.lines);
    done.max_line = done.line;
    done.complete = true;
    done.cursor = prefixHash(text);
    return store.setPosition(s->id, done, size);
}

/// The summary's counts and warning texts from what was stored.
void summarise(AllocIngestSummary& sum, const alloclog::Log& log, size_t size) {
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
            sum.path,
            size < sum.old_size ? "cut short" : "written again",
            sum.old_size,
            size,
            sum.kept_allocations));
    for (size_t i = 0; i < log.warnings.size() && i < 10; ++i)
        sum.warning_texts.push_back(
            fmt::format("{}:{}: {}", sum.path, log.warnings[i].line, log.warnings[i].message));
}

SourceIdentity identityOf(const std::string& path, const FileText& f) {
    return SourceIdentity{path,
                          "alloc",
                          static_cast<int64_t>(f.st.st_dev),
                          static_cast<int64_t>(f.st.st_ino),
                          allocFingerprint(f.text)};
}

}  // namespace

db::Result<AllocIngestSummary> ingestAllocLog(Store& store,
                                              const std::string& path,
                                              std::optional<int64_t> run_id) {
    auto t0 = std::chrono::steady_clock::now();
    auto f = readAllocFile(path, false);
    if (!f) return std::unexpected(f.error());
    AllocIngestSummary sum;
    sum.path = path;
    auto log = alloclog::parse(f->text);
    auto stored = [&]() -> db::Result<void> {
        if (auto r = store.begin(); !r) return r;
        if (auto r = storeAllocText(
                store, sum, identityOf(path, *f), f->text, f->text.size(), log, run_id);
            !r)
            return r;
        return sum.unchanged ? store.rollback() : store.commit();
    }();
    if (!stored) {
        (void)store.rollback();
        return std::unexpected(db::Error{path + ": " + stored.error().message});
    }
    if (sum.unchanged) return sum;
    summarise(sum, log, f->text.size());
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum;
}

std::optional<SourceIdentity> allocSourceIdentity(const std::string& path) {
    auto file = RegularFile::open(path, true);
    if (!file) return std::nullopt;
    char buf[4096];
    ssize_t n = ::pread(file->fd(), buf, sizeof buf, 0);
    if (n <= 0) return std::nullopt;
    FileText f{std::string(buf, static_cast<size_t>(n)), file->st()};
    if (f.text.find('\n') == std::string::npos) return std::nullopt;
    return identityOf(path, f);
}

db::Result<AllocIngestSummary> storeAllocLogInTxn(Store& store,
                                                  const std::string& path,
                                                  const AllocFollowOptions& opt) {
    auto t0 = std::chrono::steady_clock::now();
    auto f = readAllocFile(path, true);
    if (!f) return std::unexpected(f.error());
    if (opt.owner && f->st.st_uid != *opt.owner)
        return std::unexpected(db::Error{
            fmt::format("{}: owned by uid {}, not {} (replaced since it was trusted): refused",
                        path,
                        f->st.st_uid,
                        *opt.owner)});
    AllocIngestSummary sum;
    sum.path = path;
    auto whole = f->text.rfind('\n');
    std::string_view text(f->text.data(), whole == std::string::npos ? 0 : whole + 1);
    if (text.empty()) {  // not one whole record yet
        sum.unchanged = true;
        return sum;
    }
    auto log = alloclog::parse(text);
    if (opt.only_pid) {
        // Records naming another process are refused: a user may write records into their own
        // file, but not make them count as another user's process's.
        auto other = [&](int64_t pid) { return pid != *opt.only_pid; };
        for (const auto& a : log.allocations)
            if (other(a.pid))
                log.warnings.push_back({a.line,
                                        fmt::format("record of pid {} in the file of pid {}: "
                                                    "refused",
                                                    a.pid,
                                                    *opt.only_pid)});
        for (const auto& p : log.processes)
            if (other(p.pid))
                log.warnings.push_back({p.line,
                                        fmt::format("record of pid {} in the file of pid {}: "
                                                    "refused",
                                                    p.pid,
                                                    *opt.only_pid)});
        std::erase_if(log.allocations, [&](const auto& a) { return other(a.pid); });
        std::erase_if(log.processes, [&](const auto& p) { return other(p.pid); });
        std::stable_sort(log.warnings.begin(),
                         log.warnings.end(),
                         [](const auto& a, const auto& b) { return a.line < b.line; });
    }
    if (auto r = storeAllocText(
            store, sum, identityOf(path, *f), text, f->text.size(), log, std::nullopt);
        !r)
        return std::unexpected(db::Error{path + ": " + r.error().message});
    if (sum.unchanged) return sum;
    summarise(sum, log, text.size());
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum;
}

}  // namespace gpufault
