#include "collectors/coredump/gpu_core.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "collectors/code_object/amdgpu_code_object.h"
#include "collectors/code_object/elf.h"
#include "collectors/common/demangle.h"
#include "collectors/coredump/le_field.h"

namespace gpufault::coredump {

namespace {

constexpr uint64_t kGridRow = 0x88;           ///< sizeof(CudbgGridTableEntry), CUDA ≥ 11
constexpr uint64_t kMaxParamBytes = 32768;    ///< CUDA's kernel parameter limit (32,764 B)
constexpr uint64_t kMaxCubin = 256ull << 20;  ///< a relocated cubin read for its symbols
/// Bytes of relocated cubins read in all to name kernels (each cubin once).
constexpr uint64_t kCubinBudget = 512ull << 20;
/// Bytes of module tables (`.cudbg.modtbl.*`) read in all to name kernels.
constexpr uint64_t kModtblBudget = 64ull << 20;
constexpr uint8_t kEiattrKparamInfo = 0x17;   ///< EIATTR_KPARAM_INFO
constexpr uint8_t kEifmtSval = 0x04;          ///< EIFMT_SVAL: u16 size, then the payload

std::optional<int64_t> digits(std::string_view s) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size() || s.empty()) return std::nullopt;
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

/// The parameter types of a demangled name: `f(float*, int)` → {"float*", "int"}.
std::vector<std::string> paramTypes(std::string_view d) {
    std::vector<std::string> out;
    if (d.empty() || d.back() != ')') return out;
    int depth = 0;
    size_t open = std::string_view::npos;
    for (size_t i = d.size(); i-- > 0;) {
        if (d[i] == ')') ++depth;
        if (d[i] == '(' && --depth == 0) {
            open = i;
            break;
        }
    }
    if (open == std::string_view::npos) return out;
    auto list = d.substr(open + 1, d.size() - open - 2);
    depth = 0;
    size_t start = 0;
    for (size_t i = 0; i <= list.size(); ++i) {
        char ch = i < list.size() ? list[i] : ',';
        if (ch == '<' || ch == '(' || ch == '[') ++depth;
        if (ch == '>' || ch == ')' || ch == ']') --depth;
        if (ch == ',' && depth == 0) {
            auto t = list.substr(start, i - start);
            while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
            if (!t.empty() && t != "void") out.emplace_back(t);
            start = i + 1;
        }
    }
    return out;
}

/// EIATTR_KPARAM_INFO records of a `.nv.info.<kernel>` section (payload: u32 index, u16
/// ordinal, u16 offset, u32 flags with the size in bits 18–31).
std::vector<CudaParamInfo> kparams(codeobj::Bytes b) {
    std::vector<CudaParamInfo> out;
    for (uint64_t i = 0; i + 2 <= b.size() && out.size() < 4096;) {
        auto fmt = static_cast<uint8_t>(b[i]), attr = static_cast<uint8_t>(b[i + 1]);
        if (fmt != kEifmtSval) {
            i += fmt == 0x03 ? 4 : fmt == 0x02 ? 3 : 2;  // EIFMT_HVAL, EIFMT_BVAL, EIFMT_NVAL
            continue;
        }
        auto size = codeobj::readLe<uint16_t>(b, i + 2);
        if (!size) break;
        if (attr == kEiattrKparamInfo && *size >= 12) {
            auto ord = codeobj::readLe<uint16_t>(b, i + 8);
            auto off = codeobj::readLe<uint16_t>(b, i + 10);
            auto flags = codeobj::readLe<uint32_t>(b, i + 12);
            if (ord && off && flags) out.push_back({*ord, *off, (*flags >> 18) & 0x3fff, ""});
        }
        i += 4 + *size;
    }
    std::sort(
        out.begin(), out.end(), [](const auto& x, const auto& y) { return x.ordinal < y.ordinal; });
    return out;
}

/// Names each grid of `grids` (indices into m.grids) whose entry point is a function symbol
/// of the relocated cubin `image`, with its parameters. The image is parsed once, each kernel
/// once however many grids run it; a name longer than codeobj::kMaxSectionName (a forged
/// symbol table) names no kernel.
void kernelsOf(const std::string& image, GpuCoreMeta& m, const std::vector<size_t>& grids) {
    auto bytes = std::as_bytes(std::span(image.data(), image.size()));
    auto elf = codeobj::parseElf(bytes);
    if (!elf) return;
    auto syms = codeobj::symbols(*elf);
    if (!syms) return;
    std::unordered_map<uint64_t, std::string_view> functions;
    for (const auto& s : *syms)
        if (s.type == 2) functions[s.value] = s.name;  // the last one, as before
    std::unordered_map<uint64_t, std::vector<CudaParamInfo>> paramsOf;  // entry → its parameters
    for (size_t gi : grids) {
        CudaGrid& g = m.grids[gi];
        auto it = functions.find(g.function_entry);
        if (it == functions.end() || it->second.size() > codeobj::kMaxSectionName) continue;
        g.kernel = std::string(it->second);
        if (auto known = paramsOf.find(g.function_entry); known != paramsOf.end()) {
            g.params = known->second;
            continue;
        }
        auto& params = paramsOf[g.function_entry];
        const auto* info = elf->find(".nv.info." + g.kernel);
        if (!info) continue;
        auto b = elf->bytes(*info);
        if (!b) continue;
        params = kparams(*b);
        auto types = paramTypes(demangle(g.kernel));
        for (auto& p : params)
            if (p.ordinal < types.size()) p.type = types[p.ordinal];
        g.params = params;
    }
}

using Region = std::pair<uint64_t, uint64_t>;

/// Device memory the core holds (`.cudbg.global.N`: sh_addr, size), adjacent ones merged.
std::vector<Region> globalRegions(const CoreLayout& c) {
    std::vector<Region> regions, merged;
    for (size_t i = 0; i < c.sections.size() && i < c.places.size(); ++i)
        if (c.sections[i].starts_with(".cudbg.global.") && c.places[i].size)
            regions.emplace_back(c.places[i].addr, c.places[i].addr + c.places[i].size);
    std::sort(regions.begin(), regions.end());
    for (const auto& r : regions)
        if (!merged.empty() && r.first <= merged.back().second)
            merged.back().second = std::max(merged.back().second, r.second);
        else
            merged.push_back(r);
    return merged;
}

/// The grid table rows (`.cudbg.gridtbl.devD`) and each grid's module handle.
void readGrids(const CoreLayout& c,
               const ReadAt& read,
               GpuCoreMeta& m,
               std::vector<uint64_t>& handles) {
    for (size_t i = 0; i < c.sections.size() && i < c.places.size(); ++i) {
        auto dg = devGrid(c.sections[i], ".cudbg.gridtbl.");
        if (!dg || dg->second >= 0 || !c.places[i].hasBytes()) continue;
        const auto& p = c.places[i];
        auto rows = read(p.offset, static_cast<size_t>(std::min<uint64_t>(p.size, 1 << 20)));
        for (uint64_t r = 0; r + kGridRow <= rows.size() && m.grids.size() < 1024; r += kGridRow) {
            auto row = std::string_view(rows).substr(r, kGridRow);
            CudaGrid g;
            g.dev = dg->first;
            g.grid = static_cast<int>(r / kGridRow);
            g.grid_id = leField<uint64_t>(row, 0);
            g.function_entry = leField<uint64_t>(row, 0x18);
            for (int k = 0; k < 3; ++k) {
                g.grid_dim[k] = leField<uint32_t>(row, 0x48 + 4 * k);
                g.block_dim[k] = leField<uint32_t>(row, 0x54 + 4 * k);
            }
            g.host_tid = leField<uint32_t>(row, 0x64);
            m.grids.push_back(g);
            handles.push_back(leField<uint64_t>(row, 0x20));
        }
    }
}

/// Names each grid's kernel: its module handle's index in `.cudbg.modtbl.devD.ctxC` (u64
/// handles) is the sh_info of its relocated cubin `.cudbg.relfimg.devD.ctxC`. Linear in the
/// bytes read, which are capped (kModtblBudget for the tables, kCubinBudget for the cubins; a
/// hostile core may hold 65,536 overlapping tables): each table is scanned once for the
/// handles still unnamed, then each cubin any of them points to is read and parsed once, for
/// all its grids (before, a cubin was parsed again for every table naming it: a forged core of
/// 65,000 tables and a 256 MiB cubin took hours).
void nameKernels(const CoreLayout& c,
                 const ReadAt& read,
                 GpuCoreMeta& m,
                 const std::vector<uint64_t>& handles) {
    // (table suffix, module index) → the relocated cubin's section; the first one wins.
    std::map<std::pair<std::string, uint32_t>, size_t> images;
    for (size_t i = 0; i < c.sections.size() && i < c.places.size(); ++i)
        if (c.sections[i].starts_with(".cudbg.relfimg.") && c.places[i].size <= kMaxCubin &&
            c.places[i].hasBytes())
            images.emplace(std::pair{c.sections[i].substr(15), c.places[i].info}, i);
    uint64_t budget = kModtblBudget;
    std::vector<size_t> order;                   // cubins, first named first
    std::map<size_t, std::set<size_t>> byImage;  // cubin section → grids it may name
    // "devD." → handle → the grids of device D with that module handle, built once (per table
    // it cost tables × grids: 65 533 tables and 1 024 grids took 8 s, hostile review 151).
    std::map<std::string, std::unordered_map<uint64_t, std::vector<size_t>>, std::less<>> byDev;
    for (size_t gi = 0; gi < m.grids.size(); ++gi)
        byDev["dev" + std::to_string(m.grids[gi].dev) + "."][handles[gi]].push_back(gi);
    for (size_t t = 0; t < c.sections.size() && t < c.places.size(); ++t) {
        if (!c.sections[t].starts_with(".cudbg.modtbl.") || !c.places[t].hasBytes()) continue;
        auto suffix = c.sections[t].substr(14);  // "devD.ctxC"
        auto dev = byDev.find(std::string_view(suffix).substr(0, suffix.find('.') + 1));
        if (suffix.find('.') == std::string::npos || dev == byDev.end()) continue;
        const auto& wanted = dev->second;  // handle → its grids
        uint64_t size = std::min<uint64_t>(c.places[t].size, 1 << 20);
        if (size > budget) break;
        budget -= size;
        auto b = read(c.places[t].offset, static_cast<size_t>(size));
        std::unordered_set<uint64_t> found;  // the first index of a handle counts
        for (uint32_t k = 0; 8 * (k + 1) <= b.size() && found.size() < wanted.size(); ++k) {
            uint64_t handle = leField<uint64_t>(b, 8 * k);
            auto w = wanted.find(handle);
            if (w == wanted.end() || !found.insert(handle).second) continue;
            if (auto im = images.find({suffix, k}); im != images.end()) {
                auto& grids = byImage[im->second];
                if (grids.empty()) order.push_back(im->second);
                grids.insert(w->second.begin(), w->second.end());
            }
        }
    }
    uint64_t cubins = kCubinBudget;
    for (size_t i : order) {
        if (c.places[i].size > cubins) break;
        cubins -= c.places[i].size;
        std::vector<size_t> unnamed;  // an earlier cubin (another context's) may have named it
        for (size_t gi : byImage[i])
            if (m.grids[gi].kernel.empty()) unnamed.push_back(gi);
        if (unnamed.empty()) continue;
        kernelsOf(read(c.places[i].offset, static_cast<size_t>(c.places[i].size)), m, unnamed);
    }
}

void readCuda(const CoreLayout& c, const ReadAt& read, GpuCoreMeta& m) {
    auto regions = globalRegions(c);
    auto regionOf = [&](uint64_t v) -> const Region* {
        auto it = std::upper_bound(regions.begin(), regions.end(), Region{v, UINT64_MAX});
        if (it == regions.begin()) return nullptr;
        --it;
        return v >= it->first && v < it->second ? &*it : nullptr;
    };
    std::vector<uint64_t> handles;
    readGrids(c, read, m, handles);
    nameKernels(c, read, m, handles);
    readCudaExceptions(c, read, m);
    for (size_t i = 0; i < c.sections.size() && i < c.places.size(); ++i) {
        auto dg = devGrid(c.sections[i], ".cudbg.param.");
        if (!dg || dg->second < 0 || !c.places[i].hasBytes()) continue;
        const CudaGrid* grid = nullptr;
        for (const auto& g : m.grids)
            if (g.dev == dg->first && g.grid == dg->second) grid = &g;
        const auto& p = c.places[i];
        auto b = read(p.offset, static_cast<size_t>(std::min(p.size, kMaxParamBytes)));
        for (uint64_t off = 0; off + 8 <= b.size() && m.params.size() < 4096; off += 8) {
            uint64_t v = leField<uint64_t>(b, off);
            const auto* r = regionOf(v);
            if (!r) continue;
            CudaParamPointer cp{dg->first, dg->second, off, v, r->first, r->second, {}, 0};
            if (grid)
                for (const auto& pi : grid->params)
                    if (off >= pi.offset && off < uint64_t{pi.offset} + pi.size) {
                        cp.ordinal = pi.ordinal;
                        cp.in_param = off - pi.offset;
                    }
            m.params.push_back(cp);
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
    if (!t || !pid || *pid <= 0 || *pid > kMaxPid) return std::nullopt;
    return CudaCoreName{*t, std::string(n.substr(first + 1, last - first - 1)), *pid};
}

GpuCoreMeta gpuCoreMeta(const CoreLayout& c, std::string_view file_name, const ReadAt* read) {
    GpuCoreMeta m;
    m.e_flags = c.head.flags;
    m.sections = c.sections.size();
    if (auto cuda = parseCudaCoreName(file_name)) {
        m.pid = cuda->pid;
        m.time = cuda->time;
    } else if (auto n = file_name.ends_with(".gpu") ? file_name.substr(0, file_name.size() - 4)
                                                    : file_name;
               n.rfind('.') != std::string_view::npos &&
               (n.substr(0, n.rfind('.')) == "core" || n.substr(0, n.rfind('.')) == "gpucore")) {
        // `gpucore.<pid>`, `core.<pid>`, and ROCr's `gpucore.<pid>.gpu` / `core.<pid>.gpu`
        // (FORMATS.md §2.3: the kernel's core_pattern name with `.gpu` appended); a number
        // above PID_MAX_LIMIT names no process
        auto pid = digits(n.substr(n.rfind('.') + 1));
        if (pid && *pid > 0 && *pid <= kMaxPid) m.pid = pid;
    }
    if (c.kind == CoreKind::RocrGpu) {
        auto name = codeobj::amdProcessorName(c.head.flags & 0xff);
        if (!name.empty()) m.target = std::string(name);
        if (c.notes.amdgpu_core_state) {
            m.rocr =
                readRocrCoreState(*c.notes.amdgpu_core_state, c.notes.amdgpu_core_state_offset);
            // The agent's own version names the target (ROCr writes e_flags 0); with several
            // agents and no fault, only a target they all share.
            auto f = rocrFault(*m.rocr);
            if (f.agent && !f.agent->target.empty()) {
                m.target = f.agent->target;
            } else if (!f.agent && !m.rocr->agents.empty() &&
                       std::all_of(
                           m.rocr->agents.begin(),
                           m.rocr->agents.end(),
                           [&](auto& a) { return a.target == m.rocr->agents.front().target; }) &&
                       !m.rocr->agents.front().target.empty()) {
                m.target = m.rocr->agents.front().target;
            }
        }
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

nlohmann::json toJson(const RocrCoreState& s) {
    auto hex = [](uint64_t v) { return fmt::format("0x{:x}", v); };
    nlohmann::json j{{"note_version", s.note_version}};
    if (s.kfd_major || s.kfd_minor)
        j["kfd_version"] = fmt::format("{}.{}", s.kfd_major, s.kfd_minor);
    if (s.r_debug) j["r_debug"] = hex(*s.r_debug);
    if (s.runtime_state) j["runtime_state"] = *s.runtime_state;
    j["agents"] = nlohmann::json::array();
    for (const auto& a : s.agents) {
        nlohmann::json x{{"gpu_id", a.gpu_id},
                         {"location_id", hex(a.location_id)},
                         {"vendor_id", hex(a.vendor_id)},
                         {"device_id", hex(a.device_id)},
                         {"gfx_target_version", a.gfx_target_version},
                         {"exception_status", hex(a.exception_status)},
                         {"exceptions", a.exceptions}};
        if (!a.pci.empty()) x["pci"] = a.pci;
        if (a.partition) x["partition"] = *a.partition;
        if (!a.target.empty()) x["target"] = a.target;
        j["agents"].push_back(std::move(x));
    }
    j["queues"] = nlohmann::json::array();
    for (const auto& q : s.queues)
        j["queues"].push_back({{"queue_id", q.queue_id},
                               {"gpu_id", q.gpu_id},
                               {"type", queueTypeName(q.queue_type)},
                               {"ring_base_address", hex(q.ring_base_address)},
                               {"ring_size", q.ring_size},
                               {"exception_status", hex(q.exception_status)},
                               {"exceptions", q.exceptions}});
    if (s.agents_stated != s.agents.size()) j["agents_stated"] = s.agents_stated;
    if (s.queues_stated != s.queues.size()) j["queues_stated"] = s.queues_stated;
    if (!s.warnings.empty()) j["warnings"] = s.warnings;
    return j;
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
                              {"host_tid", g.host_tid},
                              {"kernel", g.kernel},
                              {"params", [&] {
                                   auto a = nlohmann::json::array();
                                   for (const auto& q : g.params)
                                       a.push_back({{"ordinal", q.ordinal},
                                                    {"offset", q.offset},
                                                    {"size", q.size},
                                                    {"type", q.type}});
                                   return a;
                               }()}});
    for (const auto& p : m.params)
        j["params"].push_back(
            {{"dev", p.dev},
             {"grid", p.grid},
             {"offset", p.offset},
             {"ptr", p.value},
             {"region", {p.lo, p.hi}},
             {"ordinal", p.ordinal ? nlohmann::json(*p.ordinal) : nlohmann::json()}});
    for (const auto& e : m.exceptions) {
        nlohmann::json x{
            {"code", e.code}, {"exception", cudaExceptionName(e.code)}, {"lanes", e.lanes}};
        if (e.sm_known) {  // where the tables' links lead nowhere, no place is stated
            x["dev"] = e.dev;
            x["sm"] = e.sm;
        }
        if (e.lanes && e.warp_known) x["warp"] = e.warp;
        if (e.lanes && e.block_known) x["block"] = {e.block[0], e.block[1], e.block[2]};
        if (e.lanes) x["thread"] = {e.thread[0], e.thread[1], e.thread[2]};
        if (e.pc) x["pc"] = *e.pc;
        // The grid's kernel, and the pc's offset in it (the faulting instruction).
        for (const auto& g : m.grids)
            if ((g.dev == e.dev || !e.sm_known) &&
                ((e.grid_id && g.grid_id == *e.grid_id) || (!e.grid_id && m.grids.size() == 1))) {
                x["grid"] = g.grid;
                if (!g.kernel.empty()) x["kernel"] = g.kernel;
                if (e.pc && *e.pc >= g.function_entry && *e.pc - g.function_entry < (1u << 24))
                    x["kernel_offset"] = *e.pc - g.function_entry;
            }
        j["exceptions"].push_back(std::move(x));
    }
    if (m.exceptions_total) j["exceptions_total"] = m.exceptions_total;
    if (m.exception_warps) j["exception_warps"] = m.exception_warps;
    if (m.rocr) j["rocr"] = toJson(*m.rocr);
    return j;
}

}  // namespace gpufault::coredump
