// Store: writing cores (tables of schema/sql/005_cores.sql).
#include <fmt/format.h>

#include "schema/store.h"

namespace gpufault {

db::Result<std::optional<int64_t>> Store::evidenceIdOf(int64_t source_id, Kind kind) {
    // INDEXED BY: left to itself, SQLite answers min(id) by walking evidence_kind (kind, id)
    // until a row of this source turns up: every coredump record of the store for the newest
    // source, so ingesting N crashes was O(N^2). The identity index goes straight to the source.
    auto sel = db_.prepare(
        "SELECT min(id) FROM evidence INDEXED BY evidence_identity WHERE source_id=?1 AND "
        "kind=?2");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, source_id).bind(2, kindName(kind));
    auto row = sel->step();
    if (!row) return std::unexpected(row.error());
    return *row ? sel->optI64(0) : std::nullopt;
}

db::Result<void> Store::dropCoreOf(int64_t source_id) {
    return dropSourceRows(source_id, false);
}

db::Result<std::optional<std::string>> Store::coreNoteOf(int64_t source_id) {
    auto sel = db_.prepare("SELECT note FROM cores WHERE source_id=?1");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, source_id);
    auto row = sel->step();
    if (!row) return std::unexpected(row.error());
    return *row ? sel->optStr(0) : std::nullopt;
}

db::Result<int64_t> Store::addCore(int64_t source_id,
                                   const CoreRecord& c,
                                   std::optional<int64_t> evidence_id) {
    auto sel = db_.prepare("SELECT id FROM cores WHERE source_id=?1");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, source_id);
    auto found = sel->step();
    if (!found) return std::unexpected(found.error());
    if (*found) return sel->i64(0);
    auto ins = db_.prepare(
        "INSERT INTO cores(source_id, evidence_id, kind, path, size, time, time_from, pid, tid, "
        "process, uid, signal, si_code, si_addr, e_machine, signature, signature_frames, "
        "threads_truncated, modules_missing, runtimes, meta, seconds, origin, note, exe, "
        "content_fingerprint) VALUES(?1, "
        "?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
        "?21, ?22, ?23, ?24, ?25, ?26)");
    if (!ins) return std::unexpected(ins.error());
    ins->bind(1, source_id).bind(2, evidence_id).bind(3, c.kind).bind(4, c.path).bind(5, c.size);
    ins->bind(6, c.time).bind(7, c.time_from).bind(8, c.pid).bind(9, c.tid).bind(10, c.process);
    ins->bind(11, c.uid).bind(12, c.signal).bind(13, c.si_code).bind(14, c.signal_addr);
    ins->bind(15, c.e_machine).bind(16, c.signature).bind(17, c.signature_frames);
    ins->bind(18, static_cast<int64_t>(c.threads_truncated)).bind(19, c.modules_missing);
    ins->bind(20, c.runtimes).bind(21, c.meta).bind(22, c.seconds).bind(23, c.origin);
    ins->bind(24, c.note).bind(25, c.exe).bind(26, c.content_fingerprint);
    if (auto r = ins->run(); !r) return std::unexpected(r.error());
    int64_t core = db_.lastInsertId();

    auto thr = db_.prepare(
        "INSERT INTO threads(core_id, tid, crashed, frames_truncated, unwind_error) "
        "VALUES(?1, ?2, ?3, ?4, ?5)");
    auto frm = db_.prepare(
        "INSERT INTO frames(thread_id, n, pc, module, build_id, module_offset, symbol, "
        "symbol_offset, file, line) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
    auto fil =
        db_.prepare("INSERT INTO core_files(core_id, path, start, end) VALUES(?1, ?2, ?3, ?4)");
    if (!thr) return std::unexpected(thr.error());
    if (!frm) return std::unexpected(frm.error());
    if (!fil) return std::unexpected(fil.error());
    for (const auto& t : c.threads) {
        thr->bind(1, core).bind(2, t.tid).bind(3, static_cast<int64_t>(t.crashed));
        thr->bind(4, static_cast<int64_t>(t.frames_truncated)).bind(5, t.error);
        if (auto r = thr->run(); !r) return std::unexpected(r.error());
        int64_t tid = db_.lastInsertId();
        int64_t n = 0;
        for (const auto& f : t.frames) {
            frm->bind(1, tid).bind(2, n++).bind(3, f.pc).bind(4, f.module).bind(5, f.build_id);
            frm->bind(6, f.module_offset).bind(7, f.symbol).bind(8, f.symbol_offset);
            frm->bind(9, f.file).bind(10, f.line);
            if (auto r = frm->run(); !r) return std::unexpected(r.error());
        }
    }
    for (const auto& f : c.files) {
        fil->bind(1, core).bind(2, f.path).bind(3, f.start).bind(4, f.end);
        if (auto r = fil->run(); !r) return std::unexpected(r.error());
    }
    return core;
}

db::Result<int64_t> Store::addPendingCore(const PendingCore& p) {
    auto ins = db_.prepare(
        "INSERT OR IGNORE INTO pending_cores(journal, cursor, fields, queued_at) "
        "VALUES(?1, ?2, ?3, strftime('%Y-%m-%dT%H:%M:%SZ','now'))");
    if (!ins) return std::unexpected(ins.error());
    ins->bind(1, p.journal).bind(2, p.cursor).bind(3, p.fields);
    if (auto r = ins->run(); !r) return std::unexpected(r.error());
    if (db_.changes() > 0) return db_.lastInsertId();
    // Queued already (the entry read again after a restart before the worker was done).
    auto sel = db_.prepare("SELECT id FROM pending_cores WHERE journal=?1 AND cursor=?2");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, p.journal).bind(2, p.cursor);
    auto row = sel->step();
    if (!row) return std::unexpected(row.error());
    return sel->i64(0);
}

db::Result<std::vector<PendingCore>> Store::pendingCores(const std::string& journal) {
    auto sel = db_.prepare(
        "SELECT id, journal, cursor, fields FROM pending_cores WHERE journal=?1 ORDER BY id");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, journal);
    std::vector<PendingCore> out;
    for (;;) {
        auto row = sel->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.push_back({sel->i64(0), sel->str(1), sel->str(2), sel->str(3)});
    }
    return out;
}

db::Result<bool> Store::hasPendingCore(int64_t id) {
    auto sel = db_.prepare("SELECT 1 FROM pending_cores WHERE id=?1");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, id);
    return sel->step();
}

db::Result<void> Store::removePendingCore(int64_t id) {
    auto del = db_.prepare("DELETE FROM pending_cores WHERE id=?1");
    if (!del) return std::unexpected(del.error());
    del->bind(1, id);
    return del->run();
}

}  // namespace gpufault
