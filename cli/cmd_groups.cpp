// `gpufault groups`: incidents grouped by signature — how often the same fault came back.
#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/store_open.h"
#include "collectors/common/demangle.h"
#include "schema/group_queries.h"

namespace gpufault::cli {

namespace {

constexpr size_t kExamples = 3;  ///< incident ids shown per group

nlohmann::json optJson(const std::optional<std::string>& s) {
    return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}

/// `2024-05-01T12:00:00Z` for a µs instant, `-` for none.
std::string timeCell(const std::optional<int64_t>& us) {
    if (!us) return "-";
    int64_t s = *us / 1000000 - (*us % 1000000 < 0 ? 1 : 0);  // floor
    return utcText(s);
}

/// What the signature is made of, in one cell: vendor, reason, client, kernel (short), top frame.
std::string whatCell(const IncidentGroup& g) {
    std::string s;
    auto add = [&](const std::string& x) { s += (s.empty() ? "" : "; ") + x; };
    if (g.vendor) add(*g.vendor);
    if (g.xid && g.kind != "nvidia_xid") add(fmt::format("Xid {}", *g.xid));  // else in KIND
    if (g.reason) add(*g.reason);
    if (g.client) add("client " + *g.client);
    if (g.kernel) add("kernel " + shortKernelName(*g.kernel, 60));
    if (g.frame) add("at " + *g.frame);
    return s.empty() ? "-" : s;
}

/// The incident kind, with its Xid number for an Xid incident (`nvidia_xid 79`): the number is
/// part of the signature, so two Xid groups differ by it.
std::string kindCell(const IncidentGroup& g) {
    return g.xid && g.kind == "nvidia_xid" ? fmt::format("{} {}", g.kind, *g.xid) : g.kind;
}

std::string idsCell(const IncidentGroup& g) {
    std::string s;
    for (auto id : g.examples) s += fmt::format("{}{}", s.empty() ? "" : ",", id);
    if (g.incidents > static_cast<int64_t>(g.examples.size())) s += ",…";
    return s;
}

nlohmann::json groupJson(const IncidentGroup& g) {
    auto us = [](const std::optional<int64_t>& t) {
        return t ? nlohmann::json(*t) : nlohmann::json(nullptr);
    };
    auto iso = [](const std::optional<int64_t>& t) {
        return t ? nlohmann::json(timeCell(t)) : nlohmann::json(nullptr);
    };
    return {{"signature", g.signature},
            {"incidents", g.incidents},
            {"kind", g.kind},
            {"kinds", g.kinds},
            {"vendor", optJson(g.vendor)},
            {"reason", optJson(g.reason)},
            {"kernel", optJson(g.kernel)},
            {"client", optJson(g.client)},
            {"xid", g.xid ? nlohmann::json(*g.xid) : nlohmann::json(nullptr)},
            {"frame", optJson(g.frame)},
            {"processes", g.processes},
            {"runs", g.runs},
            {"sources", g.sources},
            {"hosts", g.hosts},
            {"first_seen", iso(g.first_us)},
            {"last_seen", iso(g.last_us)},
            {"first_seen_utc_us", us(g.first_us)},
            {"last_seen_utc_us", us(g.last_us)},
            {"timed_incidents", g.timed},
            {"example_incidents", g.examples}};
}

}  // namespace

int cmdGroups(const Global& g, bool json) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto groups = queryIncidentGroups(store->db(), kExamples);
    if (!groups) {
        printText(stderr, "gpufault: {}\n", groups.error().message);
        return 2;
    }
    if (json) {
        for (const auto& x : *groups) printJsonLine(stdout, groupJson(x));
        return 0;
    }
    TextTable t{{"INCIDENTS",
                 "SIGNATURE",
                 "KIND",
                 "WHAT",
                 "PROCESSES",
                 "INPUTS",
                 "RUNS",
                 "HOSTS",
                 "FIRST SEEN (UTC)",
                 "LAST SEEN (UTC)",
                 "TIMED",
                 "INCIDENT IDS"},
                {}};
    for (const auto& x : *groups) {
        std::string hosts;
        for (const auto& h : x.hosts) hosts += (hosts.empty() ? "" : ",") + h;
        t.rows.push_back({std::to_string(x.incidents),
                          x.signature.empty() ? "-" : x.signature,
                          kindCell(x),
                          whatCell(x),
                          std::to_string(x.processes),
                          std::to_string(x.sources),
                          std::to_string(x.runs),
                          hosts.empty() ? "unknown" : hosts,
                          timeCell(x.first_us),
                          timeCell(x.last_us),
                          fmt::format("{}/{}", x.timed, x.incidents),
                          idsCell(x)});
    }
    t.print(stdout);
    return 0;
}

}  // namespace gpufault::cli
