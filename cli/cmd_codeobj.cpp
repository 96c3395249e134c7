// gpufault codeobj: which GPU targets a binary carries, and which bundles lack a device's code.
// I/O lives here (mmap, directory walk); the parsing is collectors/code_object/.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/mapped_file.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "collectors/code_object/compat.h"
#include "collectors/code_object/inventory.h"
#include "collectors/code_object/kernel_library.h"
#include "collectors/common/demangle.h"

namespace gpufault::cli {
namespace {

using namespace codeobj;
namespace fs = std::filesystem;

std::string_view kindName(BundleInfo::Kind k) {
    switch (k) {
        case BundleInfo::Kind::Offload:
            return "bundle";
        case BundleInfo::Kind::CudaFatbin:
            return "fatbin";
        case BundleInfo::Kind::CodeObject:
            return "code object";
    }
    return "?";
}

std::string join(const std::vector<std::string>& v, std::string_view sep = ", ") {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : std::string(sep)) + printable(x);
    return s.empty() ? "nothing" : s;
}

// Whether one of `b`'s targets runs on `want`.
bool hasCodeFor(const BundleInfo& b, const Target& want, const std::string& hsaOverride) {
    for (const auto& t : b.targets()) {
        auto code = parseTarget(t);
        if (code && compatible(*code, want, hsaOverride).runs) return true;
    }
    return false;
}

struct Check {
    std::vector<Target> targets;
    std::string hsa_override;
};

struct FileResult {
    bool input_error = false, check_failed = false;
    bool no_bundles = false;  ///< checked, and the file holds no bundle at all
};

void listInventory(const std::string& path, const Inventory& inv) {
    size_t wrappers = inv.hip_wrappers, cuda = 0;
    for (const auto& b : inv.bundles) cuda += b.kind == BundleInfo::Kind::CudaFatbin;
    std::string what;
    if (inv.bundles.size() > cuda)
        what = counted(static_cast<int64_t>(inv.bundles.size() - cuda),
                       inv.format == "AMDGPU code object" ? "code object" : "offload bundle");
    if (cuda)
        what += fmt::format(
            "{}{} CUDA fat binar{}", what.empty() ? "" : ", ", cuda, cuda == 1 ? "y" : "ies");
    if (what.empty()) what = "no GPU code";
    fmt::print(
        "{}: {}, {}{}\n",
        printable(path),
        inv.format,
        what,
        wrappers
            ? fmt::format(" ({} .hipFatBinSegment wrapper{})", wrappers, wrappers == 1 ? "" : "s")
            : "");
    for (size_t i = 0; i < inv.bundles.size(); ++i) {
        const auto& b = inv.bundles[i];
        std::string comp;
        if (b.compressed)
            comp = fmt::format(", CCOB v{} {} {} → {} bytes",
                               b.compressed->version,
                               b.compressed->method == Compression::Zlib ? "zlib" : "zstd",
                               b.compressed->total_size,
                               b.compressed->uncompressed_size);
        fmt::print("  {} #{} at 0x{:x}, {} bytes{}: {}\n",
                   kindName(b.kind),
                   i + 1,
                   b.offset,
                   b.size,
                   comp,
                   join(b.targets()));
        for (const auto& e : b.entries) {
            std::string line = fmt::format(
                "    {}  +0x{:x} {} bytes", printable(e.entry.id), e.entry.offset, e.entry.size);
            if (e.code)
                line += fmt::format("  code object v{} {} e_flags 0x{:x}",
                                    e.code->code_object_version,
                                    e.code->target.text(),
                                    e.code->e_flags);
            if (!e.code_error.empty()) line += "  (payload: " + printable(e.code_error) + ")";
            fmt::print("{}\n", line);
            if (!e.mismatch.empty()) fmt::print("      MISLABELED: {}\n", e.mismatch);
        }
        for (const auto& e : b.fatbin.entries) {
            std::string line = fmt::format("    {} {}  at 0x{:x} {} bytes",
                                           e.isPtx() ? "PTX" : "ELF",
                                           e.target(),
                                           e.offset,
                                           e.size);
            if (e.isPtx()) line += fmt::format(" (PTX ISA {}.{})", e.major, e.minor);
            if (e.compressed())
                line += fmt::format(" {} {} → {} bytes",
                                    e.flags & 0x8000 ? "zstd" : "lz4",
                                    e.compressed_size,
                                    e.decompressed_size);
            fmt::print("{}\n", line);
            if (!e.mismatch.empty()) fmt::print("      MISLABELED: {}\n", e.mismatch);
        }
    }
}

nlohmann::json toJson(const std::string& path, const Inventory& inv) {
    nlohmann::json j{{"file", path}, {"format", inv.format}, {"hip_wrappers", inv.hip_wrappers}};
    j["bundles"] = nlohmann::json::array();
    for (size_t i = 0; i < inv.bundles.size(); ++i) {
        const auto& b = inv.bundles[i];
        nlohmann::json jb{{"index", i + 1},
                          {"kind", kindName(b.kind)},
                          {"offset", b.offset},
                          {"size", b.size},
                          {"targets", b.targets()},
                          {"kernels", b.kernels()}};
        if (b.compressed)
            jb["compressed"] = {
                {"version", b.compressed->version},
                {"method", b.compressed->method == Compression::Zlib ? "zlib" : "zstd"},
                {"total_size", b.compressed->total_size},
                {"uncompressed_size", b.compressed->uncompressed_size}};
        jb["entries"] = nlohmann::json::array();
        for (const auto& e : b.entries) {
            nlohmann::json je{{"id", e.entry.id},
                              {"target", e.entry.parsed.target},
                              {"offset", e.entry.offset},
                              {"size", e.entry.size}};
            if (e.code)
                je["code_object"] = {{"version", e.code->code_object_version},
                                     {"e_flags", e.code->e_flags},
                                     {"target", e.code->target.text()},
                                     {"kernels", e.code->kernels}};
            if (!e.mismatch.empty()) je["mismatch"] = e.mismatch;
            if (!e.code_error.empty()) je["code_error"] = e.code_error;
            jb["entries"].push_back(je);
        }
        for (const auto& e : b.fatbin.entries) {
            nlohmann::json je{{"kind", e.isPtx() ? "ptx" : "elf"},
                              {"target", e.target()},
                              {"offset", e.offset},
                              {"size", e.size},
                              {"flags", e.flags},
                              {"compressed", e.compressed()}};
            if (e.compressed()) {
                je["compressed_size"] = e.compressed_size;
                je["decompressed_size"] = e.decompressed_size;
            }
            if (!e.mismatch.empty()) je["mismatch"] = e.mismatch;
            jb["entries"].push_back(je);
        }
        j["bundles"].push_back(jb);
    }
    return j;
}

/// Lists or checks one file. `fromDir`: found by a directory walk, where a host-only ELF
/// without bundles is not a failure by itself (the walk as a whole is: cmdCodeobj).
FileResult codeobjFile(const std::string& path,
                       Bytes bytes,
                       const Check& check,
                       const InventoryOptions& opt,
                       bool json,
                       bool fromDir) {
    FileResult r;
    auto inv = inventory(bytes, opt);
    // Kernel names are read only where printed: a second pass when a bundle lacks a target.
    if (inv && !opt.kernels && std::ranges::any_of(inv->bundles, [&](const BundleInfo& b) {
            return std::ranges::any_of(check.targets, [&](const Target& t) {
                return !hasCodeFor(b, t, check.hsa_override);
            });
        })) {
        InventoryOptions again = opt;
        again.kernels = true;
        inv = inventory(bytes, again);
    }
    if (!inv) {
        printText(stderr,
                   "gpufault codeobj: {}: offset 0x{:x}: {}\n",
                   printable(path),
                   inv.error().offset,
                   printable(inv.error().message));
        if (json)
            printJsonLine(
                stdout,
                {{"file", path},
                 {"errors", {{{"offset", inv.error().offset}, {"message", inv.error().message}}}}});
        return {true, false};
    }
    for (const auto& e : inv->errors)
        printText(stderr,
                   "gpufault codeobj: {}: offset 0x{:x}: {}\n",
                   printable(path),
                   e.offset,
                   printable(e.message));
    r.input_error = !inv->errors.empty();
    // Only --json prints the whole inventory; the checks below keep their findings in `j`.
    nlohmann::json j = json ? toJson(path, *inv) : nlohmann::json::object();
    j["errors"] = nlohmann::json::array();
    for (const auto& e : inv->errors)
        j["errors"].push_back({{"offset", e.offset}, {"message", e.message}});
    if (!json && check.targets.empty()) listInventory(path, *inv);
    if (check.targets.empty()) {
        if (json) printJsonLine(stdout, j);
        return r;
    }
    j["missing"] = nlohmann::json::array();
    j["mislabeled"] = nlohmann::json::array();
    if (inv->bundles.empty()) {
        // Nothing to check is not "all 0 have code": a file named for a check fails it.
        r.no_bundles = true;
        r.check_failed = !fromDir;
        j["no_bundles"] = true;
        std::vector<std::string> wanted;
        for (const auto& t : check.targets) wanted.push_back(t.text());
        if (!json)
            fmt::print("{}: no offload bundles ({}, no GPU code): nothing has code for {}\n",
                       printable(path),
                       inv->format,
                       join(wanted));
        else
            printJsonLine(stdout, j);
        return r;
    }
    for (size_t i = 0; i < inv->bundles.size(); ++i) {
        const auto& b = inv->bundles[i];
        for (const auto& e : b.entries)
            if (!e.mismatch.empty()) {
                r.check_failed = true;
                j["mislabeled"].push_back(
                    {{"bundle", i + 1}, {"id", e.entry.id}, {"problem", e.mismatch}});
                if (!json)
                    fmt::print("{}: {} #{} at 0x{:x}: entry {} is mislabeled: {}\n",
                               printable(path),
                               kindName(b.kind),
                               i + 1,
                               b.offset,
                               printable(e.entry.id),
                               e.mismatch);
            }
        for (const auto& e : b.fatbin.entries)
            if (!e.mismatch.empty()) {
                r.check_failed = true;
                j["mislabeled"].push_back(
                    {{"bundle", i + 1}, {"target", e.target()}, {"problem", e.mismatch}});
                if (!json)
                    fmt::print("{}: {} #{} at 0x{:x}: entry {} is mislabeled: {}\n",
                               printable(path),
                               kindName(b.kind),
                               i + 1,
                               b.offset,
                               e.target(),
                               e.mismatch);
            }
        for (const auto& want : check.targets) {
            if (hasCodeFor(b, want, check.hsa_override)) continue;
            r.check_failed = true;
            std::vector<std::string> kernels;
            for (const auto& k : b.kernels()) kernels.push_back(demangle(k));
            j["missing"].push_back({{"bundle", i + 1},
                                    {"offset", b.offset},
                                    {"target", want.text()},
                                    {"has", b.targets()},
                                    {"kernels", kernels}});
            if (json) continue;
            std::string line = fmt::format("{}: {} #{} at 0x{:x}: no code for {} (has {})",
                                           printable(path),
                                           kindName(b.kind),
                                           i + 1,
                                           b.offset,
                                           want.text(),
                                           join(b.targets()));
            if (!kernels.empty()) line += "; kernels: " + join(kernels);
            fmt::print("{}\n", line);
        }
    }
    if (!json) {
        for (const auto& want : check.targets) {
            size_t lacking = 0;
            for (const auto& m : j["missing"]) lacking += m["target"] == want.text();
            if (lacking == 0)
                fmt::print("{}: {}: all {} have code\n",
                           printable(path),
                           want.text(),
                           inv->bundles.size());
            else
                fmt::print("{}: {}: {} of {} lack code\n",
                           printable(path),
                           want.text(),
                           lacking,
                           inv->bundles.size());
        }
    }
    if (json) printJsonLine(stdout, j);
    return r;
}

/// Kernel library files (Tensile) of the directories walked: which targets have files, and
/// for each target checked, whether one runs on it. True when a checked target has none.
bool libraryDirs(const std::vector<std::string>& files, const Check& check, bool json) {
    bool failed = false;
    for (const auto& dir : groupKernelLibraries(files)) {
        nlohmann::json j{{"directory", dir.dir}, {"library_files", dir.files}};
        j["missing"] = nlohmann::json::array();
        std::string has;
        for (const auto& [p, n] : dir.files)
            has += fmt::format("{}{} ({})", has.empty() ? "" : ", ", p, n);
        if (!json && check.targets.empty())
            fmt::print("{}: kernel library files for {}\n", printable(dir.dir), has);
        for (const auto& want : check.targets) {
            if (want.kind != Target::Kind::Amd) continue;
            if (libraryCovers(dir, want.text(), check.hsa_override)) {
                if (!json)
                    fmt::print(
                        "{}: {}: kernel library files present\n", printable(dir.dir), want.text());
                continue;
            }
            failed = true;
            j["missing"].push_back(want.text());
            if (!json)
                fmt::print("{}: no kernel library files for {} (has {})\n",
                           printable(dir.dir),
                           want.text(),
                           has);
        }
        if (json) printJsonLine(stdout, j);
    }
    return failed;
}

/// The targets of this machine's GPUs (`--device` left out); an empty list after saying why.
std::vector<Target> localTargets(const CodeobjOptions& o) {
    std::vector<Target> out;
    auto devs = listDevices(o.sysfs_root, o.proc_root);
    std::string seen;
    for (const auto& d : devs) {
        if (d.target.empty()) {
            printText(stderr,
                       "gpufault codeobj: {} GPU {} ({}): its target is not known from {}; give "
                       "--device\n",
                       d.vendor,
                       d.pci,
                       d.name.empty() ? "?" : d.name,
                       d.vendor == "nvidia" ? o.proc_root + "/driver/nvidia" : o.sysfs_root);
            continue;
        }
        auto t = parseTarget(d.target);
        if (!t || std::ranges::any_of(out, [&](const Target& x) { return x.text() == t->text(); }))
            continue;
        printText(stderr,
                   "gpufault codeobj: checking for this machine's GPU {} ({})\n",
                   t->text(),
                   d.pci);
        out.push_back(std::move(*t));
    }
    if (devs.empty())
        printText(stderr,
                   "gpufault codeobj: no GPU found on this machine (no KFD topology under {}, no "
                   "NVIDIA GPU under {}/driver/nvidia): give --device TARGET, --require, or "
                   "--list\n",
                   o.sysfs_root,
                   o.proc_root);
    return out;
}

}  // namespace

int cmdCodeobj(const CodeobjOptions& o) {
    Check check;
    check.hsa_override = o.hsa_override_gfx_version;
    if (!check.hsa_override.empty() && !processorFromHsaOverride(check.hsa_override)) {
        fmt::print(
            stderr,
            "gpufault codeobj: --hsa-override-gfx-version '{}' is not major.minor.stepping\n",
            printable(check.hsa_override));
        return 2;
    }
    std::vector<std::string> wanted = o.require;
    if (o.device) wanted.insert(wanted.begin(), *o.device);
    for (const auto& w : wanted) {
        auto t = parseTarget(w);
        if (!t) {
            printText(stderr, "gpufault codeobj: {}\n", printable(t.error().message));
            return 2;
        }
        check.targets.push_back(std::move(*t));
    }
    if (check.targets.empty() && !o.list) {
        check.targets = localTargets(o);
        if (check.targets.empty()) return 2;
    }
    InventoryOptions opt;
    opt.max_decompressed = o.max_decompressed;
    // Kernel names are printed in --json and for bundles lacking a target (read again then); a
    // listing or a passing check does not read the symbol tables (librocsparse: 777 of them).
    opt.kernels = o.json;
    bool inputError = false, failed = false;
    size_t withBundles = 0, containers = 0;  // of the current directory walk
    auto one = [&](const std::string& path, bool fromDir) {
        MappedFile m;
        if (auto err = m.open(path); !err.empty()) {
            printText(stderr, "gpufault codeobj: {}: {}\n", printable(path), err);
            inputError = true;
            return;
        }
        if (fromDir && !looksLikeCodeContainer(m.bytes())) return;  // not ELF: skipped silently
        auto r = codeobjFile(path, m.bytes(), check, opt, o.json, fromDir);
        if (m.shrank()) {  // what was printed read zeros past its new end
            fmt::print(
                stderr, "gpufault codeobj: {}: cut short while it was read\n", printable(path));
            inputError = true;
        }
        inputError |= r.input_error;
        failed |= r.check_failed;
        ++containers;
        withBundles += !r.no_bundles;
    };
    for (const auto& p : o.paths) {
        std::error_code ec;
        if (!fs::is_directory(p, ec)) {
            one(p, false);
            continue;
        }
        std::vector<std::string> files;
        fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec);
        for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
            std::error_code e2;
            if (it->is_regular_file(e2)) files.push_back(it->path().string());
        }
        if (ec) {
            printText(stderr, "gpufault codeobj: {}: {}\n", printable(p), ec.message());
            inputError = true;
        }
        std::ranges::sort(files);
        withBundles = containers = 0;
        for (const auto& f : files) one(f, true);
        failed |= libraryDirs(files, check, o.json);
        if (!check.targets.empty() && withBundles == 0 && groupKernelLibraries(files).empty()) {
            // A walk that found nothing to check fails the check, as a file without bundles.
            failed = true;
            if (o.json)
                printJsonLine(stdout,
                              {{"directory", p}, {"no_bundles", true}, {"elf_files", containers}});
            else
                fmt::print("{}: no offload bundles in {} ELF file{} and no kernel library files\n",
                           printable(p),
                           containers,
                           containers == 1 ? "" : "s");
        }
    }
    return inputError ? 2 : failed ? 1 : 0;
}

}  // namespace gpufault::cli
