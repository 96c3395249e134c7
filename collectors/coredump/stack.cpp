#include "collectors/coredump/stack.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace gpufault::coredump {

namespace {

template <class T>
void put(nlohmann::json& j, const char* key, const std::optional<T>& v) {
    if (v) j[key] = *v;
}

template <class T>
std::optional<T> get(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    return it->get<T>();
}

std::string basename(const std::string& p) {
    auto s = p.rfind('/');
    return s == std::string::npos ? p : p.substr(s + 1);
}

}  // namespace

nlohmann::json toJson(const CoreStack& s) {
    nlohmann::json threads = nlohmann::json::array();
    for (const auto& t : s.threads) {
        nlohmann::json frames = nlohmann::json::array();
        for (const auto& f : t.frames) {
            nlohmann::json j{{"pc", f.pc}, {"activation", f.activation}};
            put(j, "module", f.module);
            put(j, "build_id", f.build_id);
            put(j, "module_offset", f.module_offset);
            put(j, "symbol", f.symbol);
            put(j, "symbol_offset", f.symbol_offset);
            put(j, "file", f.file);
            put(j, "line", f.line);
            frames.push_back(std::move(j));
        }
        nlohmann::json tj{{"tid", t.tid},
                          {"crashed", t.crashed},
                          {"frames_truncated", t.frames_truncated},
                          {"frames", std::move(frames)}};
        put(tj, "error", t.error);
        threads.push_back(std::move(tj));
    }
    nlohmann::json out{{"threads", std::move(threads)},
                       {"threads_truncated", s.threads_truncated},
                       {"modules_without_file", s.modules_without_file}};
    if (!s.modules_refused.empty()) out["modules_refused"] = s.modules_refused;
    put(out, "partial", s.partial);
    put(out, "exe_refused", s.exe_refused);
    put(out, "exe_unverified", s.exe_unverified);
    put(out, "exe_named", s.exe_named);
    return out;
}

std::optional<CoreStack> stackFromJson(const nlohmann::json& j) {
    try {
        CoreStack s;
        s.threads_truncated = j.at("threads_truncated").get<bool>();
        s.modules_without_file = j.at("modules_without_file").get<std::vector<std::string>>();
        if (j.contains("modules_refused"))
            s.modules_refused = j.at("modules_refused").get<std::vector<std::string>>();
        s.partial = get<std::string>(j, "partial");
        s.exe_refused = get<std::string>(j, "exe_refused");
        s.exe_unverified = get<std::string>(j, "exe_unverified");
        s.exe_named = get<std::string>(j, "exe_named");
        for (const auto& tj : j.at("threads")) {
            Thread t;
            t.tid = tj.at("tid").get<int64_t>();
            t.crashed = tj.at("crashed").get<bool>();
            t.frames_truncated = tj.at("frames_truncated").get<bool>();
            t.error = get<std::string>(tj, "error");
            for (const auto& fj : tj.at("frames")) {
                Frame f;
                f.pc = fj.at("pc").get<uint64_t>();
                f.activation = fj.at("activation").get<bool>();
                f.module = get<std::string>(fj, "module");
                f.build_id = get<std::string>(fj, "build_id");
                f.module_offset = get<uint64_t>(fj, "module_offset");
                f.symbol = get<std::string>(fj, "symbol");
                f.symbol_offset = get<uint64_t>(fj, "symbol_offset");
                f.file = get<std::string>(fj, "file");
                f.line = get<int64_t>(fj, "line");
                t.frames.push_back(std::move(f));
            }
            s.threads.push_back(std::move(t));
        }
        return s;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

const Thread* crashingThread(const CoreStack& s) {
    for (const auto& t : s.threads)
        if (t.crashed) return &t;
    return s.threads.empty() ? nullptr : &s.threads.front();
}

std::string describeFrame(const Frame& f) {
    std::string sym = f.symbol ? *f.symbol : "n/a";
    std::string mod = f.module ? basename(*f.module) : "n/a";
    std::string out = f.module_offset ? fmt::format("{} ({} + 0x{:x})", sym, mod, *f.module_offset)
                                      : fmt::format("{} ({})", sym, mod);
    if (!f.symbol && f.build_id) out += fmt::format(" [{}]", *f.build_id);
    return out;
}

}  // namespace gpufault::coredump
