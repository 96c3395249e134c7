#include "schema/core_queries.h"

#include <fmt/format.h>

namespace gpufault {

namespace {

constexpr const char* kCoreColumns =
    "c.id, c.evidence_id, (SELECT min(m.incident_id) FROM incident_evidence m WHERE "
    "m.evidence_id = c.evidence_id), (SELECT count(*) FROM threads t WHERE t.core_id = c.id), "
    "c.kind, c.path, c.size, c.time, c.time_from, c.pid, c.tid, c.uid, c.signal, c.si_code, "
    "c.process, c.si_addr, c.e_machine, c.signature, c.signature_frames, c.threads_truncated, "
    "c.modules_missing, c.runtimes, c.meta, c.seconds, c.origin, c.note, c.exe";

CoreRow readCore(const db::Stmt& s) {
    CoreRow r;
    int i = 0;
    r.id = s.i64(i++);
    r.evidence_id = s.optI64(i++);
    r.incident = s.optI64(i++);
    r.threads = s.i64(i++);
    auto& c = r.core;
    c.kind = s.str(i++);
    c.path = s.str(i++);
    c.size = s.i64(i++);
    c.time = s.i64(i++);
    c.time_from = s.str(i++);
    c.pid = s.optI64(i++);
    c.tid = s.optI64(i++);
    c.uid = s.optI64(i++);
    c.signal = s.optI64(i++);
    c.si_code = s.optI64(i++);
    c.process = s.optStr(i++);
    if (auto a = s.optI64(i++)) c.signal_addr = static_cast<uint64_t>(*a);
    c.e_machine = s.i64(i++);
    c.signature = s.optStr(i++);
    c.signature_frames = s.optStr(i++).value_or("[]");
    c.threads_truncated = s.i64(i++) != 0;
    c.modules_missing = s.optStr(i++).value_or("[]");
    c.runtimes = s.optStr(i++).value_or("{}");
    c.meta = s.optStr(i++);
    c.seconds = s.f64(i++);
    c.origin = s.str(i++);
    c.note = s.optStr(i++);
    c.exe = s.optStr(i++);
    return r;
}

db::Result<std::vector<CoreRow>> collectCores(db::Stmt& s) {
    std::vector<CoreRow> out;
    for (;;) {
        auto row = s.step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.push_back(readCore(s));
    }
    return out;
}

}  // namespace

db::Result<std::vector<CoreRow>> queryCores(db::Db& d, std::optional<int64_t> id) {
    auto s = d.prepare(fmt::format(
        "SELECT {} FROM cores c WHERE ?1 IS NULL OR c.id = ?1 ORDER BY c.id", kCoreColumns));
    if (!s) return std::unexpected(s.error());
    s->bind(1, id);
    return collectCores(*s);
}

db::Result<std::vector<CoreRow>> queryIncidentCores(db::Db& d, int64_t incident) {
    auto s = d.prepare(fmt::format(
        "SELECT {} FROM cores c JOIN incident_evidence m ON m.evidence_id = c.evidence_id WHERE "
        "m.incident_id = ?1 ORDER BY c.id",
        kCoreColumns));
    if (!s) return std::unexpected(s.error());
    s->bind(1, incident);
    return collectCores(*s);
}

db::Result<std::vector<coredump::Thread>> queryCoreThreads(db::Db& d, int64_t core, bool all) {
    auto s = d.prepare(
        "SELECT t.id, t.tid, t.crashed, t.frames_truncated, t.unwind_error, f.n, f.pc, f.module, "
        "f.build_id, f.module_offset, f.symbol, f.symbol_offset, f.file, f.line FROM threads t "
        "LEFT JOIN frames f ON f.thread_id = t.id WHERE t.core_id = ?1 AND (?2 OR t.crashed) "
        "ORDER BY t.crashed DESC, t.id, f.n");
    if (!s) return std::unexpected(s.error());
    s->bind(1, core).bind(2, static_cast<int64_t>(all));
    std::vector<coredump::Thread> out;
    int64_t last = -1;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        if (s->i64(0) != last) {
            last = s->i64(0);
            coredump::Thread t;
            t.tid = s->i64(1);
            t.crashed = s->i64(2) != 0;
            t.frames_truncated = s->i64(3) != 0;
            t.error = s->optStr(4);
            out.push_back(std::move(t));
        }
        if (s->isNull(5)) continue;
        coredump::Frame f;
        f.pc = static_cast<uint64_t>(s->i64(6));
        f.activation = s->i64(5) == 0;
        f.module = s->optStr(7);
        f.build_id = s->optStr(8);
        if (auto v = s->optI64(9)) f.module_offset = static_cast<uint64_t>(*v);
        f.symbol = s->optStr(10);
        if (auto v = s->optI64(11)) f.symbol_offset = static_cast<uint64_t>(*v);
        f.file = s->optStr(12);
        f.line = s->optI64(13);
        out.back().frames.push_back(std::move(f));
    }
    return out;
}

db::Result<std::map<int64_t, std::string>> queryStackSignatures(db::Db& d) {
    auto s = d.prepare(
        "SELECT m2.evidence_id, c.signature FROM cores c JOIN incident_evidence m ON "
        "m.evidence_id = c.evidence_id JOIN incident_evidence m2 ON m2.incident_id = "
        "m.incident_id WHERE c.signature IS NOT NULL ORDER BY c.id");
    if (!s) return std::unexpected(s.error());
    std::map<int64_t, std::string> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.emplace(s->i64(0), s->str(1));
    }
    return out;
}

db::Result<std::optional<std::pair<int64_t, std::string>>> queryCoreByFingerprint(
    db::Db& d, const std::string& fingerprint) {
    auto st = d.prepare(
        "SELECT c.id, c.path FROM sources s JOIN cores c ON c.source_id = s.id WHERE "
        "s.complete = 1 AND c.content_fingerprint = ?1 ORDER BY c.id LIMIT 1");
    if (!st) return std::unexpected(st.error());
    st->bind(1, fingerprint);
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return std::optional<std::pair<int64_t, std::string>>{};
    return std::optional<std::pair<int64_t, std::string>>{std::pair{st->i64(0), st->str(1)}};
}

db::Result<std::optional<int64_t>> queryCoreSource(db::Db& d, int64_t core) {
    auto st = d.prepare("SELECT source_id FROM cores WHERE id = ?1");
    if (!st) return std::unexpected(st.error());
    st->bind(1, core);
    auto row = st->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return std::optional<int64_t>{};
    return std::optional<int64_t>{st->i64(0)};
}

db::Result<std::vector<CoreCandidate>> queryCoresByHeadFingerprint(db::Db& d,
                                                                   const std::string& head) {
    auto st = d.prepare(
        "SELECT c.id, c.path, c.pid, c.tid FROM sources s JOIN cores c ON c.source_id = s.id WHERE "
        "s.complete = 1 AND (c.content_fingerprint IS NULL OR c.content_fingerprint NOT LIKE "
        "'core2-%') AND (c.content_fingerprint = ?1 OR (s.kind = 'core' AND s.fingerprint = ?1)) "
        "ORDER BY c.id");
    if (!st) return std::unexpected(st.error());
    st->bind(1, head);
    std::vector<CoreCandidate> out;
    for (;;) {
        auto row = st->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        CoreCandidate c{st->i64(0), st->str(1), {}, {}};
        if (!st->isNull(2)) c.pid = st->i64(2);
        if (!st->isNull(3)) c.tid = st->i64(3);
        out.push_back(std::move(c));
    }
    return out;
}

db::Result<std::vector<CrashCandidate>> queryCoresOfCrash(db::Db& d,
                                                          int64_t tid,
                                                          std::optional<int64_t> signal,
                                                          std::optional<int64_t> fault_address,
                                                          const std::string& process) {
    auto st = d.prepare(
        "SELECT c.id, c.source_id, c.path, c.content_fingerprint FROM sources s JOIN cores c ON "
        "c.source_id = s.id WHERE s.complete = 1 AND c.content_fingerprint LIKE 'core2-%' AND "
        "c.tid = ?1 AND c.signal IS ?2 AND c.si_addr IS ?3 AND c.process = ?4 ORDER BY c.id");
    if (!st) return std::unexpected(st.error());
    st->bind(1, tid).bind(2, signal).bind(3, fault_address).bind(4, process);
    std::vector<CrashCandidate> out;
    for (;;) {
        auto row = st->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.push_back(CrashCandidate{st->i64(0), st->i64(1), st->str(2), st->str(3)});
    }
    return out;
}

db::Result<std::vector<EntryCrashCandidate>> queryCoresOfEntryCrash(
    db::Db& d, int64_t pid, int64_t signal, const std::string& process, bool with_file) {
    auto st = d.prepare(
        "SELECT c.id, c.source_id, c.path, c.origin, c.time, c.exe FROM sources s JOIN cores c ON "
        "c.source_id = s.id WHERE s.complete = 1 AND c.kind = 'cpu' AND c.pid = ?1 AND c.signal "
        "= ?2 AND c.process = ?3 AND (CASE WHEN ?4 THEN c.content_fingerprint IS NOT NULL ELSE "
        "c.content_fingerprint IS NULL AND c.origin IN ('systemd-coredump', 'systemd-coredump "
        "(untrusted)', 'apport') END) ORDER BY c.id LIMIT 64");
    if (!st) return std::unexpected(st.error());
    st->bind(1, pid).bind(2, signal).bind(3, process).bind(4, int64_t{with_file});
    std::vector<EntryCrashCandidate> out;
    for (;;) {
        auto row = st->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.push_back(EntryCrashCandidate{
            st->i64(0), st->i64(1), st->str(2), st->str(3), st->i64(4), st->optStr(5)});
    }
    return out;
}

db::Result<std::vector<ApportCandidate>> queryApportCoresOfCrash(db::Db& d,
                                                                 const std::string& exe,
                                                                 int64_t time,
                                                                 std::optional<int64_t> pid) {
    auto st = d.prepare(
        "SELECT c.id, c.source_id, c.path, c.content_fingerprint IS NULL FROM sources s JOIN "
        "cores c ON c.source_id = s.id WHERE s.complete = 1 AND c.origin = 'apport' AND c.exe = "
        "?1 AND c.time = ?2 AND (?3 IS NULL OR c.pid IS NULL OR c.pid = ?3) ORDER BY c.id");
    if (!st) return std::unexpected(st.error());
    st->bind(1, exe).bind(2, time).bind(3, pid);
    std::vector<ApportCandidate> out;
    for (;;) {
        auto row = st->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.push_back(ApportCandidate{st->i64(0), st->i64(1), st->str(2), st->i64(3) != 0});
    }
    return out;
}

}  // namespace gpufault
