#include "ingest/stream.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpufault {

std::string sourceFingerprint(std::string_view head) {
    if (head.size() > 4096) head = head.substr(0, 4096);
    if (auto nl = head.find('\n'); nl != std::string_view::npos) head = head.substr(0, nl + 1);
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : head) h = (h ^ c) * 1099511628211ull;
    return fmt::format("{:016x}-{}", h, head.size());
}

StreamIngest::StreamIngest(Store& store,
                           const SourceState& state,
                           int window,
                           IngestSummary& summary)
    : store_(store),
      state_(state),
      pending_(state),
      sum_(summary),
      sink_(store, state.id, window, static_cast<uint64_t>(state.max_line), summary),
      pipe_(sink_),
      lineNo_(static_cast<uint64_t>(state.line)) {
    // The faults before the lines read again (a resume; a file written again after its stored
    // lines) are the previous faults of those read now: a store error shows at checkpoint().
    sink_.resumeFaults(lineNo_ + 1);
    // The dispatches held from before those lines (a thread gone idle before the re-read line).
    sink_.loadHeld(lineNo_ + 1);
    if (state.unended) {
        replaceFrom_ = lineNo_ + 1;
        replaceTo_ = static_cast<uint64_t>(std::max(state.max_line, state.line));
    }
}

void StreamIngest::replaceUnended(uint64_t through) {
    if (!replaceFrom_ || through < *replaceFrom_) return;
    // At the earlier reader's last whole line: the rest is at most its cut last line's rows
    // (max_line + 1), which this reader reads again next or, committing first, no longer
    // claims (its max_line stays at the last line it read).
    const bool all = through >= replaceTo_;
    if (auto r = store_.dropLinesFrom(state_.id,
                                      static_cast<int64_t>(*replaceFrom_),
                                      all ? INT64_MAX : static_cast<int64_t>(through));
        !r)
        error_ = r.error();
    deletedThrough_ = std::max(deletedThrough_, std::min(through, replaceTo_));
    if (all)
        replaceFrom_.reset();
    else
        replaceFrom_ = through + 1;
}

namespace {
/// How many kept lines ahead of the one being matched matchBatch() asks for a line's bytes.
/// The reading thread classified them on the other core: without the prefetch the first load
/// of each kept line waited for it (≈ 15 % of the matching thread's time on a 2 GiB
/// AMD_LOG_LEVEL=3 log; docs/performance.md, "Session 18").
constexpr size_t kPrefetchKept = 40;

/// Asks for the first 192 bytes of line `i` of `b` (a dispatch line's prefix, message and most
/// of a kernel name); the hardware prefetcher follows a longer line.
inline void prefetchLine(const LineBatch& b, size_t i) {
    const char* p = b.text() + b.lineStart(i);
    __builtin_prefetch(p);
    __builtin_prefetch(p + 64);
    __builtin_prefetch(p + 128);
}

/// The warning of a line cut at LineDecoder::kMaxLine: what was read and what was not.
std::string longLineWarning() {
    return fmt::format(
        "line longer than {} bytes: parsed and stored cut to {} bytes; a record past them is "
        "not read",
        LineDecoder::kMaxLine,
        LineDecoder::kMaxLine);
}
}  // namespace

std::vector<uint64_t> StreamIngest::unendedBefore(uint64_t line) {
    sink_.markUnended(line);
    std::vector<uint64_t> open;
    open.reserve(pipe_.matchers().size());
    unendedOpen_.reset();
    for (const auto& m : pipe_.matchers()) {
        auto o = m->openSince();
        open.push_back(o && o != m->foldedSince() ? *o : 0);  // a fold holds its first line
        if (open.back() && (!unendedOpen_ || open.back() < *unendedOpen_)) unendedOpen_ = o;
    }
    return open;
}

void StreamIngest::unendedAfter(const std::vector<uint64_t>& open) {
    for (size_t i = 0; i < open.size() && i < pipe_.matchers().size(); ++i)
        if (open[i] && pipe_.matchers()[i]->openSince() == open[i]) sink_.markUnended(open[i]);
}

void StreamIngest::feed(std::string_view line, int64_t position, bool truncated, bool unended) {
    replaceUnended(lineNo_ + 1);
    std::vector<uint64_t> open;
    if (unended) {
        unended_ = {lineNo_ + 1, position};
        sink_.uncountedFrom(lineNo_ + 1);
        open = unendedBefore(lineNo_ + 1);
    }
    ++lineNo_;
    ++uncommitted_;
    ++sum_.lines;
    positions_.add(lineNo_, position);
    if (truncated) {
        ++sum_.truncated_lines;
        sink_.markTruncated(lineNo_);
        sink_.warning(Warning{lineNo_, longLineWarning()});
    }
    pipe_.feedLine(lineNo_, line);
    if (unended) unendedAfter(open);
}

void StreamIngest::warnLast(std::string message) {
    sink_.warning(Warning{lineNo_, std::move(message)});
}

void StreamIngest::matchBatch(const LineBatch& b) {
    const uint64_t first = b.first_line;
    const size_t n = b.lines();
    if (n) replaceUnended(first + n - 1);
    std::vector<uint64_t> open;
    if (b.unended && n) {
        unended_ = {first, static_cast<int64_t>(b.offsetOf(0))};
        sink_.uncountedFrom(first);
        open = unendedBefore(first);
    }
    // Positions of the lines a matcher or a dispatch window can name (every line the decoder
    // sees) and of the batch's first line: all a checkpoint asks for.
    std::vector<std::pair<uint64_t, int64_t>> pos;
    pos.reserve(b.kept.size() + 1);
    if (n) pos.emplace_back(first, static_cast<int64_t>(b.offsetOf(0)));
    auto feedOne = [&](size_t i, bool mayCr) {
        if (i != 0) pos.emplace_back(first + i, static_cast<int64_t>(b.offsetOf(i)));
        pipe_.feedLine(first + i, b.line(i), mayCr);
    };
    size_t next = 0;
    // Lines [next, upTo) were classified Drop: only a decoder that is not quiet must see them
    // (feedLine() of a Drop line while quiet does nothing).
    auto walk = [&](size_t upTo) {
        for (; next < upTo && !pipe_.decoderQuiet(); ++next) feedOne(next, true);
        next = upTo;
    };
    const size_t nk = b.kept.size();
    for (size_t ki = 0; ki < nk; ++ki) {
        const LineBatch::Kept& k = b.kept[ki];
        if (ki + kPrefetchKept < nk) prefetchLine(b, b.kept[ki + kPrefetchKept].index);
        walk(k.index);
        if (k.truncated) {
            ++sum_.truncated_lines;
            sink_.markTruncated(first + k.index);
            sink_.warning(Warning{first + k.index, longLineWarning()});
        }
        if (k.cls == LineDecoder::Class::Fixed && pipe_.decoderQuiet()) {
            if (k.index != 0)
                pos.emplace_back(first + k.index, static_cast<int64_t>(b.offsetOf(k.index)));
            pipe_.matchFixed(first + k.index, b.line(k.index), k.fixed);
        } else {
            feedOne(k.index, k.may_cr);
        }
        next = k.index + 1;
    }
    walk(n);
    if (b.unended && n) unendedAfter(open);
    positions_.addRun(first, n, std::move(pos));
    lineNo_ += n;
    sum_.lines += n;
    uncommitted_ += n;
}

void StreamIngest::finishBatched(bool mayGrow) {
    finish(mayGrow);
}

void StreamIngest::finish(bool mayGrow) {
    if (mayGrow) {
        // As checkpoint() of a stream that goes on: old folds close first (the same records).
        if (pipe_.decoderQuiet()) pipe_.closeFolds(lineNo_ + 1);
        endResume_ = openResumeLine();
    }
    pipe_.finish();
    sink_.flushWindows();
}

uint64_t StreamIngest::openResumeLine() const {
    // Resume where the oldest unfinished block starts (it must be among the remembered line
    // positions, else the previous checkpoint stays), or earlier where a held dispatch of the
    // context window starts — its first ArgN line — or a launch still listing its ArgN lines
    // starts (both clamped to what is remembered).
    std::optional<uint64_t> open;
    for (const auto& m : pipe_.matchers())
        if (auto o = m->openSince(); o && (!open || *o < *open)) open = o;
    uint64_t resumeLine = open ? *open : lineNo_ + 1;
    std::optional<uint64_t> held = sink_.oldestHeldLine();
    for (const auto& m : pipe_.matchers())
        if (auto c = m->contextSince(); c && (!held || *c < *held)) held = c;
    if (held && *held < resumeLine)
        resumeLine = std::max(*held, positions_.oldest().value_or(*held));
    return resumeLine;
}

void StreamIngest::flushIdle() {
    pipe_.quiet();
}

db::Result<void> StreamIngest::checkpoint(int64_t end,
                                          bool complete,
                                          int64_t size,
                                          const std::function<void(SourceState&)>& adjust) {
    // Folds kFoldLines old are closed now, not at the next line matched (the same records:
    // TextPipeline::closeFolds()), so none holds the resume line below what is remembered.
    if (!complete && pipe_.decoderQuiet()) pipe_.closeFolds(lineNo_ + 1);
    sink_.flushCounts();
    if (error()) return std::unexpected(*error());
    SourceState cp = state_;
    // The last line stored: never lowered by a stream resumed before it (a copy continuing an
    // earlier checkpoint; a block held open), so re-read dispatches are not counted again.
    cp.max_line = std::max(state_.max_line, static_cast<int64_t>(lineNo_));
    cp.complete = complete;
    cp.prefix_hash.reset();  // for the new offset: only `adjust` knows it (file sources)
    cp.read_hash.reset();    // for the bytes read now: likewise
    // A stream that goes on (or ended only for now: finish(true)) resumes at its oldest
    // unfinished block or held context (openResumeLine()).
    const bool reread = !complete || endResume_;
    uint64_t resumeLine = !complete ? openResumeLine() : endResume_.value_or(lineNo_ + 1);
    // A block the cut last line may belong to is read again from its start (its record is
    // replaced then): resumed at the cut line, a continuation made a second, header-less record.
    if (reread && unended_ && unendedOpen_ && *unendedOpen_ < resumeLine &&
        positions_.at(*unendedOpen_))
        resumeLine = *unendedOpen_;
    // Not inside a fold closed already (its repeats read again would make a second record):
    // at its first line, at most two fold spans back (else the previous checkpoint stays).
    for (bool moved = reread; moved;) {
        moved = false;
        for (const auto& m : pipe_.matchers())
            if (auto f = m->closedFoldAround(resumeLine)) {
                resumeLine = *f;
                moved = true;
            }
    }
    // Rows stored from a line read before and not yet again stay replaceable.
    cp.unended = replaceFrom_.has_value();
    if (unended_) {
        // A last line without its newline: stored, but read again (from its start, or from an
        // open block's before it) by the next reader (gpufaultd, another ingest once the file
        // grew), which replaces its rows. Its dispatches were not counted
        // (StoreSink::uncountedFrom): they are counted when it is whole.
        cp.max_line = std::max(state_.max_line, static_cast<int64_t>(unended_->first - 1));
        cp.unended = true;
    }
    // What a stream that ended only for now stored from the resume line on is stored again
    // by the next reader (finish(true)): a fold's count, a completed block, a dispatch window.
    if (endResume_ && resumeLine <= lineNo_) cp.unended = true;
    if (unended_ && resumeLine >= unended_->first) {
        cp.offset = unended_->second;
        cp.line = static_cast<int64_t>(unended_->first - 1);
    } else if (resumeLine > lineNo_) {
        cp.offset = end;
        cp.line = static_cast<int64_t>(lineNo_);
    } else if (auto pos = positions_.at(resumeLine)) {
        cp.offset = *pos;
        cp.line = static_cast<int64_t>(resumeLine - 1);
    }
    // Held dispatches before the resume line are not read again: the store keeps them.
    if (!reread)
        sink_.clearHeld();
    else
        heldRows_ += sink_.persistHeld(static_cast<uint64_t>(cp.line) + 1);
    if (sink_.error()) return std::unexpected(*sink_.error());
    if (adjust) adjust(cp);
    // A compare-and-swap against the checkpoint this stream read or wrote last (this
    // transaction may hold one already: a file adopted, then its batch): another ingest of the
    // same source that committed since counted the same lines.
    if (cp.stored && pending_.stored && written_) cp.stored = pending_.stored;
    auto moved = store_.movePosition(state_.id, cp, size);
    if (!moved) return std::unexpected(moved.error());
    if (!*moved) {
        conflict_ = true;
        return std::unexpected(db::Error{kConflict});
    }
    if (cp.stored) cp.stored = StoredPosition{cp.offset, cp.line, cp.max_line};
    pending_ = cp;
    written_ = true;
    uncommitted_ = 0;
    return {};
}

}  // namespace gpufault
