#include "ingest/ingest_alloc.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "collectors/common/small_file.h"
#include "collectors/preload/alloc_log.h"

namespace gpufault {

namespace {

constexpr size_t kMaxBytes = size_t{1} << 30;
constexpr uint64_t kFnvBasis = 1469598103934665603ull;

uint64_t fnv(uint64_t h, std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

std::string cursorText(uint64_t hash, size_t size) {
    return fmt::format("prefix-{:016x}-{}", hash, size);
}

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
    return cursorText(fnv(kFnvBasis, text), text.size());
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
/// same prefix, is `unchanged` even when `text` stops at the last newline). `log`'s warnings
/// become those stored (Store::appendAllocations() drops and adds some).
db::Result<void> storeAllocText(Store& store,
                                AllocIngestSummary& sum,
                                const SourceIdentity& id,
                                std::string_view text,
                                size_t file_size,
                                alloclog::Log& log,
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
    sum.duplicates = static_cast<uint64_t>(n->duplicates);
    sum.after_end = static_cast<uint64_t>(n->after_end);
    sum.freed = static_cast<uint64_t>(n->frees);  // summarise() adds the file's own pairs
    log.warnings = std::move(n->warnings);        // what was stored
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
    if (sum.pids.empty()) {  // a `start` record refused or never written: the records' pids
        for (const auto& a : log.allocations)
            if (std::find(sum.pids.begin(), sum.pids.end(), a.pid) == sum.pids.end())
                sum.pids.push_back(a.pid);
        sum.pids_without_start = !sum.pids.empty();
    }
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

/// Drops the records of other pids than `pid` (warned), as the daemon stores a user's file.
void onlyPid(alloclog::Log& log, int64_t pid) {
    auto other = [&](int64_t p) { return p != pid; };
    auto warn = [&](uint64_t line, int64_t p) {
        log.warnings.push_back(
            {line, fmt::format("record of pid {} in the file of pid {}: refused", p, pid)});
    };
    for (const auto& a : log.allocations)
        if (other(a.pid)) warn(a.line, a.pid);
    for (const auto& p : log.processes)
        if (other(p.pid)) warn(p.line, p.pid);
    std::erase_if(log.allocations, [&](const auto& a) { return other(a.pid); });
    std::erase_if(log.processes, [&](const auto& p) { return other(p.pid); });
    std::erase_if(log.late_frees, [&](const auto& f) { return other(f.pid); });
    std::stable_sort(log.warnings.begin(), log.warnings.end(), [](const auto& a, const auto& b) {
        return a.line < b.line;
    });
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
    // A file named by the shim counts only for the pid its name gives, as gpufaultd stores it:
    // a record claiming another process is refused with a warning (hostile review 16, H3).
    std::optional<uint64_t> pidns;
    if (int64_t pid =
            alloclog::pidOfFileName(std::filesystem::path(path).filename().string(), pidns))
        onlyPid(log, pid);
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

namespace {

constexpr size_t kBlock = size_t{1} << 20;  ///< bytes read at once by the daemon
using alloclog::kMaxLine;                   ///< a longer line is skipped with a warning

/// Feeds the whole lines of `fd` from `state.offset` up to `end` to the parser, calling
/// `chunk(log)` with what each block made; stops at the last newline before `end`. A line
/// longer than kMaxLine is skipped with a warning.
template <typename Chunk>
db::Result<void> feedLines(int fd,
                           int64_t end,
                           AllocFollowState& state,
                           const std::string& path,
                           uint64_t& bytes_read,
                           Chunk&& chunk) {
    std::string buf, carry;
    int64_t pos = state.offset;
    uint64_t skipHash = 0;
    size_t skipped = 0;  // bytes of a too long line passed over so far
    while (pos < end) {
        size_t want = static_cast<size_t>(std::min<int64_t>(kBlock, end - pos));
        buf.assign(carry);
        buf.resize(carry.size() + want);
        ssize_t n = ::pread(fd, buf.data() + carry.size(), want, pos);
        if (n < 0) return std::unexpected(db::Error{path + ": " + std::strerror(errno)});
        if (n == 0) break;
        pos += n;
        bytes_read += static_cast<uint64_t>(n);
        buf.resize(carry.size() + static_cast<size_t>(n));
        carry.clear();
        std::string_view b(buf);
        size_t at = 0;
        if (skipped > 0) {  // inside a too long line: up to its newline
            auto nl = b.find('\n');
            if (nl == std::string_view::npos) {
                skipHash = fnv(skipHash, b);
                skipped += b.size();
                continue;
            }
            state.hash = fnv(skipHash, b.substr(0, nl + 1));
            state.offset += static_cast<int64_t>(skipped + nl + 1);
            state.parser.skipped(++state.lines, std::string(alloclog::kLongLine));
            skipped = 0;
            at = nl + 1;
        }
        for (;;) {
            auto nl = b.find('\n', at);
            if (nl == std::string_view::npos) break;
            auto line = b.substr(at, nl - at);
            if (line.size() > kMaxLine)  // as alloclog::parse(): not read
                state.parser.skipped(++state.lines, std::string(alloclog::kLongLine));
            else
                state.parser.feed(++state.lines, line);
            state.hash = fnv(state.hash, b.substr(at, nl + 1 - at));
            state.offset += static_cast<int64_t>(nl + 1 - at);
            at = nl + 1;
        }
        auto rest = b.substr(at);
        if (rest.size() > kMaxLine) {
            skipHash = fnv(state.hash, rest);
            skipped = rest.size();
        } else {
            carry.assign(rest);
        }
        if (auto r = chunk(state.parser.drain()); !r) return r;
    }
    return {};
}

}  // namespace

db::Result<AllocIngestSummary> storeAllocLogInTxn(Store& store,
                                                  const std::string& path,
                                                  const AllocFollowOptions& opt,
                                                  AllocFollowState& state) {
    auto t0 = std::chrono::steady_clock::now();
    auto fail = [&](const std::string& m) { return std::unexpected(db::Error{path + ": " + m}); };
    auto f = RegularFile::open(path, true);
    if (!f) return fail(f.error().text());
    const struct stat& st = f->st();
    if (opt.owner && st.st_uid != *opt.owner)
        return fail(fmt::format("owned by uid {}, not {} (replaced since it was trusted): refused",
                                st.st_uid,
                                *opt.owner));
    if (static_cast<uint64_t>(st.st_size) > kMaxBytes)
        return fail(
            fmt::format("allocation records of {} bytes: over the 1 GiB limit", st.st_size));
    AllocIngestSummary sum;
    sum.path = path;
    char head[4096];
    ssize_t hn = ::pread(f->fd(), head, sizeof head, 0);
    std::string_view first(head, hn > 0 ? static_cast<size_t>(hn) : 0);
    if (first.find('\n') == std::string_view::npos) {  // not one whole record yet
        sum.unchanged = true;
        return sum;
    }
    SourceIdentity id{path,
                      "alloc",
                      static_cast<int64_t>(st.st_dev),
                      static_cast<int64_t>(st.st_ino),
                      allocFingerprint(first)};
    auto s = store.source(id);
    if (!s) return std::unexpected(s.error());
    int64_t size = st.st_size;
    auto newGeneration = [&]() -> db::Result<void> {
        auto kept = store.retireSource(s->id);
        if (!kept) return std::unexpected(kept.error());
        sum.new_generation = true;
        sum.kept_allocations = static_cast<uint64_t>(*kept);
        sum.old_size = static_cast<uint64_t>(s->offset);
        s = store.source(id);
        if (!s) return std::unexpected(s.error());
        state = AllocFollowState{};
        state.source_id = s->id;
        state.offset = 0;
        state.hash = kFnvBasis;
        return {};
    };
    if (s->offset > size) {  // cut short
        if (auto r = newGeneration(); !r) return std::unexpected(r.error());
    } else if (state.source_id != s->id || state.offset != s->offset) {
        // Rebuild the parser from the stored part (nothing stored): its open allocations.
        state = AllocFollowState{};
        state.source_id = s->id;
        state.offset = 0;
        state.hash = kFnvBasis;
        uint64_t n = 0;
        auto r =
            feedLines(f->fd(), s->offset, state, path, sum.bytes_read, [&](alloclog::Log&& log) {
                if (opt.only_pid) onlyPid(log, *opt.only_pid);
                n += log.allocations.size();
                for (const auto& p : log.processes) state.lastStart(p);
                return db::Result<void>{};
            });
        if (!r) return std::unexpected(r.error());
        state.allocations = n;
        if (state.offset != s->offset ||
            (s->cursor && *s->cursor != cursorText(state.hash, static_cast<size_t>(s->offset)))) {
            // The bytes stored before changed (written again): a new generation.
            if (auto g = newGeneration(); !g) return std::unexpected(g.error());
        }
    }
    sum.source_id = s->id;
    int64_t before = state.offset;
    uint64_t freed = 0;
    alloclog::Log all;  // counts and the first warnings only
    auto r = feedLines(
        f->fd(), size, state, path, sum.bytes_read, [&](alloclog::Log&& log) -> db::Result<void> {
            if (opt.only_pid) onlyPid(log, *opt.only_pid);
            for (const auto& p : log.processes) state.lastStart(p);
            // read after any end stored before: a recording that ended takes no more records
            auto added = store.appendAllocations(s->id, std::nullopt, log, true);
            if (!added) return std::unexpected(added.error());
            state.allocations += log.allocations.size();
            for (const auto& a : log.allocations) freed += a.free_line ? 1 : 0;
            freed += static_cast<uint64_t>(added->frees);
            sum.duplicates += static_cast<uint64_t>(added->duplicates);
            sum.after_end += static_cast<uint64_t>(added->after_end);
            all.lines += log.lines;
            all.events += log.events;
            all.failed += log.failed;
            for (auto& p : log.processes) all.processes.push_back(std::move(p));
            for (auto& w : added->warnings)
                if (all.warnings.size() < 10) all.warnings.push_back(std::move(w));
            sum.warnings += added->warnings.size();
            return {};
        });
    if (!r) return std::unexpected(db::Error{path + ": " + r.error().message});
    if (state.offset == before && !sum.new_generation) {
        sum.unchanged = true;
        return sum;
    }
    SourceState done = *s;
    done.offset = state.offset;
    done.line = static_cast<int64_t>(state.lines);
    done.max_line = done.line;
    done.complete = true;
    done.cursor = cursorText(state.hash, static_cast<size_t>(state.offset));
    if (auto p = store.setPosition(s->id, done, state.offset); !p)
        return std::unexpected(db::Error{path + ": " + p.error().message});
    uint64_t warnings = sum.warnings;
    summarise(sum, all, static_cast<size_t>(state.offset));
    sum.warnings = warnings;
    sum.allocations = state.allocations;
    sum.freed = freed;
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum;
}

}  // namespace gpufault
