#include "collectors/code_object/amdgpu_code_object.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "collectors/code_object/elf.h"

namespace gpufault::codeobj {
namespace {

// EF_AMDGPU_MACH_AMDGCN_* (AMDGPUUsage, llvmorg-20.1.0).
constexpr std::pair<uint8_t, std::string_view> kMach[] = {
    {0x20, "gfx600"},        {0x21, "gfx601"},          {0x22, "gfx700"},
    {0x23, "gfx701"},        {0x24, "gfx702"},          {0x25, "gfx703"},
    {0x26, "gfx704"},        {0x28, "gfx801"},          {0x29, "gfx802"},
    {0x2a, "gfx803"},        {0x2b, "gfx810"},          {0x2c, "gfx900"},
    {0x2d, "gfx902"},        {0x2e, "gfx904"},          {0x2f, "gfx906"},
    {0x30, "gfx908"},        {0x31, "gfx909"},          {0x32, "gfx90c"},
    {0x33, "gfx1010"},       {0x34, "gfx1011"},         {0x35, "gfx1012"},
    {0x36, "gfx1030"},       {0x37, "gfx1031"},         {0x38, "gfx1032"},
    {0x39, "gfx1033"},       {0x3a, "gfx602"},          {0x3b, "gfx705"},
    {0x3c, "gfx805"},        {0x3d, "gfx1035"},         {0x3e, "gfx1034"},
    {0x3f, "gfx90a"},        {0x40, "gfx940"},          {0x41, "gfx1100"},
    {0x42, "gfx1013"},       {0x43, "gfx1150"},         {0x44, "gfx1103"},
    {0x45, "gfx1036"},       {0x46, "gfx1101"},         {0x47, "gfx1102"},
    {0x48, "gfx1200"},       {0x4a, "gfx1151"},         {0x4b, "gfx941"},
    {0x4c, "gfx942"},        {0x4e, "gfx1201"},         {0x4f, "gfx950"},
    {0x51, "gfx9-generic"},  {0x52, "gfx10-1-generic"}, {0x53, "gfx10-3-generic"},
    {0x54, "gfx11-generic"}, {0x55, "gfx1152"},         {0x58, "gfx1153"},
    {0x59, "gfx12-generic"}, {0x5f, "gfx9-4-generic"},
};  // r600-era values (0x01–0x10) are not ROCm code objects: left out.

// Processors with an xnack / sramecc setting (AMDGPUUsage processor table, "Target Features").
// Needed for v3, whose single bits cannot say "any".
bool hasXnack(std::string_view p) {
    constexpr std::string_view k[] = {"gfx801",
                                      "gfx810",
                                      "gfx900",
                                      "gfx902",
                                      "gfx904",
                                      "gfx906",
                                      "gfx908",
                                      "gfx909",
                                      "gfx90a",
                                      "gfx90c",
                                      "gfx940",
                                      "gfx941",
                                      "gfx942",
                                      "gfx950",
                                      "gfx1010",
                                      "gfx1011",
                                      "gfx1012",
                                      "gfx1013"};
    return std::ranges::find(k, p) != std::end(k);
}
bool hasSramecc(std::string_view p) {
    constexpr std::string_view k[] = {
        "gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"};
    return std::ranges::find(k, p) != std::end(k);
}

Feature v4Feature(uint32_t bits) {
    return bits == 3 ? Feature::On : bits == 2 ? Feature::Off : Feature::Any;
}

}  // namespace

std::string_view amdProcessorName(uint32_t mach) {
    for (const auto& [v, name] : kMach)
        if (v == mach) return name;
    return {};
}

Result<AmdCodeObject> parseAmdCodeObject(Bytes b, uint64_t base, bool kernels) {
    auto elf = parseElf(b, base);
    if (!elf) return std::unexpected(elf.error());
    if (elf->header.machine != kEmAmdgpu)
        return fail(base + 18,
                    fmt::format("e_machine {} is not EM_AMDGPU (224)", elf->header.machine));
    AmdCodeObject co;
    co.abi_version = elf->header.abi_version;
    co.code_object_version = co.abi_version + 2;
    co.e_flags = elf->header.flags;
    uint32_t mach = co.e_flags & 0xff;
    auto name = amdProcessorName(mach);
    co.target.processor = name.empty() ? fmt::format("mach-0x{:x}", mach) : std::string(name);
    if (co.abi_version == 1) {
        const auto& p = co.target.processor;
        if (co.e_flags & 0x100)
            co.target.xnack = Feature::On;
        else if (hasXnack(p))
            co.target.xnack = Feature::Off;
        if (co.e_flags & 0x200)
            co.target.sramecc = Feature::On;
        else if (hasSramecc(p))
            co.target.sramecc = Feature::Off;
    } else if (co.abi_version >= 2) {
        co.target.xnack = v4Feature((co.e_flags >> 8) & 3);
        co.target.sramecc = v4Feature((co.e_flags >> 10) & 3);
        if (co.target.processor.ends_with("-generic")) co.generic_version = co.e_flags >> 24;
    }
    if (!kernels) return co;
    auto syms = symbols(*elf);
    if (!syms) return std::unexpected(syms.error());
    for (const auto& s : *syms)
        if (s.name.ends_with(".kd")) co.kernels.emplace_back(s.name.substr(0, s.name.size() - 3));
    std::ranges::sort(co.kernels);
    co.kernels.erase(std::unique(co.kernels.begin(), co.kernels.end()), co.kernels.end());
    return co;
}

std::string checkLabel(const TargetId& label, const AmdCodeObject& co) {
    bool same = label.processor == co.target.processor;
    if (same && co.abi_version >= 2)
        same = label.xnack == co.target.xnack && label.sramecc == co.target.sramecc;
    if (same) return {};
    return fmt::format("labeled {} but holds {} code (e_flags 0x{:x}, code object v{})",
                       label.text(),
                       co.target.text(),
                       co.e_flags,
                       co.code_object_version);
}

}  // namespace gpufault::codeobj
