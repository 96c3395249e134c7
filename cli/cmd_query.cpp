// `query`: one read-only SQL statement over the store.
#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/output.h"
#include "cli/store_open.h"
#include "schema/queries.h"

namespace gpufault::cli {

namespace {
std::string csvCell(const std::optional<std::string>& v) {
    if (!v) return "";
    if (v->find_first_of(",\"\n\r") == std::string::npos) return *v;
    std::string s = "\"";
    for (char c : *v) s += c == '"' ? std::string("\"\"") : std::string(1, c);
    return s + "\"";
}

/// JSON object keys for the result's columns: a name that repeats (`SELECT e.id, o.id`) keeps
/// every value, the second as `id:2`, the third `id:3` (skipping names the query already has);
/// one line on stderr says so.
std::vector<std::string> jsonKeys(const std::vector<std::string>& columns) {
    std::set<std::string> used(columns.begin(), columns.end()), seen;
    std::vector<std::string> keys;
    for (const auto& c : columns) {
        if (seen.insert(c).second) {
            keys.push_back(c);
            continue;
        }
        std::string k;
        for (int n = 2; used.count(k = fmt::format("{}:{}", c, n)); ++n) {
        }
        used.insert(k);
        printText(stderr,
                   "gpufault: query: column name {} repeats: its value is under \"{}\"\n",
                   printable(c),
                   printable(k));
        keys.push_back(std::move(k));
    }
    return keys;
}
}  // namespace

int cmdQuery(const Global& g, const std::string& sql, bool json, bool csv, double timeout_s) {
    auto store = openForQuery(g);
    if (!store) return 2;
    auto t = runQuery(store->db(), sql, timeout_s);
    if (!t) {
        printText(stderr, "gpufault: query: {}\n", t.error().message);
        return 2;
    }
    if (json) {
        auto keys = jsonKeys(t->columns);
        for (size_t r = 0; r < t->rows.size(); ++r) {
            nlohmann::json j = nlohmann::json::object();
            for (size_t c = 0; c < t->columns.size(); ++c) {
                const auto& v = t->rows[r][c];
                int type = t->types[r][c];
                if (!v)
                    j[keys[c]] = nullptr;
                else if (type == 1)
                    j[keys[c]] = std::stoll(*v);
                else if (type == 2)
                    j[keys[c]] = std::stod(*v);
                else
                    j[keys[c]] = *v;
            }
            printJsonLine(stdout, j);
        }
        return 0;
    }
    if (csv) {
        for (size_t c = 0; c < t->columns.size(); ++c)
            fmt::print("{}{}", c ? "," : "", csvCell(t->columns[c]));
        fmt::print("\n");
        for (auto& row : t->rows) {
            for (size_t c = 0; c < row.size(); ++c)
                fmt::print("{}{}", c ? "," : "", csvCell(row[c]));
            fmt::print("\n");
        }
        return 0;
    }
    TextTable out{t->columns, {}};
    for (auto& row : t->rows) {
        std::vector<std::string> cells;
        for (auto& v : row) cells.push_back(v ? *v : "NULL");
        out.rows.push_back(std::move(cells));
    }
    out.print(stdout);
    return 0;
}

}  // namespace gpufault::cli
