#include "cli/report_sections.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/output.h"
#include "cli/stack_view.h"
#include "collectors/common/demangle.h"
#include "schema/core_queries.h"
#include "schema/diagnosis_queries.h"

namespace gpufault::cli {

namespace {

/// Frames [begin, end) of `t` as JSON (collectors/coredump/stack.h's frame objects), with the
/// index of the first.
nlohmann::json threadJson(const coredump::Thread& t, size_t begin, size_t end) {
    coredump::CoreStack one;
    one.threads.push_back(t);
    auto& fr = one.threads.front().frames;
    fr = std::vector<coredump::Frame>(t.frames.begin() + static_cast<ptrdiff_t>(begin),
                                      t.frames.begin() + static_cast<ptrdiff_t>(end));
    auto j = coredump::toJson(one)["threads"][0];
    j["first_frame"] = begin;
    j["frames_total"] = t.frames.size();
    return j;
}

constexpr size_t kReportFrames = 24;         ///< frames of the crashing thread in a report
constexpr size_t kReportRuntimeThreads = 8;  ///< threads inside the GPU runtime, each …
constexpr size_t kReportRuntimeFrames = 6;   ///< … with this many frames (as `show`)

/// Adds `k` unless a fact of the same value is there.
void addKnown(std::vector<Known>& list, std::string value, std::string from) {
    for (const auto& x : list)
        if (x.value == value) return;
    list.push_back({std::move(value), std::move(from)});
}

std::string knownList(const std::vector<Known>& list) {
    std::string s;
    for (const auto& k : list)
        s += fmt::format("{}{} ({})", s.empty() ? "" : "; ", mdCode(k.value), mdText(k.from));
    return s;
}

nlohmann::json knownJson(const std::vector<Known>& list) {
    auto a = nlohmann::json::array();
    for (const auto& k : list) a.push_back({{"value", k.value}, {"from", k.from}});
    return a;
}

}  // namespace

nlohmann::json coresJson(db::Db& d, int64_t incident) {
    auto out = nlohmann::json::array();
    auto cores = queryIncidentCores(d, incident);
    if (!cores) return out;
    for (const auto& c : *cores) {
        nlohmann::json j{
            {"core", c.id},
            {"title", coreTitle(c)},
            {"signature",
             c.core.signature ? nlohmann::json(*c.core.signature) : nlohmann::json(nullptr)},
            {"threads", c.threads},
            {"stack_partial", nullptr},
            {"crashed_thread", nullptr}};
        if (auto why = stackPartial(c.core)) j["stack_partial"] = *why;
        auto all = queryCoreThreads(d, c.id, true);
        auto rt = nlohmann::json::array();
        if (all) {
            for (const auto& t : *all)
                if (t.crashed)
                    j["crashed_thread"] =
                        threadJson(t, 0, std::min(t.frames.size(), kReportFrames));
            auto hits = runtimeThreads(*all, kReportRuntimeFrames);
            j["runtime_threads_total"] = hits.size();
            for (size_t h = 0; h < hits.size() && h < kReportRuntimeThreads; ++h)
                rt.push_back(threadJson(*hits[h].thread, hits[h].begin, hits[h].end));
        }
        j["runtime_threads"] = std::move(rt);
        out.push_back(std::move(j));
    }
    return out;
}

void printCoresMarkdown(db::Db& d, int64_t incident) {
    auto cores = queryIncidentCores(d, incident);
    if (!cores) return;
    for (const auto& c : *cores) {
        std::string body = coreFacts(c, "");
        if (auto all = queryCoreThreads(d, c.id, true); all) {
            for (const auto& t : *all)
                if (t.crashed) body += threadText(t, kReportFrames, "");
            if (auto rt = runtimeThreadsText(*all, kReportRuntimeThreads, kReportRuntimeFrames, "");
                !rt.empty())
                body += "\n" + rt;
        }
        fmt::print("### Core {}: {}\n\n{}\n", c.id, mdText(coreTitle(c)), mdFence(body));
    }
}

std::string reportTitle(const IncidentRow& i) {
    std::string vendor = i.vendor.value_or("");
    std::string gpu = vendor == "amd" ? "AMD GPU" : vendor == "nvidia" ? "NVIDIA GPU" : "GPU";
    std::string at = i.address ? " at " + addr16(*i.address) : "";
    std::string who = fmt::format("{} (pid {})", mdText(i.process.value_or("?")), orDash(i.pid));
    if (i.kind == "coredump" || i.kind == "cpu_segfault")
        return fmt::format(
            "## Crash of {}: {}{}{}\n\n",
            who,
            mdText(i.reason.value_or(i.kind == "cpu_segfault" ? "segfault" : "signal")),
            at,
            i.kind == "coredump" ? " (from its core)" : " (kernel log segfault line)");
    if (i.kind == "sanitizer_report")
        return fmt::format("## {} invalid memory access{} (compute-sanitizer report{})\n\n",
                           gpu,
                           at,
                           i.reason ? ": " + mdText(*i.reason) : "");
    if (i.kind == "missing_code_object")
        return fmt::format("## No {} code for the device{}\n\n",
                           gpu,
                           i.reason ? " (" + mdText(*i.reason) + ")" : "");
    return fmt::format("## {} memory access fault{}{}\n\n",
                       gpu,
                       at,
                       i.reason ? " (" + mdText(*i.reason) + ")" : "");
}

std::string kernelMarkdown(const IncidentRow& i,
                           const std::optional<std::string>& kernel,
                           bool dispatched,
                           const std::vector<std::pair<int64_t, std::string>>& ambiguous) {
    std::string out = "### Faulting kernel\n\n";
    if (ambiguous.size() > 1) {
        out += fmt::format(
            "Ambiguous: {} processes dispatched in the fault's stream just before it, and the "
            "fault states no pid. The last kernel of each:\n\n",
            ambiguous.size());
        for (const auto& [pid, k] : ambiguous) {
            std::string name = demangle(k);
            out += fmt::format(
                "- pid {}: {}{}\n", pid, mdCode(name), name != k ? " (" + mdCode(k) + ")" : "");
        }
        return out + "\n";
    }
    if (kernel) {
        std::string name = demangle(*kernel);
        std::string what = dispatched ? "Last dispatched kernel before the fault"
                           : i.kind == "sanitizer_report"
                               ? "Kernel compute-sanitizer caught the access in"
                               : "Kernel the fault records name";
        return out + fmt::format("{}: {}{}\n\n",
                                 what,
                                 mdCode(name),
                                 name != *kernel ? " (" + mdCode(*kernel) + ")" : "");
    }
    std::string vendor = i.vendor.value_or("");
    std::string how = vendor == "amd" ? "run the job with AMD_LOG_LEVEL=3 (HIP logs ShaderName "
                                        "lines, `gpufault run --amd-log-level 3`)"
                      : vendor == "nvidia"
                          ? "run the job under compute-sanitizer, or with CUDA_LAUNCH_BLOCKING=1"
                          : "run the job with AMD_LOG_LEVEL=3 (HIP) or under compute-sanitizer "
                            "(CUDA)";
    if (i.kind == "coredump" || i.kind == "cpu_segfault")
        return out + fmt::format(
                         "No record names a GPU kernel: {} shows the host side of the crash. To "
                         "name the kernel the GPU ran last, {}.\n\n",
                         i.kind == "coredump" ? "the core (its stack below)" : "the segfault line",
                         how);
    return out + fmt::format(
                     "No dispatch was logged before the fault and no record names the kernel: "
                     "{}.\n\n",
                     how);
}

Environment incidentEnvironment(db::Db& d, const IncidentView& v) {
    Environment env;
    for (const auto& m : v.members) {
        const auto& e = m.ev.e;
        auto where = fmt::format("{}:{}", m.ev.source, e.line);
        if (auto t = e.attr("target"); t && !t->empty())
            addKnown(env.targets, std::string(*t), "named by the record at " + where);
        if (auto a = e.attr("agent"); a && a->starts_with("gfx"))
            addKnown(env.targets, std::string(*a), "the GPU agent of the record at " + where);
        auto devs = queryEvidenceDevices(d, m.ev.id);
        if (!devs) continue;
        for (const auto& dv : *devs) {
            auto dev =
                fmt::format("device {} on {}, as gpufault devices --record stored it",
                            dv.pci.empty() ? "node-" + std::to_string(dv.node.value_or(0)) : dv.pci,
                            dv.host);
            if (!dv.target.empty()) addKnown(env.targets, dv.target, dev);
            if (!dv.name.empty()) addKnown(env.gpus, dv.name, dev);
            if (!dv.driver.empty())
                addKnown(
                    env.drivers,
                    fmt::format("{} {}", dv.vendor == "nvidia" ? "nvidia" : "amdgpu", dv.driver),
                    dev);
        }
    }
    if (auto dgs = queryIncidentDiagnoses(d, v.incident.id); dgs)
        for (const auto& dg : *dgs)
            for (const auto& f : dg.findings)
                if (!f.device_target.empty())
                    addKnown(env.targets,
                             f.device_target,
                             fmt::format("the device the diagnosis checked{}{}",
                                         f.device.empty() ? "" : ": " + f.device,
                                         f.device_from.empty() ? "" : ", " + f.device_from));
    if (auto cores = queryIncidentCores(d, v.incident.id); cores)
        for (const auto& c : *cores) {
            auto rt = nlohmann::json::parse(c.core.runtimes, nullptr, false);
            if (!rt.is_object()) continue;
            for (auto& [lib, ver] : rt.items())
                if (ver.is_string())
                    addKnown(env.runtimes,
                             lib + " " + ver.get<std::string>(),
                             fmt::format("mapped in core {}", c.id));
        }
    return env;
}

std::string environmentMarkdown(const Environment& env, const std::string& vendor) {
    bool nv = vendor == "nvidia";
    std::string out = "### Target and versions\n\n";
    auto line = [&](const char* what, const std::vector<Known>& list, const std::string& hint) {
        out += fmt::format(
            "- {}: {}\n", what, list.empty() ? "unknown (" + hint + ")" : knownList(list));
    };
    line("GPU target",
         env.targets,
         nv ? "no record names it: add the `nvidia-smi -q` output (compute capability)"
            : "no record names it: add the `rocminfo` agent name (gfx…), or run `gpufault "
              "devices --record` on the machine before ingesting");
    if (!env.gpus.empty()) line("GPU", env.gpus, "");
    line("Driver",
         env.drivers,
         nv ? "the store has no driver version: add the `NVRM: loading` line or `nvidia-smi` "
              "output"
            : "the store has no driver version: add `modinfo amdgpu | grep ^version` or the "
              "kernel version (`uname -r`)");
    line("GPU runtime",
         env.runtimes,
         nv ? "no core of this incident maps one: add the CUDA version (`nvcc --version`, "
              "`nvidia-smi`)"
            : "no core of this incident maps one: add the ROCm version (`cat "
              "/opt/rocm/.info/version`) and the HIP version (`hipconfig --version`)");
    return out + "\n";
}

nlohmann::json environmentJson(const Environment& env) {
    return {{"gpu_target", knownJson(env.targets)},
            {"gpu", knownJson(env.gpus)},
            {"driver", knownJson(env.drivers)},
            {"runtime", knownJson(env.runtimes)}};
}

}  // namespace gpufault::cli
