#include "cli/store_open.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "cli/output.h"

namespace gpufault::cli {

std::string resolveDbPath(const std::string& flag) {
    if (!flag.empty()) return flag;
    if (const char* env = std::getenv("GPUFAULT_DB"); env && *env) return env;
    const char* sys = "/var/lib/gpufault/gpufault.db";
    if (::access(sys, R_OK) == 0) return sys;
    std::string base;
    if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x)
        base = x;
    else if (const char* h = std::getenv("HOME"); h && *h)
        base = std::string(h) + "/.local/share";
    else
        base = ".";
    return base + "/gpufault/gpufault.db";
}

std::optional<Store> openForQuery(const Global& g) {
    struct stat st {};
    if (::stat(g.db.c_str(), &st) != 0) {
        printText(stderr,
                   "gpufault: no store at {} (run `gpufault ingest FILE` first, or pass --db)\n",
                   g.db);
        return std::nullopt;
    }
    auto s = Store::open(g.db, Store::Mode::ReadOnly);
    if (!s) {
        printText(stderr, "gpufault: {}\n", s.error().message);
        return std::nullopt;
    }
    return std::move(*s);
}

}  // namespace gpufault::cli
