#include "collectors/common/redact.h"

#include <cctype>

namespace gpufault {

namespace {

/// True when `u` (upper case) has `word` as one of its parts between `_`, `-` and `.`.
bool hasPart(std::string_view u, std::string_view word) {
    for (size_t at = u.find(word); at != std::string_view::npos; at = u.find(word, at + 1)) {
        auto sep = [](char c) { return c == '_' || c == '-' || c == '.'; };
        bool left = at == 0 || sep(u[at - 1]);
        size_t end = at + word.size();
        if (left && (end == u.size() || sep(u[end]))) return true;
    }
    return false;
}

}  // namespace

bool looksSecret(std::string_view name, std::string_view value) {
    std::string u(name);
    for (auto& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (std::string_view w : {"TOKEN",
                               "SECRET",
                               "PASSWORD",
                               "PASSWD",
                               "PASSPHRASE",
                               "KEY",
                               "CREDENTIAL",
                               "CREDS",
                               "AUTH",
                               "COOKIE",
                               "SESSION"})
        if (u.find(w) != std::string::npos) return true;
    // Short words only as whole parts (DB_PW, MYSQL_PWD, --pass): HIP_PWR_MODE and
    // CUDA_PASSTHROUGH are not secrets, nor is the bare PWD (the working directory).
    while (!u.empty() && u.front() == '-') u.erase(0, 1);
    if (u != "PWD")
        for (std::string_view w : {"PW", "PWD", "PASS", "CRED"})
            if (hasPart(u, w)) return true;
    return redactUrlCredentials(value) != value;
}

std::string redactUrlCredentials(std::string_view s) {
    std::string out;
    size_t from = 0;
    for (size_t p = s.find("://"); p != std::string_view::npos; p = s.find("://", p + 3)) {
        size_t user = p + 3;
        // The authority ends at the first '/', '?', '#' or blank; credentials end at its last '@'.
        size_t end = s.find_first_of("/?# \t\n", user);
        auto authority = s.substr(user, end == std::string_view::npos ? s.npos : end - user);
        size_t at = authority.rfind('@');
        if (at == std::string_view::npos || authority.substr(0, at).find(':') == s.npos) continue;
        out.append(s.substr(from, user - from));
        out += "<redacted>";
        from = user + at;
    }
    if (from == 0) return std::string(s);
    out.append(s.substr(from));
    return out;
}

std::vector<std::string> redactArgs(const std::vector<std::string>& argv) {
    std::vector<std::string> out;
    bool nextIsSecret = false;
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        if (nextIsSecret) {
            out.push_back("<redacted>");
            nextIsSecret = false;
            continue;
        }
        if (i > 0 && a.starts_with("-")) {
            auto eq = a.find('=');
            auto name = std::string_view(a).substr(0, eq);
            if (looksSecret(name, "")) {
                if (eq == std::string::npos) {
                    nextIsSecret = true;
                    out.push_back(a);
                } else {
                    out.push_back(a.substr(0, eq + 1) + "<redacted>");
                }
                continue;
            }
        }
        out.push_back(redactUrlCredentials(a));
    }
    return out;
}

}  // namespace gpufault
