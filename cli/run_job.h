// `gpufault run`: runs a job on a pseudo-terminal, passes its output through and spools it.
#pragma once

#include <sys/types.h>

#include <expected>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpufault::cli {

/// What to run and where its output goes.
struct JobSpec {
    std::vector<std::string> argv;           ///< argv[0] is looked up in PATH
    std::map<std::string, std::string> env;  ///< variables set (over the inherited ones)
    std::string spool;                       ///< created 0600; must not exist
};

/// How the job ended. Times are UTC ISO 8601 with microseconds.
struct JobResult {
    pid_t pid = -1;
    std::optional<int> exit_status;  ///< exit code, when it exited
    std::optional<int> signal;       ///< the signal that ended it
    std::set<pid_t> pids;            ///< the job and every descendant seen while it ran
    std::string started, ended;
    uint64_t bytes = 0;  ///< output captured
    /// errno of the write to our stdout that failed (EPIPE: its reader closed), after which
    /// the output went to the spool only; 0 when all of it was passed through.
    int output_lost = 0;
    /// The status a shell would give: the exit code, or 128 + the signal.
    int shellStatus() const { return exit_status ? *exit_status : 128 + signal.value_or(0); }
};

/// Runs the job with stdout and stderr on one pseudo-terminal, so their order is kept and a
/// crash (abort() after ROCr's "Memory access fault…") loses nothing to stdio buffering. All
/// output is written unchanged to our stdout and appended to the spool file. When our stdin
/// is a terminal, it is put in raw mode and forwarded (Ctrl-C reaches the job through the
/// pseudo-terminal); otherwise the job inherits our stdin. SIGINT, SIGTERM, SIGHUP and SIGQUIT
/// sent to us are forwarded to the job; window size changes follow. SIGPIPE is ignored from
/// here on: when our stdout's reader goes away, pass-through stops and the job runs on, its
/// output still spooled (JobResult::output_lost says so). Errors (spool not
/// creatable, no pseudo-terminal, fork) are returned before anything runs; a command that
/// cannot be executed ends with status 127 and its message in the output.
std::expected<JobResult, std::string> runJob(const JobSpec& spec);

}  // namespace gpufault::cli
