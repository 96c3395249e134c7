#include "cli/diagnosis_view.h"

#include <fmt/format.h>

#include <set>

#include "analysis/diagnosis.h"
#include "cli/output.h"
#include "schema/diagnosis_queries.h"

namespace gpufault::cli {

namespace {

/// The verdict as a column label: the ones that explain a crash in capitals.
std::string label(const std::string& verdict) {
    if (verdict == "no_code") return "NO CODE";
    if (verdict == "mislabeled") return "MISLABELED";
    if (verdict == "library_missing") return "NO LIBRARY";
    if (verdict == "library_present") return "library";
    if (verdict == "no_device") return "no device";
    return verdict;
}

/// `gfx1030 (0000:03:00.0): how it was found`, once per device.
std::vector<std::string> deviceLines(const Diagnosis& dg) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (const auto& f : dg.findings) {
        if (f.device_target.empty()) continue;
        std::string s = f.device_target + (f.device.empty() ? "" : " (" + f.device + ")") + ": " +
                        f.device_from;
        if (seen.insert(s).second) out.push_back(s);
    }
    return out;
}

}  // namespace

std::string diagnosisText(db::Db& d, int64_t incident) {
    auto dgs = queryIncidentDiagnoses(d, incident);
    if (!dgs) return "";
    std::string out;
    for (const auto& dg : *dgs) {
        out += fmt::format("  DIAGNOSIS  {} ({})\n", printable(dg.why), dg.rule);
        for (const auto& dev : deviceLines(dg))
            out += fmt::format("  {:<10} {}\n", "device", printable(dev));
        for (const auto& f : dg.findings)
            if (f.verdict != "device")  // printed as the device lines above
                out += fmt::format(
                    "  {:<10} {}\n", label(f.verdict), printable(diagnosis::findingText(f)));
    }
    return out;
}

std::string diagnosisMarkdown(db::Db& d, int64_t incident) {
    auto dgs = queryIncidentDiagnoses(d, incident);
    if (!dgs || dgs->empty()) return "";
    std::string out = "### Diagnosis\n\n";
    for (const auto& dg : *dgs) {
        out += fmt::format("Triggered by {} ({}).\n\n", mdText(dg.why), mdCode(dg.rule));
        for (const auto& dev : deviceLines(dg)) out += fmt::format("- Device: {}\n", mdText(dev));
        for (const auto& f : dg.findings)
            if (f.verdict != "device")
                out += fmt::format(
                    "- **{}** {}\n", label(f.verdict), mdText(diagnosis::findingText(f)));
        out += "\n";
    }
    return out;
}

nlohmann::json diagnosisJson(db::Db& d, int64_t incident) {
    nlohmann::json out = nlohmann::json::array();
    auto dgs = queryIncidentDiagnoses(d, incident);
    if (!dgs) return out;
    for (const auto& dg : *dgs) {
        nlohmann::json j{{"evidence_id", dg.evidence_id},
                         {"rule", dg.rule},
                         {"why", dg.why},
                         {"created_at", dg.created_at},
                         {"findings", nlohmann::json::array()}};
        for (const auto& f : dg.findings)
            j["findings"].push_back({{"verdict", f.verdict},
                                     {"module", f.module},
                                     {"bundle", f.bundle ? nlohmann::json(*f.bundle) : nullptr},
                                     {"offset", f.offset ? nlohmann::json(*f.offset) : nullptr},
                                     {"has", f.has},
                                     {"kernels", f.kernels},
                                     {"device_target", f.device_target},
                                     {"device", f.device},
                                     {"device_from", f.device_from},
                                     {"detail", f.detail},
                                     {"text", diagnosis::findingText(f)}});
        out.push_back(std::move(j));
    }
    return out;
}

}  // namespace gpufault::cli
