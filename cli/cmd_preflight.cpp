// `gpufault preflight`: is each GPU clean before a run?
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/store_open.h"
#include "collectors/common/small_file.h"
#include "schema/queries.h"

namespace gpufault::cli {

namespace {

namespace fs = std::filesystem;

/// Processes holding memory on KFD device `gpu_id` (/sys/class/kfd/kfd/proc/PID/vram_GPUID),
/// with their command names from /proc/PID/comm.
std::vector<std::pair<int64_t, std::string>> kfdProcesses(const PreflightOptions& o,
                                                          uint64_t gpu_id) {
    std::vector<std::pair<int64_t, std::string>> out;
    std::error_code ec;
    for (const auto& e :
         fs::directory_iterator(fs::path(o.sysfs_root) / "class/kfd/kfd/proc", ec)) {
        if (!fs::exists(e.path() / fmt::format("vram_{}", gpu_id), ec)) continue;
        int64_t pid = std::atoll(e.path().filename().c_str());
        auto text =
            readSmallFile((fs::path(o.proc_root) / std::to_string(pid) / "comm").string(), 4096);
        std::string comm = text ? text->substr(0, text->find('\n')) : std::string();
        out.emplace_back(pid, comm);
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

int cmdPreflight(const Global& g, const PreflightOptions& o) {
    auto devices = listDevices(o.sysfs_root, o.proc_root);
    if (devices.empty()) {
        printText(stderr, "gpufault preflight: no GPU found: cannot tell\n");
        if (o.json)  // one object all the same: a script reading stdout learns why
            printJsonLine(stdout,
                          {{"pci", nullptr},
                           {"vendor", nullptr},
                           {"target", nullptr},
                           {"node", nullptr},
                           {"verdict", "unknown"},
                           {"reasons", nlohmann::json::array()},
                           {"unchecked", {"no GPU found"}},
                           {"sysfs_root", o.sysfs_root},
                           {"proc_root", o.proc_root}});
        return 2;
    }
    std::optional<Store> store;
    if (std::error_code ec; fs::exists(g.db, ec)) store = openForQuery(g);
    bool dirty = false;
    for (const auto& d : devices) {
        std::vector<std::string> reasons, unchecked;
        if (store) {
            auto h = queryDeviceHistory(store->db(), d.pci);
            if (!h) {
                unchecked.push_back("fault history: " + h.error().message);
            } else if (h->faults > 0) {
                const auto& f = h->last_fault->e;
                reasons.push_back(fmt::format(
                    "{} since {} (last: {} {}:{})",
                    counted(h->faults, "fault record"),
                    h->last_good_reset ? "its last successful GPU reset" : "the store began",
                    kindName(f.kind),
                    h->last_fault->source,
                    f.line));
            }
        } else {
            unchecked.push_back(fmt::format("fault history (no store at {})", g.db));
        }
        if (d.vram_used) {
            if (*d.vram_used > (o.max_vram_used_mib << 20))
                reasons.push_back(fmt::format(
                    "VRAM in use: {} (limit {} MiB)", sizeText(*d.vram_used), o.max_vram_used_mib));
        } else {
            unchecked.push_back("VRAM in use");
        }
        if (d.gpu_id) {
            for (const auto& [pid, comm] : kfdProcesses(o, *d.gpu_id))
                if (std::find(o.allow.begin(), o.allow.end(), comm) == o.allow.end())
                    reasons.push_back(fmt::format(
                        "KFD process {} ({}) holds memory on it", pid, comm.empty() ? "?" : comm));
        } else {
            unchecked.push_back("GPU processes");
        }
        dirty = dirty || !reasons.empty();
        std::string verdict = reasons.empty() ? "clean" : "DIRTY";
        if (o.json) {
            printJsonLine(stdout,
                          {{"pci", d.pci},
                           {"vendor", d.vendor},
                           {"target", d.target},
                           {"node", d.node ? nlohmann::json(*d.node) : nullptr},
                           {"verdict", reasons.empty() ? "clean" : "dirty"},
                           {"reasons", reasons},
                           {"unchecked", unchecked}});
            continue;
        }
        fmt::print("{} {}{} {}\n",
                   d.pci,
                   d.target.empty() ? d.name : d.target,
                   d.node ? fmt::format(" (node {})", *d.node) : "",
                   verdict);
        for (const auto& r : reasons) fmt::print("  - {}\n", printable(r));
        if (!unchecked.empty()) {
            std::string u;
            for (const auto& x : unchecked) u += (u.empty() ? "" : ", ") + x;
            fmt::print("  (not checked: {})\n", printable(u));
        }
    }
    return dirty ? 1 : 0;
}

}  // namespace gpufault::cli
