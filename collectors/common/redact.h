// What must not be stored in clear: secret-looking environment values and arguments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpufault {

/// True when a variable or option `name` looks secret (TOKEN, SECRET, PASSWORD, PASSWD, KEY,
/// CREDENTIAL, AUTH, COOKIE, SESSION, case-insensitive) or `value` holds a URL with
/// credentials (`scheme://user:password@host`).
bool looksSecret(std::string_view name, std::string_view value);

/// A command line with secrets replaced by `<redacted>`: `--api-key=X` → `--api-key=<redacted>`,
/// `--password X` → `--password <redacted>`, and any argument holding a URL with credentials.
std::vector<std::string> redactArgs(const std::vector<std::string>& argv);

}  // namespace gpufault
