// `gpufault devices`: the GPUs of this machine from sysfs and /proc, no vendor tools needed.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/output.h"
#include "collectors/common/small_file.h"
#include "collectors/common/text.h"
#include "collectors/device/sysfs.h"
#include "schema/diagnosis_queries.h"
#include "schema/store.h"

namespace gpufault::cli {

namespace {

namespace fs = std::filesystem;

/// A /proc entry: a regular file of at most 64 KiB only; nullopt otherwise.
std::optional<std::string> slurp(const fs::path& p) {
    auto r = readSmallFile(p.string(), 64 * 1024);
    if (!r) return std::nullopt;
    return std::move(*r);
}

std::string firstLine(const std::optional<std::string>& s) {
    if (!s) return "";
    return s->substr(0, s->find('\n'));
}

/// Writes `devs` into the store (table devices), tagged with this host and boot.
int storeDevices(const Global& g, const std::vector<Device>& devs, const std::string& proc_root) {
    std::error_code ec;
    if (auto dir = fs::path(g.db).parent_path(); !dir.empty()) fs::create_directories(dir, ec);
    auto store = Store::open(g.db, Store::Mode::ReadWrite);
    if (!store) {
        printText(stderr, "gpufault devices: {}\n", store.error().message);
        return 2;
    }
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::string boot = firstLine(slurp(fs::path(proc_root) / "sys/kernel/random/boot_id"));
    std::string now = text::utcNowIso();
    std::vector<DeviceRecord> rows;
    for (const auto& d : devs) {
        DeviceRecord r;
        r.host = host;
        r.boot_id = boot;
        r.taken_at = now;
        r.vendor = d.vendor;
        r.node = d.node;
        r.pci = d.pci;
        r.target = d.target;
        r.name = d.name;
        r.uuid = d.uuid;
        r.vbios = d.vbios;
        r.driver = d.driver;
        r.render_minor = d.render_minor;
        r.vram_total = d.vram_total;
        rows.push_back(std::move(r));
    }
    auto n = gpufault::recordDevices(store->db(), rows);
    if (!n) {
        printText(stderr, "gpufault devices: {}: {}\n", g.db, n.error().message);
        return 2;
    }
    fmt::print(
        stderr, "{} device{} recorded in {} (host {})\n", *n, *n == 1 ? "" : "s", g.db, host);
    return 0;
}

}  // namespace

int cmdDevices(const Global* g,
               const std::string& sysfs_root,
               const std::string& proc_root,
               bool json) {
    auto devs = listDevices(sysfs_root, proc_root);
    if (devs.empty()) {
        printText(stderr,
                   "gpufault devices: no GPU found (no KFD topology under {}, no NVIDIA "
                   "GPU under {}/driver/nvidia)\n",
                   sysfs_root,
                   proc_root);
        return 1;
    }
    if (g) {
        if (int rc = storeDevices(*g, devs, proc_root); rc != 0) return rc;
    }
    TextTable t{{"VENDOR", "NODE", "PCI", "TARGET", "NAME", "VRAM", "VBIOS", "DRIVER"}, {}};
    for (const auto& d : devs) {
        if (json) {
            printJsonLine(
                stdout,
                {{"vendor", d.vendor},
                 {"node", d.node ? nlohmann::json(*d.node) : nullptr},
                 {"pci", d.pci},
                 {"target", d.target},
                 {"name", d.name},
                 {"uuid", d.uuid},
                 {"render_minor", d.render_minor ? nlohmann::json(*d.render_minor) : nullptr},
                 {"vram_total", d.vram_total ? nlohmann::json(*d.vram_total) : nullptr},
                 {"vram_used", d.vram_used ? nlohmann::json(*d.vram_used) : nullptr},
                 {"vbios", d.vbios},
                 {"driver", d.driver}});
            continue;
        }
        t.rows.push_back({d.vendor,
                          d.node ? std::to_string(*d.node) : "-",
                          d.pci,
                          d.target.empty() ? "-" : d.target,
                          d.name.empty() ? "-" : d.name,
                          d.vram_total ? sizeText(*d.vram_total) : "-",
                          d.vbios.empty() ? "-" : d.vbios,
                          d.driver.empty() ? "-" : d.driver});
    }
    if (!json) t.print(stdout);
    return 0;
}

}  // namespace gpufault::cli
