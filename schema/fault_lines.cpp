#include "schema/fault_lines.h"

#include <algorithm>
#include <map>

namespace gpufault {

db::Result<std::vector<LastFaultLine>> lastFaultLines(db::Db& d,
                                                      int64_t source_id,
                                                      int64_t after,
                                                      int64_t through,
                                                      std::span<const std::string_view> kinds) {
    // One kind at a time: a range of the evidence_identity index (source_id, kind, line, ...).
    auto s = d.prepare(
        "SELECT pid, rank, max(line) FROM evidence WHERE source_id = ?1 AND kind = ?2 AND line > "
        "?3 AND line <= ?4 GROUP BY pid, rank");
    if (!s) return std::unexpected(s.error());
    std::map<std::pair<std::optional<int64_t>, std::optional<int64_t>>, int64_t> last;
    for (std::string_view kind : kinds) {
        s->bind(1, source_id).bind(2, kind).bind(3, after).bind(4, through);
        for (;;) {
            auto row = s->step();
            if (!row) {
                s->reset();
                return std::unexpected(row.error());
            }
            if (!*row) break;
            int64_t& line = last[{s->optI64(0), s->optI64(1)}];
            line = std::max(line, s->i64(2));
        }
        s->reset();
    }
    std::vector<LastFaultLine> out;
    out.reserve(last.size());
    for (const auto& [key, line] : last) out.push_back(LastFaultLine{key.first, key.second, line});
    return out;
}

}  // namespace gpufault
