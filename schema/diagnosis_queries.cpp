#include "schema/diagnosis_queries.h"

#include <nlohmann/json.hpp>

#include "collectors/common/evidence.h"

namespace gpufault {

namespace {

constexpr const char* kDeviceColumns =
    "d.id, d.host, ifnull(d.boot_id, ''), d.taken_at, d.vendor, d.node, ifnull(d.pci, ''), "
    "ifnull(d.target, ''), ifnull(d.name, ''), ifnull(d.uuid, ''), ifnull(d.vbios, ''), "
    "ifnull(d.driver, ''), d.render_minor, d.vram_total";

db::Result<std::vector<DeviceRecord>> collectDevices(db::Stmt& s) {
    std::vector<DeviceRecord> out;
    for (;;) {
        auto row = s.step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        DeviceRecord r;
        int i = 0;
        r.id = s.i64(i++);
        r.host = s.str(i++);
        r.boot_id = s.str(i++);
        r.taken_at = s.str(i++);
        r.vendor = s.str(i++);
        r.node = s.optI64(i++);
        r.pci = s.str(i++);
        r.target = s.str(i++);
        r.name = s.str(i++);
        r.uuid = s.str(i++);
        r.vbios = s.str(i++);
        r.driver = s.str(i++);
        r.render_minor = s.optI64(i++);
        if (auto v = s.optI64(i++)) r.vram_total = static_cast<uint64_t>(*v);
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<std::string> strings(const std::string& json) {
    auto j = nlohmann::json::parse(json, nullptr, false);
    std::vector<std::string> out;
    if (j.is_array())
        for (const auto& x : j)
            if (x.is_string()) out.push_back(x.get<std::string>());
    return out;
}

}  // namespace

db::Result<int> recordDevices(db::Db& d, const std::vector<DeviceRecord>& devices) {
    if (auto r = d.exec("BEGIN IMMEDIATE"); !r) return std::unexpected(r.error());
    auto ins = d.prepare(
        "INSERT INTO devices(host, boot_id, taken_at, vendor, node, pci, target, name, uuid, "
        "vbios, driver, render_minor, vram_total) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
        "?11, ?12, ?13) ON CONFLICT(host, vendor, ifnull(pci, ''), ifnull(node, -1)) DO UPDATE "
        "SET boot_id=excluded.boot_id, taken_at=excluded.taken_at, target=excluded.target, "
        "name=excluded.name, uuid=excluded.uuid, vbios=excluded.vbios, driver=excluded.driver, "
        "render_minor=excluded.render_minor, vram_total=excluded.vram_total");
    if (!ins) {
        (void)d.exec("ROLLBACK");
        return std::unexpected(ins.error());
    }
    int n = 0;
    for (const auto& v : devices) {
        ins->bind(1, v.host).bind(2, v.boot_id).bind(3, v.taken_at).bind(4, v.vendor);
        ins->bind(5, v.node).bind(6, v.pci).bind(7, v.target).bind(8, v.name).bind(9, v.uuid);
        ins->bind(10, v.vbios).bind(11, v.driver).bind(12, v.render_minor).bind(13, v.vram_total);
        if (auto r = ins->run(); !r) {
            (void)d.exec("ROLLBACK");
            return std::unexpected(r.error());
        }
        ++n;
    }
    if (auto r = d.exec("COMMIT"); !r) return std::unexpected(r.error());
    return n;
}

db::Result<std::vector<DeviceRecord>> queryStoredDevices(db::Db& d) {
    auto s = d.prepare(std::string("SELECT ") + kDeviceColumns +
                       " FROM devices d ORDER BY d.taken_at DESC, d.id");
    if (!s) return std::unexpected(s.error());
    return collectDevices(*s);
}

db::Result<std::vector<DeviceRecord>> queryEvidenceDevices(db::Db& d, int64_t evidence_id) {
    auto s = d.prepare(std::string("SELECT ") + kDeviceColumns +
                       " FROM evidence_device l JOIN devices d ON d.id = l.device_id WHERE "
                       "l.evidence_id = ?1 ORDER BY d.taken_at DESC, d.id");
    if (!s) return std::unexpected(s.error());
    s->bind(1, evidence_id);
    return collectDevices(*s);
}

db::Result<std::optional<std::string>> diagnosisInputs(db::Db& d, int64_t evidence_id) {
    auto s = d.prepare("SELECT inputs FROM diagnoses WHERE evidence_id = ?1 LIMIT 1");
    if (!s) return std::unexpected(s.error());
    s->bind(1, evidence_id);
    auto row = s->step();
    if (!row) return std::unexpected(row.error());
    if (!*row) return std::optional<std::string>();
    return std::optional<std::string>(s->str(0));
}

db::Result<std::vector<int64_t>> queryDiagnosisCandidates(db::Db& d) {
    auto s = d.prepare(
        "SELECT DISTINCT m.incident_id FROM evidence e JOIN incident_evidence m ON m.evidence_id "
        "= e.id WHERE e.kind IN (?1, ?2) AND m.role = 'member' ORDER BY m.incident_id");
    if (!s) return std::unexpected(s.error());
    s->bind(1, kindName(Kind::MissingCodeObject)).bind(2, kindName(Kind::Coredump));
    std::vector<int64_t> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) return out;
        out.push_back(s->i64(0));
    }
}

db::Result<void> replaceDiagnosis(db::Db& d, const Diagnosis& dg) {
    if (auto r = d.exec("BEGIN IMMEDIATE"); !r) return r;
    auto fail = [&](const db::Error& e) -> db::Result<void> {
        (void)d.exec("ROLLBACK");
        return std::unexpected(e);
    };
    auto del = d.prepare("DELETE FROM diagnoses WHERE evidence_id = ?1");
    if (!del) return fail(del.error());
    del->bind(1, dg.evidence_id);
    if (auto r = del->run(); !r) return fail(r.error());
    auto ins = d.prepare(
        "INSERT INTO diagnoses(evidence_id, rule, why, inputs, n, verdict, module, bundle, "
        "offset, has, kernels, device_target, device, device_from, detail, created_at) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
    if (!ins) return fail(ins.error());
    int64_t n = 0;
    for (const auto& f : dg.findings) {
        ins->bind(1, dg.evidence_id).bind(2, dg.rule).bind(3, dg.why).bind(4, dg.inputs);
        ins->bind(5, n++).bind(6, f.verdict).bind(7, f.module).bind(8, f.bundle);
        ins->bind(9, f.offset).bind(10, nlohmann::json(f.has).dump());
        ins->bind(11, nlohmann::json(f.kernels).dump()).bind(12, f.device_target);
        ins->bind(13, f.device).bind(14, f.device_from).bind(15, f.detail);
        ins->bind(16, dg.created_at);
        if (auto r = ins->run(); !r) return fail(r.error());
    }
    return d.exec("COMMIT");
}

db::Result<std::vector<std::string>> queryCoreFilePaths(db::Db& d, int64_t core) {
    auto s = d.prepare("SELECT path FROM core_files WHERE core_id = ?1 ORDER BY start");
    if (!s) return std::unexpected(s.error());
    s->bind(1, core);
    std::vector<std::string> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        out.push_back(s->str(0));
    }
    return out;
}

db::Result<std::vector<Diagnosis>> queryIncidentDiagnoses(db::Db& d, int64_t incident) {
    auto s = d.prepare(
        "SELECT g.evidence_id, g.rule, g.why, g.inputs, g.created_at, g.verdict, "
        "ifnull(g.module, ''), g.bundle, g.offset, ifnull(g.has, '[]'), ifnull(g.kernels, '[]'), "
        "ifnull(g.device_target, ''), ifnull(g.device, ''), ifnull(g.device_from, ''), "
        "ifnull(g.detail, '') FROM diagnoses g WHERE g.evidence_id IN (SELECT evidence_id FROM "
        "incident_evidence WHERE incident_id = ?1 AND role = 'member') ORDER BY g.evidence_id, "
        "g.n");
    if (!s) return std::unexpected(s.error());
    s->bind(1, incident);
    std::vector<Diagnosis> out;
    for (;;) {
        auto row = s->step();
        if (!row) return std::unexpected(row.error());
        if (!*row) break;
        int64_t ev = s->i64(0);
        if (out.empty() || out.back().evidence_id != ev) {
            out.push_back({ev, s->str(1), s->str(2), s->str(3), s->str(4), {}});
        }
        DiagnosisFinding f;
        f.verdict = s->str(5);
        f.module = s->str(6);
        f.bundle = s->optI64(7);
        if (auto o = s->optI64(8)) f.offset = static_cast<uint64_t>(*o);
        f.has = strings(s->str(9));
        f.kernels = strings(s->str(10));
        f.device_target = s->str(11);
        f.device = s->str(12);
        f.device_from = s->str(13);
        f.detail = s->str(14);
        out.back().findings.push_back(std::move(f));
    }
    return out;
}

}  // namespace gpufault
