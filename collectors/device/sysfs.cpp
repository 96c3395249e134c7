#include "collectors/device/sysfs.h"

#include <fmt/format.h>

#include <charconv>

#include "collectors/common/text.h"

namespace gpufault {

std::optional<uint64_t> KfdNode::get(const std::string& key) const {
    auto it = props.find(key);
    if (it == props.end()) return std::nullopt;
    return it->second;
}

std::optional<std::string> KfdNode::target() const {
    auto v = get("gfx_target_version");
    if (!v || *v == 0) return std::nullopt;
    uint64_t major = *v / 10000, minor = (*v / 100) % 100, stepping = *v % 100;
    return fmt::format("gfx{}{:x}{:x}", major, minor, stepping);
}

std::optional<std::string> KfdNode::pci() const {
    auto loc = get("location_id");
    if (!isGpu() || !loc) return std::nullopt;
    uint64_t domain = get("domain").value_or(0);
    return fmt::format("{:04x}:{:02x}:{:02x}.{:x}", domain, (*loc >> 8) & 0xff, (*loc >> 3) & 0x1f,
                       *loc & 0x7);
}

KfdNode parseKfdProperties(std::string_view text) {
    KfdNode n;
    text::forEachLine(text, [&](std::string_view line) {
        line = text::trim(line);
        auto sp = line.find(' ');
        if (sp == std::string_view::npos) return;
        auto value = text::trim(line.substr(sp + 1));
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || p != value.data() + value.size()) return;
        n.props[std::string(line.substr(0, sp))] = v;
    });
    return n;
}

std::map<std::string, std::string> parseNvidiaInformation(std::string_view text) {
    std::map<std::string, std::string> out;
    text::forEachLine(text, [&](std::string_view line) {
        auto colon = line.find(':');
        if (colon == std::string_view::npos) return;
        out[std::string(text::trim(line.substr(0, colon)))] =
            std::string(text::trim(line.substr(colon + 1)));
    });
    return out;
}

}  // namespace gpufault
