// What must not be stored in clear: secret-looking environment values and arguments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpufault {

/// True when a variable or option `name` looks secret, or `value` holds a URL with credentials
/// (`scheme://user:password@host`). Case-insensitive; a name is secret when it contains TOKEN,
/// SECRET, PASSWORD, PASSWD, PASSPHRASE, KEY, CREDENTIAL, CREDS, AUTH, COOKIE or SESSION
/// anywhere (`AWS_SECRET_KEY`, `--hf-token`), or has PW, PWD, PASS or CRED as a whole part
/// between `_`, `-`, `.` (`DB_PW`, `MYSQL_PWD`, `--pass`); the bare `PWD` is not secret.
bool looksSecret(std::string_view name, std::string_view value);

/// `s` with the `user:password` of every URL replaced: `https://u:p@host/x` →
/// `https://<redacted>@host/x` (a URL without a password is kept as it is).
std::string redactUrlCredentials(std::string_view s);

/// A command line with secrets replaced by `<redacted>`: `--api-key=X` → `--api-key=<redacted>`,
/// `--password X` → `--password <redacted>` (option names as looksSecret() judges them; argv[0]
/// is never an option), assignments `HF_TOKEN=X` → `HF_TOKEN=<redacted>` (as `env` and
/// `docker -e` take them), `Bearer X`/`Basic X` and the value after a secret header name
/// (`Authorization: …`), the password of `-u`/`--user NAME:PASS`, and the credentials of any URL
/// (redactUrlCredentials()). An argument holding blanks (`sh -c '…'`) is judged word by word.
/// Not recognised: passwords glued to a short option (`mysql -pPW`).
std::vector<std::string> redactArgs(const std::vector<std::string>& argv);

}  // namespace gpufault
