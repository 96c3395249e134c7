// Line endings, reply quotes and the prefixes programs and loggers put before their own output.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/log_line.h"

namespace gpufault::prefix {

/// `s` without its line ending: trailing CR (CRLF files), literal two-character `^M` (copies of
/// terminal/editor output) and trailing blanks, in any mix.
std::string_view trimLineEnd(std::string_view s);

/// The text after the last carriage return of an end-trimmed line: a progress bar redrawn with
/// `\r` (tqdm, pip) leaves its frames in front of the message printed after it.
std::string_view afterCarriageReturn(std::string_view s);

/// Removes e-mail/Markdown reply quoting `> ` or `>` + TAB, nested (`>> `, `> > `), and a
/// bare `>` before a `[` time stamp; a line of only `>` gives "". `>>> ` (Python's prompt) stays.
/// A Markdown code fence glued in front of the line (```` ```[ ```` or ```` ``` ````) goes too.
std::string_view stripReplyQuotes(std::string_view s);

/// Bytes of leading logger stamps `2025-12-21T05:01:45.677513 - ` (ComfyUI's stdout/stderr
/// interceptor prefixes every write, so they repeat: `STAMP - STAMP -   File …`). 0 if none.
size_t loggerStampsLength(std::string_view s);

/// Copies `s` without the logger stamps glued inside it (`Exception in thread STAMP - Thread-5`);
/// false (out untouched) when there are none.
bool removeGluedLoggerStamps(std::string_view s, std::string& out);

/// `docker logs -t` / `docker compose logs -t`: an RFC 3339 stamp with zone and a space.
/// Returns its length (with the space) and fills `wall` and `utc_s` (its instant, seconds since
/// the epoch); 0 when absent.
size_t containerStampLength(std::string_view s,
                            std::optional<std::string>& wall,
                            std::optional<int64_t>& utc_s);

/// `[rankN]:` (PyTorch c10d's log prefix) and torchrun's `--tee`/`--redirects` prefix
/// `[{role}{local_rank}]:` (torch/distributed/elastic/agent/server/local_elastic_agent.py:
/// `[default0]:` for the default role), optionally followed by a glog `[E610 …]` block that
/// stays in the text. `role` is 1–32 letters, `_` or `-`. Returns N (a global rank for `rank`,
/// else the local rank: both name one process of the stream) and sets `*len` to the prefix
/// length with one following space. Also Open MPI's `mpirun --tag-output` prefix
/// `[JOBID,RANK]<stdout|stderr|stddiag>:` (orte iof: `"[%s,%d]<%s>:"`): RANK.
std::optional<int64_t> parseRankPrefix(std::string_view s, size_t* len);

/// vLLM's worker prefix `({name} pid={pid}) ` (vllm/utils `_add_prefix()`, cyan when a terminal:
/// `ESC[1;36m(…)ESC[0;0m `), `name` e.g. `VllmWorker rank=1`, `VllmWorkerProcess`,
/// `EngineCore_DP0`: the pid, the `rank=N` its name states, and the prefix length. The line
/// decoder keeps the rank, else serviceRank(label), as the line's process.
struct WorkerPrefix {
    int64_t pid = 0;
    std::optional<int64_t> rank;
    std::string_view label;  ///< `{name} pid={pid}`, the text inside the parentheses
    size_t len = 0;
};
std::optional<WorkerPrefix> parseWorkerPrefix(std::string_view s);

/// The process identity of a vLLM worker without a rank (WorkerPrefix::label) or of a docker
/// compose service replica `name` (`evaluator-1`, the text
/// before the `|` without its padding): a distinct container. Kept as LogLine::rank, in a
/// range no `[rankN]:` reaches (kServiceRankBase and up), so lines of two services never pair.
constexpr int64_t kServiceRankBase = kIdentityRankBase;
int64_t serviceRank(std::string_view name);

}  // namespace gpufault::prefix
