#include "collectors/coredump/gpu_core.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "collectors/code_object/amdgpu_code_object.h"

namespace gpufault::coredump {

GpuCoreMeta gpuCoreMeta(const CoreLayout& c, std::string_view file_name) {
    GpuCoreMeta m;
    m.e_flags = c.head.flags;
    m.sections = c.sections.size();
    if (auto dot = file_name.rfind('.');
        dot != std::string_view::npos && file_name.substr(0, dot).ends_with("core")) {
        int64_t pid = 0;
        auto digits = file_name.substr(dot + 1);
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
        if (ec == std::errc{} && p == digits.data() + digits.size() && pid > 0) m.pid = pid;
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
    return m;
}

nlohmann::json toJson(const GpuCoreMeta& m) {
    nlohmann::json j{{"e_flags", m.e_flags}, {"sections", m.sections}};
    if (m.pid) j["pid"] = *m.pid;
    if (m.target) j["target"] = *m.target;
    if (!m.cudbg_sections.empty()) j["cudbg_sections"] = m.cudbg_sections;
    return j;
}

}  // namespace gpufault::coredump
