#include "collectors/code_object/compat.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <span>

namespace gpufault::codeobj {
namespace {

using K = Target::Kind;

// Generic processors and what they cover: AMDGPUUsage "AMDGPU Generic Processors",
// llvmorg-20.1.0.
struct Generic {
    std::string_view name;
    std::initializer_list<std::string_view> covers;
};
const Generic kGeneric[] = {
    {"gfx9-generic", {"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}},
    {"gfx9-4-generic", {"gfx940", "gfx941", "gfx942", "gfx950"}},
    {"gfx10-1-generic", {"gfx1010", "gfx1011", "gfx1012", "gfx1013"}},
    {"gfx10-3-generic",
     {"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"}},
    {"gfx11-generic",
     {"gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153"}},
    {"gfx12-generic", {"gfx1200", "gfx1201"}},
};

bool covers(std::string_view generic, std::string_view processor) {
    for (const auto& g : kGeneric)
        if (g.name == generic) return std::ranges::find(g.covers, processor) != g.covers.end();
    return false;
}

bool featureOk(Feature code, Feature device) {
    return code == Feature::Any || device == Feature::Any || code == device;
}
bool featuresOk(const Target& c, const Target& d) {
    return featureOk(c.amd.xnack, d.amd.xnack) && featureOk(c.amd.sramecc, d.amd.sramecc);
}
bool cuda(const Target& t) {
    return t.kind != K::Amd;
}

// The rules, in order: the first whose `when` holds decides with `runs`.
struct Rule {
    std::string_view name;
    bool (*when)(const Target& code, const Target& dev);
    bool (*runs)(const Target& code, const Target& dev);
};
constexpr Rule kRules[] = {
    {"vendor differs",
     [](auto& c, auto& d) { return cuda(c) != cuda(d); },
     [](auto&, auto&) { return false; }},
    {"same processor",
     [](auto& c, auto& d) { return c.kind == K::Amd && c.amd.processor == d.amd.processor; },
     featuresOk},
    {"generic processor",
     [](auto& c, auto& d) { return c.kind == K::Amd && covers(c.amd.processor, d.amd.processor); },
     featuresOk},
    {"other processor",
     [](auto& c, auto&) { return c.kind == K::Amd; },
     [](auto&, auto&) { return false; }},
    {"arch-specific SASS",
     [](auto& c, auto&) { return c.kind == K::CudaSass && c.arch_specific; },
     [](auto& c, auto& d) { return c.sm == d.sm; }},
    {"SASS within its major",
     [](auto& c, auto&) { return c.kind == K::CudaSass; },
     [](auto& c, auto& d) { return c.sm / 10 == d.sm / 10 && d.sm % 10 >= c.sm % 10; }},
    {"arch-specific PTX",
     [](auto& c, auto&) { return c.kind == K::CudaPtx && c.arch_specific; },
     [](auto& c, auto& d) { return c.sm == d.sm; }},
    {"PTX JIT forward",
     [](auto&, auto&) { return true; },
     [](auto& c, auto& d) { return d.sm >= c.sm; }},
};

}  // namespace

std::string Target::text() const {
    switch (kind) {
        case K::Amd:
            return amd.text();
        case K::CudaSass:
            return fmt::format("sm_{}{}", sm, arch_specific ? "a" : "");
        case K::CudaPtx:
            return fmt::format("compute_{}{}", sm, arch_specific ? "a" : "");
    }
    return {};
}

Result<Target> parseTarget(std::string_view s) {
    Target t;
    for (auto [prefix, kind] : {std::pair{std::string_view("sm_"), K::CudaSass},
                                std::pair{std::string_view("compute_"), K::CudaPtx}}) {
        if (!s.starts_with(prefix)) continue;
        std::string_view num = s.substr(prefix.size());
        t.kind = kind;
        if (num.ends_with('a')) {
            t.arch_specific = true;
            num.remove_suffix(1);
        }
        auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), t.sm);
        if (ec != std::errc{} || end != num.data() + num.size() || t.sm < 10 || t.sm > 999)
            return fail(0, fmt::format("'{}' is not a CUDA target (sm_XY, sm_XYa, compute_XY)", s));
        return t;
    }
    if (!s.starts_with("gfx"))
        return fail(0, fmt::format("'{}' is not a GPU target (gfx… or sm_…)", s));
    auto id = parseTargetId(s);
    if (!id) return std::unexpected(id.error());
    t.amd = std::move(*id);
    return t;
}

std::optional<std::string> processorFromHsaOverride(std::string_view v) {
    unsigned part[3];
    for (int i = 0; i < 3; ++i) {
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), part[i]);
        if (ec != std::errc{} || part[i] > (i == 0 ? 99u : 15u)) return std::nullopt;
        v.remove_prefix(end - v.data());
        if (i < 2 && !v.starts_with('.')) return std::nullopt;
        if (i < 2) v.remove_prefix(1);
    }
    if (!v.empty()) return std::nullopt;
    return fmt::format("gfx{}{:x}{:x}", part[0], part[1], part[2]);
}

Verdict compatible(const Target& code, const Target& device, std::string_view hsaOverride) {
    Target dev = device;
    if (!hsaOverride.empty() && dev.kind == K::Amd)
        if (auto p = processorFromHsaOverride(hsaOverride)) dev.amd.processor = *p;
    for (const auto& r : kRules)
        if (r.when(code, dev)) return {r.runs(code, dev), r.name};
    return {false, "no rule"};
}

}  // namespace gpufault::codeobj
