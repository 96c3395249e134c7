#include "collectors/device/sysfs.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <vector>

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
    return fmt::format(
        "{:04x}:{:02x}:{:02x}.{:x}", domain, (*loc >> 8) & 0xff, (*loc >> 3) & 0x1f, *loc & 0x7);
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

std::optional<std::string> nvidiaTargetOfModel(std::string_view model) {
    std::vector<std::string_view> words;
    for (size_t at = 0; at < model.size();) {
        size_t end = model.find_first_of(" -", at);
        if (end == std::string_view::npos) end = model.size();
        if (end > at) words.push_back(model.substr(at, end - at));
        at = end + 1;
    }
    // Model words → compute capability × 10 (sm_XY).
    static constexpr std::pair<std::string_view, int> kModels[] = {
        {"P100", 60},  {"P40", 61},   {"P4", 61},   {"V100", 70}, {"V100S", 70}, {"T4", 75},
        {"A100", 80},  {"A800", 80},  {"A30", 80},  {"A10", 86},  {"A10G", 86},  {"A16", 86},
        {"A40", 86},   {"A2", 86},    {"L4", 89},   {"L20", 89},  {"L40", 89},   {"L40S", 89},
        {"H100", 90},  {"H200", 90},  {"H800", 90}, {"H20", 90},  {"GH200", 90}, {"B100", 100},
        {"B200", 100}, {"GB200", 100}};
    for (auto w : words)
        for (const auto& [name, sm] : kModels)
            if (w == name) return fmt::format("sm_{}", sm);
    // Workstation `RTX 6000 Ada`, `RTX PRO 6000 Blackwell`, `RTX A6000` (Ampere); GeForce
    // `RTX 4090` by its series (Quadro `RTX 5000` is Turing: not guessed).
    for (auto w : words) {
        if (w == "Ada") return "sm_89";
        if (w == "Blackwell") return "sm_120";
    }
    bool geforce = false, rtx = false;
    for (auto w : words) {
        geforce |= w == "GeForce";
        if (w == "RTX") {
            rtx = true;
            continue;
        }
        if (!rtx) continue;
        if (w.size() == 5 && w[0] == 'A' && std::isdigit(static_cast<unsigned char>(w[1])))
            return "sm_86";
        if (geforce && w.size() == 4 && std::isdigit(static_cast<unsigned char>(w[0]))) {
            switch (w[0] - '0') {
                case 2:
                    return "sm_75";
                case 3:
                    return "sm_86";
                case 4:
                    return "sm_89";
                case 5:
                    return "sm_120";
                default:
                    break;
            }
        }
    }
    return std::nullopt;
}

}  // namespace gpufault
