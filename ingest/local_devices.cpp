#include "ingest/local_devices.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "collectors/common/small_file.h"
#include "collectors/common/text.h"
#include "collectors/device/sysfs.h"

namespace gpufault {

namespace {

namespace fs = std::filesystem;

/// A sysfs attribute or /proc entry: regular files of at most 64 KiB only (a tree given with
/// --sysfs-root/--proc-root may hold FIFOs, device nodes or huge files); nullopt otherwise.
std::optional<std::string> slurp(const fs::path& p) {
    auto r = readSmallFile(p.string(), 64 * 1024);
    if (!r) return std::nullopt;
    return std::move(*r);
}

std::string firstLine(const std::optional<std::string>& s) {
    if (!s) return "";
    return s->substr(0, s->find('\n'));
}

}  // namespace

std::vector<Device> listDevices(const std::string& sysfs_root, const std::string& proc_root) {
    std::vector<Device> out;
    std::error_code ec;
    // amdgpu through KFD: nodes in topology order; ROCr's "GPU node-N" counts every node
    // (CPU nodes included) that the process can open, the way libhsakmt numbers them.
    fs::path nodes = fs::path(sysfs_root) / "class/kfd/kfd/topology/nodes";
    std::vector<std::pair<int, fs::path>> dirs;
    for (const auto& e : fs::directory_iterator(nodes, ec)) {
        int n = -1;
        try {
            n = std::stoi(e.path().filename().string());
        } catch (...) {
            continue;
        }
        dirs.emplace_back(n, e.path());
    }
    std::sort(dirs.begin(), dirs.end());
    for (const auto& [n, dir] : dirs) {
        auto props = slurp(dir / "properties");
        if (!props) continue;
        KfdNode node = parseKfdProperties(*props);
        if (!node.isGpu()) continue;
        Device d;
        d.vendor = "amd";
        d.node = n;
        d.target = node.target().value_or("");
        d.pci = node.pci().value_or("");
        if (auto minor = node.get("drm_render_minor")) d.render_minor = static_cast<int>(*minor);
        if (auto id = slurp(dir / "gpu_id"); id && !id->empty())
            d.gpu_id = std::strtoull(id->c_str(), nullptr, 10);
        fs::path dev = fs::path(sysfs_root) / "bus/pci/devices" / d.pci;
        d.name = firstLine(slurp(dev / "product_name"));
        d.vbios = firstLine(slurp(dev / "vbios_version"));
        if (auto v = slurp(dev / "mem_info_vram_total"))
            d.vram_total = std::strtoull(v->c_str(), nullptr, 10);
        if (auto v = slurp(dev / "mem_info_vram_used"))
            d.vram_used = std::strtoull(v->c_str(), nullptr, 10);
        d.driver = firstLine(slurp(fs::path(sysfs_root) / "module/amdgpu/version"));
        out.push_back(std::move(d));
    }
    // NVIDIA: the kernel module's per-GPU information files.
    fs::path gpus = fs::path(proc_root) / "driver/nvidia/gpus";
    std::vector<fs::path> nv;
    for (const auto& e : fs::directory_iterator(gpus, ec)) nv.push_back(e.path());
    std::sort(nv.begin(), nv.end());
    // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build …"
    std::string driver;
    std::istringstream words(firstLine(slurp(fs::path(proc_root) / "driver/nvidia/version")));
    for (std::string w; words >> w;)
        if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0])) &&
            w.find('.') != std::string::npos) {
            driver = w;
            break;
        }
    for (const auto& dir : nv) {
        auto info = slurp(dir / "information");
        if (!info) continue;
        auto kv = parseNvidiaInformation(*info);
        Device d;
        d.vendor = "nvidia";
        d.name = kv["Model"];
        d.target = nvidiaTargetOfModel(d.name).value_or("");
        d.pci = text::normalizePci(kv["Bus Location"]).value_or("");
        d.uuid = kv["GPU UUID"];
        d.vbios = kv["Video BIOS"];
        d.driver = driver;
        // /dev/nvidiaN: minors 0–254 (255 is nvidiactl).
        if (auto m = text::parseDec(kv["Device Minor"]); m && *m >= 0 && *m < 255)
            d.node = static_cast<int>(*m);
        out.push_back(std::move(d));
    }
    return out;
}

}  // namespace gpufault
