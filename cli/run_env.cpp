#include "cli/run_env.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <utility>

#include "collectors/common/redact.h"

namespace gpufault::cli {

namespace {

bool startsWith(std::string_view s, std::string_view p) {
    return s.substr(0, p.size()) == p;
}

}  // namespace

bool isGpuVariable(std::string_view name) {
    static constexpr std::array kPrefixes = {"AMD_",
                                             "HIP_",
                                             "HSA_",
                                             "ROCBLAS_",
                                             "HIPBLASLT_",
                                             "MIOPEN_",
                                             "TORCH_",
                                             "PYTORCH_",
                                             "CUDA_",
                                             "NCCL_",
                                             "RCCL_"};
    for (std::string_view p : kPrefixes)
        if (startsWith(name, p)) return true;
    if (name.size() > 16 && name.substr(name.size() - 16) == "_VISIBLE_DEVICES") return true;
    return name == "LOCAL_RANK" || name == "RANK" || name == "WORLD_SIZE";
}

std::map<std::string, std::string> gpuEnvironment(const char* const* envp) {
    std::map<std::string, std::string> out;
    for (; envp && *envp; ++envp) {
        std::string_view kv = *envp;
        auto eq = kv.find('=');
        if (eq == std::string_view::npos || eq == 0) continue;
        auto name = kv.substr(0, eq), value = kv.substr(eq + 1);
        if (!isGpuVariable(name)) continue;
        out[std::string(name)] = looksSecret(name, value) ? "<redacted>" : std::string(value);
    }
    return out;
}

std::expected<uint64_t, std::string> parseAmdLogMask(std::string_view spec) {
    static constexpr std::pair<std::string_view, uint64_t> kBits[] = {
        {"api", 0x1},          {"cmd", 0x2},     {"wait", 0x4},         {"aql", 0x8},
        {"queue", 0x10},       {"sig", 0x20},    {"lock", 0x40},        {"kern", 0x80},
        {"copy", 0x100},       {"copy2", 0x200}, {"resource", 0x400},   {"init", 0x800},
        {"misc", 0x1000},      {"aql2", 0x2000}, {"code", 0x4000},      {"cmd2", 0x8000},
        {"location", 0x10000}, {"mem", 0x20000}, {"mem_pool", 0x40000}, {"ts", 0x80000},
        {"comgr", 0x100000}};
    constexpr uint64_t kLocation = 0x10000;
    if (!spec.empty() && std::isdigit(static_cast<unsigned char>(spec[0]))) {
        int base = spec.starts_with("0x") || spec.starts_with("0X") ? 16 : 10;
        auto digits = base == 16 ? spec.substr(2) : spec;
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
        if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty())
            return std::unexpected(fmt::format("'{}' is not a number", spec));
        return v;
    }
    uint64_t mask = kLocation;
    while (!spec.empty()) {
        auto comma = spec.find(',');
        auto word = spec.substr(0, comma);
        auto it = std::find_if(
            std::begin(kBits), std::end(kBits), [&](const auto& b) { return b.first == word; });
        if (it == std::end(kBits))
            return std::unexpected(fmt::format("unknown AMD_LOG_MASK bit '{}'", word));
        mask |= it->second;
        spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    }
    return mask;
}

}  // namespace gpufault::cli
