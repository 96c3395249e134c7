// Runs the built gpufault binary in tests: argv in, exit status and output out.
#pragma once

#include <string>
#include <vector>

namespace gpufault::testing {

struct ProcessResult {
    int status = -1;  ///< exit status; 128+N when killed by signal N; -1 when it could not run
    std::string out, err;
};

/// Runs `argv` (argv[0] is a path) with stdin from /dev/null, waiting at most `timeout_s`
/// seconds (then SIGKILL). Captures stdout and stderr.
ProcessResult run(const std::vector<std::string>& argv, int timeout_s = 60);

/// A fresh temporary directory, removed by the destructor.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

  private:
    std::string path_;
};

/// The whole file as a string ("" when it cannot be read).
std::string readFile(const std::string& path);
void writeFile(const std::string& path, const std::string& content);

}  // namespace gpufault::testing
