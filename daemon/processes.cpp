#include "daemon/processes.h"

#include <fmt/format.h>
#include <unistd.h>

#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "collectors/common/redact.h"
#include "collectors/common/text.h"
#include "collectors/process/proc.h"

namespace gpufault::daemon {

namespace {

std::optional<std::string> slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}


}  // namespace

bool startedBefore(std::optional<int64_t> start_ticks, std::optional<double> kernel_s) {
    if (!start_ticks || !kernel_s) return true;
    double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
    return static_cast<double>(*start_ticks) / hz <= *kernel_s + 1.0;
}

std::optional<ProcessRecord> snapshotProcess(int64_t pid,
                                             const std::string& boot_id,
                                             const std::string& proc_root) {
    std::string dir = fmt::format("{}/{}", proc_root, pid);
    auto status = slurp(dir + "/status");
    if (!status) return std::nullopt;
    auto st = parseProcStatus(*status);
    if (!st) return std::nullopt;
    ProcessRecord p;
    p.pid = pid;
    p.boot_id = boot_id;
    p.taken_at = text::utcNowIso();
    p.name = st->name;
    p.ppid = st->ppid;
    p.uid = st->uid;
    p.nspid = nlohmann::json(st->nspid).dump();
    if (auto stat = slurp(dir + "/stat"))
        if (auto t = parseStatStartTicks(*stat)) p.start_ticks = static_cast<int64_t>(*t);
    if (auto cg = slurp(dir + "/cgroup")) p.cgroup = parseCgroup(*cg);
    if (auto cmd = slurp(dir + "/cmdline")) {
        std::vector<std::string> argv;
        size_t start = 0;
        while (start < cmd->size() && argv.size() < 256) {
            auto nul = cmd->find('\0', start);
            if (nul == std::string::npos) nul = cmd->size();
            argv.push_back(cmd->substr(start, std::min<size_t>(nul - start, 4096)));
            start = nul + 1;
        }
        // Command lines carry tokens and passwords: those are not stored.
        p.cmdline = nlohmann::json(redactArgs(argv))
                        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
    if (auto maps = slurp(dir + "/maps"))
        for (const auto& m : modulesOf(parseProcMaps(*maps)))
            p.modules.push_back({m.path, m.start, m.end, m.executable});
    return p;
}

}  // namespace gpufault::daemon
