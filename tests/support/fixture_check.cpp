#include "tests/support/fixture_check.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <sstream>

namespace gpufault::testing {

namespace {

const std::set<std::string> kStrictKinds = {
    "amdgpu_page_fault", "rocr_memory_fault", "nvidia_xid", "sanitizer_report", "cpu_segfault"};

std::optional<uint64_t> hexValue(const nlohmann::json& v) {
    if (!v.is_string()) return std::nullopt;
    std::string s = v.get<std::string>();
    if (s.rfind("0x", 0) != 0 && s.rfind("0X", 0) != 0) return std::nullopt;
    try {
        size_t pos = 0;
        uint64_t x = std::stoull(s.substr(2), &pos, 16);
        if (pos != s.size() - 2) return std::nullopt;
        return x;
    } catch (...) {
        return std::nullopt;
    }
}

bool timeEqual(const nlohmann::json& exp, const nlohmann::json& act) {
    if (exp.is_null()) return act.is_null() || (act.is_object() && act.empty());
    if (!exp.is_object() || !act.is_object()) return false;
    for (auto& [k, v] : exp.items()) {
        if (!act.contains(k)) return false;
        const auto& a = act[k];
        if (k == "kernel_s") {
            if (!a.is_number() || !v.is_number()) return false;
            if (std::fabs(a.get<double>() - v.get<double>()) > 0.5e-6) return false;
        } else if (a != v) {
            return false;
        }
    }
    return true;
}

bool fieldEqual(const std::string& key, const nlohmann::json& exp, const nlohmann::json& actual) {
    nlohmann::json act = actual.contains(key) ? actual[key] : nlohmann::json(nullptr);
    if (exp.is_null()) return act.is_null();
    if (key == "time") return timeEqual(exp, act);
    if (key == "address" || key == "module_offset") {
        auto e = hexValue(exp), a = hexValue(act);
        return e && a && *e == *a;
    }
    if (exp.is_boolean() != act.is_boolean()) return false;
    return exp == act;
}

int equalFields(const nlohmann::json& exp, const nlohmann::json& act) {
    int n = 0;
    for (auto& [k, v] : exp.items())
        if (fieldEqual(k, v, act)) ++n;
    return n;
}

}  // namespace

std::vector<nlohmann::json> parseJsonLines(const std::string& text) {
    std::vector<nlohmann::json> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.is_object()) out.push_back(std::move(j));
    }
    return out;
}

std::vector<std::string> checkCase(const std::vector<nlohmann::json>& expected,
                                   const std::vector<nlohmann::json>& actual) {
    std::vector<std::string> problems;
    std::vector<bool> used(actual.size(), false);
    for (const auto& exp : expected) {
        const std::string kind = exp.value("kind", "");
        // Candidates of the same kind, in preference tiers: same address+line, same address,
        // same line, any. Within a tier the one with most equal fields wins.
        auto sameAddr = [&](const nlohmann::json& a) {
            return exp.contains("address") && fieldEqual("address", exp["address"], a) &&
                   !exp["address"].is_null();
        };
        auto sameLine = [&](const nlohmann::json& a) {
            return exp.contains("line") && a.contains("line") && exp["line"] == a["line"];
        };
        std::optional<size_t> best;
        for (int tier = 0; tier < 4 && !best; ++tier) {
            int bestScore = -1;
            for (size_t i = 0; i < actual.size(); ++i) {
                if (used[i] || actual[i].value("kind", "") != kind) continue;
                bool ok = tier == 0   ? sameAddr(actual[i]) && sameLine(actual[i])
                          : tier == 1 ? sameAddr(actual[i])
                          : tier == 2 ? sameLine(actual[i])
                                      : true;
                if (!ok) continue;
                int score = equalFields(exp, actual[i]);
                if (score > bestScore) {
                    bestScore = score;
                    best = i;
                }
            }
        }
        if (!best) {
            problems.push_back(fmt::format("missing record {}", exp.dump()));
            continue;
        }
        used[*best] = true;
        const auto& act = actual[*best];
        for (auto& [k, v] : exp.items()) {
            if (!fieldEqual(k, v, act)) {
                problems.push_back(
                    fmt::format("{} line {}: field '{}' expected {} got {}",
                                kind,
                                exp.value("line", 0),
                                k,
                                v.dump(),
                                act.contains(k) ? act[k].dump() : std::string("(absent)")));
            }
        }
    }
    for (size_t i = 0; i < actual.size(); ++i) {
        if (used[i]) continue;
        std::string kind = actual[i].value("kind", "");
        if (kStrictKinds.count(kind)) {
            auto a = actual[i];
            a.erase("raw");
            problems.push_back(fmt::format("extra {} record {}", kind, a.dump()));
        }
    }
    return problems;
}

}  // namespace gpufault::testing
