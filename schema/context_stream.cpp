#include "schema/context_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "schema/query_rows.h"

namespace gpufault {

using namespace query_rows;

namespace {

constexpr int kRegionBits = 21;  // 2 MiB
/// Spans longer than a 47-bit user address space are no allocation (a probe line's
/// `ptr=0x0 end=0xffffffffffffffff`): they would place every address.
constexpr uint64_t kMaxSpan = uint64_t{1} << 47;

/// An operand as the context search needs it: one per (stream, pid, rank, run, span), its
/// latest line (a probe logging one buffer every step leaves one span).
struct Span {
    uint64_t ptr = 0, end = 0;
    int64_t source_id = 0;
    int64_t pid = INT64_MIN, rank = INT64_MIN;  ///< INT64_MIN: not stated
    uint64_t after = 0, before = UINT64_MAX;    ///< its run (pid-less streams)
    uint64_t line = 0;
    int64_t operand_id = 0;
    /// who logged it: spans of one key are one candidate
    auto key() const { return std::tie(source_id, pid, rank, after); }
};

/// Stored operands as deduplicated spans sorted by ptr.
db::Result<std::vector<Span>> loadSpans(db::Db& d) {
    auto ends = queryRunEnds(d);
    if (!ends) return std::unexpected(ends.error());
    auto s = d.prepare("SELECT ptr, end, source_id, pid, rank, line, id FROM operands");
    if (!s) return std::unexpected(s.error());
    std::vector<Span> spans;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        Span sp;
        sp.ptr = static_cast<uint64_t>(s->i64(0));
        sp.end = static_cast<uint64_t>(s->i64(1));
        if (sp.end <= sp.ptr || sp.end - sp.ptr > kMaxSpan) continue;
        sp.source_id = s->i64(2);
        sp.pid = s->optI64(3).value_or(INT64_MIN);
        sp.rank = s->optI64(4).value_or(INT64_MIN);
        sp.line = static_cast<uint64_t>(s->i64(5));
        sp.operand_id = s->i64(6);
        if (sp.pid == INT64_MIN)
            if (auto e = ends->find({sp.source_id, sp.rank}); e != ends->end()) {
                auto it = std::lower_bound(e->second.begin(), e->second.end(), sp.line);
                if (it != e->second.end()) sp.before = *it;
                if (it != e->second.begin()) sp.after = *std::prev(it);
            }
        spans.push_back(sp);
    }
    // One span per (key, ptr, end): the latest line.
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
        return std::tie(a.source_id, a.pid, a.rank, a.after, a.ptr, a.end, b.line) <
               std::tie(b.source_id, b.pid, b.rank, b.after, b.ptr, b.end, a.line);
    });
    spans.erase(std::unique(spans.begin(),
                            spans.end(),
                            [](const Span& a, const Span& b) {
                                return a.key() == b.key() && a.ptr == b.ptr && a.end == b.end;
                            }),
                spans.end());
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
        return std::tie(a.ptr, a.source_id, a.line) < std::tie(b.ptr, b.source_id, b.line);
    });
    return spans;
}

/// The best span of one candidate for one address.
struct Pick {
    const Span* span = nullptr;
    bool inside = false;
    /// the candidate's process and run (a pid-less span folded into a pid-stating candidate
    /// keeps that candidate's)
    int64_t pid = INT64_MIN;
    uint64_t after = 0, before = UINT64_MAX;
};

/// The candidates placing `p`'s address: the spans meeting its 2 MiB region, best per key
/// (holding the address, then latest line); a pid-less stream's candidate folds into a
/// pid-stating one of the same stream (the program's probe lines and HIP's lines of one
/// process); spans holding the address outrank region neighbours. Empty when none, or when the
/// fault's own stream is among them (its own process logged the buffer).
std::vector<Pick> picksFor(const ContextProbe& p,
                           const std::vector<Span>& spans,
                           const std::vector<uint64_t>& reach) {
    const uint64_t region = p.address >> kRegionBits;
    const uint64_t lo = region << kRegionBits;
    const uint64_t hi = lo + (uint64_t{1} << kRegionBits);  // 0 past the top: no limit
    auto i = static_cast<size_t>(
        hi == 0 ? spans.size()
                : std::lower_bound(spans.begin(), spans.end(), hi, [](const Span& sp, uint64_t v) {
                      return sp.ptr < v;
                  }) - spans.begin());
    const int64_t rank = p.rank.value_or(INT64_MIN);
    std::vector<Pick> picks;
    while (i > 0 && reach[i - 1] > lo) {
        const Span& sp = spans[--i];
        if (sp.end <= lo || (sp.rank != INT64_MIN && rank != INT64_MIN && sp.rank != rank))
            continue;
        const bool inside = p.address >= sp.ptr && p.address < sp.end;
        auto k = std::find_if(
            picks.begin(), picks.end(), [&](const Pick& x) { return x.span->key() == sp.key(); });
        if (k == picks.end())
            picks.push_back({&sp, inside, sp.pid, sp.after, sp.before});
        else if (std::tie(inside, sp.line) > std::tie(k->inside, k->span->line))
            *k = {&sp, inside, sp.pid, sp.after, sp.before};
    }
    // Fold pid-less picks into a pid-stating pick of their stream (keeping the better span).
    for (auto& x : picks) {
        if (x.pid != INT64_MIN) continue;
        for (auto& y : picks)
            if (y.pid != INT64_MIN && y.span->source_id == x.span->source_id) {
                if (x.inside && !y.inside) {  // its span, the pid-stating candidate's process
                    y.span = x.span;
                    y.inside = true;
                }
                x.span = nullptr;
                break;
            }
    }
    std::erase_if(picks, [](const Pick& x) { return x.span == nullptr; });
    if (std::any_of(picks.begin(), picks.end(), [](const Pick& x) { return x.inside; }))
        std::erase_if(picks, [](const Pick& x) { return !x.inside; });
    if (std::any_of(picks.begin(), picks.end(), [&](const Pick& x) {
            return x.span->source_id == p.source_id;
        }))
        picks.clear();
    return picks;
}

}  // namespace

db::Result<std::map<int64_t, ContextMatch>> queryContextStreams(
    db::Db& d, const std::vector<ContextProbe>& probes) {
    std::map<int64_t, ContextMatch> out;
    if (std::none_of(probes.begin(), probes.end(), [](const ContextProbe& p) {
            return p.address >> kRegionBits != 0;
        }))
        return out;
    auto spans = loadSpans(d);
    if (!spans) return std::unexpected(spans.error());
    if (spans->empty()) return out;
    // The largest end among the spans up to each index: the walk back from a region stops
    // where no earlier span reaches it.
    std::vector<uint64_t> reach(spans->size());
    for (size_t i = 0; i < spans->size(); ++i)
        reach[i] = std::max((*spans)[i].end, i ? reach[i - 1] : 0);
    auto name = d.prepare(
        "SELECT o.name, s.path FROM operands o JOIN sources s ON s.id = o.source_id WHERE o.id = "
        "?1");
    if (!name) return std::unexpected(name.error());
    for (const auto& p : probes) {
        if (p.address >> kRegionBits == 0) continue;
        auto picks = picksFor(p, *spans, reach);
        if (picks.empty()) continue;
        ContextMatch& m = out[p.evidence_id];
        for (const Pick& x : picks) {
            const Span& sp = *x.span;
            ContextStream c;
            c.source_id = sp.source_id;
            if (x.pid != INT64_MIN) c.pid = x.pid;
            if (sp.rank != INT64_MIN) c.rank = sp.rank;
            c.after_line = x.after;
            c.before_line = x.before;
            c.operand_line = sp.line;
            c.ptr = sp.ptr;
            c.end = sp.end;
            c.inside = x.inside;
            name->reset();
            name->bind(1, sp.operand_id);
            auto row = name->step();
            if (!row) return std::unexpected(row.error());
            if (*row) {
                c.operand = name->str(0);
                c.source = name->str(1);
            }
            m.candidates.push_back(std::move(c));
        }
        std::sort(m.candidates.begin(), m.candidates.end(), [](const auto& a, const auto& b) {
            return std::tie(a.source, a.pid, a.rank, a.after_line) <
                   std::tie(b.source, b.pid, b.rank, b.after_line);
        });
    }
    return out;
}

namespace {
/// One process and run of one stream.
bool sameProcess(const ContextStream& a, const ContextStream& b) {
    return std::tie(a.source_id, a.pid, a.rank, a.after_line) ==
           std::tie(b.source_id, b.pid, b.rank, b.after_line);
}
}  // namespace

db::Result<RunEnds> queryRunEnds(db::Db& d) {
    auto s = d.prepare(
        "SELECT source_id, rank, line FROM evidence WHERE kind = 'rocr_memory_fault' AND pid IS "
        "NULL ORDER BY source_id, line");
    if (!s) return std::unexpected(s.error());
    RunEnds out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out[{s->i64(0), s->optI64(1).value_or(INT64_MIN)}].push_back(
            static_cast<uint64_t>(s->i64(2)));
    }
    return out;
}

uint64_t runStart(const RunEnds& ends,
                  int64_t source_id,
                  std::optional<int64_t> rank,
                  uint64_t line) {
    auto e = ends.find({source_id, rank.value_or(INT64_MIN)});
    if (e == ends.end()) return 0;
    auto it = std::lower_bound(e->second.begin(), e->second.end(), line);
    return it == e->second.begin() ? 0 : *std::prev(it);
}

db::Result<std::optional<ContextProbe>> contextProbeOf(db::Db& d, int64_t evidence_id) {
    auto s = d.prepare("SELECT source_id, address, rank FROM evidence WHERE id = ?1");
    if (!s) return std::unexpected(s.error());
    s->bind(1, evidence_id);
    auto row = s->step();
    if (!row) return std::unexpected(row.error());
    if (!*row || s->isNull(1)) return std::optional<ContextProbe>();
    return std::optional<ContextProbe>(
        ContextProbe{evidence_id, s->i64(0), static_cast<uint64_t>(s->i64(1)), s->optI64(2)});
}

namespace {
/// SQL: the context's rows of a table (alias `a`): its stream, process, rank and run.
std::string contextRows(const char* a) {
    return fmt::format(
        "{0}.source_id = ?1 AND {0}.line > ?2 AND {0}.line < ?3 AND (?4 IS NULL OR {0}.pid IS "
        "NULL OR {0}.pid = ?4) AND (?5 IS NULL OR {0}.rank IS NULL OR {0}.rank = ?5)",
        a);
}

void bindContext(db::Stmt& s, const ContextStream& c) {
    s.bind(1, c.source_id)
        .bind(2, c.after_line)
        .bind(3, static_cast<int64_t>(std::min<uint64_t>(c.before_line, INT64_MAX)))
        .bind(4, c.pid)
        .bind(5, c.rank);
}
}  // namespace

db::Result<std::vector<DispatchRow>> queryContextDispatches(db::Db& d,
                                                            const ContextStream& c,
                                                            int limit) {
    auto s = d.prepare(fmt::format(
        "SELECT x.id, s.path, x.line, x.runtime_us, x.pid, x.runtime_tid, k.name, x.rank FROM "
        "dispatches x JOIN sources s ON s.id = x.source_id JOIN kernels k ON k.id = x.kernel_id "
        "WHERE {} ORDER BY x.line DESC LIMIT ?6",
        contextRows("x")));
    if (!s) return std::unexpected(s.error());
    bindContext(*s, c);
    s->bind(6, static_cast<int64_t>(limit));
    return collect<DispatchRow>(*s, readDispatch);
}

db::Result<void> forEachContextOperand(db::Db& d,
                                       const ContextStream& c,
                                       const std::function<void(OperandRow&&)>& f) {
    auto s = d.prepare(fmt::format("SELECT {} FROM operands o {} WHERE {} ORDER BY o.line, o.id",
                                   kOperandColumns,
                                   kOperandJoins,
                                   contextRows("o")));
    if (!s) return std::unexpected(s.error());
    bindContext(*s, c);
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) return {};
        f(readOperand(*s, 0));
    }
}

db::Result<std::map<int64_t, ContextMatch>> queryIncidentContext(db::Db& d, int64_t incident) {
    auto s = d.prepare(
        "SELECT e.id, e.source_id, e.address, e.rank FROM incident_evidence m JOIN evidence e ON "
        "e.id = m.evidence_id WHERE m.incident_id = ?1 AND m.role = 'member' AND e.address IS "
        "NOT NULL ORDER BY e.id");
    if (!s) return std::unexpected(s.error());
    s->bind(1, incident);
    auto probes = collect<ContextProbe>(*s, [](const db::Stmt& st) {
        return ContextProbe{st.i64(0), st.i64(1), static_cast<uint64_t>(st.i64(2)), st.optI64(3)};
    });
    if (!probes) return std::unexpected(probes.error());
    return queryContextStreams(d, *probes);
}

std::optional<ContextStream> incidentContext(const std::map<int64_t, ContextMatch>& matches,
                                             std::optional<int64_t> primary,
                                             std::map<int64_t, ContextStream>& chosen) {
    chosen.clear();
    for (const auto& [ev, m] : matches) {
        const ContextStream* c = m.chosen();
        if (!c || (!chosen.empty() && !sameProcess(chosen.begin()->second, *c))) {
            chosen.clear();
            return std::nullopt;
        }
        chosen.emplace(ev, *c);
    }
    if (chosen.empty()) return std::nullopt;
    auto p = primary ? chosen.find(*primary) : chosen.end();
    return (p != chosen.end() ? p : chosen.begin())->second;
}

}  // namespace gpufault
