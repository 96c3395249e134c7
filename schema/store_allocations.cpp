// Store: writing the preload shim's allocations (table allocations, schema/sql/007) and their
// recording processes (alloc_processes, schema/sql/012; the recording key, 015). A recording
// (one process: boot id, pid, start ticks) stores each of its records once, whatever file,
// copy or generation of a file it came through.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "schema/store.h"

namespace gpufault {

namespace {

/// What the store knows of one recording process row of the source being appended to.
struct Recording {
    std::string key;  ///< alloc_processes.recording
    std::optional<int64_t> ended_wall_us, ended_mono_us;
    /// the end is the next program image's start (exec, exact), not one gpufaultd noticed
    bool exec = false;
};

/// True when a record timed (`wall_us`, `mono_us`) cannot be of a process whose end gpufaultd
/// stored: both clocks say after it (one alone, a clock stepped back, is not enough); a clock
/// missing on either side counts as saying so for the other.
bool timedAfterEnd(const Recording& r,
                   std::optional<int64_t> wall_us,
                   std::optional<int64_t> mono_us) {
    if (!r.ended_wall_us) return false;
    bool wall = !wall_us || *wall_us > *r.ended_wall_us;
    bool mono = !mono_us || !r.ended_mono_us || *mono_us > *r.ended_mono_us;
    return (wall_us || mono_us) && wall && mono;
}

}  // namespace

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

db::Result<void> Store::dropWarningsFrom(int64_t source_id, int64_t line) {
    auto del = db_.prepare("DELETE FROM warnings WHERE source_id = ?1 AND line >= ?2");
    if (!del) return std::unexpected(del.error());
    del->bind(1, source_id).bind(2, line);
    return del->run();
}

db::Result<void> Store::endImagesByExec(const alloclog::Log& log) {
    // Each process (pid, start ticks, boot, pid namespace) of this piece's `start` records, and
    // the earliest start of it here.
    using Identity = std::tuple<int64_t, int64_t, std::string, std::optional<int64_t>>;
    std::map<Identity, int64_t> first;
    for (const auto& p : log.processes) {
        if (!p.boot_id || !p.start_ticks || !p.mono_us) continue;
        std::optional<int64_t> ns;
        if (p.pidns) ns = static_cast<int64_t>(*p.pidns);
        auto [it, fresh] =
            first.try_emplace(Identity{p.pid, *p.start_ticks, *p.boot_id, ns}, *p.mono_us);
        if (!fresh) it->second = std::min(it->second, *p.mono_us);
    }
    if (first.empty()) return {};
    auto before = db_.prepare(
        "SELECT mono_us FROM alloc_processes WHERE pid = ?1 AND start_ticks = ?2 AND boot_id = ?3 "
        "AND pidns IS ?4 AND mono_us < ?5 ORDER BY mono_us DESC LIMIT 1");
    auto images = db_.prepare(
        "SELECT id, recording, mono_us, wall_us, ended_mono_us FROM alloc_processes WHERE pid = "
        "?1 AND start_ticks = ?2 AND boot_id = ?3 AND pidns IS ?4 AND mono_us >= ?5 AND "
        "recording IS NOT NULL ORDER BY mono_us, id");
    auto end = db_.prepare(
        "UPDATE alloc_processes SET ended_wall_us = ?2, ended_mono_us = ?3, ended_by = 'exec' "
        "WHERE id = ?1");
    if (!before) return std::unexpected(before.error());
    if (!images) return std::unexpected(images.error());
    if (!end) return std::unexpected(end.error());
    struct Image {
        int64_t id;
        std::string recording;
        int64_t mono_us;
        std::optional<int64_t> wall_us, ended_mono_us;
    };
    for (const auto& [who, mono] : first) {
        const auto& [pid, ticks, boot, ns] = who;
        before->bind(1, pid).bind(2, ticks).bind(3, boot).bind(4, ns).bind(5, mono);
        auto row = before->step();
        if (!row) return std::unexpected(row.error());
        const int64_t from = *row ? before->i64(0) : mono;
        before->reset();
        images->bind(1, pid).bind(2, ticks).bind(3, boot).bind(4, ns).bind(5, from);
        std::vector<Image> im;
        for (;;) {
            auto r = images->step();
            if (!r) return std::unexpected(r.error());
            if (!*r) break;
            im.push_back(Image{images->i64(0),
                               images->str(1),
                               images->i64(2),
                               images->optI64(3),
                               images->optI64(4)});
        }
        images->reset();
        // An image ends at the first later start of another recording (copies of one
        // recording through other files share its start).
        size_t next = 0;
        for (size_t i = 0; i < im.size(); ++i) {
            next = std::max(next, i + 1);
            while (next < im.size() &&
                   (im[next].mono_us <= im[i].mono_us || im[next].recording == im[i].recording))
                ++next;
            if (next == im.size()) break;
            const Image& q = im[next];
            if (im[i].ended_mono_us && *im[i].ended_mono_us <= q.mono_us) continue;
            end->bind(1, im[i].id).bind(2, q.wall_us).bind(3, q.mono_us);
            if (auto u = end->run(); !u) return std::unexpected(u.error());
        }
    }
    return {};
}

db::Result<AllocAppend> Store::replaceAllocations(int64_t source_id,
                                                  std::optional<int64_t> run_id,
                                                  const alloclog::Log& log) {
    // The rows stay: a re-read adds what is new and merges what is stored (a free another copy
    // or generation of the recording added to a row is not lost). Warnings are the log's.
    auto del = db_.prepare("DELETE FROM warnings WHERE source_id=?1");
    if (!del) return std::unexpected(del.error());
    del->bind(1, source_id);
    if (auto r = del->run(); !r) return std::unexpected(r.error());
    return appendAllocations(source_id, run_id, log);
}

db::Result<AllocAppend> Store::appendAllocations(int64_t source_id,
                                                 std::optional<int64_t> run_id,
                                                 const alloclog::Log& log,
                                                 bool read_after_end) {
    AllocAppend out;
    // 1. The recording processes: the log's `start` records, and a row (line 0) for each pid
    //    with records before any start record of it.
    if (!log.processes.empty()) {
        auto up = db_.prepare(
            "INSERT INTO alloc_processes(source_id, run_id, line, pid, ppid, boot_id, start_ticks, "
            "wall_us, mono_us, exe, pidns) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON "
            "CONFLICT(source_id, pid, line) DO UPDATE SET run_id = ifnull(excluded.run_id, "
            "run_id)");
        if (!up) return std::unexpected(up.error());
        for (const auto& p : log.processes) {
            up->bind(1, source_id).bind(2, run_id).bind(3, static_cast<int64_t>(p.line));
            up->bind(4, p.pid).bind(5, p.ppid).bind(6, p.boot_id).bind(7, p.start_ticks);
            up->bind(8, p.wall_us).bind(9, p.mono_us).bind(10, p.exe);
            if (p.pidns)
                up->bind(11, static_cast<int64_t>(*p.pidns));
            else
                up->bind(11, nullptr);
            if (auto r = up->run(); !r) return std::unexpected(r.error());
        }
    }
    // pid → earliest wall, mono of its records before any start record
    struct Early {
        std::optional<int64_t> wall_us, mono_us;
        bool allocations = false;  ///< false: only frees (no recording of their own)
    };
    std::map<int64_t, Early> lineZero;
    auto early = [](std::optional<int64_t>& have, std::optional<int64_t> v) {
        if (v && (!have || *v < *have)) have = v;
    };
    for (const auto& a : log.allocations)
        if (a.start_line == 0) {
            auto& z = lineZero[a.pid];
            early(z.wall_us, a.wall_us);
            early(z.mono_us, a.mono_us);
            z.allocations = true;
        }
    for (const auto& f : log.late_frees)
        if (f.start_line == 0) lineZero.try_emplace(f.pid);
    if (!lineZero.empty()) {
        // A row for the records before any start record: when an earlier generation of the
        // same file (same path, device and inode) recorded that pid, they continue its last
        // recording (a file cut short while its process kept appending); else a recording of
        // its own, from its first allocation's time.
        auto ins = db_.prepare(
            "INSERT OR IGNORE INTO alloc_processes(source_id, run_id, line, pid, wall_us, mono_us) "
            "VALUES(?1, ?2, 0, ?3, ?4, ?5)");
        auto cont = db_.prepare(
            "UPDATE alloc_processes AS me SET (ppid, boot_id, start_ticks, wall_us, mono_us, exe, "
            "ended_wall_us, ended_mono_us, recording, pidns, ended_by) = (SELECT q.ppid, "
            "q.boot_id, q.start_ticks, q.wall_us, q.mono_us, q.exe, q.ended_wall_us, "
            "q.ended_mono_us, q.recording, q.pidns, q.ended_by FROM "
            "sources s JOIN sources o ON o.id < s.id AND o.kind = s.kind AND o.path = s.path AND "
            "o.device = s.device AND o.inode = s.inode JOIN alloc_processes q ON q.source_id = "
            "o.id AND q.pid = me.pid AND q.recording IS NOT NULL WHERE s.id = me.source_id ORDER "
            "BY o.id DESC, q.line DESC LIMIT 1) WHERE me.source_id = ?1 AND me.pid = ?2 AND "
            "me.line = 0 AND EXISTS (SELECT 1 FROM sources s JOIN sources o ON o.id < s.id AND "
            "o.kind = s.kind AND o.path = s.path AND o.device = s.device AND o.inode = s.inode "
            "JOIN alloc_processes q ON q.source_id = o.id AND q.pid = me.pid AND q.recording IS "
            "NOT NULL WHERE s.id = me.source_id)");
        auto drop = db_.prepare(
            "DELETE FROM alloc_processes WHERE source_id = ?1 AND pid = ?2 AND line = 0");
        if (!ins) return std::unexpected(ins.error());
        if (!cont) return std::unexpected(cont.error());
        if (!drop) return std::unexpected(drop.error());
        for (const auto& [pid, t] : lineZero) {
            ins->bind(1, source_id).bind(2, run_id).bind(3, pid).bind(4, t.wall_us);
            ins->bind(5, t.mono_us);
            if (auto r = ins->run(); !r) return std::unexpected(r.error());
            if (db_.changes() == 0) continue;
            cont->bind(1, source_id).bind(2, pid);
            if (auto r = cont->run(); !r) return std::unexpected(r.error());
            if (db_.changes() > 0 || t.allocations) continue;
            drop->bind(1, source_id).bind(2, pid);  // frees alone of no known recording
            if (auto r = drop->run(); !r) return std::unexpected(r.error());
        }
    }
    // 2. Their recording keys (schema/sql/015), and the end a copy of the recording has.
    for (const char* sql :
         {"UPDATE alloc_processes SET recording = (SELECT k.recording FROM alloc_process_key k "
          "WHERE k.id = alloc_processes.id) WHERE source_id = ?1 AND recording IS NULL",
          "UPDATE alloc_processes AS me SET (ended_wall_us, ended_mono_us, ended_by) = (SELECT "
          "o.ended_wall_us, o.ended_mono_us, o.ended_by FROM alloc_processes o WHERE o.recording = "
          "me.recording AND o.ended_wall_us IS NOT NULL ORDER BY o.ended_wall_us LIMIT 1) WHERE "
          "me.source_id = ?1 AND me.ended_wall_us IS NULL AND EXISTS (SELECT 1 FROM "
          "alloc_processes o WHERE o.recording = me.recording AND o.ended_wall_us IS NOT NULL)"}) {
        auto st = db_.prepare(sql);
        if (!st) return std::unexpected(st.error());
        st->bind(1, source_id);
        if (auto r = st->run(); !r) return std::unexpected(r.error());
    }
    auto recQ = db_.prepare(
        "SELECT recording, ended_wall_us, ended_mono_us, ended_by IS 'exec' FROM alloc_processes "
        "WHERE source_id = ?1 AND pid = ?2 AND line = ?3");
    if (!recQ) return std::unexpected(recQ.error());
    std::map<std::pair<int64_t, uint64_t>, Recording> recs;
    auto recording = [&](int64_t pid, uint64_t start_line) -> db::Result<const Recording*> {
        auto [it, fresh] = recs.try_emplace({pid, start_line});
        if (fresh) {
            recQ->bind(1, source_id).bind(2, pid).bind(3, static_cast<int64_t>(start_line));
            auto row = recQ->step();
            if (!row) return std::unexpected(row.error());
            if (*row) {
                it->second.key = recQ->str(0);
                it->second.ended_wall_us = recQ->optI64(1);
                it->second.ended_mono_us = recQ->optI64(2);
                it->second.exec = recQ->i64(3) != 0;
            }
            recQ->reset();
        }
        return &it->second;
    };
    std::vector<alloclog::Warning> warnings;
    std::set<uint64_t> freesFound;  // lines of frees without an open allocation that were found
    std::map<uint64_t, int64_t> doubleFrees;  // line of a free → line that freed it before
    auto afterEnd = [&](const Recording& r, uint64_t line, int64_t pid) {
        ++out.after_end;
        warnings.push_back(
            {line,
             fmt::format("record of pid {} after the end of its process (gone by wall_us {}): "
                         "not stored",
                         pid,
                         *r.ended_wall_us)});
    };
    // 3. The allocations: one its recording already holds (the same record through another
    //    file or generation, or a re-read) is merged, not added.
    auto same = db_.prepare(
        "SELECT a.id, a.free_line IS NULL, a.source_id FROM allocations a JOIN alloc_processes p "
        "ON p.source_id = a.source_id AND p.pid = a.pid AND p.line = a.start_line WHERE a.pid = "
        "?1 AND a.ptr = ?2 AND a.end = ?3 AND a.kind = ?4 AND a.api = ?5 AND a.tid IS ?6 AND "
        "a.wall_us IS ?7 AND a.mono_us IS ?8 AND (?7 IS NOT NULL OR ?8 IS NOT NULL OR a.line = "
        "?9) AND p.recording = ?10 ORDER BY a.id LIMIT 1");
    auto ins = db_.prepare(
        "INSERT INTO allocations(source_id, run_id, line, pid, tid, kind, api, mem, device, ptr, "
        "end, handle, wall_us, mono_us, stack, free_line, free_api, freed_wall_us, freed_mono_us, "
        "start_line) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
        "?17, ?18, ?19, ?20)");
    auto setFree = db_.prepare(
        "UPDATE allocations SET free_line = ?2, free_api = ?3, freed_wall_us = ?4, freed_mono_us "
        "= ?5, free_source_id = CASE WHEN source_id <> ?6 THEN ?6 END, run_id = ifnull(run_id, "
        "?7) WHERE id = ?1 AND free_line IS NULL");
    auto setRun =
        db_.prepare("UPDATE allocations SET run_id = ?2 WHERE id = ?1 AND run_id IS NULL");
    if (!same) return std::unexpected(same.error());
    if (!ins) return std::unexpected(ins.error());
    if (!setFree) return std::unexpected(setFree.error());
    if (!setRun) return std::unexpected(setRun.error());
    auto opt = [](const std::optional<uint64_t>& v) -> std::optional<int64_t> {
        if (!v) return std::nullopt;
        return static_cast<int64_t>(*v);
    };
    for (const auto& a : log.allocations) {
        auto rec = recording(a.pid, a.start_line);
        if (!rec) return std::unexpected(rec.error());
        const Recording& r = **rec;
        bool ended = r.ended_wall_us.has_value();
        same->bind(1, a.pid)
            .bind(2, static_cast<int64_t>(a.ptr))
            .bind(3, static_cast<int64_t>(a.end));
        same->bind(4, a.kind).bind(5, a.api).bind(6, a.tid).bind(7, a.wall_us).bind(8, a.mono_us);
        same->bind(9, static_cast<int64_t>(a.line)).bind(10, r.key);
        auto found = same->step();
        if (!found) return std::unexpected(found.error());
        std::optional<int64_t> dup;
        bool dupOpen = false, dupElsewhere = false;
        if (*found) {
            dup = same->i64(0);
            dupOpen = same->i64(1) != 0;
            dupElsewhere = same->i64(2) != source_id;
        }
        same->reset();
        bool freeAfterEnd =
            a.free_line && ended &&
            ((read_after_end && !r.exec) || timedAfterEnd(r, a.freed_wall_us, a.freed_mono_us));
        if (dup) {
            out.duplicates += dupElsewhere ? 1 : 0;  // a re-read of this file is not counted
            if (run_id) {
                setRun->bind(1, *dup).bind(2, *run_id);
                if (auto u = setRun->run(); !u) return std::unexpected(u.error());
            }
            if (!a.free_line || !dupOpen) continue;
            if (freeAfterEnd) {
                afterEnd(r, *a.free_line, a.pid);
                continue;
            }
            setFree->bind(1, *dup).bind(2, opt(a.free_line)).bind(3, a.free_api);
            setFree->bind(4, a.freed_wall_us).bind(5, a.freed_mono_us).bind(6, source_id);
            setFree->bind(7, run_id);
            if (auto u = setFree->run(); !u) return std::unexpected(u.error());
            continue;
        }
        if (ended && ((read_after_end && !r.exec) || timedAfterEnd(r, a.wall_us, a.mono_us))) {
            afterEnd(r, a.line, a.pid);
            continue;
        }
        if (freeAfterEnd) afterEnd(r, *a.free_line, a.pid);
        ins->bind(1, source_id).bind(2, run_id).bind(3, static_cast<int64_t>(a.line));
        ins->bind(4, a.pid).bind(5, a.tid).bind(6, a.kind).bind(7, a.api).bind(8, a.mem);
        ins->bind(9, a.device).bind(10, static_cast<int64_t>(a.ptr));
        ins->bind(11, static_cast<int64_t>(a.end)).bind(12, opt(a.handle));
        ins->bind(13, a.wall_us).bind(14, a.mono_us);
        ins->bind(15, a.stack.empty() ? std::optional<std::string>() : a.stack);
        if (freeAfterEnd) {
            ins->bind(16, nullptr).bind(17, nullptr).bind(18, nullptr).bind(19, nullptr);
        } else {
            ins->bind(16, opt(a.free_line)).bind(17, a.free_api);
            ins->bind(18, a.freed_wall_us).bind(19, a.freed_mono_us);
        }
        ins->bind(20, static_cast<int64_t>(a.start_line));
        if (auto u = ins->run(); !u) return std::unexpected(u.error());
        ++out.added;
    }
    // 4. Frees of allocations stored before: the latest allocation of the pointer its
    //    recording made before the free, in whichever source holds it (this file's own row of
    //    `alloc_line` first).
    if (!log.late_frees.empty()) {
        auto target = db_.prepare(
            "SELECT a.id, a.free_line IS NULL, CASE WHEN a.free_line IS NOT NULL AND "
            "ifnull(a.free_source_id, a.source_id) = ?7 AND a.free_line <> ?9 THEN a.free_line "
            "END FROM allocations a JOIN alloc_processes p ON "
            "p.source_id = a.source_id AND p.pid = a.pid AND p.line = a.start_line WHERE a.pid = "
            "?1 AND a.ptr = ?2 AND a.kind = ?3 AND p.recording = ?4 AND CASE WHEN ?5 IS NOT NULL "
            "AND a.mono_us IS NOT NULL THEN a.mono_us <= ?5 WHEN ?6 IS NOT NULL AND a.wall_us IS "
            "NOT NULL THEN a.wall_us <= ?6 ELSE 1 END ORDER BY (a.source_id = ?7 AND a.line = ?8) "
            "DESC, a.mono_us DESC, a.wall_us DESC, a.id DESC LIMIT 1");
        if (!target) return std::unexpected(target.error());
        for (const auto& f : log.late_frees) {
            auto rec = recording(f.pid, f.start_line);
            if (!rec) return std::unexpected(rec.error());
            const Recording& r = **rec;
            target->bind(1, f.pid).bind(2, static_cast<int64_t>(f.ptr)).bind(3, f.kind);
            target->bind(4, r.key).bind(5, f.freed_mono_us).bind(6, f.freed_wall_us);
            target->bind(7, source_id).bind(8, static_cast<int64_t>(f.alloc_line));
            target->bind(9, static_cast<int64_t>(f.free_line));
            auto found = target->step();
            if (!found) return std::unexpected(found.error());
            std::optional<int64_t> id, freedAt;
            bool open = false;
            if (*found) {
                id = target->i64(0);
                open = target->i64(1) != 0;
                freedAt = target->optI64(2);
            }
            target->reset();
            if (!id) continue;  // still without an allocation: its warning stays
            if (freedAt) {  // freed before by this file, at another line: a double free
                doubleFrees[f.free_line] = *freedAt;
                continue;
            }
            if (f.alloc_line == 0) freesFound.insert(f.free_line);
            if (!open) continue;  // freed already: the same free through another file
            if (r.ended_wall_us && ((read_after_end && !r.exec) ||
                                    timedAfterEnd(r, f.freed_wall_us, f.freed_mono_us))) {
                afterEnd(r, f.free_line, f.pid);
                continue;
            }
            setFree->bind(1, *id).bind(2, static_cast<int64_t>(f.free_line)).bind(3, f.free_api);
            setFree->bind(4, f.freed_wall_us).bind(5, f.freed_mono_us).bind(6, source_id);
            setFree->bind(7, run_id);
            if (auto u = setFree->run(); !u) return std::unexpected(u.error());
            ++out.frees;
        }
    }
    // 5. An exec: a later `start` record of the same process (boot, pid namespace, pid, start
    //    ticks) is the next program image; the images before it end at its start (exact:
    //    ended_by 'exec'), so their buffers, whose address space is gone, meet no later fault.
    //    Only the images from the one before this piece's first are read (in start order):
    //    the ends of earlier ones do not change (hostile review 155, HIGH 1: every image was
    //    compared with every other, 10 000 `start` records took 131 s).
    if (auto r = endImagesByExec(log); !r) return std::unexpected(r.error());
    // 6. Warnings: the log's, less "no open allocation in this file" for frees found stored;
    //    a free of what this file freed before says so (hostile review 17, i4 M4).
    constexpr std::string_view kUnmatched = "with no open allocation in this file";
    for (const auto& w : log.warnings) {
        if (!w.message.ends_with(kUnmatched)) {
            warnings.push_back(w);
        } else if (auto d = doubleFrees.find(w.line); d != doubleFrees.end()) {
            auto what = w.message.substr(0, w.message.size() - kUnmatched.size());
            warnings.push_back(
                {w.line, fmt::format("{}freed already at line {} (a double free)", what, d->second)});
        } else if (!freesFound.contains(w.line)) {
            warnings.push_back(w);
        }
    }
    std::stable_sort(warnings.begin(), warnings.end(), [](const auto& x, const auto& y) {
        return x.line < y.line;
    });
    for (const auto& w : warnings)
        if (auto r = addWarning(source_id, Warning{w.line, w.message}); !r)
            return std::unexpected(r.error());
    out.warnings = std::move(warnings);
    return out;
}

db::Result<void> Store::markAllocProcessEnded(int64_t source_id,
                                              int64_t pid,
                                              int64_t wall_us,
                                              int64_t mono_us,
                                              std::optional<int64_t> running_ticks) {
    // Every row of the same recording: earlier generations of a file cut short, the file
    // re-created, copies.
    auto upd = db_.prepare(
        "UPDATE alloc_processes SET ended_wall_us = ?3, ended_mono_us = ?4 WHERE ended_wall_us IS "
        "NULL AND pid = ?2 AND recording IN (SELECT recording FROM alloc_processes WHERE "
        "source_id = ?1 AND pid = ?2 AND ended_wall_us IS NULL AND (?5 IS NULL OR start_ticks IS "
        "NOT ?5))");
    if (!upd) return std::unexpected(upd.error());
    upd->bind(1, source_id).bind(2, pid).bind(3, wall_us).bind(4, mono_us).bind(5, running_ticks);
    return upd->run();
}

}  // namespace gpufault
