#include "ingest/store_sink.h"

#include <fmt/format.h>

#include <algorithm>

#include "collectors/common/demangle.h"

namespace gpufault {

StoreSink::StoreSink(
    Store& store, int64_t source_id, int window, uint64_t count_after_line, IngestSummary& summary)
    : store_(store),
      source_(source_id),
      window_(static_cast<size_t>(window > 0 ? window : 1)),
      countAfter_(count_after_line),
      sum_(summary) {}

void StoreSink::markTruncated(uint64_t line) {
    truncated_.push_back(line);
    if (truncated_.size() > 64) truncated_.pop_front();
}

void StoreSink::evidence(Evidence&& e) {
    if (std::find(truncated_.begin(), truncated_.end(), e.line) != truncated_.end())
        e.setAttr("truncated", "1");
    if (opensIncident(e.kind)) {
        // The context of a fault: the dispatch windows of its process (all threads of the
        // stream when the record names no process).
        for (auto& [key, w] : windows_)
            if (!e.pid || key.first < 0 || key.first == *e.pid) flushWindow(w, e.line);
    }
    auto r = store_.addEvidence(source_, e);
    check(r);
    if (r && store_.db().changes() > 0) ++sum_.evidence[std::string(kindName(e.kind))];
}

void StoreSink::dispatch(Dispatch&& d) {
    const int64_t pid = d.pid.value_or(-1);
    if (d.line > countAfter_) {
        auto it = counts_.find(KeyView{pid, d.kernel});
        if (it == counts_.end()) it = counts_.try_emplace({pid, d.kernel}).first;
        Count& c = it->second;
        if (c.n++ == 0) c.first = d.line;
        c.last = d.line;
        ++sum_.dispatches;
    }
    auto wit = windows_.find(KeyView{pid, d.runtime_tid});
    if (wit == windows_.end()) wit = windows_.try_emplace({pid, d.runtime_tid}).first;
    auto& w = wit->second;
    w.push_back(Held{std::move(d), false});
    // Slack beyond the window: a record that spans lines is emitted when its block ends.
    if (w.size() > window_ + kSlack) w.pop_front();
    if (windows_.size() > kMaxThreads) windows_.erase(windows_.begin());  // bound memory
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
        if (!w.empty() && (!oldest || w.front().d.line < *oldest)) oldest = w.front().d.line;
    return oldest;
}

void StoreSink::flushWindow(std::deque<Held>& w, uint64_t before) {
    size_t end = 0;
    while (end < w.size() && w[end].d.line < before) ++end;
    size_t begin = end > window_ ? end - window_ : 0;
    for (size_t i = begin; i < end; ++i) {
        auto& h = w[i];
        if (h.stored) continue;
        h.stored = true;
        auto id = store_.addDispatch(source_, h.d);
        check(id);
        if (!id) return;
        ++sum_.dispatch_rows;
        for (const auto& a : h.d.args) {
            if (!a.obj_lo || !a.obj_hi || *a.obj_hi <= *a.obj_lo) continue;
            Operand o;
            o.line = h.d.line;
            o.time = h.d.time;
            o.pid = h.d.pid;
            // The parameter name when HIP logged one: `dst (arg2 of scatter_rows)`.
            std::string where =
                fmt::format("arg{} of {}", a.index, shortKernelName(h.d.kernel, 48));
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
    for (auto& [key, c] : counts_) {
        std::optional<int64_t> pid =
            key.first < 0 ? std::nullopt : std::optional<int64_t>(key.first);
        check(store_.addDispatchCount(source_,
                                      pid,
                                      key.second,
                                      c.n,
                                      static_cast<int64_t>(c.first),
                                      static_cast<int64_t>(c.last)));
    }
    counts_.clear();
}

void StoreSink::flushWindows() {
    for (auto& [key, w] : windows_) flushWindow(w, UINT64_MAX);
}

}  // namespace gpufault
