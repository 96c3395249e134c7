#include "analysis/diagnose.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "analysis/mapped_file.h"
#include "collectors/common/text.h"
#include "schema/core_queries.h"
#include "schema/diagnosis_queries.h"

namespace gpufault::diagnosis {

namespace {

namespace fs = std::filesystem;

/// FNV-1a, 64 bit, as hex: a stable digest of the inputs text.
std::string digest(const std::string& s) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return fmt::format("{:016x}", h);
}

/// `size mtime` of a file, "missing" when it cannot be stat'ed.
std::string fileStamp(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return "missing";
    return fmt::format("{} {}.{}", st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

/// Kernel library file paths directly in `dir`; nullopt when it cannot be read.
std::optional<std::vector<std::string>> listDir(const std::string& dir) {
    std::error_code ec;
    std::vector<std::string> out;
    fs::directory_iterator it(dir, ec);
    if (ec) return std::nullopt;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
        if (ec) return std::nullopt;
        out.push_back(it->path().string());
    }
    return out;
}

struct ModuleCounts {
    size_t read = 0, with_code = 0, missing = 0;
    std::vector<std::string> missing_names;
};

/// Inventories one module and appends its findings for every device.
void checkOne(const ModuleRef& m,
              const std::vector<DeviceChoice>& devices,
              const codeobj::InventoryOptions& opt,
              ModuleCounts& counts,
              std::vector<Finding>& out) {
    MappedFile f;
    if (auto err = f.open(m.path); !err.empty()) {
        ++counts.missing;
        if (counts.missing_names.size() < 3) counts.missing_names.push_back(m.path + ": " + err);
        return;
    }
    ++counts.read;
    if (!codeobj::looksLikeCodeContainer(f.bytes())) return;
    // Headers first; kernel names (every code object's symbol table) only when a bundle lacks
    // code, as `gpufault codeobj` does.
    codeobj::InventoryOptions fast = opt;
    fast.kernels = false;
    auto inv = codeobj::inventory(f.bytes(), fast);
    if (inv && opt.kernels) {
        for (const auto& d : devices) {
            auto found = checkModule(m.path, *inv, d);
            if (std::ranges::any_of(found,
                                    [](const Finding& x) { return x.verdict == "no_code"; })) {
                inv = codeobj::inventory(f.bytes(), opt);
                break;
            }
        }
    }
    if (f.shrank()) {  // cut short while read: what was read past its end was zeros
        ++counts.missing;
        if (counts.missing_names.size() < 3)
            counts.missing_names.push_back(m.path + ": cut short while it was read");
        return;
    }
    if (!inv) {
        Finding x;
        x.verdict = "unreadable";
        x.module = m.path;
        x.detail = fmt::format("offset 0x{:x}: {}", inv.error().offset, inv.error().message);
        out.push_back(std::move(x));
        return;
    }
    if (inv->bundles.empty()) return;
    ++counts.with_code;
    for (const auto& d : devices) {
        auto found = checkModule(m.path, *inv, d);
        out.insert(out.end(), found.begin(), found.end());
    }
    for (const auto& e : inv->errors) {
        Finding x;
        x.verdict = "unreadable";
        x.module = m.path;
        x.detail = fmt::format("offset 0x{:x}: {}", e.offset, e.message);
        out.push_back(std::move(x));
    }
}

Diagnosis compute(const Facts& facts, const Trigger& t, const codeobj::InventoryOptions& opt) {
    Diagnosis dg;
    dg.evidence_id = t.evidence_id;
    dg.rule = t.rule;
    dg.why = t.why;
    dg.created_at = text::utcNowIso();
    auto devices = deviceTargets(facts);
    if (devices.empty()) {
        Finding x;
        x.verdict = "no_device";
        x.detail =
            "no device target known: no record names one and no GPU is recorded "
            "(`gpufault devices --record` on the host) or on this machine";
        dg.findings.push_back(std::move(x));
    }
    for (const auto& d : devices) {
        Finding x;
        x.verdict = "device";
        x.device_target = d.target;
        x.device = d.device;
        x.device_from = d.from;
        dg.findings.push_back(std::move(x));
    }
    for (const auto& d : devices) {
        auto listed = checkRuntimeListing(facts, d);
        dg.findings.insert(dg.findings.end(), listed.begin(), listed.end());
    }
    for (const auto& dir : libraryDirs(facts)) {
        auto names = listDir(dir);
        if (!names) {
            Finding x;
            x.verdict = "unreadable";
            x.module = dir;
            x.detail = "kernel library directory not found on this machine";
            dg.findings.push_back(std::move(x));
            continue;
        }
        auto groups = codeobj::groupKernelLibraries(*names);
        codeobj::KernelLibraryDir lib =
            groups.empty() ? codeobj::KernelLibraryDir{dir, {}} : groups.front();
        for (const auto& d : devices) dg.findings.push_back(checkLibraryDir(lib, d));
    }
    auto mods = modules(facts);
    ModuleCounts counts;
    for (const auto& m : mods) checkOne(m, devices, opt, counts, dg.findings);
    if (!mods.empty()) {
        Finding x;
        x.verdict = "modules";
        x.detail = fmt::format("{} module{} named, {} read, {} with GPU code",
                               mods.size(),
                               mods.size() == 1 ? "" : "s",
                               counts.read,
                               counts.with_code);
        if (counts.missing) {
            x.detail += fmt::format("; {} not read here (", counts.missing);
            for (size_t i = 0; i < counts.missing_names.size(); ++i)
                x.detail += (i ? ", " : "") + counts.missing_names[i];
            x.detail += counts.missing > counts.missing_names.size() ? ", …)" : ")";
        }
        dg.findings.push_back(std::move(x));
    }
    return dg;
}

/// What a diagnosis depends on, as one text (digested).
std::string inputsOf(const Facts& facts, const Trigger& t) {
    std::string s = fmt::format("{} {}\n", t.rule, t.evidence_id);
    for (const auto& d : deviceTargets(facts))
        s += fmt::format("device {} {}\n", d.target, d.device);
    for (const auto& m : modules(facts))
        s += fmt::format("module {} {}\n", m.path, fileStamp(m.path));
    for (const auto& dir : libraryDirs(facts)) s += fmt::format("dir {} {}\n", dir, fileStamp(dir));
    for (const auto& m : facts.members)
        if (auto b = m.e.attr("bundles")) s += fmt::format("listing {} {}\n", m.id, *b);
    return digest(s);
}

}  // namespace

db::Result<Facts> loadFacts(db::Db& d, int64_t incident, const std::vector<DeviceFact>& devices) {
    Facts f;
    f.devices = devices;
    auto members = queryIncidentMembers(d, incident);
    if (!members) return std::unexpected(members.error());
    for (auto& m : *members)
        if (m.role == "member") f.members.push_back(std::move(m.ev));
    auto cores = queryIncidentCores(d, incident);
    if (!cores) return std::unexpected(cores.error());
    for (const auto& c : *cores) {
        if (!c.evidence_id) continue;
        CoreFacts cf;
        cf.evidence_id = *c.evidence_id;
        cf.signal = c.core.signal;
        cf.fault_addr = c.core.signal_addr;
        cf.exe = c.core.exe;
        auto th = queryCoreThreads(d, c.id, false);
        if (!th) return std::unexpected(th.error());
        if (!th->empty()) cf.frames = th->front().frames;
        auto files = queryCoreFilePaths(d, c.id);
        if (!files) return std::unexpected(files.error());
        cf.files = std::move(*files);
        f.cores.push_back(std::move(cf));
    }
    auto procs = queryProcesses(d, incident);
    if (!procs) return std::unexpected(procs.error());
    for (const auto& p : *procs)
        for (const auto& m : p.p.modules) f.process_modules.push_back(m.path);
    return f;
}

db::Result<DiagnoseSummary> diagnoseIncidents(db::Db& d, const DiagnoseOptions& o) {
    DiagnoseSummary sum;
    auto incidents = queryDiagnosisCandidates(d);
    if (!incidents) return std::unexpected(incidents.error());
    std::optional<std::vector<DeviceFact>> devices;
    for (int64_t id : *incidents) {
        if (o.stop && o.stop()) return std::unexpected(db::Error{"interrupted"});
        auto facts = loadFacts(d, id, {});
        if (!facts) return std::unexpected(facts.error());
        auto t = trigger(*facts);
        if (!t) continue;
        if (!devices) {
            auto stored = queryStoredDevices(d);
            if (!stored) return std::unexpected(stored.error());
            devices.emplace();
            for (const auto& r : *stored)
                devices->push_back(
                    {r.vendor,
                     r.target,
                     r.pci,
                     r.node,
                     fmt::format("devices recorded on {} at {}", r.host, r.taken_at)});
            if (devices->empty() && o.local_devices) *devices = o.local_devices();
        }
        facts->devices = *devices;
        std::string inputs = inputsOf(*facts, *t);
        auto old = diagnosisInputs(d, t->evidence_id);
        if (!old) return std::unexpected(old.error());
        if (*old == inputs) {
            ++sum.unchanged;
            continue;
        }
        Diagnosis dg = compute(*facts, *t, o.inventory);
        dg.inputs = inputs;
        if (auto r = replaceDiagnosis(d, dg); !r) return std::unexpected(r.error());
        ++sum.diagnosed;
    }
    return sum;
}

}  // namespace gpufault::diagnosis
