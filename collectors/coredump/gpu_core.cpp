#include "collectors/coredump/gpu_core.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <nlohmann/json.hpp>

#include "collectors/code_object/amdgpu_code_object.h"

namespace gpufault::coredump {

namespace {

constexpr uint64_t kGridRow = 0x88;         ///< sizeof(CudbgGridTableEntry), CUDA ≥ 11
constexpr uint64_t kMaxParamBytes = 32768;  ///< CUDA's kernel parameter limit (32,764 B)

std::optional<int64_t> digits(std::string_view s) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

template <class T>
T le(std::string_view b, size_t off) {
    T v{};
    if (off + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + off, sizeof(T));
    return v;
}

/// `.cudbg.param.dev0.grid3` → (0, 3).
std::optional<std::pair<int, int>> devGrid(std::string_view name, std::string_view prefix) {
    if (!name.starts_with(prefix)) return std::nullopt;
    auto rest = name.substr(prefix.size());
    if (!rest.starts_with("dev")) return std::nullopt;
    auto dot = rest.find('.');
    auto dev = digits(rest.substr(3, dot == std::string_view::npos ? rest.npos : dot - 3));
    if (!dev) return std::nullopt;
    if (dot == std::string_view::npos) return std::pair{static_cast<int>(*dev), -1};
    auto g = rest.substr(dot + 1);
    if (!g.starts_with("grid")) return std::nullopt;
    auto grid = digits(g.substr(4));
    if (!grid) return std::nullopt;
    return std::pair{static_cast<int>(*dev), static_cast<int>(*grid)};
}

void readCuda(const CoreLayout& c, const ReadAt& read, GpuCoreMeta& m) {
    // Device memory regions the core holds, merged where adjacent.
    std::vector<std::pair<uint64_t, uint64_t>> regions;
    for (size_t i = 0; i < c.sections.size() && i < c.places.size(); ++i)
        if (c.sections[i].starts_with(".cudbg.global.") && c.places[i].size)
            regions.emplace_back(c.places[i].addr, c.places[i].addr + c.places[i].size);
    std::sort(regions.begin(), regions.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (const auto& r : regions)
        if (!merged.empty() && r.first <= merged.back().second)
            merged.back().second = std::max(merged.back().second, r.second);
        else
            merged.push_back(r);
    auto regionOf = [&](uint64_t v) -> const std::pair<uint64_t, uint64_t>* {
        auto it = std::upper_bound(merged.begin(), merged.end(), std::pair{v, UINT64_MAX});
        if (it == merged.begin()) return nullptr;
        --it;
        return v >= it->first && v < it->second ? &*it : nullptr;
    };
    for (size_t i = 0; i < c.sections.size() && i < c.places.size(); ++i) {
        const auto& p = c.places[i];
        if (auto dg = devGrid(c.sections[i], ".cudbg.gridtbl."); dg && dg->second < 0) {
            auto rows = read(p.offset, static_cast<size_t>(std::min<uint64_t>(p.size, 1 << 20)));
            for (uint64_t r = 0; r + kGridRow <= rows.size() && m.grids.size() < 1024;
                 r += kGridRow) {
                auto row = std::string_view(rows).substr(r, kGridRow);
                CudaGrid g;
                g.dev = dg->first;
                g.grid = static_cast<int>(r / kGridRow);
                g.function_entry = le<uint64_t>(row, 0x18);
                for (int k = 0; k < 3; ++k) {
                    g.grid_dim[k] = le<uint32_t>(row, 0x48 + 4 * k);
                    g.block_dim[k] = le<uint32_t>(row, 0x54 + 4 * k);
                }
                g.host_tid = le<uint32_t>(row, 0x64);
                m.grids.push_back(g);
            }
        }
        auto dg = devGrid(c.sections[i], ".cudbg.param.");
        if (!dg || dg->second < 0) continue;
        auto b = read(p.offset, static_cast<size_t>(std::min(p.size, kMaxParamBytes)));
        for (uint64_t off = 0; off + 8 <= b.size() && m.params.size() < 4096; off += 8) {
            uint64_t v = le<uint64_t>(b, off);
            if (const auto* r = regionOf(v))
                m.params.push_back({dg->first, dg->second, off, v, r->first, r->second});
        }
    }
}

}  // namespace

std::optional<CudaCoreName> parseCudaCoreName(std::string_view n) {
    if (!n.starts_with("core_") || !n.ends_with(".nvcudmp")) return std::nullopt;
    n = n.substr(5, n.size() - 5 - 8);
    auto first = n.find('_'), last = n.rfind('_');
    if (first == std::string_view::npos || last == first) return std::nullopt;
    auto t = digits(n.substr(0, first));
    auto pid = digits(n.substr(last + 1));
    if (!t || !pid || *pid <= 0) return std::nullopt;
    return CudaCoreName{*t, std::string(n.substr(first + 1, last - first - 1)), *pid};
}

GpuCoreMeta gpuCoreMeta(const CoreLayout& c, std::string_view file_name, const ReadAt* read) {
    GpuCoreMeta m;
    m.e_flags = c.head.flags;
    m.sections = c.sections.size();
    if (auto cuda = parseCudaCoreName(file_name)) {
        m.pid = cuda->pid;
        m.time = cuda->time;
    } else if (auto dot = file_name.rfind('.');
               dot != std::string_view::npos && file_name.substr(0, dot).ends_with("core")) {
        auto pid = digits(file_name.substr(dot + 1));
        if (pid && *pid > 0) m.pid = pid;
    }
    if (c.kind == CoreKind::RocrGpu) {
        auto name = codeobj::amdProcessorName(c.head.flags & 0xff);
        if (!name.empty()) m.target = std::string(name);
    }
    for (const auto& s : c.sections)
        if (s.starts_with(".cudbg") &&
            std::find(m.cudbg_sections.begin(), m.cudbg_sections.end(), s) ==
                m.cudbg_sections.end() &&
            m.cudbg_sections.size() < 64)
            m.cudbg_sections.push_back(s);
    if (read && c.kind == CoreKind::CudaGpu) readCuda(c, *read, m);
    return m;
}

nlohmann::json toJson(const GpuCoreMeta& m) {
    nlohmann::json j{{"e_flags", m.e_flags}, {"sections", m.sections}};
    if (m.pid) j["pid"] = *m.pid;
    if (m.time) j["time"] = *m.time;
    if (m.target) j["target"] = *m.target;
    if (!m.cudbg_sections.empty()) j["cudbg_sections"] = m.cudbg_sections;
    for (const auto& g : m.grids)
        j["grids"].push_back({{"dev", g.dev},
                              {"grid", g.grid},
                              {"function_entry", g.function_entry},
                              {"grid_dim", {g.grid_dim[0], g.grid_dim[1], g.grid_dim[2]}},
                              {"block_dim", {g.block_dim[0], g.block_dim[1], g.block_dim[2]}},
                              {"host_tid", g.host_tid}});
    for (const auto& p : m.params)
        j["params"].push_back({{"dev", p.dev},
                               {"grid", p.grid},
                               {"offset", p.offset},
                               {"ptr", p.value},
                               {"region", {p.lo, p.hi}}});
    return j;
}

}  // namespace gpufault::coredump
