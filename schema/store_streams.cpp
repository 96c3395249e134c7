// Store: sources that are never resumed (each `gpufault ingest -` is a stream of its own).
#include <fmt/format.h>

#include "schema/streams.h"

namespace gpufault {

db::Result<SourceState> newStream(db::Db& db, SourceIdentity& id) {
    // Numbered after the streams of this kind the store holds; a number taken already (by a
    // concurrent ingest, or left free by retention below a higher one) is skipped: its
    // fingerprint `#N` is taken, the unique identity index refuses it (INSERT OR IGNORE
    // changes nothing).
    auto count = db.prepare("SELECT count(*) FROM sources WHERE kind=?1");
    if (!count) return std::unexpected(count.error());
    count->bind(1, id.kind);
    auto row = count->step();
    if (!row) return std::unexpected(row.error());
    int64_t n = *row ? count->i64(0) : 0;
    count->reset();
    const std::string base = id.path;
    auto ins = db.prepare(
        "INSERT OR IGNORE INTO sources(path, kind, device, inode, fingerprint, ingested_at) "
        "VALUES(?1, ?2, NULL, NULL, ?3, strftime('%Y-%m-%dT%H:%M:%SZ','now'))");
    if (!ins) return std::unexpected(ins.error());
    for (;;) {
        ++n;
        id.path = fmt::format("{}#{}", base, n);
        id.fingerprint = fmt::format("#{}", n);
        ins->bind(1, id.path).bind(2, id.kind).bind(3, id.fingerprint);
        if (auto r = ins->run(); !r) return std::unexpected(r.error());
        if (db.changes() != 0) break;
    }
    return SourceState{
        db.lastInsertId(), 0, 0, 0, false, std::nullopt, 0, std::nullopt, {}, StoredPosition{}};
}

}  // namespace gpufault
