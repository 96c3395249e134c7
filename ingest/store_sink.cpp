#include "ingest/store_sink.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "collectors/common/demangle.h"
#include "collectors/common/dispatch_args.h"
#include "collectors/common/same_bytes.h"
#include "schema/fault_lines.h"

namespace gpufault {

bool floodFaultKind(Kind k) {
    return k == Kind::RocrMemoryFault || k == Kind::NvidiaXid || k == Kind::CpuSegfault;
}

StoreSink::StoreSink(Store& store,
                     int64_t source_id,
                     int window,
                     uint64_t count_after_line,
                     IngestSummary& summary,
                     FloodRule flood)
    : store_(store),
      source_(source_id),
      window_(static_cast<size_t>(window > 0 ? window : 1)),
      countAfter_(count_after_line),
      sum_(summary),
      flood_(flood) {
    flood_.window = std::min(flood_.window, window_);
}

void StoreSink::markTruncated(uint64_t line) {
    truncated_.push_back(line);
    if (truncated_.size() > 64) truncated_.pop_front();
}

void StoreSink::evidence(Evidence&& e) {
    if (std::find(truncated_.begin(), truncated_.end(), e.line) != truncated_.end())
        e.setAttr("truncated", "1");
    if (std::find(unended_.begin(), unended_.end(), e.line) != unended_.end())
        e.setAttr("unended", "1");
    flushFor(e.kind, e.pid, e.rank, e.line);
    if (heldBefore(e)) {  // stored from the file's earlier content (hostile 17, i3 H1)
        ++sum_.repeated;
        return;
    }
    auto r = store_.addEvidence(source_, e);
    check(r);
    if (r && store_.db().changes() > 0)
        ++sum_.evidence[std::string(kindName(e.kind))];
    else if (r && e.count > 1)
        check(store_.raiseCount(source_, e));  // a fold published before (Folder::publish())
}

namespace {
/// FNV-1a of a record's kind and its raw text as stored (the first 4 KiB).
uint64_t contentKey(std::string_view kind, std::string_view raw) {
    uint64_t h = 1469598103934665603ull;
    auto add = [&](std::string_view s) {
        for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
        h = (h ^ 0xff) * 1099511628211ull;
    };
    add(kind);
    add(raw.substr(0, 4096));
    return h;
}
}  // namespace

bool StoreSink::heldBefore(const Evidence& e) {
    // A kernel message's text carries its time (`[ 4778.915423]`, a journal stamp): the same
    // text in the same file's earlier content is the same message, dumped again. Only kernel
    // records (isKernelSide, less cores): a runtime line (even journald-stamped) may repeat as
    // a new fault, and folds.
    static constexpr Kind kKernel[] = {
        Kind::AmdgpuPageFault, Kind::NvidiaXid, Kind::CpuSegfault, Kind::GpuReset};
    if (std::find(std::begin(kKernel), std::end(kKernel), e.kind) == std::end(kKernel))
        return false;
    if (!e.time.kernel_s && !e.time.wall) return false;
    auto lastLine = [](std::string_view raw) {
        raw = raw.substr(0, 4096);
        return raw.substr(raw.rfind('\n') == std::string_view::npos ? 0 : raw.rfind('\n') + 1);
    };
    if (!earlier_) {
        earlier_.emplace();
        std::string kinds = "[";
        for (Kind k : kKernel)
            kinds += fmt::format("{}\"{}\"", kinds.size() > 1 ? "," : "", kindName(k));
        auto rows = store_.earlierContentRecords(source_, kinds + "]");
        if (!rows) {
            check(db::Result<void>(std::unexpected(rows.error())));
            return false;
        }
        for (auto& [kind, raw] : *rows) {
            ++earlier_->whole[contentKey(kind, raw)];
            earlier_->byLastLine[contentKey(kind, lastLine(raw))].push_back(std::move(raw));
        }
    }
    if (earlier_->whole.empty()) return false;
    const std::string_view kind = kindName(e.kind);
    if (auto it = earlier_->whole.find(contentKey(kind, e.raw));
        it != earlier_->whole.end() && it->second > 0) {
        --it->second;
        return true;
    }
    // The first lines of a block gone with the ring's wrap: its stamped lines are the end of a
    // stored block's (hostile review 17 again, i2 H1).
    std::string_view raw = std::string_view(e.raw).substr(0, 4096);
    if (auto it = earlier_->byLastLine.find(contentKey(kind, lastLine(raw)));
        it != earlier_->byLastLine.end())
        for (const auto& old : it->second)
            if (old.size() > raw.size() && old.ends_with(raw) &&
                old[old.size() - raw.size() - 1] == '\n')
                return true;
    return false;
}

void StoreSink::context(const Evidence& e) {
    if (!floodFaultKind(e.kind)) flushFor(e.kind, e.pid, e.rank, e.line);
}

void StoreSink::flushFor(Kind kind,
                         std::optional<int64_t> pid,
                         std::optional<int64_t> rank,
                         uint64_t line) {
    if (!opensIncident(kind)) return;
    // The context of a fault: the dispatch windows of its process and rank (all threads of the
    // stream when the record names neither); short ones in a flood (FloodRule), which only the
    // memory faults of floodFaultKind() make and take part in.
    const bool floods = floodFaultKind(kind);
    for (auto& [key, w] : windows_) {
        if (pid && key.pid >= 0 && key.pid != *pid) continue;
        if (rank && key.rank >= 0 && key.rank != *rank) continue;
        std::optional<uint64_t> last = floods ? lastFaultFor(key.pid, key.rank) : std::nullopt;
        bool flood = last && line < *last + flood_.lines;
        flushWindow(w, line, flood ? flood_.window : window_);
    }
    if (floods) noteFault(pid, rank, line);
}

size_t StoreSink::NameHash::operator()(std::string_view s) const {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    const char* p = s.data();
    size_t n = s.size();
    auto mix = [&h](uint64_t w) {
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    };
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        mix(w);
    }
    if (n > 0) {
        uint64_t w = 0;
        std::memcpy(&w, p, n);
        mix(w);
    }
    return static_cast<size_t>(h * 0x94D049BB133111EBull);
}

StoreSink::Window* StoreSink::windowOf(int64_t pid, int64_t rank, std::string_view tid) {
    const uint64_t k = static_cast<uint64_t>(pid) ^ (static_cast<uint64_t>(rank) << 32);
    RecentWindow& r = recentWindows_[shortKeyHash(static_cast<int64_t>(k), tid) >> 58];
    if (r.window && r.pid == pid && r.rank == rank && sameBytes(r.tid, tid)) return r.window;
    auto wit = windows_.find(KeyView{pid, rank, tid});
    if (wit == windows_.end()) {
        wit = windows_.try_emplace(ThreadKey{pid, rank, std::string(tid)}).first;
        if (windows_.size() > kMaxThreads) {  // bound memory: the first key goes
            bool self = windows_.begin() == wit;
            forgetPersisted(windows_.begin()->second);
            windows_.erase(windows_.begin());
            for (RecentWindow& e : recentWindows_) e.window = nullptr;
            if (self) return nullptr;
        }
    }
    r.pid = pid;
    r.rank = rank;
    r.tid.assign(tid);
    r.window = &wit->second;
    return r.window;
}

StoreSink::RecentKernel StoreSink::countsOf(std::string_view kernel) {
    for (const RecentKernel& r : recentKernels_)
        if (r.name && r.name->size() == kernel.size() &&
            std::memcmp(r.name->data(), kernel.data(), kernel.size()) == 0)
            return r;
    auto it = counts_.find(kernel);
    if (it == counts_.end()) it = counts_.try_emplace(std::string(kernel)).first;
    RecentKernel r{&it->first, &it->second};
    recentKernels_[nextRecentKernel_++ % recentKernels_.size()] = r;
    return r;
}

void StoreSink::dispatch(Dispatch&& d) {
    const int64_t pid = d.pid.value_or(-1);
    if (d.line > countAfter_ && d.line < countBefore_) {
        const RecentKernel k = countsOf(d.kernel);
        std::vector<Count>& per = *k.per;
        size_t i = 0;
        while (i < per.size() && per[i].pid != pid) ++i;
        if (i == per.size()) per.push_back(Count{pid, 0, 0, 0});
        Count& c = per[i];
        if (c.n++ == 0) {
            c.first = d.line;
            pending_.push_back(Pending{pid, k.name, &per, i});
        }
        c.last = d.line;
        ++sum_.dispatches;
    }
    Window* wp = windowOf(pid, d.rank.value_or(-1), d.runtime_tid);
    if (!wp) {  // a new window that went at once (more than kMaxThreads held)
        d.args.clear();
        d.pending_args.clear();
        return;
    }
    Window& w = *wp;
    if (d.line <= w.loadedThrough) {  // loaded whole by loadHeld()
        d.args.clear();
        d.pending_args.clear();
        return;
    }
    Held* h = &nextSlot(w);
    h->d.line = d.line;
    h->d.context_line = d.context_line != 0 ? d.context_line : d.line;
    h->d.time = d.time;
    h->d.pid = d.pid;
    h->d.rank = d.rank;
    // The slots of a window hold its thread's tid once filled.
    if (!sameBytes(h->d.runtime_tid, d.runtime_tid)) h->d.runtime_tid.assign(d.runtime_tid);
    // Swapped, not copied: the slot's old name and vectors (their capacity) go back to the
    // producer, which sets them anew.
    h->d.kernel.swap(d.kernel);
    h->d.args.swap(d.args);
    d.args.clear();
    h->d.pending_args.swap(d.pending_args);  // parsed only if the window is flushed
    d.pending_args.clear();
}

StoreSink::Held& StoreSink::nextSlot(Window& w) {
    Held* h;
    if (w.slots.size() < window_ + kSlack) {
        if (w.slots.empty()) w.slots.reserve(std::min<size_t>(window_ + kSlack, 256));
        h = &w.slots.emplace_back();
    } else {  // the oldest slot is overwritten (slack beyond the window: a record that spans
              // lines is emitted when its block ends)
        h = &w.slots[w.head];
        w.head = (w.head + 1) % w.slots.size();
        if (h->persisted) check(store_.removeHeldDispatch(source_, h->d.line));
    }
    h->stored = false;
    h->persisted = false;
    return *h;
}

void StoreSink::forgetPersisted(Window& w) {
    for (Held& h : w.slots)
        if (h.persisted) check(store_.removeHeldDispatch(source_, h.d.line));
}

void StoreSink::loadHeld(uint64_t first_line) {
    auto rows = store_.heldDispatches(source_, first_line);
    if (!rows) {
        check(rows);
        return;
    }
    staleHeldFrom_ = first_line;
    for (HeldDispatch& r : *rows) {
        Window* w = windowOf(r.d.pid.value_or(-1), r.d.rank.value_or(-1), r.d.runtime_tid);
        if (!w) continue;  // as dispatch(): more threads than kMaxThreads
        Held& h = nextSlot(*w);
        const uint64_t line = r.d.line;
        h.d = std::move(r.d);
        h.stored = r.stored;
        h.persisted = true;
        w->loadedThrough = std::max(w->loadedThrough, line);
    }
}

size_t StoreSink::persistHeld(uint64_t first_line) {
    if (staleHeldFrom_) {
        check(store_.removeHeldDispatchesFrom(source_, *staleHeldFrom_));
        staleHeldFrom_.reset();
    }
    size_t written = 0;
    for (auto& [key, w] : windows_)
        for (Held& h : w.slots) {
            if (h.persisted || h.d.context_line >= first_line) continue;
            resolveArgs(h.d);  // the row keeps parsed arguments
            auto r = store_.putHeldDispatch(source_, h.d, h.stored);
            check(r);
            if (!r) return written;
            h.persisted = true;
            ++written;
        }
    return written;
}

void StoreSink::clearHeld() {
    staleHeldFrom_.reset();
    check(store_.removeHeldDispatchesFrom(source_, 0));
    for (auto& [key, w] : windows_)
        for (Held& h : w.slots) h.persisted = false;
}

void StoreSink::operand(Operand&& o) {
    if (o.origin == "hip_arg") return;  // kept with its dispatch (see flushWindow)
    auto r = store_.addOperand(source_, o, std::nullopt);
    check(r);
    if (r && store_.db().changes() > 0) ++sum_.operands;
}

void StoreSink::warning(Warning&& w) {
    auto r = store_.addWarning(source_, w);
    check(r);
    ++sum_.warnings;
}

std::optional<uint64_t> StoreSink::oldestHeldLine() const {
    std::optional<uint64_t> oldest;
    for (const auto& [key, w] : windows_)
        if (w.size() > 0 && (!oldest || w.front().d.context_line < *oldest))
            oldest = w.front().d.context_line;
    return oldest;
}

std::optional<uint64_t> StoreSink::LastFaults::lastFor(int64_t pid) const {
    if (pid < 0) return any;
    std::optional<uint64_t> last = noPid;
    if (auto it = byPid.find(pid); it != byPid.end()) last = std::max(last.value_or(0), it->second);
    return last;
}

void StoreSink::LastFaults::note(std::optional<int64_t> pid, uint64_t line, uint64_t horizon) {
    any = std::max(any.value_or(0), line);
    if (!pid) {
        noPid = std::max(noPid.value_or(0), line);
        return;
    }
    uint64_t& last = byPid[*pid];
    last = std::max(last, line);
    if (byPid.size() <= pruneAt) return;
    if (*any > horizon)
        std::erase_if(byPid, [&](const auto& kv) { return kv.second < *any - horizon; });
    pruneAt = std::max<size_t>(1024, 2 * byPid.size());
}

std::optional<uint64_t> StoreSink::lastFaultFor(int64_t pid, int64_t rank) const {
    if (rank < 0) return faults_.lastFor(pid);  // every fault flushes a window stating no rank
    // A window of rank R: the faults stating no rank, and those of R.
    std::optional<uint64_t> last = noRankFaults_.lastFor(pid);
    if (auto it = rankFaults_.find(rank); it != rankFaults_.end())
        if (auto l = it->second.lastFor(pid)) last = std::max(last.value_or(0), *l);
    return last;
}

void StoreSink::noteFault(std::optional<int64_t> pid, std::optional<int64_t> rank, uint64_t line) {
    // Bound memory: a pid or rank whose last fault is more than the flood span before any
    // record still to come (one emitted late included) decides nothing more.
    const uint64_t horizon = flood_.lines + kLateLines;
    faults_.note(pid, line, horizon);
    if (!rank) return noRankFaults_.note(pid, line, horizon);
    rankFaults_[*rank].note(pid, line, horizon);
    if (rankFaults_.size() <= rankPruneAt_) return;
    if (*faults_.any > horizon)
        std::erase_if(rankFaults_,
                      [&](const auto& kv) { return *kv.second.any < *faults_.any - horizon; });
    rankPruneAt_ = std::max<size_t>(64, 2 * rankFaults_.size());
}

void StoreSink::resumeFaults(uint64_t first_line) {
    if (first_line <= 1 || flood_.lines == 0) return;
    // Kinds by name, for the store's index (source_id, kind, line): the flood rule's
    // (floodFaultKind(); Kind's values run from 0; kindName() names the first one past the end
    // "unknown").
    std::vector<std::string_view> kinds;
    for (int i = 0;; ++i) {
        auto k = static_cast<Kind>(i);
        if (kindName(k) == "unknown") break;
        if (floodFaultKind(k)) kinds.push_back(kindName(k));
    }
    // A fault at or before first_line - 1 - lines cannot make one at first_line or later a
    // flood's.
    const uint64_t through = first_line - 1;
    const uint64_t after = through > flood_.lines ? through - flood_.lines : 0;
    auto rows = lastFaultLines(
        store_.db(), source_, static_cast<int64_t>(after), static_cast<int64_t>(through), kinds);
    if (!rows) {
        check(rows);
        return;
    }
    for (const LastFaultLine& r : *rows) noteFault(r.pid, r.rank, static_cast<uint64_t>(r.line));
}

const std::string& StoreSink::shortName(const std::string& kernel) {
    if (kernel.size() > kMaxShortNameKey) return shortScratch_ = shortKernelName(kernel, 48);
    if (auto it = shortNames_.find(kernel); it != shortNames_.end()) return it->second;
    if (shortNames_.size() >= kMaxShortNames) shortNames_.clear();
    return shortNames_.emplace(kernel, shortKernelName(kernel, 48)).first->second;
}

void StoreSink::flushWindow(Window& w, uint64_t before, size_t n) {
    size_t end = 0;
    while (end < w.size() && w.at(end).d.line < before) ++end;
    size_t begin = end > n ? end - n : 0;
    for (size_t i = begin; i < end; ++i) {
        auto& h = w.at(i);
        if (h.stored) continue;
        h.stored = true;
        if (h.persisted) check(store_.setHeldDispatchStored(source_, h.d.line));
        auto id = store_.addDispatch(source_, h.d);
        check(id);
        if (!id) return;
        ++sum_.dispatch_rows;
        resolveArgs(h.d);
        for (const auto& a : h.d.args) {
            const ObjRange range = objRange(a);
            if (range == ObjRange::Inverted || range == ObjRange::Wide ||
                range == ObjRange::Huge) {
                warning({h.d.line,
                         fmt::format("Arg{} of {} (dispatch at line {}): its obj:[lo-hi] {}: "
                                     "no operand stored",
                                     a.index,
                                     shortName(h.d.kernel),
                                     h.d.line,
                                     range == ObjRange::Wide ? "has a bound wider than 64 bits"
                                     : range == ObjRange::Huge
                                         ? "spans more than 2^48 bytes (no allocation is that "
                                           "large)"
                                         : "ends below its start (wraps around 2^64)")});
                continue;
            }
            if (range != ObjRange::Ok) continue;
            Operand o;
            o.line = h.d.line;
            o.time = h.d.time;
            o.pid = h.d.pid;
            o.rank = h.d.rank;
            // The parameter name when HIP logged one: `dst (arg2 of scatter_rows)`.
            std::string where = fmt::format("arg{} of {}", a.index, shortName(h.d.kernel));
            o.name = a.name.empty() ? where : fmt::format("{} ({})", a.name, where);
            o.ptr = *a.obj_lo;
            o.end = *a.obj_hi;
            o.arg_ptr = a.ptr;
            o.origin = "hip_arg";
            auto r = store_.addOperand(source_, o, *id);
            check(r);
            if (r && store_.db().changes() > 0) ++sum_.operands;
        }
    }
}

void StoreSink::flushCounts() {
    // In (process, kernel name) order, as the rows were always written.
    std::sort(pending_.begin(), pending_.end(), [](const Pending& a, const Pending& b) {
        return a.pid != b.pid ? a.pid < b.pid : *a.name < *b.name;
    });
    for (const Pending& p : pending_) {
        Count& c = (*p.per)[p.i];
        std::optional<int64_t> pid = p.pid < 0 ? std::nullopt : std::optional<int64_t>(p.pid);
        check(store_.addDispatchCount(source_,
                                      pid,
                                      *p.name,
                                      c.n,
                                      static_cast<int64_t>(c.first),
                                      static_cast<int64_t>(c.last)));
        c.n = 0;
    }
    pending_.clear();
    if (counts_.size() > kMaxKernels) {  // bound memory (all counts are 0 now)
        counts_.clear();
        recentKernels_ = {};
    }
}

void StoreSink::flushWindows() {
    for (auto& [key, w] : windows_) flushWindow(w, UINT64_MAX, window_);
}

}  // namespace gpufault
