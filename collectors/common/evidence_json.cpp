#include "collectors/common/evidence_json.h"

#include <cmath>

#include "collectors/common/log_line.h"
#include "collectors/common/text.h"

namespace gpufault {

namespace {
template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json toJson(const TimeInfo& t) {
    if (t.empty()) return nullptr;
    nlohmann::json j = nlohmann::json::object();
    if (t.kernel_s) {
        // to the nanosecond (stamps print µs): a value stored by an older parse as
        // 41.257554999999996 is written 41.257555; beyond 2^53 ns it is written as stored
        double k = *t.kernel_s;
        j["kernel_s"] = std::fabs(k) < 9e6 ? std::round(k * 1e9) / 1e9 : k;
    }
    if (t.wall) j["wall"] = *t.wall;
    if (t.runtime_us) j["runtime_us"] = *t.runtime_us;
    return j;
}

nlohmann::json toJson(const Evidence& e) {
    nlohmann::json j;
    j["kind"] = std::string(kindName(e.kind));
    j["vendor"] = opt(e.vendor);
    j["line"] = e.line;
    j["time"] = toJson(e.time);
    j["address"] = e.address ? nlohmann::json(text::hexAddr(*e.address)) : nlohmann::json(nullptr);
    j["address_exact"] = opt(e.address_exact);
    j["align_2mib"] =
        e.address ? nlohmann::json(*e.address % 0x200000 == 0) : nlohmann::json(nullptr);
    j["pci"] = opt(e.pci);
    j["gpu_node"] = opt(e.gpu_node);
    j["pid"] = opt(e.pid);
    j["process"] = opt(e.process);
    j["tid"] = opt(e.tid);
    j["thread"] = opt(e.thread);
    j["runtime_tid"] = opt(e.runtime_tid);
    j["vmid"] = opt(e.vmid);
    j["pasid"] = opt(e.pasid);
    j["hub"] = opt(e.hub);
    j["retry"] = opt(e.retry);
    j["client"] = opt(e.client);
    j["status"] = opt(e.status);
    j["access"] = opt(e.access);
    j["reason"] = opt(e.reason);
    j["xid"] = opt(e.xid);
    j["kernel"] = opt(e.kernel);
    j["module"] = opt(e.module);
    j["module_offset"] =
        e.module_offset ? nlohmann::json(text::hexAddr(*e.module_offset)) : nlohmann::json(nullptr);
    j["rank"] = opt(statedRank(e.rank));  // a compose service's identity is no rank
    j["count"] = e.count;
    nlohmann::json attrs = nlohmann::json::object();
    for (auto& [k, v] : e.attrs) attrs[k] = v;
    j["attrs"] = attrs;
    j["raw"] = e.raw;
    return j;
}

}  // namespace gpufault
