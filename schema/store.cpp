#include "schema/store.h"

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>
#include <thread>

#include "schema/migrations.h"

namespace gpufault {

int alignLog2(uint64_t address) {
    return address == 0 ? 64 : __builtin_ctzll(address);
}

namespace {

/// The refusal of an older store that this user cannot upgrade.
std::string olderStore(const std::string& path, int64_t version) {
    return fmt::format(
        "store {} is at schema version {}, this gpufault needs {}: run any `gpufault ingest` "
        "with write access to upgrade",
        path, version, migrations().size());
}

}  // namespace

db::Result<Store> Store::open(const std::string& path, Mode mode) {
    bool ro = mode == Mode::ReadOnly;
    auto d = db::Db::open(path, ro, !ro);
    if (!d) return std::unexpected(d.error());
    Store s(std::move(*d), path);
    if (ro) {
        auto st = s.db_.prepare("PRAGMA user_version");
        if (!st) return std::unexpected(st.error());
        auto row = st->step();
        if (!row) {
            // A WAL store in a directory this user cannot write (the system store read by a
            // member of its group) cannot create its -shm file: read the file as immutable.
            st->reset();
            auto imm = db::Db::openImmutable(path);
            if (imm) {
                Store t(std::move(*imm), path);
                auto st2 = t.db_.prepare("PRAGMA user_version");
                if (st2 && st2->step().value_or(false) && st2->i64(0) > 0 &&
                    st2->i64(0) <= static_cast<int64_t>(migrations().size())) {
                    if (st2->i64(0) < static_cast<int64_t>(migrations().size()))
                        return std::unexpected(db::Error{olderStore(path, st2->i64(0))});
                    return t;
                }
            }
        }
        if (!row)
            return std::unexpected(
                db::Error{fmt::format("{}: not a gpufault store ({})", path, row.error().message)});
        if (!*row || st->i64(0) == 0)
            return std::unexpected(
                db::Error{fmt::format("{}: not a gpufault store (empty schema)", path)});
        if (st->i64(0) > static_cast<int64_t>(migrations().size()))
            return std::unexpected(db::Error{
                fmt::format("{}: store version {} is newer than this gpufault", path, st->i64(0))});
        if (int64_t have = st->i64(0); have < static_cast<int64_t>(migrations().size())) {
            // An older store: upgraded as an ingest would upgrade it where this user may
            // write it (the reader's queries need the current schema), else refused.
            st->reset();
            auto w = Store::open(path, Mode::ReadWrite);
            if (!w) return std::unexpected(db::Error{olderStore(path, have)});
            return Store::open(path, Mode::ReadOnly);
        }
        return s;
    }
    // A new, empty file holds nothing to lose: it is created and migrated without fsync (the
    // first checkpoint syncs the file whole), then synchronous=NORMAL. Saves ~9 fsyncs (most
    // of a fresh `ingest CORE`'s wall time: docs/performance.md).
    bool fresh = false;
    if (auto st = s.db_.prepare("PRAGMA page_count"); st && st->step().value_or(false))
        fresh = st->i64(0) == 0;
    // auto_vacuum takes effect only before the first table exists, and must precede WAL.
    // Switching a new file to WAL while another process creates the same store (two `ingest`
    // runs at once) can answer SQLITE_BUSY at once, without the busy handler: tried again for
    // up to 5 s, as the busy timeout would have waited.
    for (int attempt = 0;; ++attempt) {
        auto r = s.db_.exec(fmt::format("PRAGMA synchronous={}; PRAGMA auto_vacuum=INCREMENTAL; "
                                        "PRAGMA journal_mode=WAL; PRAGMA foreign_keys=ON;",
                                        fresh ? "OFF" : "NORMAL"));
        if (r) break;
        if (attempt >= 100 || !r.error().busy())
            return std::unexpected(
                db::Error{fmt::format("{}: {}", path, r.error().message), r.error().code});
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    auto migrated = s.migrate();
    if (migrated && fresh) migrated = s.db_.exec("PRAGMA synchronous=NORMAL");
    if (!migrated)
        return std::unexpected(db::Error{fmt::format("{}: {}", path, migrated.error().message),
                                         migrated.error().code});
    if (auto r = s.prepareWriters(); !r)
        return std::unexpected(
            db::Error{fmt::format("{}: {}", path, r.error().message), r.error().code});
    return s;
}

db::Result<void> Store::migrate() {
    auto st = db_.prepare("PRAGMA user_version");
    if (!st) return std::unexpected(st.error());
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    int64_t version = st->i64(0);
    st->reset();
    const auto& m = migrations();
    if (version > static_cast<int64_t>(m.size()))
        return std::unexpected(
            db::Error{fmt::format("store version {} is newer than this gpufault", version)});
    for (size_t v = static_cast<size_t>(version); v < m.size(); ++v) {
        if (auto r = db_.exec("BEGIN IMMEDIATE"); !r) return r;
        // Read again under the write lock: another process creating the same new store (two
        // `gpufault ingest` runs at once) may have run this step meanwhile.
        auto now = st->step();
        if (!now) {
            (void)db_.exec("ROLLBACK");
            return std::unexpected(now.error());
        }
        auto done = static_cast<size_t>(st->i64(0));
        st->reset();
        if (done > v) {
            if (auto c = db_.exec("COMMIT"); !c) return c;
            v = done - 1;
            continue;
        }
        if (v == 0 && freshSchemaVersion() == m.size()) {
            // An empty database (no schema object yet): the migrations' end state in one
            // script (freshSchema(): ~6× fewer instructions than running them).
            auto objects = db_.prepare("SELECT count(*) FROM sqlite_schema");
            if (!objects) {
                (void)db_.exec("ROLLBACK");
                return std::unexpected(objects.error());
            }
            auto counted = objects->step();
            const bool empty = counted && *counted && objects->i64(0) == 0;
            objects->reset();
            if (empty) {
                auto r = db_.exec(freshSchema());
                if (r) r = db_.exec(fmt::format("PRAGMA user_version={}", m.size()));
                if (!r) {
                    (void)db_.exec("ROLLBACK");
                    return std::unexpected(
                        db::Error{fmt::format("new store schema: {}", r.error().message)});
                }
                if (auto c = db_.exec("COMMIT"); !c) return c;
                break;
            }
        }
        auto r = db_.exec(m[v]);
        if (r) r = db_.exec(fmt::format("PRAGMA user_version={}", v + 1));
        if (!r) {
            (void)db_.exec("ROLLBACK");
            return std::unexpected(
                db::Error{fmt::format("migration {}: {}", v + 1, r.error().message)});
        }
        if (auto c = db_.exec("COMMIT"); !c) return c;
    }
    // Steps SQL cannot do, queued by a migration in upgrade_steps (017: every row's wall time
    // read again as a fresh ingest reads it); each goes on where an interrupted one stopped.
    if (auto n = restateWallZones(); !n)
        return std::unexpected(db::Error{fmt::format("upgrade: {}", n.error().message)});
    return {};
}

namespace {

/// sources.earlier: "offset line hash" (hash in hex), ";"-separated.
std::optional<std::string> earlierText(const std::vector<PrefixMark>& marks) {
    if (marks.empty()) return std::nullopt;
    std::string s;
    for (const auto& m : marks)
        s += fmt::format("{}{} {} {:x}", s.empty() ? "" : ";", m.offset, m.line, m.hash);
    return s;
}
std::vector<PrefixMark> parseEarlier(const std::optional<std::string>& text) {
    std::vector<PrefixMark> out;
    if (!text) return out;
    std::string_view s = *text;
    while (!s.empty()) {
        auto end = s.find(';');
        std::string item(s.substr(0, end));
        PrefixMark m;
        unsigned long long hash = 0;
        long long offset = 0, line = 0;
        if (std::sscanf(item.c_str(), "%lld %lld %llx", &offset, &line, &hash) == 3) {
            m.offset = offset;
            m.line = line;
            m.hash = hash;
            out.push_back(m);
        }
        if (end == std::string_view::npos) break;
        s.remove_prefix(end + 1);
    }
    return out;
}

}  // namespace

db::Result<SourceState> Store::source(const SourceIdentity& id) {
    auto sel = db_.prepare(
        "SELECT id, offset, line, max_line, complete, cursor, size, prefix_hash, earlier, "
        "unended, path, read_hash FROM sources WHERE kind=?1 AND "
        "ifnull(device,-1)=ifnull(?2,-1) AND ifnull(inode,-1)=ifnull(?3,-1) AND "
        "ifnull(fingerprint,'')=?4");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, id.kind).bind(2, id.device).bind(3, id.inode).bind(4, id.fingerprint);
    auto row = sel->step();
    if (!row) return std::unexpected(row.error());
    if (*row) {
        SourceState s{sel->i64(0),
                      sel->i64(1),
                      sel->i64(2),
                      sel->i64(3),
                      sel->i64(4) != 0,
                      sel->optStr(5),
                      sel->optI64(6).value_or(0),
                      std::nullopt,
                      {}};
        if (auto h = sel->optI64(7)) s.prefix_hash = static_cast<uint64_t>(*h);
        s.earlier = parseEarlier(sel->optStr(8));
        s.unended = sel->i64(9) != 0;
        s.stored = StoredPosition{s.offset, s.line, s.max_line};
        s.path = sel->str(10);
        if (auto h = sel->optI64(11)) s.read_hash = static_cast<uint64_t>(*h);
        sel->reset();
        if (!id.rename || s.path == id.path) return s;
        auto upd = db_.prepare("UPDATE sources SET path=?2 WHERE id=?1");
        if (!upd) return std::unexpected(upd.error());
        upd->bind(1, s.id).bind(2, id.path);
        if (auto r = upd->run(); !r) return std::unexpected(r.error());
        return s;
    }
    // OR IGNORE: another ingest of the same file may create the row between the SELECT and
    // here; then its row is read.
    auto ins = db_.prepare(
        "INSERT OR IGNORE INTO sources(path, kind, device, inode, fingerprint, ingested_at) "
        "VALUES(?1, ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%SZ','now'))");
    if (!ins) return std::unexpected(ins.error());
    ins->bind(1, id.path)
        .bind(2, id.kind)
        .bind(3, id.device)
        .bind(4, id.inode)
        .bind(5, id.fingerprint);
    if (auto r = ins->run(); !r) return std::unexpected(r.error());
    if (db_.changes() == 0) return source(id);
    return SourceState{
        db_.lastInsertId(), 0, 0, 0, false, std::nullopt, 0, std::nullopt, {}, StoredPosition{}};
}

db::Result<bool> Store::hasSource(const SourceIdentity& id) {
    auto sel = db_.prepare(
        "SELECT 1 FROM sources WHERE kind=?1 AND ifnull(device,-1)=ifnull(?2,-1) AND "
        "ifnull(inode,-1)=ifnull(?3,-1) AND ifnull(fingerprint,'')=?4 LIMIT 1");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, id.kind).bind(2, id.device).bind(3, id.inode).bind(4, id.fingerprint);
    auto row = sel->step();
    if (!row) return std::unexpected(row.error());
    return *row;
}

db::Result<bool> Store::hasUnfinishedFile(int64_t device, int64_t inode) {
    auto sel = db_.prepare(
        "SELECT 1 FROM sources WHERE kind='file' AND complete=0 AND device=?1 AND inode=?2 "
        "LIMIT 1");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, device).bind(2, inode);
    auto row = sel->step();
    if (!row) return std::unexpected(row.error());
    return *row;
}

db::Result<int64_t> Store::addProcess(const ProcessRecord& p) {
    auto ins = db_.prepare(
        "INSERT OR IGNORE INTO processes(pid, boot_id, taken_at, start_ticks, name, ppid, uid, "
        "nspid, cgroup, cmdline, evidence_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
        "?11)");
    if (!ins) return std::unexpected(ins.error());
    ins->bind(1, p.pid).bind(2, p.boot_id).bind(3, p.taken_at).bind(4, p.start_ticks);
    ins->bind(5, p.name).bind(6, p.ppid).bind(7, p.uid).bind(8, p.nspid).bind(9, p.cgroup);
    ins->bind(10, p.cmdline).bind(11, p.evidence_id);
    if (auto r = ins->run(); !r) return std::unexpected(r.error());
    if (db_.changes() == 0) {
        auto sel = db_.prepare(
            "SELECT id FROM processes WHERE ifnull(boot_id,'')=?1 AND pid=?2 AND "
            "ifnull(start_ticks,-1)=ifnull(?3,-1)");
        if (!sel) return std::unexpected(sel.error());
        sel->bind(1, p.boot_id).bind(2, p.pid).bind(3, p.start_ticks);
        auto row = sel->step();
        if (!row) return std::unexpected(row.error());
        return *row ? sel->i64(0) : 0;
    }
    int64_t id = db_.lastInsertId();
    auto mod = db_.prepare(
        "INSERT INTO process_modules(process_id, path, start, end, executable) "
        "VALUES(?1, ?2, ?3, ?4, ?5)");
    if (!mod) return std::unexpected(mod.error());
    for (const auto& m : p.modules) {
        mod->bind(1, id).bind(2, m.path).bind(3, m.start).bind(4, m.end);
        mod->bind(5, static_cast<int64_t>(m.executable));
        if (auto r = mod->run(); !r) return std::unexpected(r.error());
    }
    return id;
}

db::Result<int64_t> Store::usedBytes() {
    auto s = db_.prepare(
        "SELECT (SELECT page_count FROM pragma_page_count()) - (SELECT freelist_count FROM "
        "pragma_freelist_count()), (SELECT page_size FROM pragma_page_size())");
    if (!s) return std::unexpected(s.error());
    auto row = s->step();
    if (!row) return std::unexpected(row.error());
    return s->i64(0) * s->i64(1);
}

db::Result<int> Store::prune(int64_t max_age_s,
                             int64_t max_bytes,
                             const std::vector<int64_t>& keep) {
    std::string kept = "[]";
    {
        std::string k;
        for (auto id : keep) k += (k.empty() ? "" : ",") + std::to_string(id);
        kept = "[" + k + "]";
    }
    // Candidates, least recently written first.
    auto sel = db_.prepare(
        "SELECT id, (strftime('%s','now') - strftime('%s', ifnull(ingested_at, '1970-01-01'))) "
        "FROM sources WHERE id NOT IN (SELECT value FROM json_each(?1)) ORDER BY ingested_at, id");
    if (!sel) return std::unexpected(sel.error());
    sel->bind(1, kept);
    std::vector<std::pair<int64_t, int64_t>> candidates;  // id, age in seconds
    for (;;) {
        auto row = sel->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        candidates.emplace_back(sel->i64(0), sel->i64(1));
    }

    int dropped = 0;
    for (const auto& [id, age] : candidates) {
        bool old = max_age_s > 0 && age > max_age_s;
        bool big = false;
        if (!old && max_bytes > 0) {
            auto used = usedBytes();
            if (!used) return std::unexpected(used.error());
            big = *used > max_bytes;
        }
        if (!old && !big) continue;
        if (auto r = begin(); !r) return std::unexpected(r.error());
        if (auto r = dropSourceRows(id, true); !r) {
            (void)rollback();
            return std::unexpected(r.error());
        }
        if (auto r = commit(); !r) return std::unexpected(r.error());
        ++dropped;
    }
    if (dropped > 0)
        if (auto r = db_.exec("PRAGMA incremental_vacuum"); !r) return std::unexpected(r.error());
    return dropped;
}

db::Result<void> Store::dropSourceRows(int64_t source_id, bool whole) {
    // The source's records and what hangs on them, in dependency order.
    static constexpr const char* kRecords[] = {
        "DELETE FROM incident_evidence WHERE incident_id IN (SELECT id FROM incidents WHERE "
        "first_evidence IN (SELECT id FROM evidence WHERE source_id=?1))",
        "DELETE FROM incident_evidence WHERE evidence_id IN (SELECT id FROM evidence WHERE "
        "source_id=?1)",
        "DELETE FROM incidents WHERE first_evidence IN (SELECT id FROM evidence WHERE "
        "source_id=?1)",
        "DELETE FROM operands WHERE source_id=?1",
        "UPDATE processes SET evidence_id=NULL WHERE evidence_id IN (SELECT id FROM evidence "
        "WHERE source_id=?1)",
        "DELETE FROM frames WHERE thread_id IN (SELECT t.id FROM threads t JOIN cores c ON "
        "c.id=t.core_id WHERE c.source_id=?1)",
        "DELETE FROM threads WHERE core_id IN (SELECT id FROM cores WHERE source_id=?1)",
        "DELETE FROM core_files WHERE core_id IN (SELECT id FROM cores WHERE source_id=?1)",
        "DELETE FROM cores WHERE source_id=?1",
        "DELETE FROM diagnoses WHERE evidence_id IN (SELECT id FROM evidence WHERE "
        "source_id=?1)",
        "DELETE FROM evidence WHERE source_id=?1"};
    // The rest of the stream's rows and the source itself.
    static constexpr const char* kStream[] = {
        "DELETE FROM dispatches WHERE source_id=?1",
        "DELETE FROM dispatch_counts WHERE source_id=?1",
        "DELETE FROM held_dispatches WHERE source_id=?1",
        "DELETE FROM warnings WHERE source_id=?1",
        "DELETE FROM allocations WHERE source_id=?1",
        "DELETE FROM alloc_processes WHERE source_id=?1",
        "UPDATE runs SET source_id=NULL WHERE source_id=?1",
        "DELETE FROM sources WHERE id=?1",
    };
    auto run = [&](const char* sql) -> db::Result<void> {
        auto st = db_.prepare(sql);
        if (!st) return std::unexpected(st.error());
        st->bind(1, source_id);
        return st->run();
    };
    for (const char* sql : kRecords)
        if (auto r = run(sql); !r) return r;
    if (whole)
        for (const char* sql : kStream)
            if (auto r = run(sql); !r) return r;
    return {};
}

db::Result<int64_t> Store::addRun(const RunRecord& r) {
    auto ins = db_.prepare(
        "INSERT INTO runs(command, cwd, host, boot_id, started, ended, exit_status, signal, pid, "
        "pids, env, spool, source_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
        "?13)");
    if (!ins) return std::unexpected(ins.error());
    ins->bind(1, r.command).bind(2, r.cwd).bind(3, r.host).bind(4, r.boot_id).bind(5, r.started);
    ins->bind(6, r.ended).bind(7, r.exit_status).bind(8, r.signal).bind(9, r.pid);
    ins->bind(10, r.pids).bind(11, r.env).bind(12, r.spool).bind(13, r.source_id);
    if (auto x = ins->run(); !x) return std::unexpected(x.error());
    return db_.lastInsertId();
}

db::Result<void> Store::begin() {
    written_.clear();
    auto r = db_.exec("BEGIN IMMEDIATE");
    inTxn_ = r.has_value();
    return r;
}
db::Result<void> Store::commit() {
    auto r = db_.exec("COMMIT");
    if (r) {
        written_.clear();
        inTxn_ = false;
    }
    return r;
}
db::Result<void> Store::rollback() {
    kernelIds_.clear();  // ids inserted by the rolled-back transaction are gone
    written_.clear();    // and the positions it wrote
    inTxn_ = false;
    return db_.exec("ROLLBACK");
}
db::Result<void> Store::savepoint() {
    writtenAtSavepoint_ = written_;
    return db_.exec("SAVEPOINT one_core");
}
db::Result<void> Store::releaseSavepoint() {
    return db_.exec("RELEASE one_core");
}
db::Result<void> Store::undoSavepoint() {
    kernelIds_.clear();
    written_ = writtenAtSavepoint_;
    return db_.exec("ROLLBACK TO one_core; RELEASE one_core");
}

db::Result<void> Store::prepareWriters() {
    auto prep = [&](db::Stmt& s, const char* sql) -> db::Result<void> {
        auto st = db_.prepare(sql);
        if (!st) return std::unexpected(st.error());
        s = std::move(*st);
        return {};
    };
    db::Result<void> r = prep(
        insEvidence_,
        "INSERT OR IGNORE INTO evidence(source_id, line, kind, vendor, kernel_s, wall, runtime_us, "
        "address, address_exact, align_log2, pci, gpu_node, pid, process, tid, thread, "
        "runtime_tid, "
        "vmid, pasid, hub, retry, client, status, access, reason, xid, kernel, module, "
        "module_offset, rank, count, attrs, raw, wall_utc_us, wall_zone) VALUES(?1,?2,?3,?4,?5,?6,"
        "?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29,"
        "?30,?31,?32,?33,?34,?35)");
    if (r)
        r = prep(insDispatch_,
                 "INSERT OR IGNORE INTO dispatches(source_id, line, runtime_us, pid, runtime_tid, "
                 "kernel_id, rank) VALUES(?1,?2,?3,?4,?5,?6,?7)");
    // The id of a row stored before (re-ingest, resume, a window flushed twice).
    if (r) r = prep(selDispatch_, "SELECT id FROM dispatches WHERE source_id=?1 AND line=?2");
    if (r)
        r = prep(
            insOperand_,
            "INSERT OR IGNORE INTO operands(source_id, line, pid, name, ptr, end, arg_ptr, shape, "
            "stride, dtype, origin, rank, runtime_us, dispatch_id) "
            "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)");
    if (r)
        r = prep(insCount_,
                 "INSERT INTO dispatch_counts(source_id, pid, kernel_id, n, first_line, last_line) "
                 "VALUES(?1,?2,?3,?4,?5,?6) ON CONFLICT DO UPDATE SET n=n+excluded.n, "
                 "first_line=min(first_line, excluded.first_line), last_line=max(last_line, "
                 "excluded.last_line)");
    if (r)
        r = prep(insKernel_,
                 "INSERT INTO kernels(name) VALUES(?1) ON CONFLICT DO UPDATE SET name=name "
                 "RETURNING id");
    if (r)
        r = prep(insWarning_,
                 "INSERT OR IGNORE INTO warnings(source_id, line, message) VALUES(?1,?2,?3)");
    if (r)
        r = prep(updPosition_,
                 "UPDATE sources SET offset=?2, line=?3, max_line=?4, complete=?5, size=?6, "
                 "cursor=?7, prefix_hash=?8, earlier=?9, unended=?13, read_hash=?14, "
                 "ingested_at=strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id=?1");
    if (r)
        r = prep(casPosition_,
                 "UPDATE sources SET offset=?2, line=?3, max_line=?4, complete=?5, size=?6, "
                 "cursor=?7, prefix_hash=?8, earlier=?9, unended=?13, read_hash=?14, "
                 "ingested_at=strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id=?1 AND "
                 "offset=?10 AND line=?11 AND max_line=?12");
    return r;
}

db::Result<void> Store::addEvidence(int64_t source_id, const Evidence& e) {
    auto& s = insEvidence_;
    s.bind(1, source_id).bind(2, static_cast<int64_t>(e.line)).bind(3, kindName(e.kind));
    s.bind(4, e.vendor).bind(5, e.time.kernel_s).bind(6, e.time.wall).bind(7, e.time.runtime_us);
    s.bind(8, e.address).bind(9, e.address_exact);
    if (e.address)
        s.bind(10, static_cast<int64_t>(alignLog2(*e.address)));
    else
        s.bind(10, nullptr);
    s.bind(11, e.pci).bind(12, e.gpu_node).bind(13, e.pid).bind(14, e.process).bind(15, e.tid);
    s.bind(16, e.thread).bind(17, e.runtime_tid).bind(18, e.vmid).bind(19, e.pasid).bind(20, e.hub);
    s.bind(21, e.retry).bind(22, e.client).bind(23, e.status).bind(24, e.access).bind(25, e.reason);
    s.bind(26, e.xid).bind(27, e.kernel).bind(28, e.module).bind(29, e.module_offset);
    s.bind(30, e.rank).bind(31, static_cast<int64_t>(e.count));
    if (e.attrs.empty()) {
        s.bind(32, nullptr);
    } else {
        nlohmann::json a = nlohmann::json::object();
        for (auto& [k, v] : e.attrs) a[k] = v;
        s.bind(32, a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
    s.bind(33, std::string_view(e.raw).substr(0, 4096));
    std::string refused;
    auto instant = wallInstant(e.time, refused);
    if (instant) {
        s.bind(34, instant->utc_us).bind(35, std::string_view(instant->zone));
    } else {
        s.bind(34, nullptr).bind(35, nullptr);
    }
    if (auto r = s.run(); !r) return r;
    if (refused.empty() && e.time.wall_refused != WallRefusal::None)  // the parser refused it
        refused = e.time.wall_refused == WallRefusal::Zone
                      ? "timestamp states a zone offset no zone uses (beyond -12:00 to +14:00): "
                        "no wall time stored"
                      : "timestamp is not a date and time (no such month, day, hour, minute or "
                        "second): no wall time stored";
    if (refused.empty()) return {};
    return addWarning(source_id, Warning{e.line, refused});
}

db::Result<int64_t> Store::kernelId(const std::string& name) {
    if (auto it = kernelIds_.find(name); it != kernelIds_.end()) return it->second;
    insKernel_.bind(1, name);
    auto row = insKernel_.step();
    if (!row) {
        insKernel_.reset();
        return std::unexpected(row.error());
    }
    int64_t id = insKernel_.i64(0);
    insKernel_.reset();
    if (kernelIds_.size() < 65536) kernelIds_.emplace(name, id);  // ids never change
    return id;
}

db::Result<int64_t> Store::addDispatch(int64_t source_id, const Dispatch& d) {
    auto k = kernelId(d.kernel);
    if (!k) return std::unexpected(k.error());
    // INSERT OR IGNORE, then the new row's id, or the stored row's when it was ignored: an
    // upsert with RETURNING id cost ~25 k instructions more a row (an ephemeral table a step).
    auto& s = insDispatch_;
    s.bind(1, source_id).bind(2, static_cast<int64_t>(d.line)).bind(3, d.time.runtime_us);
    s.bind(4, d.pid).bind(5, d.runtime_tid).bind(6, *k).bind(7, d.rank);
    if (auto r = s.run(); !r) return std::unexpected(r.error());
    if (db_.changes() == 1) return db_.lastInsertId();
    auto& q = selDispatch_;
    q.bind(1, source_id).bind(2, static_cast<int64_t>(d.line));
    auto row = q.step();
    if (!row || !*row) {
        q.reset();
        if (!row) return std::unexpected(row.error());
        return std::unexpected(db::Error{fmt::format("dispatch of line {} neither stored nor found",
                                                     d.line)});
    }
    int64_t id = q.i64(0);
    q.reset();
    return id;
}

db::Result<void> Store::addOperand(int64_t source_id,
                                   const Operand& o,
                                   std::optional<int64_t> dispatch_id) {
    auto& s = insOperand_;
    s.bind(1, source_id).bind(2, static_cast<int64_t>(o.line)).bind(3, o.pid).bind(4, o.name);
    s.bind(5, o.ptr).bind(6, o.end).bind(7, o.arg_ptr).bind(8, o.shape).bind(9, o.stride);
    s.bind(10, o.dtype).bind(11, o.origin).bind(12, o.rank).bind(13, o.time.runtime_us);
    s.bind(14, dispatch_id);
    return s.run();
}

db::Result<void> Store::addDispatchCount(int64_t source_id,
                                         std::optional<int64_t> pid,
                                         const std::string& kernel,
                                         int64_t n,
                                         int64_t first_line,
                                         int64_t last_line) {
    auto k = kernelId(kernel);
    if (!k) return std::unexpected(k.error());
    insCount_.bind(1, source_id)
        .bind(2, pid)
        .bind(3, *k)
        .bind(4, n)
        .bind(5, first_line)
        .bind(6, last_line);
    return insCount_.run();
}

db::Result<void> Store::addWarning(int64_t source_id, const Warning& w) {
    insWarning_.bind(1, source_id).bind(2, static_cast<int64_t>(w.line)).bind(3, w.message);
    return insWarning_.run();
}

db::Result<std::vector<UnfinishedFile>> Store::unfinishedFiles(int64_t limit) {
    auto s = db_.prepare(
        "SELECT id, path, device, inode, fingerprint, offset, line, max_line, size FROM sources "
        "WHERE kind='file' AND complete=0 ORDER BY id LIMIT ?1");
    if (!s) return std::unexpected(s.error());
    s->bind(1, limit);
    std::vector<UnfinishedFile> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        UnfinishedFile f;
        f.identity.path = s->str(1);
        f.identity.device = s->optI64(2);
        f.identity.inode = s->optI64(3);
        f.identity.fingerprint = s->optStr(4).value_or("");
        f.state = SourceState{s->i64(0),
                              s->i64(5),
                              s->i64(6),
                              s->i64(7),
                              false,
                              std::nullopt,
                              s->optI64(8).value_or(0),
                              std::nullopt,
                              {},
                              StoredPosition{s->i64(5), s->i64(6), s->i64(7)}};
        out.push_back(std::move(f));
    }
    return out;
}

db::Result<std::vector<UnfinishedFile>> Store::copyCandidates(const std::string& fingerprint,
                                                              int64_t limit) {
    auto s = db_.prepare(
        "SELECT id, path, device, inode, offset, line, max_line, size, prefix_hash, complete, "
        "earlier, lost_bytes FROM sources WHERE kind='file' AND fingerprint=?1 AND "
        "prefix_hash IS NOT NULL "
        "ORDER BY id DESC LIMIT ?2");
    if (!s) return std::unexpected(s.error());
    s->bind(1, fingerprint).bind(2, limit);
    std::vector<UnfinishedFile> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        UnfinishedFile f;
        f.identity.path = s->str(1);
        f.identity.device = s->optI64(2);
        f.identity.inode = s->optI64(3);
        f.identity.fingerprint = fingerprint;
        f.state = SourceState{s->i64(0),
                              s->i64(4),
                              s->i64(5),
                              s->i64(6),
                              s->i64(9) != 0,
                              std::nullopt,
                              s->optI64(7).value_or(0),
                              static_cast<uint64_t>(s->i64(8)),
                              parseEarlier(s->optStr(10)),
                              StoredPosition{s->i64(4), s->i64(5), s->i64(6)}};
        f.lost = s->i64(11);
        out.push_back(std::move(f));
    }
    return out;
}

db::Result<void> Store::adoptSource(int64_t source_id, const SourceIdentity& id) {
    // A row that already has that identity (the copy's own, nothing read from it, or a former
    // file of a reused inode) keeps its rows under a fingerprint no later file matches; one
    // that recorded nothing is complete.
    auto aside = db_.prepare(
        "UPDATE sources SET fingerprint = ifnull(fingerprint, '') || '#copied-' || id, "
        "complete = CASE WHEN max_line = 0 THEN 1 ELSE complete END WHERE kind=?1 AND "
        "ifnull(device,-1)=ifnull(?2,-1) AND ifnull(inode,-1)=ifnull(?3,-1) AND "
        "ifnull(fingerprint,'')=?4 AND id<>?5");
    if (!aside) return std::unexpected(aside.error());
    aside->bind(1, id.kind).bind(2, id.device).bind(3, id.inode).bind(4, id.fingerprint);
    aside->bind(5, source_id);
    if (auto r = aside->run(); !r) return r;
    auto upd =
        db_.prepare("UPDATE sources SET path=?2, device=?3, inode=?4, complete=0 WHERE id=?1");
    if (!upd) return std::unexpected(upd.error());
    upd->bind(1, source_id).bind(2, id.path).bind(3, id.device).bind(4, id.inode);
    return upd->run();
}

db::Result<void> Store::setPosition(int64_t source_id, const SourceState& st, int64_t size) {
    auto& s = updPosition_;  // prepared once: a prepare a checkpoint cost ~70 k instructions
    s.bind(1, source_id).bind(2, st.offset).bind(3, st.line).bind(4, st.max_line);
    s.bind(5, static_cast<int64_t>(st.complete)).bind(6, size).bind(7, st.cursor);
    std::optional<int64_t> hash;
    if (st.prefix_hash) hash = static_cast<int64_t>(*st.prefix_hash);
    s.bind(8, hash).bind(9, earlierText(st.earlier));
    s.bind(13, static_cast<int64_t>(st.unended));
    std::optional<int64_t> read;
    if (st.unended && st.read_hash) read = static_cast<int64_t>(*st.read_hash);
    s.bind(14, read);
    auto r = s.run();
    if (r && inTxn_) written_[source_id] = StoredPosition{st.offset, st.line, st.max_line};
    return r;
}

db::Result<void> Store::setSourcePath(int64_t source_id, const std::string& path) {
    auto upd = db_.prepare("UPDATE sources SET path=?2 WHERE id=?1");
    if (!upd) return std::unexpected(upd.error());
    upd->bind(1, source_id).bind(2, path);
    return upd->run();
}

db::Result<bool> Store::movePosition(int64_t source_id, const SourceState& st, int64_t size) {
    if (!st.stored) {
        if (auto r = setPosition(source_id, st, size); !r) return std::unexpected(r.error());
        return true;
    }
    auto& s = casPosition_;
    s.bind(1, source_id).bind(2, st.offset).bind(3, st.line).bind(4, st.max_line);
    s.bind(5, static_cast<int64_t>(st.complete)).bind(6, size).bind(7, st.cursor);
    std::optional<int64_t> hash;
    if (st.prefix_hash) hash = static_cast<int64_t>(*st.prefix_hash);
    s.bind(8, hash).bind(9, earlierText(st.earlier));
    s.bind(13, static_cast<int64_t>(st.unended));
    std::optional<int64_t> read;
    if (st.unended && st.read_hash) read = static_cast<int64_t>(*st.read_hash);
    s.bind(14, read);
    // What this Store wrote to the row in the open transaction, else what the caller read.
    auto ours = written_.find(source_id);
    const StoredPosition& expect = ours != written_.end() ? ours->second : *st.stored;
    s.bind(10, expect.offset).bind(11, expect.line).bind(12, expect.max_line);
    if (auto r = s.run(); !r) return std::unexpected(r.error());
    if (db_.changes() != 1) return false;
    if (inTxn_) written_[source_id] = StoredPosition{st.offset, st.line, st.max_line};
    return true;
}

db::Result<void> Store::finishSource(int64_t source_id) {
    auto s = db_.prepare(
        "UPDATE sources SET complete=1, ingested_at=strftime('%Y-%m-%dT%H:%M:%SZ','now') "
        "WHERE id=?1");
    if (!s) return std::unexpected(s.error());
    s->bind(1, source_id);
    return s->run();
}

db::Result<void> Store::raiseCount(int64_t source_id, const Evidence& e) {
    // The identity of evidence_identity (schema/sql/001_init.sql).
    auto s = db_.prepare(
        "UPDATE evidence SET count=?7 WHERE source_id=?1 AND kind=?2 AND line=?3 AND "
        "ifnull(address,-1)=ifnull(?4,-1) AND ifnull(pci,'')=ifnull(?5,'') AND "
        "ifnull(gpu_node,-1)=ifnull(?6,-1) AND count<?7");
    if (!s) return std::unexpected(s.error());
    s->bind(1, source_id).bind(2, kindName(e.kind)).bind(3, static_cast<int64_t>(e.line));
    s->bind(4, e.address).bind(5, e.pci).bind(6, e.gpu_node);
    s->bind(7, static_cast<int64_t>(e.count));
    return s->run();
}

db::Result<void> Store::dropLinesFrom(int64_t source_id, int64_t line, int64_t through) {
    // In dependency order, as dropSourceRows() (incidents are recomputed after the commit).
    static constexpr const char* kRows[] = {
        "DELETE FROM incident_evidence WHERE incident_id IN (SELECT id FROM incidents WHERE "
        "first_evidence IN (SELECT id FROM evidence WHERE source_id=?1 AND line BETWEEN ?2 AND "
        "?3))",
        "DELETE FROM incident_evidence WHERE evidence_id IN (SELECT id FROM evidence WHERE "
        "source_id=?1 AND line BETWEEN ?2 AND ?3)",
        "DELETE FROM incidents WHERE first_evidence IN (SELECT id FROM evidence WHERE "
        "source_id=?1 AND line BETWEEN ?2 AND ?3)",
        "UPDATE processes SET evidence_id=NULL WHERE evidence_id IN (SELECT id FROM evidence "
        "WHERE source_id=?1 AND line BETWEEN ?2 AND ?3)",
        "DELETE FROM diagnoses WHERE evidence_id IN (SELECT id FROM evidence WHERE "
        "source_id=?1 AND line BETWEEN ?2 AND ?3)",
        "DELETE FROM evidence WHERE source_id=?1 AND line BETWEEN ?2 AND ?3",
        "DELETE FROM operands WHERE source_id=?1 AND (line BETWEEN ?2 AND ?3 OR dispatch_id IN "
        "(SELECT id FROM dispatches WHERE source_id=?1 AND line BETWEEN ?2 AND ?3))",
        "DELETE FROM dispatches WHERE source_id=?1 AND line BETWEEN ?2 AND ?3",
        "DELETE FROM held_dispatches WHERE source_id=?1 AND line BETWEEN ?2 AND ?3",
        "DELETE FROM warnings WHERE source_id=?1 AND line BETWEEN ?2 AND ?3",
    };
    for (const char* sql : kRows) {
        auto st = db_.prepare(sql);
        if (!st) return std::unexpected(st.error());
        st->bind(1, source_id).bind(2, line).bind(3, through);
        if (auto r = st->run(); !r) return r;
    }
    return {};
}

db::Result<std::vector<std::pair<std::string, std::string>>> Store::earlierContentRecords(
    int64_t source_id, const std::string& kinds_json) {
    auto s = db_.prepare(
        "SELECT e.kind, e.raw FROM sources s JOIN sources p ON p.kind = s.kind AND p.device = "
        "s.device AND p.inode = s.inode AND p.id < s.id JOIN evidence e ON e.source_id = p.id "
        "WHERE s.id = ?1 AND e.kind IN (SELECT value FROM json_each(?2)) AND "
        "(e.kernel_s IS NOT NULL OR e.wall IS NOT NULL)");
    if (!s) return std::unexpected(s.error());
    s->bind(1, source_id).bind(2, kinds_json);
    std::vector<std::pair<std::string, std::string>> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.emplace_back(s->str(0), s->str(1));
    }
    return out;
}

db::Result<void> Store::addLostBytes(int64_t source_id, int64_t delta) {
    if (delta == 0) return {};
    auto s = db_.prepare("UPDATE sources SET lost_bytes = lost_bytes + ?2 WHERE id=?1");
    if (!s) return std::unexpected(s.error());
    s->bind(1, source_id).bind(2, delta);
    return s->run();
}

db::Result<void> Store::addLostRecords(int64_t source_id, int64_t delta) {
    if (delta == 0) return {};
    auto s = db_.prepare("UPDATE sources SET lost_records = lost_records + ?2 WHERE id=?1");
    if (!s) return std::unexpected(s.error());
    s->bind(1, source_id).bind(2, delta);
    return s->run();
}

db::Result<int64_t> Store::lostRecords(int64_t source_id) {
    auto s = db_.prepare("SELECT lost_records FROM sources WHERE id=?1");
    if (!s) return std::unexpected(s.error());
    s->bind(1, source_id);
    auto row = s->step();
    if (!row) return std::unexpected(row.error());
    return *row ? s->i64(0) : int64_t{0};
}

db::Result<std::vector<FileLoss>> Store::fileLosses() {
    auto s = db_.prepare(
        "SELECT ifnull(device, 0), ifnull(inode, 0), sum(lost_bytes) FROM sources "
        "WHERE kind=?1 AND lost_bytes <> 0 GROUP BY 1, 2");
    if (!s) return std::unexpected(s.error());
    s->bind(1, "file");
    std::vector<FileLoss> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.push_back({s->i64(0), s->i64(1), s->i64(2)});
    }
    return out;
}

db::Result<void> Store::replaceIncidents(const std::vector<IncidentRecord>& incidents,
                                         const std::function<bool()>& stop) {
    uint64_t rows = 0;
    auto stopped = [&] { return stop && (++rows & 4095) == 0 && stop(); };
    if (auto r = db_.exec("DELETE FROM incident_evidence; DELETE FROM incidents;"); !r) return r;
    auto ins = db_.prepare(
        "INSERT INTO incidents(kind, vendor, address, pid, process, reason, kernel, signature, "
        "first_evidence) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)");
    auto mem = db_.prepare(
        "INSERT OR IGNORE INTO incident_evidence(incident_id, evidence_id, role, link) "
        "VALUES(?1,?2,?3,?4)");
    if (!ins) return std::unexpected(ins.error());
    if (!mem) return std::unexpected(mem.error());
    for (const auto& inc : incidents) {
        if (inc.members.empty()) continue;
        ins->bind(1, inc.kind).bind(2, inc.vendor).bind(3, inc.address).bind(4, inc.pid);
        ins->bind(5, inc.process).bind(6, inc.reason).bind(7, inc.kernel).bind(8, inc.signature);
        ins->bind(9, inc.members.front().evidence_id);
        if (auto r = ins->run(); !r) return r;
        int64_t id = db_.lastInsertId();
        for (const auto& m : inc.members) {
            if (stopped()) return std::unexpected(db::Error{"interrupted"});
            mem->bind(1, id).bind(2, m.evidence_id).bind(3, m.role).bind(4, m.link);
            if (auto r = mem->run(); !r) return r;
        }
    }
    return {};
}

}  // namespace gpufault
