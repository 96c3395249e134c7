#include "collectors/kernel_log/amdgpu_fault_lines.h"

#include <cstdint>
#include <string>

#include "collectors/common/text.h"
#include "collectors/kernel_log/amdgpu_line.h"

namespace gpufault::amdgpu {

namespace {

using text::startsWith;
constexpr auto npos = std::string_view::npos;

// A `0x…` value at the start of `s` that is complete: at least `min_digits` digits (the
// producers print `%016llx`, `%08X`) or fewer followed by a blank (a log edited by hand). A line
// cut inside a number, or shortened with `...`, gives nullopt.
std::optional<uint64_t> completeHex(std::string_view s, size_t min_digits) {
    size_t used = 0;
    auto v = text::parseHex(s, &used);
    if (!v) return std::nullopt;
    size_t digits = used - (startsWith(s, "0x") || startsWith(s, "0X") ? 2 : 0);
    if (digits < min_digits && (used == s.size() || (s[used] != ' ' && s[used] != '\t')))
        return std::nullopt;
    return v;
}

// The value of `key` (e.g. "vmid:") inside a header's parentheses, when complete.
std::optional<int64_t> headerField(std::string_view s, std::string_view key) {
    for (size_t p = s.find(key); p != npos; p = s.find(key, p + 1)) {
        if (p > 0 && s[p - 1] != ' ' && s[p - 1] != '(' && s[p - 1] != ',') continue;
        return decFollowedBy(s.substr(p + key.size()), " ,)", false);
    }
    return std::nullopt;
}

// `[%s] %s page fault (src_id:%u ring:%u vmid:%u pasid:%u[, for process %s pid %d thread %s pid
// %d])` (gmc_v9 and gmc_v12_1 with retry/no-retry; gmc_v10–v12 without; 4.14–4.19
// `[%s] VMC page fault (… pas_id:%u)`; FreeBSD the same behind `drmn0: `, with `vm_id:%u`).
bool applyHeader(std::string_view body, Evidence& e) {
    size_t p = body.find("page fault (");
    size_t close = body.find(']');
    if (p == npos || close == npos || close > p || body[0] != '[') return false;
    std::string_view hub = body.substr(1, close - 1);
    if (!hub.empty()) e.hub = std::string(hub);
    std::string_view word = text::trim(body.substr(close + 1, p - close - 1));
    if (word == "retry") e.retry = true;
    if (word == "no-retry") e.retry = false;
    std::string_view fields = body.substr(p + 12);
    if (auto v = headerField(fields, "src_id:")) e.setAttr("src_id", std::to_string(*v));
    if (auto v = headerField(fields, "ring:")) e.setAttr("ring", std::to_string(*v));
    if (auto v = headerField(fields, "vmid:")) e.vmid = v;
    if (auto v = headerField(fields, "vm_id:")) e.vmid = v;  // FreeBSD drm-kmod's VMC header
    if (auto v = headerField(fields, "pasid:")) e.pasid = v;
    if (auto v = headerField(fields, "pas_id:")) e.pasid = v;
    size_t t = fields.find("for process ");
    if (t != npos) applyTask(parseTaskInfo(fields.substr(t + 12)), e);
    return true;
}

// gmc_v6–v8: `GPU fault detected: %d 0x%08x[ for process %s pid %d thread %s pid %d]`.
bool applyLegacyHeader(std::string_view body, Evidence& e) {
    std::string_view rest = skipBlanks(body.substr(19));
    size_t used = 0;
    if (auto src = text::parseDec(rest, &used); src && used < rest.size()) {
        e.setAttr("src_id", std::to_string(*src));
        std::string_view data = skipBlanks(rest.substr(used));
        if (completeHex(data, 8)) e.setAttr("src_data", std::string(data.substr(0, 10)));
    }
    size_t t = body.find(" for process ");
    if (t != npos) applyTask(parseTaskInfo(body.substr(t + 13)), e);
    return true;
}

// `  in page starting at address 0x%016llx from IH client 0x%x (%s)` (gmc_v9, v10),
// `… from client 0x%x (%s)`, `… from client %d` (v11, v12), `… from IH client %d (%s)` (v12_1),
// 4.14–4.19 `  at page 0x%016llx from %d` / `  at address 0x%016llx from %d`.
bool applyAddress(std::string_view body, Evidence& e) {
    size_t p = body.find("0x");
    if (p == npos) return false;
    std::string_view hex = body.substr(p);
    auto addr = completeHex(hex, 16);
    if (!addr) return false;
    e.address = addr;
    e.address_exact = false;
    size_t f = hex.find(" from ");
    if (f == npos) return true;
    std::string_view from = hex.substr(f + 6);
    if (startsWith(from, "IH client "))
        from.remove_prefix(10);
    else if (startsWith(from, "client "))
        from.remove_prefix(7);
    size_t sp = from.find(' ');
    std::string_view id = from.substr(0, sp);
    if (!id.empty()) e.setAttr("ih_client", std::string(id));
    if (sp != npos && startsWith(from.substr(sp), " (")) {
        std::string_view name = from.substr(sp + 2);
        if (size_t c = name.rfind(')'); c != npos)
            e.setAttr("ih_client_name", std::string(name.substr(0, c)));
    }
    return true;
}

// gmc_v6–v8: `  VM_CONTEXT1_PROTECTION_FAULT_ADDR   0x%08X`, a page number.
bool applyLegacyAddress(std::string_view body, Evidence& e) {
    std::string_view v = skipBlanks(body.substr(33));
    auto page = completeHex(v, 8);
    // A page number whose byte address does not fit 64 bits is not one (no wrap-around).
    if (!page || !startsWith(v, "0x") || *page > (UINT64_MAX >> 12)) return false;
    if (!e.address) e.address = *page * 4096;
    e.address_exact = false;
    return true;
}

// `  cookie node_id %d fault from die %s%d%s` (gmc_v9 on multi-AID parts, gmc_v12_1).
bool applyCookie(std::string_view body, Evidence& e) {
    std::string_view rest = body.substr(15);
    if (auto n = decFollowedBy(rest, " ", false)) e.setAttr("node_id", std::to_string(*n));
    size_t d = rest.find("fault from die ");
    if (d == npos) return e.attr("node_id").has_value();
    std::string_view die = text::trim(rest.substr(d + 15));
    if (!die.empty()) e.setAttr("die", std::string(die));
    return true;
}

// `%s_L2_PROTECTION_FAULT_STATUS:0x%08X` (VM, GCVM, MMVM) and gmc_v6–v8
// `  VM_CONTEXT1_PROTECTION_FAULT_STATUS 0x%08X`.
bool applyStatus(std::string_view body, Evidence& e) {
    size_t p = body.find("PROTECTION_FAULT_STATUS");
    std::string_view rest = body.substr(p + 23);
    while (!rest.empty() && rest[0] != ':' && rest[0] != ' ' && rest[0] != '\t')
        rest.remove_prefix(1);
    if (!rest.empty() && rest[0] == ':') rest.remove_prefix(1);
    rest = skipBlanks(rest);
    if (!startsWith(rest, "0x") && !startsWith(rest, "0X")) return false;
    auto v = completeHex(rest, 8);
    if (!v) return false;
    e.status = static_cast<int64_t>(*v);
    return true;
}

// `\t Faulty UTCL2 client ID: %s (0x%x)` (name from the hub's client table, `unknown` when
// none), 2020 form `\t Faulty UTCL2 client ID: 0x%lx` (number only).
bool applyClient(std::string_view body, Evidence& e) {
    std::string_view v = text::trim(body.substr(23));
    size_t id = v.rfind(" (0x");
    if (id == npos) {
        if (startsWith(v, "0x") && completeHex(v, 1) && v.find(' ') == npos) {
            e.setAttr("client_id", std::string(v));
            return true;
        }
        return false;
    }
    std::string_view name = v.substr(0, id);
    std::string_view num = v.substr(id + 2);
    if (size_t c = num.find(')'); c != npos) e.setAttr("client_id", std::string(num.substr(0, c)));
    if (!name.empty() && name != "unknown") e.client = std::string(name);
    return true;
}

// gmc_v6–v8 decode: `VM fault (0x%02x, vmid %d[, pasid %d]) at page %u, %s from '%s' (0x%08x)
// (%d)`, later gmc_v6 `… at page %u, %s from %d`, radeon si/cik and early gmc_v6 `… from %s (%d)`
// (the block name unquoted).
bool applyLegacyDecode(std::string_view body, Evidence& e) {
    std::string_view rest = body.substr(10);
    size_t c = rest.find(',');
    if (c != npos) e.setAttr("protections", std::string(rest.substr(0, c)));
    if (size_t p = rest.find(", vmid "); p != npos)
        e.vmid = decFollowedBy(rest.substr(p + 7), ",)", false);
    if (size_t p = rest.find(", pasid "); p != npos)
        e.pasid = decFollowedBy(rest.substr(p + 8), ")", false);
    size_t pg = rest.find(") at page ");
    if (pg == npos) return e.vmid.has_value();
    rest = rest.substr(pg + 10);
    if (auto page = decFollowedBy(rest, ",", false);
        page && static_cast<uint64_t>(*page) <= (UINT64_MAX >> 12))
        e.address = static_cast<uint64_t>(*page) * 4096;
    if (e.address) e.address_exact = false;
    size_t comma = rest.find(", ");
    if (comma == npos) return true;
    rest = rest.substr(comma + 2);
    if (startsWith(rest, "write from ")) e.access = "write";
    if (startsWith(rest, "read from ")) e.access = "read";
    size_t from = rest.find("from ");
    if (from == npos) return true;
    rest = rest.substr(from + 5);
    if (startsWith(rest, "'")) {
        size_t q = rest.find('\'', 1);
        if (q == npos) return true;
        std::string_view name = text::trim(rest.substr(1, q - 1));
        while (!name.empty() && name.back() == '\0') name.remove_suffix(1);
        if (!name.empty()) e.client = std::string(name);
        rest = rest.substr(q + 1);
        if (startsWith(rest, " (0x")) {
            size_t e1 = rest.find(')');
            if (e1 != npos) e.setAttr("mc_client", std::string(rest.substr(2, e1 - 2)));
            rest = e1 == npos ? std::string_view{} : rest.substr(e1 + 1);
        }
        if (startsWith(rest, " (")) {
            if (auto id = decFollowedBy(rest.substr(2), ")", false))
                e.setAttr("mc_id", std::to_string(*id));
        }
    } else if (auto id = decFollowedBy(rest, " ", true)) {
        e.setAttr("mc_id", std::to_string(*id));
    } else {
        // radeon's si/cik decode and amdgpu's gmc_v6: the block name unquoted, `from %s (%d)`.
        size_t end = rest.find(' ');
        std::string_view name = rest.substr(0, end);
        if (!name.empty() && name.size() <= 8) e.client = std::string(name);
        if (end != npos && startsWith(rest.substr(end), " (")) {
            if (auto mc = decFollowedBy(rest.substr(end + 2), ")", false))
                e.setAttr("mc_id", std::to_string(*mc));
        }
    }
    return true;
}

// `\t MORE_FAULTS: 0x%lx` and its siblings; `\t RW: 0x%x` → access.
bool applyFlag(FaultStage stage, std::string_view body, Evidence& e) {
    size_t colon = body.find(':');
    std::string_view v = text::trim(body.substr(colon + 1));
    if (!startsWith(v, "0x") || !completeHex(v, 1) || v.find(' ') != npos) return false;
    auto value = text::parseHex(v);
    switch (stage) {
        case FaultStage::MoreFaults:
            e.setAttr("more_faults", std::string(v));
            break;
        case FaultStage::WalkerError:
            e.setAttr("walker_error", std::string(v));
            break;
        case FaultStage::PermissionFaults:
            e.setAttr("permission_faults", std::string(v));
            break;
        case FaultStage::MappingError:
            e.setAttr("mapping_error", std::string(v));
            break;
        case FaultStage::Rw:
            if (*value == 0) e.access = "read";
            if (*value == 1) e.access = "write";
            break;
        default:
            return false;
    }
    return true;
}

bool isStatusLine(std::string_view body) {
    size_t p = body.find("PROTECTION_FAULT_STATUS");
    if (p == npos || p > 16) return false;
    for (size_t i = 0; i < p; ++i) {
        char c = body[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
    }
    return true;
}

}  // namespace

FaultStage classifyFaultLine(std::string_view body) {
    if (body.empty()) return FaultStage::None;
    if (body[0] == '[')
        return body.find("page fault (") != npos ? FaultStage::Header : FaultStage::None;
    if (startsWith(body, "GPU fault detected:")) return FaultStage::Header;
    if (startsWith(body, "in page starting at address 0x") || startsWith(body, "at page 0x") ||
        startsWith(body, "at address 0x") || startsWith(body, "VM_CONTEXT1_PROTECTION_FAULT_ADDR"))
        return FaultStage::Address;
    if (taskLineText(body)) return FaultStage::Task;
    if (startsWith(body, "cookie node_id ")) return FaultStage::Cookie;
    if (isStatusLine(body)) return FaultStage::Status;
    if (startsWith(body, "Faulty UTCL2 client ID:") || startsWith(body, "VM fault (0x"))
        return FaultStage::Client;
    if (startsWith(body, "MORE_FAULTS:")) return FaultStage::MoreFaults;
    if (startsWith(body, "WALKER_ERROR:")) return FaultStage::WalkerError;
    if (startsWith(body, "PERMISSION_FAULTS:")) return FaultStage::PermissionFaults;
    if (startsWith(body, "MAPPING_ERROR:")) return FaultStage::MappingError;
    if (startsWith(body, "RW:")) return FaultStage::Rw;
    return FaultStage::None;
}

bool applyFaultLine(FaultStage stage, std::string_view body, Evidence& e) {
    switch (stage) {
        case FaultStage::Header:
            return startsWith(body, "GPU fault detected:") ? applyLegacyHeader(body, e)
                                                           : applyHeader(body, e);
        case FaultStage::Task: {
            auto t = parseTaskInfo(*taskLineText(body));
            applyTask(t, e);
            return t.pid || t.process;
        }
        case FaultStage::Address:
            return startsWith(body, "VM_CONTEXT1_") ? applyLegacyAddress(body, e)
                                                    : applyAddress(body, e);
        case FaultStage::Cookie:
            return applyCookie(body, e);
        case FaultStage::Status:
            return applyStatus(body, e);
        case FaultStage::Client:
            return startsWith(body, "VM fault") ? applyLegacyDecode(body, e) : applyClient(body, e);
        case FaultStage::MoreFaults:
        case FaultStage::WalkerError:
        case FaultStage::PermissionFaults:
        case FaultStage::MappingError:
        case FaultStage::Rw:
            return applyFlag(stage, body, e);
        case FaultStage::None:
            return false;
    }
    return false;
}

}  // namespace gpufault::amdgpu
