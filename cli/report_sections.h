// Sections of `gpufault report`: the incident's cores, and what the store knows of the GPU
// target and the driver and runtime versions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/incident_view.h"
#include "schema/sqlite.h"

namespace gpufault::cli {

/// The incident's cores for `report --format json`: the crashing thread and, for a ROCr abort
/// (which dies on the runtime's event thread), the other threads that were inside the GPU
/// runtime — where the program's GPU work was. An empty array when the query fails.
nlohmann::json coresJson(db::Db& d, int64_t incident);
/// The same as Markdown: a `### Core N` section per core, stacks in code blocks.
void printCoresMarkdown(db::Db& d, int64_t incident);

/// The report's `## …` title line (and a blank line): a GPU memory access fault with its address
/// and reason; a compute-sanitizer report as such; a core or a CPU `segfault` line as the crash
/// of its process (the host side: no GPU fault is claimed); a missing code object.
std::string reportTitle(const IncidentRow& i);
/// `### Faulting kernel`: the last kernel dispatched before the fault (`dispatched`), else the
/// kernel a record names (compute-sanitizer: the kernel it caught the access in), else what
/// would name it for the incident's vendor. `ambiguous` (pid, kernel), two or more: processes
/// that dispatched in the fault's stream just before it (lastKernelOf()); none is named.
std::string kernelMarkdown(const IncidentRow& i,
                           const std::optional<std::string>& kernel,
                           bool dispatched,
                           const std::vector<std::pair<int64_t, std::string>>& ambiguous = {});

/// One fact the store knows, and where it comes from.
struct Known {
    std::string value;  ///< `gfx1030`, `amdgpu 6.8.5`, `libamdhip64.so 6.2.60200`
    std::string from;   ///< `device 0000:03:00.0 on HOST, as gpufault devices --record stored it`
};
/// The GPU target and the versions the store knows for an incident, each list without
/// duplicates (by value), in the order found; an empty list means unknown.
struct Environment {
    std::vector<Known> targets;   ///< gfx target IDs (`gfx90a:xnack+`), CUDA `sm_90`
    std::vector<Known> gpus;      ///< marketing names of the devices
    std::vector<Known> drivers;   ///< kernel driver versions (amdgpu module, NVIDIA driver)
    std::vector<Known> runtimes;  ///< GPU runtime libraries and their versions (cores)
};
/// Gathers them from the incident's records (a `target` or `agent` attribute), the devices
/// they link to (`gpufault devices --record`), its diagnoses and its cores' mapped runtimes.
/// Query errors leave the lists as far as they got.
Environment incidentEnvironment(db::Db& d, const IncidentView& v);
/// `### Target and versions`: every list, or `unknown` with what would tell it.
std::string environmentMarkdown(const Environment& env, const std::string& vendor);
/// {"gpu_target": [{"value", "from"}…], "gpu": …, "driver": …, "runtime": …} (empty arrays
/// for unknown).
nlohmann::json environmentJson(const Environment& env);

}  // namespace gpufault::cli
