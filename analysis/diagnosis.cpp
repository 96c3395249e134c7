#include "analysis/diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "collectors/code_object/compat.h"
#include "collectors/code_object/target_id.h"
#include "collectors/common/demangle.h"
#include "collectors/coredump/core_elf.h"

namespace gpufault::diagnosis {

namespace {

using codeobj::BundleInfo;

std::string where(const StoredEvidence& s) {
    return fmt::format("{}:{}", s.source, s.e.line);
}

std::string basename(const std::string& p) {
    size_t s = p.rfind('/');
    return s == std::string::npos ? p : p.substr(s + 1);
}

std::string lower(std::string_view s) {
    std::string out;
    for (char c : s)
        if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

/// Items of a `; `-joined listing attr (hip_log.cpp appendAttr).
std::vector<std::string> listItems(std::string_view v) {
    std::vector<std::string> out;
    while (!v.empty()) {
        size_t sep = v.find("; ");
        out.emplace_back(v.substr(0, sep));
        if (sep == std::string_view::npos) break;
        v.remove_prefix(sep + 2);
    }
    return out;
}

/// `amdgcn-amd-amdhsa--gfx902:xnack- [Not Found]` → `gfx902:xnack-`.
std::string targetOfListing(std::string_view item) {
    item = item.substr(0, item.find(' '));
    size_t dd = item.find("--");
    return std::string(dd == std::string_view::npos ? item : item.substr(dd + 2));
}

bool codeRuns(const std::string& code, const codeobj::Target& want) {
    auto t = codeobj::parseTarget(code);
    return t && codeobj::compatible(*t, want).runs;
}

std::string joined(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? "nothing" : s;
}

}  // namespace

bool inHipRuntime(const coredump::Frame& fr) {
    if (fr.module) {
        std::string b = basename(*fr.module);
        for (const char* m : {"libamdhip64.so", "libhip_hcc.so", "libamdrocclr"})
            if (b.starts_with(m)) return true;
    }
    if (!fr.symbol) return false;
    const std::string& s = *fr.symbol;
    return s.starts_with("amd::") || s.starts_with("hip::") || s.starts_with("ihip") ||
           s.starts_with("roc::");
}

bool launchesKernel(const coredump::Frame& fr) {
    if (!fr.symbol) return false;
    // An identifier (underscores dropped, lower case) with `launch` followed by `kernel`:
    // hipLaunchKernel, hipModuleLaunchKernel, cuLaunchKernel, cudaLaunchCooperativeKernel,
    // at::native::launch_vectorized_kernel<…>.
    std::string s = lower(fr.symbol->substr(0, fr.symbol->find('(')));
    for (size_t at = s.find("launch"); at != std::string::npos; at = s.find("launch", at + 6)) {
        size_t end = at;
        while (end < s.size() && std::isalnum(static_cast<unsigned char>(s[end]))) ++end;
        if (s.substr(at, end - at).find("kernel") != std::string::npos) return true;
    }
    return false;
}

std::optional<Trigger> trigger(const Facts& f) {
    for (const auto& m : f.members) {
        const auto& e = m.e;
        if (e.kind != Kind::MissingCodeObject) continue;
        std::string firstLine = e.raw.substr(0, e.raw.find('\n'));
        if (e.attr("library"))
            return Trigger{m.id,
                           "kernel_library",
                           fmt::format("{} kernel library error at {}: {}",
                                       e.attr("library").value_or(""),
                                       where(m),
                                       firstLine)};
        if (e.reason == "hipErrorNoBinaryForGpu" ||
            e.raw.find("NoBinaryForGpu") != std::string::npos)
            return Trigger{
                m.id, "no_binary_for_gpu", fmt::format("hipErrorNoBinaryForGpu at {}", where(m))};
        if (e.raw.find("Cannot find the function") != std::string::npos)
            return Trigger{m.id,
                           "function_not_found",
                           fmt::format("Cannot find the function {} at {}",
                                       demangle(e.kernel.value_or("?")),
                                       where(m))};
        return Trigger{m.id,
                       "no_kernel_image",
                       fmt::format("{} at {}", e.reason.value_or(firstLine), where(m))};
    }
    for (const auto& c : f.cores) {
        bool fault = c.signal == 11 || c.signal == 7;
        if (fault && c.fault_addr && *c.fault_addr < 0x1000 && !c.frames.empty() &&
            inHipRuntime(c.frames.front()))
            return Trigger{c.evidence_id,
                           "runtime_null_deref",
                           fmt::format("{} at 0x{:x} (null page) in the HIP runtime: {}",
                                       coredump::signalName(static_cast<int>(*c.signal)),
                                       *c.fault_addr,
                                       coredump::describeFrame(c.frames.front()))};
    }
    for (const auto& c : f.cores)
        for (size_t i = 0; i < c.frames.size(); ++i)
            if (launchesKernel(c.frames[i]))
                return Trigger{c.evidence_id,
                               "stack_through_launch",
                               fmt::format("the crashing thread passes through a kernel launch: "
                                           "#{} {}",
                                           i,
                                           coredump::describeFrame(c.frames[i]))};
    return std::nullopt;
}

std::vector<DeviceChoice> deviceTargets(const Facts& f) {
    std::vector<DeviceChoice> out;
    auto add = [&](DeviceChoice d) {
        if (d.target.empty()) return;
        for (const auto& x : out)
            if (x.target == d.target) return;
        out.push_back(std::move(d));
    };
    for (const auto& m : f.members)
        if (auto devs = m.e.attr("devices"))
            for (const auto& item : listItems(*devs))
                add({targetOfListing(item),
                     "",
                     fmt::format("the runtime's device listing at {}", where(m))});
    for (const auto& m : f.members)
        if (auto t = m.e.attr("target"); t && m.e.attr("library"))
            add({std::string(*t), "", fmt::format("the library error at {}", where(m))});
    for (const auto& m : f.members) {
        for (const auto& d : f.devices) {
            if (m.e.pci && d.pci == *m.e.pci)
                add({d.target, d.pci, fmt::format("PCI address at {}; {}", where(m), d.from)});
            else if (!m.e.pci && m.e.gpu_node && d.vendor == "amd" && d.node == m.e.gpu_node)
                add({d.target,
                     fmt::format("node-{}", *d.node),
                     fmt::format("node-{} at {} as the KFD node (unverified in containers); {}",
                                 *d.node,
                                 where(m),
                                 d.from)});
        }
    }
    if (!out.empty()) return out;
    // No record names a GPU: every GPU known, of the records' vendor when they state one.
    std::optional<std::string> vendor;
    for (const auto& m : f.members)
        if (m.e.vendor) vendor = m.e.vendor;
    auto fits = [&](const DeviceFact& d) {
        return !d.target.empty() && (!vendor || d.vendor == *vendor);
    };
    size_t withTarget = 0;
    for (const auto& d : f.devices) withTarget += fits(d);
    for (const auto& d : f.devices)
        if (fits(d))
            add({d.target,
                 d.pci,
                 withTarget == 1
                     ? d.from + ", its only GPU"
                     : fmt::format(
                           "{}, one of {} GPUs (no record names one)", d.from, withTarget)});
    return out;
}

std::vector<ModuleRef> modules(const Facts& f) {
    std::vector<ModuleRef> out;
    std::set<std::string> seen;
    auto add = [&](const std::string& p, const std::string& from) {
        if (!p.empty() && p.front() == '/' && seen.insert(p).second) out.push_back({p, from});
    };
    for (const auto& m : f.members)
        if (auto file = m.e.attr("file")) add(std::string(*file), "named at " + where(m));
    auto base = [](const std::string& p) { return p.substr(p.rfind('/') + 1); };
    for (const auto& c : f.cores) {
        if (c.exe) add(*c.exe, "the core's executable");
        for (const auto& p : c.files)  // the executable's recorded path: `exe` stands for it
            if (!c.exe || base(p) != base(*c.exe)) add(p, "mapped in the core");
    }
    for (const auto& p : f.process_modules) add(p, "mapped in the process snapshot");
    return out;
}

std::vector<std::string> libraryDirs(const Facts& f) {
    std::vector<std::string> out;
    for (const auto& m : f.members) {
        auto path = m.e.attr("path");
        if (!m.e.attr("library") || !path) continue;
        size_t slash = path->rfind('/');
        if (slash == std::string_view::npos) continue;
        std::string dir(path->substr(0, slash));
        if (std::ranges::find(out, dir) == out.end()) out.push_back(dir);
    }
    return out;
}

std::vector<Finding> checkModule(const std::string& path,
                                 const codeobj::Inventory& inv,
                                 const DeviceChoice& d) {
    auto want = codeobj::parseTarget(d.target);
    if (!want) return {};
    bool cuda = want->kind != codeobj::Target::Kind::Amd;
    std::vector<Finding> out;
    size_t checked = 0;
    auto base = [&](std::string verdict) {
        Finding x;
        x.verdict = std::move(verdict);
        x.module = path;
        x.device_target = d.target;
        x.device = d.device;
        x.device_from = d.from;
        return x;
    };
    for (size_t i = 0; i < inv.bundles.size(); ++i) {
        const auto& b = inv.bundles[i];
        if ((b.kind == BundleInfo::Kind::CudaFatbin) != cuda) continue;
        ++checked;
        for (const auto& e : b.entries)
            if (!e.mismatch.empty()) {
                Finding x = base("mislabeled");
                x.bundle = static_cast<int64_t>(i + 1);
                x.offset = b.offset;
                x.has = b.targets();
                x.detail = fmt::format("entry {} is mislabeled: {}", e.entry.id, e.mismatch);
                out.push_back(std::move(x));
            }
        auto targets = b.targets();
        if (std::ranges::any_of(targets, [&](const auto& t) { return codeRuns(t, *want); }))
            continue;
        Finding x = base("no_code");
        x.bundle = static_cast<int64_t>(i + 1);
        x.offset = b.offset;
        x.has = targets;
        for (const auto& k : b.kernels()) x.kernels.push_back(demangle(k));
        out.push_back(std::move(x));
    }
    if (checked == 0) return {};
    if (std::ranges::none_of(out, [](const Finding& x) { return x.verdict == "no_code"; })) {
        Finding x = base("covered");
        x.detail = fmt::format(
            "all {} {} carry code for {}", checked, cuda ? "fat binaries" : "bundles", d.target);
        out.push_back(std::move(x));
    }
    return out;
}

std::vector<Finding> checkRuntimeListing(const Facts& f, const DeviceChoice& d) {
    auto want = codeobj::parseTarget(d.target);
    std::vector<Finding> out;
    if (!want) return out;
    for (const auto& m : f.members) {
        auto bundles = m.e.attr("bundles");
        if (!bundles) continue;
        Finding x;
        x.module = "the code objects the runtime listed at " + where(m);
        x.device_target = d.target;
        x.device = d.device;
        x.device_from = d.from;
        for (const auto& item : listItems(*bundles)) {
            auto id = codeobj::parseBundleEntryId(item.substr(0, item.find(' ')));
            if (!id.isHost() && !id.target.empty()) x.has.push_back(id.target);
        }
        bool runs = std::ranges::any_of(x.has, [&](const auto& t) { return codeRuns(t, *want); });
        x.verdict = runs ? "covered" : "no_code";
        if (runs) x.detail = fmt::format("one of them runs on {}", d.target);
        out.push_back(std::move(x));
    }
    return out;
}

Finding checkLibraryDir(const codeobj::KernelLibraryDir& dir, const DeviceChoice& d) {
    Finding x;
    x.module = dir.dir;
    x.has = dir.processors();
    x.device_target = d.target;
    x.device = d.device;
    x.device_from = d.from;
    std::vector<std::string> counts;
    for (const auto& [p, n] : dir.files) counts.push_back(fmt::format("{} ({})", p, n));
    if (codeobj::libraryCovers(dir, d.target)) {
        x.verdict = "library_present";
        x.detail =
            fmt::format("kernel library files for {} present (has {})", d.target, joined(counts));
    } else {
        x.verdict = "library_missing";
        x.detail = fmt::format("no kernel library files for {} (has {})", d.target, joined(counts));
    }
    return x;
}

std::string findingText(const Finding& f) {
    if (f.verdict == "no_code") {
        std::string s =
            f.bundle ? fmt::format("{}: bundle #{} at 0x{:x}: no code for {} (has {})",
                                   f.module,
                                   *f.bundle,
                                   f.offset.value_or(0),
                                   f.device_target,
                                   joined(f.has))
                     : fmt::format(
                           "{}: no code for {} (has {})", f.module, f.device_target, joined(f.has));
        if (!f.kernels.empty()) s += "; kernels: " + joined(f.kernels);
        return s;
    }
    if (f.verdict == "mislabeled")
        return fmt::format("{}: bundle #{} at 0x{:x}: {}",
                           f.module,
                           f.bundle.value_or(0),
                           f.offset.value_or(0),
                           f.detail);
    if (f.module.empty()) return f.detail;
    return fmt::format("{}: {}", f.module, f.detail);
}

}  // namespace gpufault::diagnosis
