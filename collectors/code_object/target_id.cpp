#include "collectors/code_object/target_id.h"

#include <fmt/format.h>

namespace gpufault::codeobj {

std::string TargetId::text() const {
    std::string s = processor;
    auto add = [&](std::string_view name, Feature f) {
        if (f != Feature::Any) s += fmt::format(":{}{}", name, f == Feature::On ? '+' : '-');
    };
    add("sramecc", sramecc);
    add("xnack", xnack);
    for (const auto& o : other) s += ":" + o;
    return s;
}

Result<TargetId> parseTargetId(std::string_view s) {
    TargetId t;
    size_t colon = s.find(':');
    t.processor = std::string(s.substr(0, colon));
    if (t.processor.empty()) return fail(0, fmt::format("target ID '{}' has no processor", s));
    while (colon != std::string_view::npos) {
        size_t start = colon + 1;
        colon = s.find(':', start);
        std::string_view f =
            s.substr(start, colon == std::string_view::npos ? colon : colon - start);
        if (f.size() < 2 || (f.back() != '+' && f.back() != '-'))
            return fail(start, fmt::format("target ID '{}': feature '{}' has no + or -", s, f));
        Feature v = f.back() == '+' ? Feature::On : Feature::Off;
        std::string_view name = f.substr(0, f.size() - 1);
        if (name == "xnack")
            t.xnack = v;
        else if (name == "sramecc")
            t.sramecc = v;
        else
            t.other.emplace_back(f);
    }
    return t;
}

BundleEntryId parseBundleEntryId(std::string_view id) {
    std::vector<std::string_view> parts;
    while (parts.size() < 5) {
        size_t dash = id.find('-');
        if (dash == std::string_view::npos) break;
        parts.push_back(id.substr(0, dash));
        id.remove_prefix(dash + 1);
    }
    parts.push_back(id);
    BundleEntryId e;
    e.kind = std::string(parts[0]);
    if (parts.size() == 6) {
        e.target = std::string(parts[5]);
        parts.pop_back();
    } else if (parts.size() == 5 && e.kind != "host" &&
               (parts[4].starts_with("gfx") || parts[4].starts_with("sm_"))) {
        e.target = std::string(parts[4]);  // pre-v4 HIP: hip-amdgcn-amd-amdhsa-gfx906
        parts.pop_back();
    }
    for (size_t i = 1; i < parts.size(); ++i) {
        if (i > 1) e.triple += '-';
        e.triple += parts[i];
    }
    while (!e.triple.empty() && e.triple.back() == '-') e.triple.pop_back();
    return e;
}

}  // namespace gpufault::codeobj
