#include "collectors/common/redact.h"

#include <algorithm>
#include <cctype>
#include <utility>

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

namespace {

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) !=
            std::tolower(static_cast<unsigned char>(b[i])))
            return false;
    return true;
}

/// `NAME` when `w` is a shell assignment `NAME=value` (NAME a shell identifier), else empty.
std::string_view assignmentName(std::string_view w) {
    size_t eq = w.find('=');
    if (eq == 0 || eq == std::string_view::npos) return {};
    auto name = w.substr(0, eq);
    if (std::isdigit(static_cast<unsigned char>(name[0]))) return {};
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return {};
    return name;
}

/// Redacts one word at a time, carrying what the previous word asked for: an option that takes
/// a secret (`--password X`), an HTTP credential scheme (`Bearer X`), a `--user NAME:PASS`.
class WordRedactor {
public:
    /// `w` with a secret replaced; `first` = argv[0] (never an option or an assignment).
    std::string word(std::string_view w, bool first) {
        // Quotes around a word inside a shell string stay where they are.
        size_t lead = 0, trail = 0;
        while (lead < w.size() && (w[lead] == '"' || w[lead] == '\'')) ++lead;
        while (trail < w.size() - lead && (w[w.size() - 1 - trail] == '"' ||
                                           w[w.size() - 1 - trail] == '\''))
            ++trail;
        auto core = w.substr(lead, w.size() - lead - trail);
        std::string out(w.substr(0, lead));
        // A quoted phrase (`"Authorization: Bearer X"` inside a script): its own words.
        if (!first && lead > 0 && core.find_first_of(" \t\n") != std::string_view::npos &&
            assignmentName(core).empty())
            out += text(core);
        else
            out += redactCore(core, first);
        // `TOKEN="a b"`: the value's quotes go with it; quotes around the whole word stay.
        if (redactedAssignment_) trail = std::min(lead, trail);
        redactedAssignment_ = false;
        out.append(w.substr(w.size() - trail));
        return out;
    }

    /// A shell script (`sh -c '…'`, `-H "Authorization: Bearer X"`): each word, as the shell
    /// splits them (quotes keep blanks in a word; unquoted blanks and `;&|()<>` end it and are
    /// kept as they are).
    std::string text(std::string_view a) {
        auto separator = [](char c) {
            return c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' ||
                   c == '(' || c == ')' || c == '<' || c == '>';
        };
        std::string out;
        size_t i = 0;
        while (i < a.size()) {
            if (separator(a[i])) {
                out += a[i++];
                continue;
            }
            size_t start = i;
            char quote = 0;
            while (i < a.size()) {
                char c = a[i];
                if (quote == 0 && separator(c)) break;
                if (c == '\\' && quote != '\'') {  // an escaped character stays in the word
                    i += 2;
                    continue;
                }
                if (quote == 0 && (c == '\'' || c == '"'))
                    quote = c;
                else if (c == quote)
                    quote = 0;
                ++i;
            }
            i = std::min(i, a.size());
            out += word(a.substr(start, i - start), false);
        }
        return out;
    }

private:
    enum class Next { Plain, Secret, UserPass };
    Next next_ = Next::Plain;
    bool redactedAssignment_ = false;  ///< redactCore() replaced an assignment's value

    static bool isScheme(std::string_view w) {
        return iequals(w, "Bearer") || iequals(w, "Basic") || iequals(w, "Token") ||
               iequals(w, "Digest");
    }
    static std::string userPass(std::string_view v) {
        size_t colon = v.find(':');
        if (colon == std::string_view::npos) return std::string(v);
        return std::string(v.substr(0, colon + 1)) + "<redacted>";
    }

    std::string redactCore(std::string_view w, bool first) {
        Next was = std::exchange(next_, Next::Plain);
        if (was == Next::Secret) {
            if (isScheme(w)) {  // `Authorization: Bearer X`: the scheme stays, X goes
                next_ = Next::Secret;
                return std::string(w);
            }
            return "<redacted>";
        }
        if (was == Next::UserPass) return userPass(w);
        if (iequals(w, "Bearer") || iequals(w, "Basic")) {  // a credential with no header name
            next_ = Next::Secret;
            return std::string(w);
        }
        if (first) return redactUrlCredentials(w);
        if (w.starts_with("-")) {
            auto eq = w.find('=');
            auto name = w.substr(0, eq);
            if (looksSecret(name, "")) {
                if (eq == std::string_view::npos) {
                    next_ = Next::Secret;
                    return std::string(w);
                }
                return std::string(w.substr(0, eq + 1)) + "<redacted>";
            }
            if (name == "-u" || name == "--user" || name == "--proxy-user") {  // curl, wget
                if (eq != std::string_view::npos)
                    return std::string(w.substr(0, eq + 1)) + userPass(w.substr(eq + 1));
                next_ = Next::UserPass;
                return std::string(w);
            }
        }
        if (auto name = assignmentName(w); !name.empty()) {
            auto value = w.substr(name.size() + 1);
            if (looksSecret(name, value)) {
                redactedAssignment_ = true;
                return std::string(name) + "=<redacted>";
            }
        }
        // `Authorization:` or `X-Api-Key:` header names: the rest of the header is secret.
        if (w.size() > 1 && w.back() == ':' && looksSecret(w.substr(0, w.size() - 1), "")) {
            next_ = Next::Secret;
            return std::string(w);
        }
        // `authorization:bearer X` / `X-Api-Key:v` glued: the value after the colon is secret
        // (a URL's `scheme:` is not a header name: looksSecret() judges the name).
        if (size_t colon = w.find(':'); colon != std::string_view::npos && colon > 0 &&
                                        w.find("://") == std::string_view::npos &&
                                        looksSecret(w.substr(0, colon), "")) {
            auto value = w.substr(colon + 1);
            if (iequals(value, "Bearer") || iequals(value, "Basic") || iequals(value, "Token")) {
                next_ = Next::Secret;
                return std::string(w);
            }
            for (std::string_view scheme : {"Bearer", "Basic", "Token"})
                if (value.size() > scheme.size() && iequals(value.substr(0, scheme.size()), scheme) &&
                    (value[scheme.size()] == ' ' || value[scheme.size()] == '_'))
                    return std::string(w.substr(0, colon + 1 + scheme.size() + 1)) + "<redacted>";
            return std::string(w.substr(0, colon + 1)) + "<redacted>";
        }
        return redactUrlCredentials(w);
    }
};

}  // namespace

std::vector<std::string> redactArgs(const std::vector<std::string>& argv) {
    std::vector<std::string> out;
    WordRedactor r;
    for (size_t i = 0; i < argv.size(); ++i) {
        const std::string& a = argv[i];
        bool blanks = a.find_first_of(" \t\n") != std::string::npos;
        // After `-c` an argument is a script; elsewhere one word, even with blanks in it
        // (`env 'TOKEN=a b' cmd`: the whole value is the variable's).
        bool script = i > 0 && argv[i - 1] == "-c";
        if (i > 0 && blanks && (script || assignmentName(a).empty()))
            out.push_back(r.text(a));
        else
            out.push_back(r.word(a, i == 0));
    }
    return out;
}

}  // namespace gpufault
