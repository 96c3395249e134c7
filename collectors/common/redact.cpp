#include "collectors/common/redact.h"

#include <cctype>

namespace gpufault {

bool looksSecret(std::string_view name, std::string_view value) {
    std::string u(name);
    for (auto& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (std::string_view w :
         {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "AUTH", "COOKIE",
          "SESSION"})
        if (u.find(w) != std::string::npos) return true;
    if (auto p = value.find("://"); p != std::string_view::npos) {
        auto rest = value.substr(p + 3);
        auto at = rest.find('@');
        auto slash = rest.find('/');
        if (at != std::string_view::npos && (slash == std::string_view::npos || at < slash) &&
            rest.substr(0, at).find(':') != std::string_view::npos)
            return true;
    }
    return false;
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
        out.push_back(looksSecret("", a) ? "<redacted>" : a);
    }
    return out;
}

}  // namespace gpufault
