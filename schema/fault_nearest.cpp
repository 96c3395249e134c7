#include "schema/fault_nearest.h"

#include <algorithm>
#include <tuple>

#include "schema/distance.h"

namespace gpufault {

namespace {

/// The view's order as a tuple compared lexicographically (smaller is nearer).
using Key = std::tuple<bool, unsigned __int128, bool, int64_t, int64_t>;

struct Best {
    Key key;
    Nearest n;
};

/// distanceOrder(measureSpan(address, ptr, end).distance) without its 128-bit arithmetic:
/// the magnitude in unsigned 64 bits, refused (2^64) where the signed distance does not fit.
unsigned __int128 order(uint64_t address, uint64_t ptr, uint64_t end) {
    constexpr uint64_t kHalf = uint64_t{1} << 63;
    if (address < ptr) {
        uint64_t m = ptr - address;  // distance −m fits down to −2^63
        return m <= kHalf ? m : static_cast<unsigned __int128>(1) << 64;
    }
    if (address < end) return 0;
    uint64_t m = address - end;
    return m < kHalf ? m : static_cast<unsigned __int128>(1) << 64;
}

bool sameOrUnstated(const std::optional<int64_t>& a, const std::optional<int64_t>& b) {
    return !a || !b || *a == *b;
}

}  // namespace

bool nearerThan(const Nearest& a, const Nearest& b) {
    auto magnitude = [](const Nearest& n) -> unsigned __int128 {
        if (!n.distance) return static_cast<unsigned __int128>(1) << 64;
        return *n.distance < 0 ? static_cast<unsigned __int128>(-static_cast<__int128>(*n.distance))
                               : static_cast<unsigned __int128>(*n.distance);
    };
    return std::make_tuple(a.after, magnitude(a), !a.inside) <
           std::make_tuple(b.after, magnitude(b), !b.inside);
}

db::Result<std::map<int64_t, Nearest>> nearestOperands(db::Db& d,
                                                       const std::vector<NearestProbe>& probes) {
    std::map<int64_t, std::vector<const NearestProbe*>> bySource;
    for (const auto& p : probes) bySource[p.source_id].push_back(&p);
    auto s = d.prepare(
        "SELECT id, name, ptr, end, line, pid, rank FROM operands WHERE source_id = ?1 AND "
        "line > ?2");
    if (!s) return std::unexpected(s.error());
    std::map<int64_t, Nearest> out;
    for (const auto& [source, list] : bySource) {
        uint64_t from = list.front()->start_line;
        for (const auto* p : list) from = std::min(from, p->start_line);
        std::vector<std::optional<Best>> best(list.size());  // per probe of `list`
        s->reset();
        s->bind(1, source).bind(2, static_cast<int64_t>(from));
        for (;;) {
            auto row = s->step();
            if (!row) return std::unexpected(row.error());
            if (!*row) break;
            int64_t id = s->i64(0);
            auto ptr = static_cast<uint64_t>(s->i64(2)), end = static_cast<uint64_t>(s->i64(3));
            int64_t line = s->i64(4);
            auto pid = s->optI64(5), rank = s->optI64(6);
            for (size_t i = 0; i < list.size(); ++i) {
                const NearestProbe* p = list[i];
                if (line <= static_cast<int64_t>(p->start_line) || !sameOrUnstated(pid, p->pid) ||
                    !sameOrUnstated(rank, p->rank))
                    continue;
                bool after = line > static_cast<int64_t>(p->line);
                Key k{after,
                      order(p->address, ptr, end),
                      p->address < ptr || p->address >= end,
                      -line,
                      -id};
                if (best[i] && !(k < best[i]->key)) continue;
                Span m = measureSpan(p->address, ptr, end);
                best[i] = Best{k, Nearest{s->str(1), m.distance, m.inside, after}};
            }
        }
        for (size_t i = 0; i < list.size(); ++i)
            if (best[i]) out.emplace(list[i]->evidence_id, std::move(best[i]->n));
    }
    return out;
}

}  // namespace gpufault
