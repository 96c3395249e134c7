#include "daemon/config.h"

#include <fmt/format.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <toml++/toml.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

#include "collectors/common/small_file.h"

namespace gpufault::daemon {

std::string ConfigError::text() const {
    std::string s = file;
    if (line > 0) s += fmt::format(":{}", line);
    if (!key.empty()) s += (s.empty() ? "" : ": ") + key;
    s += (s.empty() ? "" : ": ") + message;
    for (const auto& m : more) s += "\n" + m;
    return s;
}

namespace {

using Setter = std::function<std::optional<std::string>(const toml::node&, Config&)>;

int lineOf(const toml::node& n) {
    return static_cast<int>(n.source().begin.line);
}

/// A TOML string keeps a `\u0000` escape as a NUL byte; no path or name may hold one.
constexpr const char* kNul = "contains a NUL byte";

Setter str(std::string Config::*field) {
    return [field](const toml::node& n, Config& c) -> std::optional<std::string> {
        auto v = n.value<std::string>();
        if (!n.is_string() || !v) return "expected a string";
        if (v->find('\0') != std::string::npos) return kNul;
        c.*field = *v;
        return std::nullopt;
    };
}

/// The control socket: a string that fits sockaddr_un's sun_path with its terminating NUL.
Setter socketPath() {
    return [](const toml::node& n, Config& c) -> std::optional<std::string> {
        if (auto err = str(&Config::socket_path)(n, c)) return err;
        constexpr size_t kMax = sizeof(sockaddr_un{}.sun_path) - 1;
        if (c.socket_path.size() > kMax) return fmt::format("path longer than {} bytes", kMax);
        return std::nullopt;
    };
}

Setter boolean(bool Config::*field) {
    return [field](const toml::node& n, Config& c) -> std::optional<std::string> {
        if (!n.is_boolean()) return "expected true or false";
        c.*field = *n.value<bool>();
        return std::nullopt;
    };
}

template <typename T>
Setter integer(T Config::*field, int64_t lo, int64_t hi) {
    return [=](const toml::node& n, Config& c) -> std::optional<std::string> {
        if (!n.is_integer()) return "expected an integer";
        int64_t v = *n.value<int64_t>();
        if (v < lo || v > hi) return fmt::format("{} is out of range [{}, {}]", v, lo, hi);
        c.*field = static_cast<T>(v);
        return std::nullopt;
    };
}

Setter strings(std::vector<std::string> Config::*field) {
    return [field](const toml::node& n, Config& c) -> std::optional<std::string> {
        const auto* a = n.as_array();
        if (!a) return "expected an array of strings";
        (c.*field).clear();
        for (const auto& e : *a) {
            if (!e.is_string()) return "expected an array of strings";
            auto v = *e.value<std::string>();
            if (v.find('\0') != std::string::npos) return kNul;
            (c.*field).push_back(std::move(v));
        }
        return std::nullopt;
    };
}

Setter absolutePaths(std::vector<std::string> Config::*field) {
    return [field](const toml::node& n, Config& c) -> std::optional<std::string> {
        const auto* a = n.as_array();
        if (!a) return "expected an array of strings";
        (c.*field).clear();
        for (const auto& e : *a) {
            if (!e.is_string()) return "expected an array of strings";
            auto g = *e.value<std::string>();
            if (g.find('\0') != std::string::npos) return kNul;
            if (g.empty() || g[0] != '/') return fmt::format("'{}' is not an absolute path", g);
            (c.*field).push_back(g);
        }
        return std::nullopt;
    };
}

Setter absoluteOrEmpty(std::string Config::*field) {
    return [field](const toml::node& n, Config& c) -> std::optional<std::string> {
        if (auto err = str(field)(n, c)) return err;
        const std::string& v = c.*field;
        if (!v.empty() && v[0] != '/') return fmt::format("'{}' is not an absolute path", v);
        return std::nullopt;
    };
}

/// A key as an error shows it: a NUL byte (a quoted key may hold one) as `\0`, so that the
/// message is not cut there when printed.
std::string shownKey(std::string k) {
    for (size_t at = k.find('\0'); at != std::string::npos; at = k.find('\0', at + 2))
        k.replace(at, 1, "\\0");
    return k;
}

const std::map<std::string, std::map<std::string, Setter>>& schema() {
    constexpr int64_t kDay = 86400000;
    static const std::map<std::string, std::map<std::string, Setter>> s = {
        {"store",
         {{"path", str(&Config::store_path)},
          {"max_size_mib", integer(&Config::max_store_mib, 0, 1 << 24)},
          {"max_age_days", integer(&Config::max_age_days, 0, 36500)}}},
        {"commit",
         {{"batch_lines", integer(&Config::batch_lines, 1, 10000000)},
          {"batch_ms", integer(&Config::batch_ms, 1, 60000)},
          {"dispatch_window", integer(&Config::dispatch_window, 1, 4096)},
          {"correlate_ms", integer(&Config::correlate_ms, 0, kDay)}}},
        {"kmsg", {{"enabled", boolean(&Config::kmsg)}, {"path", str(&Config::kmsg_path)}}},
        {"journal",
         {{"enabled", boolean(&Config::journal)},
          {"directory", str(&Config::journal_dir)},
          {"units", strings(&Config::journal_units)}}},
        {"files",
         {{"globs", absolutePaths(&Config::file_globs)},
          {"poll_interval_ms", integer(&Config::poll_ms, 10, kDay)},
          {"inotify", boolean(&Config::inotify)},
          {"max_open", integer(&Config::files_max_open, 1, 1 << 20)},
          {"follow_hardlinks", boolean(&Config::follow_hardlinks)}}},
        {"cores",
         {{"directories", absolutePaths(&Config::core_dirs)},
          {"max_unpacked_mib", integer(&Config::core_max_mib, 1, 1 << 24)},
          {"temp_dir", str(&Config::core_tmp_dir)},
          {"unwind_seconds", integer(&Config::core_unwind_seconds, 1, kDay / 1000)}}},
        {"allocations", {{"directory", absoluteOrEmpty(&Config::alloc_dir)}}},
        {"control",
         {{"socket", socketPath()},
          {"group", str(&Config::socket_group)},
          {"max_clients", integer(&Config::max_clients, 1, 65536)},
          {"idle_timeout_ms", integer(&Config::idle_timeout_ms, 10, kDay)},
          {"max_watchers", integer(&Config::max_watchers, 0, 65536)},
          {"watch_queue_kib", integer(&Config::watch_queue_kib, 16, 1 << 20)}}},
        {"diagnose",
         {{"enabled", boolean(&Config::diagnose)},
          {"sysfs_root", str(&Config::sysfs_root)},
          {"proc_root", str(&Config::proc_root)}}},
        {"metrics",
         {{"path", str(&Config::metrics_path)},
          {"interval_ms", integer(&Config::metrics_ms, 100, kDay)}}},
    };
    return s;
}

}  // namespace

std::expected<Config, ConfigError> parseConfig(std::string_view text, const std::string& name) {
    Config c;
    c.path = name;
    toml::table root;
    try {
        root = toml::parse(text, std::string_view(name));
    } catch (const toml::parse_error& e) {
        return std::unexpected(ConfigError{
            name, static_cast<int>(e.source().begin.line), "", std::string(e.description())});
    }
    // Every error is collected: a file with two mistakes is fixed in one round.
    std::vector<ConfigError> errors;
    const auto& sections = schema();
    for (const auto& [skey, snode] : root) {
        std::string section(skey.str());
        auto it = sections.find(section);
        if (it == sections.end()) {
            errors.push_back(
                ConfigError{name, lineOf(snode), shownKey(section), "unknown section or key"});
            continue;
        }
        const auto* table = snode.as_table();
        if (!table) {
            errors.push_back(ConfigError{
                name, lineOf(snode), section, fmt::format("expected a [{}] table", section)});
            continue;
        }
        for (const auto& [k, node] : *table) {
            std::string key = section + "." + std::string(k.str());
            auto setter = it->second.find(std::string(k.str()));
            if (setter == it->second.end())
                errors.push_back(ConfigError{name, lineOf(node), shownKey(key), "unknown key"});
            else if (auto err = setter->second(node, c))
                errors.push_back(ConfigError{name, lineOf(node), key, *err});
            else
                c.lines[key] = lineOf(node);
        }
    }
    if (c.kmsg && c.journal)
        errors.push_back(ConfigError{
            name, lineOf(*root["journal"]["enabled"].node()), "journal.enabled",
            "the journal carries the kernel log too: set kmsg.enabled = false to use it"});
    if (c.store_path.empty())
        errors.push_back(ConfigError{name, 0, "store.path", "must not be empty"});
    if (errors.empty()) return c;
    // In file order (toml++ walks a table's keys in its own order).
    auto order = [](const ConfigError& e) { return e.line > 0 ? e.line : INT_MAX; };
    std::stable_sort(errors.begin(), errors.end(), [&](const auto& a, const auto& b) {
        return order(a) < order(b);
    });
    ConfigError first = errors.front();
    for (size_t i = 1; i < errors.size(); ++i) first.more.push_back(errors[i].text());
    return std::unexpected(std::move(first));
}

std::vector<ConfigError> checkHost(const Config& c) {
    std::vector<ConfigError> out;
    auto line = [&](const std::string& key) {
        auto it = c.lines.find(key);
        return it == c.lines.end() ? 0 : it->second;
    };
    // Only what the file sets: the built-in default group is a warning at start (root only).
    if (line("control.group") > 0 && !c.socket_group.empty() &&
        ::getgrnam(c.socket_group.c_str()) == nullptr)
        out.push_back(ConfigError{
            c.path,
            line("control.group"),
            "control.group",
            fmt::format("group '{}' does not exist (create it, or set group = \"\": only root "
                        "may connect)",
                        c.socket_group)});
    {
        // The store (and its directory) is created at start; what is there must be a file.
        std::error_code ec;
        auto st = std::filesystem::status(c.store_path, ec);
        if (!ec && std::filesystem::exists(st) && !std::filesystem::is_regular_file(st))
            out.push_back(ConfigError{
                c.path,
                line("store.path"),
                "store.path",
                fmt::format("{} is not a regular file (a directory or a device: name the store "
                            "file itself, e.g. {}/gpufault.db)",
                            c.store_path,
                            c.store_path)});
    }
    if (!c.metrics_path.empty()) {
        auto dir = std::filesystem::path(c.metrics_path).parent_path();
        std::error_code ec;
        if (dir.empty()) dir = ".";
        if (!std::filesystem::is_directory(dir, ec))
            out.push_back(ConfigError{c.path,
                                      line("metrics.path"),
                                      "metrics.path",
                                      fmt::format("directory {} does not exist", dir.string())});
    }
    return out;
}

std::expected<Config, ConfigError> loadConfig(const std::string& path) {
    auto fail = [&](const FileError& e) {
        std::string msg;
        switch (e.why) {
            case FileError::Why::NotRegular:
                msg = fmt::format("not a regular file ({})", e.kind);
                break;
            case FileError::Why::TooLarge:
                msg = fmt::format("larger than {} bytes (1 MiB): not a configuration file",
                                  kMaxConfigBytes);
                break;
            case FileError::Why::System:
                msg = std::strerror(e.err);
                break;
        }
        return std::unexpected(ConfigError{path, 0, "", msg});
    };
    auto f = RegularFile::open(path);
    if (!f) return fail(f.error());
    auto text = f->read(kMaxConfigBytes);
    if (!text) return fail(text.error());
    return parseConfig(*text, path);
}

}  // namespace gpufault::daemon
