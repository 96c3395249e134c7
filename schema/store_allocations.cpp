// Store: writing the preload shim's allocations (table allocations, schema/sql/007) and their
// recording processes (alloc_processes, schema/sql/012).
#include <string>

#include "schema/store.h"

namespace gpufault {

db::Result<int64_t> Store::retireSource(int64_t source_id) {
    auto upd = db_.prepare(
        "UPDATE sources SET fingerprint = ifnull(fingerprint, '') || '#retired-' || id WHERE "
        "id=?1");
    if (!upd) return std::unexpected(upd.error());
    upd->bind(1, source_id);
    if (auto r = upd->run(); !r) return std::unexpected(r.error());
    auto n = db_.prepare("SELECT count(*) FROM allocations WHERE source_id=?1");
    if (!n) return std::unexpected(n.error());
    n->bind(1, source_id);
    auto row = n->step();
    if (!row) return std::unexpected(row.error());
    return *row ? n->i64(0) : 0;
}

db::Result<int64_t> Store::replaceAllocations(int64_t source_id,
                                              std::optional<int64_t> run_id,
                                              const alloclog::Log& log) {
    for (const char* sql : {"DELETE FROM allocations WHERE source_id=?1",
                            "DELETE FROM warnings WHERE source_id=?1"}) {
        auto del = db_.prepare(sql);
        if (!del) return std::unexpected(del.error());
        del->bind(1, source_id);
        if (auto r = del->run(); !r) return std::unexpected(r.error());
    }
    // alloc_processes rows stay (a file that grew keeps its start records; an end gpufaultd
    // noted is kept): the log's are upserted.
    return appendAllocations(source_id, run_id, log);
}

db::Result<int64_t> Store::appendAllocations(int64_t source_id,
                                             std::optional<int64_t> run_id,
                                             const alloclog::Log& log) {
    // A row an earlier generation of the same file (a retired source of the same device and
    // inode) already holds is not stored twice; without such a source, a plain insert.
    auto older = db_.prepare(
        "SELECT count(*) FROM sources me JOIN sources o ON o.id <> me.id AND o.kind = me.kind AND "
        "ifnull(o.device, -1) = ifnull(me.device, -1) AND ifnull(o.inode, -1) = ifnull(me.inode, "
        "-1) WHERE me.id = ?1");
    if (!older) return std::unexpected(older.error());
    older->bind(1, source_id);
    auto orow = older->step();
    if (!orow) return std::unexpected(orow.error());
    bool dedupe = *orow && older->i64(0) > 0;
    older->reset();
    std::string sql =
        "INSERT INTO allocations(source_id, run_id, line, pid, tid, kind, api, mem, device, ptr, "
        "end, handle, wall_us, mono_us, stack, free_line, free_api, freed_wall_us, freed_mono_us, "
        "start_line) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
        "?17, ?18, ?19, ?20)";
    if (dedupe)
        sql = sql.substr(0, sql.find("VALUES(")) +
              "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, "
              "?18, ?19, ?20 WHERE NOT EXISTS (SELECT 1 FROM sources me JOIN sources o ON o.id <> "
              "me.id AND o.kind = me.kind AND ifnull(o.device, -1) = ifnull(me.device, -1) AND "
              "ifnull(o.inode, -1) = ifnull(me.inode, -1) JOIN allocations x ON x.source_id = o.id "
              "WHERE me.id = ?1 AND x.line = ?3 AND x.pid = ?4 AND x.kind = ?6 AND x.api = ?7 AND "
              "x.ptr = ?10 AND x.end = ?11 AND x.wall_us IS ?13)";
    auto ins = db_.prepare(sql);
    if (!ins) return std::unexpected(ins.error());
    auto opt = [](const std::optional<uint64_t>& v) -> std::optional<int64_t> {
        if (!v) return std::nullopt;
        return static_cast<int64_t>(*v);
    };
    bool lineZero = false;  // allocations before any start record of their pid
    for (const auto& a : log.allocations) {
        ins->bind(1, source_id).bind(2, run_id).bind(3, static_cast<int64_t>(a.line));
        ins->bind(4, a.pid).bind(5, a.tid).bind(6, a.kind).bind(7, a.api).bind(8, a.mem);
        ins->bind(9, a.device).bind(10, static_cast<int64_t>(a.ptr));
        ins->bind(11, static_cast<int64_t>(a.end)).bind(12, opt(a.handle));
        ins->bind(13, a.wall_us).bind(14, a.mono_us);
        ins->bind(15, a.stack.empty() ? std::optional<std::string>() : a.stack);
        ins->bind(16, opt(a.free_line)).bind(17, a.free_api);
        ins->bind(18, a.freed_wall_us).bind(19, a.freed_mono_us);
        ins->bind(20, static_cast<int64_t>(a.start_line));
        lineZero = lineZero || a.start_line == 0;
        if (auto r = ins->run(); !r) return std::unexpected(r.error());
    }
    if (!log.late_frees.empty()) {
        auto upd = db_.prepare(
            "UPDATE allocations SET free_line = ?3, free_api = ?4, freed_wall_us = ?5, "
            "freed_mono_us = ?6 WHERE source_id = ?1 AND line = ?2 AND free_line IS NULL");
        if (!upd) return std::unexpected(upd.error());
        for (const auto& f : log.late_frees) {
            upd->bind(1, source_id).bind(2, static_cast<int64_t>(f.alloc_line));
            upd->bind(3, static_cast<int64_t>(f.free_line)).bind(4, f.free_api);
            upd->bind(5, f.freed_wall_us).bind(6, f.freed_mono_us);
            if (auto r = upd->run(); !r) return std::unexpected(r.error());
        }
    }
    if (!log.processes.empty()) {
        auto up = db_.prepare(
            "INSERT INTO alloc_processes(source_id, run_id, line, pid, ppid, boot_id, start_ticks, "
            "wall_us, mono_us, exe) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON "
            "CONFLICT(source_id, pid, line) DO UPDATE SET run_id = ifnull(excluded.run_id, "
            "run_id)");
        if (!up) return std::unexpected(up.error());
        for (const auto& p : log.processes) {
            up->bind(1, source_id).bind(2, run_id).bind(3, static_cast<int64_t>(p.line));
            up->bind(4, p.pid).bind(5, p.ppid).bind(6, p.boot_id).bind(7, p.start_ticks);
            up->bind(8, p.wall_us).bind(9, p.mono_us).bind(10, p.exe);
            if (auto r = up->run(); !r) return std::unexpected(r.error());
        }
    }
    if (lineZero) {  // a recording process without a start record: its first allocation's time
        auto z = db_.prepare(
            "INSERT OR IGNORE INTO alloc_processes(source_id, run_id, line, pid, wall_us, mono_us) "
            "SELECT ?1, ?2, 0, pid, min(wall_us), min(mono_us) FROM allocations WHERE "
            "source_id = ?1 AND start_line = 0 GROUP BY pid");
        if (!z) return std::unexpected(z.error());
        z->bind(1, source_id).bind(2, run_id);
        if (auto r = z->run(); !r) return std::unexpected(r.error());
    }
    for (const auto& w : log.warnings)
        if (auto r = addWarning(source_id, Warning{w.line, w.message}); !r)
            return std::unexpected(r.error());
    return static_cast<int64_t>(log.allocations.size());
}

db::Result<void> Store::markAllocProcessEnded(int64_t source_id,
                                              int64_t pid,
                                              int64_t wall_us,
                                              int64_t mono_us) {
    // The same process recorded under other sources too (earlier generations of a file cut
    // short, the file re-created): its rows have the same boot and start time.
    auto upd = db_.prepare(
        "UPDATE alloc_processes SET ended_wall_us = ?3, ended_mono_us = ?4 WHERE pid = ?2 "
        "AND ended_wall_us IS NULL AND (source_id = ?1 OR EXISTS (SELECT 1 FROM alloc_processes p "
        "WHERE p.source_id = ?1 AND p.pid = ?2 AND p.boot_id = alloc_processes.boot_id "
        "AND p.start_ticks = alloc_processes.start_ticks))");
    if (!upd) return std::unexpected(upd.error());
    upd->bind(1, source_id).bind(2, pid).bind(3, wall_us).bind(4, mono_us);
    return upd->run();
}

}  // namespace gpufault
