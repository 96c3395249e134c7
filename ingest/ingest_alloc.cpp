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

}  // namespace

namespace {

/// The file's first line with its newline (read in 4 KiB steps, at most alloclog::kMaxLine + 1
/// bytes: the identity of a file whose `start` line is long, hostile review 155, MED 4); ""
/// while it has no newline yet, nullopt when it has none within the cap or cannot be read.
std::optional<std::string> firstLine(int fd) {
    std::string head;
    char buf[4096];
    while (head.size() <= alloclog::kMaxLine) {
        ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(head.size()));
        if (n < 0) return std::nullopt;
        std::string_view got(buf, static_cast<size_t>(n));
        if (auto nl = got.find('\n'); nl != std::string_view::npos)
            return head.append(got.substr(0, nl + 1));
        if (n == 0) return std::string();
        head.append(got);
    }
    return std::nullopt;
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

/// The summary's warning texts: a new generation's, then the first stored warnings (at most
/// 10), as "PATH:LINE: message". `size`: the bytes read of the file.
void warningTexts(AllocIngestSummary& sum,
                  const std::vector<alloclog::Warning>& warnings,
                  size_t size) {
    if (sum.new_generation)
        sum.warning_texts.push_back(fmt::format(
            "{}: {} since it was ingested ({} bytes then, {} now): a new generation; the {} "
            "allocation(s) stored before are kept",
            sum.path,
            size < sum.old_size ? "cut short" : "written again",
            sum.old_size,
            size,
            sum.kept_allocations));
    for (size_t i = 0; i < warnings.size() && i < 10; ++i)
        sum.warning_texts.push_back(
            fmt::format("{}:{}: {}", sum.path, warnings[i].line, warnings[i].message));
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

/// The source a file is: device, inode and its first line (`first`: the file's first bytes).
SourceIdentity identityOf(const std::string& path, const struct stat& st, std::string_view first) {
    return SourceIdentity{path,
                          "alloc",
                          static_cast<int64_t>(st.st_dev),
                          static_cast<int64_t>(st.st_ino),
                          allocFingerprint(first)};
}

}  // namespace

db::Result<AllocIngestSummary> ingestAllocLog(Store& store,
                                              const std::string& path,
                                              std::optional<int64_t> run_id) {
    AllocFollowOptions opt;
    opt.run_id = run_id;
    opt.follow_links = true;
    opt.read_after_end = false;
    opt.to_end = true;
    // A file named by the shim counts only for the pid its name gives, as gpufaultd stores it:
    // a record claiming another process is refused with a warning (hostile review 16, H3).
    std::optional<uint64_t> pidns;
    if (int64_t pid =
            alloclog::pidOfFileName(std::filesystem::path(path).filename().string(), pidns))
        opt.only_pid = pid;
    AllocFollowState state;
    auto stored = [&]() -> db::Result<AllocIngestSummary> {
        if (auto r = store.begin(); !r) return std::unexpected(r.error());
        auto sum = storeAllocLogInTxn(store, path, opt, state);
        if (!sum) return sum;
        if (auto r = sum->unchanged ? store.rollback() : store.commit(); !r)
            return std::unexpected(r.error());
        return sum;
    }();
    if (!stored) {
        (void)store.rollback();
        const std::string& m = stored.error().message;
        return std::unexpected(db::Error{m.starts_with(path + ": ") ? m : path + ": " + m});
    }
    return stored;
}

std::optional<SourceIdentity> allocSourceIdentity(const std::string& path) {
    auto file = RegularFile::open(path, true);
    if (!file) return std::nullopt;
    auto first = firstLine(file->fd());
    if (!first || first->empty()) return std::nullopt;
    return identityOf(path, file->st(), *first);
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
    auto f = RegularFile::open(path, !opt.follow_links);
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
    auto first = firstLine(f->fd());
    if (!first)
        return fail(
            fmt::format("the first line is longer than {} bytes: not a record file "
                        "gpufault reads",
                        alloclog::kMaxLine));
    if (first->empty()) {  // not one whole record yet
        if (opt.to_end)
            return fail(st.st_size == 0 ? std::string("empty")
                                        : "no whole record (the first line has no newline)");
        sum.unchanged = true;
        return sum;
    }
    const SourceIdentity id = identityOf(path, st, *first);
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
    sum.lines_before = state.lines;
    sum.allocations_before = state.allocations;
    if (before < size) {
        // A line `gpufault ingest` found cut short ("record cut short", stored after the
        // checkpoint) is read again now: its warning goes (also when gpufaultd reads it:
        // hostile review 155, MED 3).
        if (auto d = store.dropWarningsFrom(s->id, static_cast<int64_t>(state.lines) + 1); !d)
            return std::unexpected(d.error());
    }
    uint64_t freed = 0;
    alloclog::Log all;  // counts and the first warnings only
    std::vector<int64_t> allocPids;  // of the allocations, when no `start` record is read
    std::vector<int64_t> startPids;  // of the `start` records read, each once
    uint64_t starts = 0;
    constexpr size_t kMaxPids = 64;
    auto addOnce = [](std::vector<int64_t>& pids, int64_t pid) {
        if (pids.size() < kMaxPids && std::find(pids.begin(), pids.end(), pid) == pids.end())
            pids.push_back(pid);
    };
    auto r = feedLines(
        f->fd(), size, state, path, sum.bytes_read, [&](alloclog::Log&& log) -> db::Result<void> {
            if (opt.only_pid) onlyPid(log, *opt.only_pid);
            for (const auto& p : log.processes) state.lastStart(p);
            // read after any end stored before: a recording that ended takes no more records
            auto added = store.appendAllocations(s->id, opt.run_id, log, opt.read_after_end);
            if (!added) return std::unexpected(added.error());
            state.allocations += log.allocations.size();
            for (const auto& a : log.allocations) {
                freed += a.free_line ? 1 : 0;
                addOnce(allocPids, a.pid);
            }
            freed += static_cast<uint64_t>(added->frees);
            sum.duplicates += static_cast<uint64_t>(added->duplicates);
            sum.after_end += static_cast<uint64_t>(added->after_end);
            all.lines += log.lines;
            all.events += log.events;
            all.failed += log.failed;
            // Counted, and their pids kept once each (hostile review 155, LOW 5: 10 000
            // `start` records of one pid printed it 10 000 times).
            starts += log.processes.size();
            for (const auto& p : log.processes) addOnce(startPids, p.pid);
            for (auto& w : added->warnings)
                if (all.warnings.size() < 10) all.warnings.push_back(std::move(w));
            sum.warnings += added->warnings.size();
            return {};
        });
    if (!r) return std::unexpected(db::Error{path + ": " + r.error().message});
    if (opt.to_end && state.offset < size && state.offset > before) {
        // The last line has no newline (the writer was killed, or is still writing it).
        alloclog::Log cut;
        cut.warnings.push_back(
            {state.lines + 1, "record cut short (no newline at the end of the file)"});
        auto added = store.appendAllocations(s->id, opt.run_id, cut, opt.read_after_end);
        if (!added) return std::unexpected(db::Error{path + ": " + added.error().message});
        for (auto& w : added->warnings)
            if (all.warnings.size() < 10) all.warnings.push_back(std::move(w));
        sum.warnings += added->warnings.size();
    }
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
    warningTexts(sum, all.warnings, static_cast<size_t>(state.offset));
    sum.lines = all.lines;
    sum.events = all.events;
    sum.failed = all.failed;
    sum.processes = starts;
    sum.pids = std::move(startPids);
    if (sum.pids.empty() && state.start_pid) {  // its `start` record was read before
        sum.pids.push_back(*state.start_pid);
    } else if (sum.pids.empty() && !allocPids.empty()) {  // no `start` record stored
        sum.pids = std::move(allocPids);
        sum.pids_without_start = true;
    }
    sum.allocations = state.allocations;
    sum.freed = freed;
    sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return sum;
}

}  // namespace gpufault
