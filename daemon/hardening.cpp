#include "daemon/hardening.h"

#include <fmt/format.h>

#include <map>
#include <sstream>

namespace gpufault::daemon {

namespace {

using Directives = std::map<std::string, std::vector<std::string>>;

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

/// [Service] directives; list-valued ones accumulate words, an empty value resets.
Directives parseService(std::string_view unit) {
    Directives d;
    bool service = false;
    std::istringstream in{std::string(unit)};
    std::string raw;
    while (std::getline(in, raw)) {
        auto line = trim(raw);
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line[0] == '[') {
            service = line == "[Service]";
            continue;
        }
        auto eq = line.find('=');
        if (!service || eq == std::string_view::npos) continue;
        std::string key(trim(line.substr(0, eq)));
        auto value = trim(line.substr(eq + 1));
        auto& v = d[key];
        if (value.empty()) {
            v.clear();
            continue;
        }
        std::istringstream words{std::string(value)};
        for (std::string w; words >> w;) v.push_back(w);
    }
    return d;
}

bool isYes(const Directives& d, const std::string& key) {
    auto it = d.find(key);
    if (it == d.end() || it->second.empty()) return false;
    const auto& v = it->second.back();
    return v == "yes" || v == "true" || v == "on" || v == "1";
}

std::string last(const Directives& d, const std::string& key) {
    auto it = d.find(key);
    return it == d.end() || it->second.empty() ? "" : it->second.back();
}

bool under(const std::string& path, std::string_view dir) {
    if (!dir.empty() && dir.back() == '/') dir.remove_suffix(1);
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                           path[dir.size()] == '/');
}

bool listedUnder(const Directives& d, const std::string& key, const std::string& path) {
    auto it = d.find(key);
    if (it == d.end()) return false;
    for (auto p : it->second) {
        std::string_view v = p;
        while (!v.empty() && (v[0] == '-' || v[0] == '+')) v.remove_prefix(1);
        if (under(path, v)) return true;
    }
    return false;
}

/// The fixed directory part of a glob pattern: "/var/log/jobs" for "/var/log/jobs/*.log".
std::string fixedDir(const std::string& glob) {
    auto wild = glob.find_first_of("*?[");
    auto cut = glob.rfind('/', wild == std::string::npos ? glob.size() : wild);
    return cut == 0 ? "/" : glob.substr(0, cut);
}

std::string parentDir(const std::string& path) {
    auto cut = path.rfind('/');
    return cut == 0 || cut == std::string::npos ? "/" : path.substr(0, cut);
}

/// Whether CapabilityBoundingSet= (when set) leaves out `cap` (`CAP_X`, or a `~` list naming it).
bool lacksCapability(const Directives& d, std::string_view cap) {
    auto it = d.find("CapabilityBoundingSet");
    if (it == d.end() || it->second.empty()) return false;
    bool inverted = it->second.front().starts_with("~");
    bool named = false;
    for (const auto& c : it->second)
        named |= c == cap || (c.starts_with('~') && std::string_view(c).substr(1) == cap);
    return inverted == named;
}

/// What hides directory `dir` (shown as `shown`) from the service: PrivateTmp= for /tmp and
/// /var/tmp (`nothing`: what it then sees none of), ProtectHome= for /home, /root, /run/user
/// (`hint` appended to `key`), InaccessiblePaths=.
void hidingProblems(const Directives& d,
                    const std::string& dir,
                    std::string_view shown,
                    std::string_view nothing,
                    std::string_view key,
                    std::string_view hint,
                    std::vector<std::string>& out) {
    if (isYes(d, "PrivateTmp") && (under(dir, "/tmp") || under(dir, "/var/tmp")))
        out.push_back(fmt::format("PrivateTmp=yes gives the service its own {}: '{}' sees {} ({})",
                                  under(dir, "/tmp") ? "/tmp" : "/var/tmp",
                                  shown,
                                  nothing,
                                  key));
    auto home = last(d, "ProtectHome");
    if ((home == "yes" || home == "true" || home == "tmpfs") &&
        (under(dir, "/home") || under(dir, "/root") || under(dir, "/run/user")))
        out.push_back(fmt::format("ProtectHome={} hides '{}' ({}{})", home, shown, key, hint));
    if (listedUnder(d, "InaccessiblePaths", dir))
        out.push_back(fmt::format("InaccessiblePaths= hides '{}' ({})", shown, key));
}

}  // namespace

std::vector<std::string> unitContradictions(std::string_view unit, const Config& cfg) {
    Directives d = parseService(unit);
    std::vector<std::string> out;
    if (cfg.kmsg) {
        const auto& k = cfg.kmsg_path;
        if (isYes(d, "ProtectKernelLogs"))
            out.push_back(fmt::format("ProtectKernelLogs=yes hides {} (kmsg.enabled)", k));
        if (isYes(d, "PrivateDevices"))
            out.push_back(fmt::format("PrivateDevices=yes hides {} (kmsg.enabled)", k));
        auto policy = last(d, "DevicePolicy");
        if ((policy == "closed" || policy == "strict") && !listedUnder(d, "DeviceAllow", k))
            out.push_back(fmt::format("DevicePolicy={} without DeviceAllow={} r (kmsg.enabled)",
                                      policy, k));
        if (lacksCapability(d, "CAP_SYSLOG"))
            out.push_back(
                "CapabilityBoundingSet= lacks CAP_SYSLOG: /dev/kmsg is unreadable with "
                "kernel.dmesg_restrict=1 (kmsg.enabled)");
        if (listedUnder(d, "InaccessiblePaths", k))
            out.push_back(fmt::format("InaccessiblePaths= hides {} (kmsg.enabled)", k));
        // Kernel fault records lead to /proc/PID snapshots of the faulting process.
        auto proc = last(d, "ProtectProc");
        if (proc == "invisible" || proc == "noaccess" || proc == "ptraceable")
            out.push_back(fmt::format(
                "ProtectProc={} hides faulting processes' /proc/PID (process snapshots)", proc));
        if (lacksCapability(d, "CAP_SYS_PTRACE"))
            out.push_back(
                "CapabilityBoundingSet= lacks CAP_SYS_PTRACE: other users' /proc/PID/maps are "
                "unreadable (process snapshots: modules)");
    }
    for (const auto& g : cfg.file_globs)
        hidingProblems(
            d, fixedDir(g), g, "no job's files", "files.globs", "; read-only would do", out);
    if (!cfg.alloc_dir.empty()) {
        // Jobs write their allocation files there (mode 0600, their own): the daemon reads
        // them as root with CAP_DAC_READ_SEARCH.
        hidingProblems(
            d, cfg.alloc_dir, cfg.alloc_dir, "no job's files", "allocations.directory", "", out);
        if (lacksCapability(d, "CAP_DAC_READ_SEARCH"))
            out.push_back(
                "CapabilityBoundingSet= lacks CAP_DAC_READ_SEARCH: jobs' allocation files "
                "(mode 0600) are unreadable (allocations.directory)");
    }
    // systemd-coredump's files are root's or the crashing user's (ACL), apport's reports 0640
    // user:whoopsie: read as root with CAP_DAC_READ_SEARCH.
    for (const auto& dir : cfg.core_dirs)
        hidingProblems(d, dir, dir, "no core", "cores.directories", "; read-only would do", out);
    if (!cfg.core_dirs.empty() && lacksCapability(d, "CAP_DAC_READ_SEARCH"))
        out.push_back(
            "CapabilityBoundingSet= lacks CAP_DAC_READ_SEARCH: other users' cores are unreadable "
            "(cores.directories)");
    auto sys = last(d, "ProtectSystem");
    if (sys == "strict" || sys == "full" || sys == "yes") {
        auto writable = [&](const std::string& dir) {
            if (listedUnder(d, "ReadWritePaths", dir)) return true;
            auto it = d.find("StateDirectory");
            if (it != d.end())
                for (const auto& s : it->second)
                    if (under(dir, "/var/lib/" + s)) return true;
            if (sys != "strict") return !(under(dir, "/usr") || under(dir, "/boot") ||
                                          under(dir, "/efi") || (sys == "full" && under(dir, "/etc")));
            return false;
        };
        if (!writable(parentDir(cfg.store_path)))
            out.push_back(fmt::format("ProtectSystem={} makes the store {} read-only (store.path)",
                                      sys, cfg.store_path));
        if (!cfg.socket_path.empty() && !writable(parentDir(cfg.socket_path)))
            out.push_back(fmt::format("ProtectSystem={} makes {} read-only (control.socket)", sys,
                                      parentDir(cfg.socket_path)));
        if (!cfg.metrics_path.empty() && !writable(parentDir(cfg.metrics_path)))
            out.push_back(fmt::format("ProtectSystem={} makes {} read-only (metrics.path)", sys,
                                      parentDir(cfg.metrics_path)));
    }
    if (auto it = d.find("RestrictAddressFamilies"); it != d.end() && !it->second.empty()) {
        bool inverted = it->second.front().starts_with("~");
        bool named = false;
        for (auto f : it->second) named |= f == "AF_UNIX" || f == "~AF_UNIX";
        if (inverted == named)
            out.push_back(
                "RestrictAddressFamilies= forbids AF_UNIX: no control socket, no sd_notify");
    }
    return out;
}

}  // namespace gpufault::daemon
