#include "collectors/common/evidence.h"

#include <array>

namespace gpufault {

namespace {
constexpr std::array<std::pair<Kind, std::string_view>, 11> kKindNames{{
    {Kind::AmdgpuPageFault, "amdgpu_page_fault"},
    {Kind::RocrMemoryFault, "rocr_memory_fault"},
    {Kind::HsaQueueError, "hsa_queue_error"},
    {Kind::RuntimeError, "runtime_error"},
    {Kind::NvidiaXid, "nvidia_xid"},
    {Kind::SanitizerReport, "sanitizer_report"},
    {Kind::CpuSegfault, "cpu_segfault"},
    {Kind::MissingCodeObject, "missing_code_object"},
    {Kind::AllocFailure, "alloc_failure"},
    {Kind::GpuReset, "gpu_reset"},
    {Kind::Coredump, "coredump"},
}};
}  // namespace

std::string_view kindName(Kind k) {
    for (auto& [kind, name] : kKindNames)
        if (kind == k) return name;
    return "unknown";
}

std::optional<Kind> kindFromName(std::string_view name) {
    for (auto& [kind, n] : kKindNames)
        if (n == name) return kind;
    return std::nullopt;
}

bool opensIncident(Kind k) {
    return k != Kind::GpuReset && k != Kind::AllocFailure;
}

void Evidence::setAttr(std::string key, std::string value) {
    for (auto& kv : attrs) {
        if (kv.first == key) {
            kv.second = std::move(value);
            return;
        }
    }
    attrs.emplace_back(std::move(key), std::move(value));
}

std::optional<std::string_view> Evidence::attr(std::string_view key) const {
    for (auto& kv : attrs)
        if (kv.first == key) return kv.second;
    return std::nullopt;
}

}  // namespace gpufault
