// Pieces shared by the amdgpu kernel-log matchers: the device prefix of a line and the task
// ("process … pid … thread … pid …") part, FORMATS.md §1.0 and §1.4.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "collectors/common/evidence.h"

namespace gpufault::amdgpu {

/// An amdgpu line split at its device prefix.
struct DeviceLine {
    std::string key;                 ///< groups one device's lines: the BDF, or `drmn0`
    std::optional<std::string> pci;  ///< normalised `DDDD:BB:DD.F`; nullopt for FreeBSD `drmnN`
    std::string_view body;           ///< message after the prefix, the optional `amdgpu: ` tag and
                                     ///< leading blanks / TABs / kmsg `\x09` escapes
    bool tagged = false;             ///< the dev_fmt `amdgpu: ` tag followed the device
    bool radeon = false;             ///< printed by the radeon driver (`radeon 0000:01:00.0: `)
};

/// The matchers' prefilter: true when `text` contains `amdgpu`, `drmn` (FreeBSD), `gmc_`
/// (`gmc_v10_0_process_interrupt: N callbacks suppressed`) or `radeon ` (pre-amdgpu GPUs).
bool mentionsAmdgpu(std::string_view text);
/// True when `text` contains `radeon ` (the radeon driver's device prefix).
bool mentionsRadeon(std::string_view text);

/// Finds the device prefix anywhere in `text` (so transport prefixes may still be there):
/// Linux dev_printk `amdgpu 0000:c6:00.0: ` with or without the `amdgpu: ` tag (kernels before
/// ~5.8 and after 6.x print none), the radeon driver's `radeon 0000:01:00.0: ` (its SI/CIK fault
/// lines are amdgpu's gmc_v6/v7 ones, FORMATS.md §1.3), or FreeBSD drm-kmod `drmn0: `. nullopt
/// when there is none or the address is cut (`amdgpu 0000:c6:0`).
std::optional<DeviceLine> splitDeviceLine(std::string_view text);

/// `s` without leading spaces, TABs and literal `\x09` (kmsg-escaped TAB) sequences.
std::string_view skipBlanks(std::string_view s);

/// True for journalctl's boot separator line: `-- Boot <id> --` (`%s-- Boot %s --`, systemd's
/// journalctl.c) or the older `-- Reboot --`. Blocks, read order and kernel stamps end there.
bool isBootMarker(std::string_view text);

/// What a task part names. Empty names stay nullopt.
struct TaskInfo {
    std::optional<std::string> process;
    std::optional<int64_t> pid;  ///< tgid
    std::optional<std::string> thread;
    std::optional<int64_t> tid;  ///< the thread's pid
};

/// Parses `NAME pid N thread NAME pid M` with an optional trailing `)`, as printed after
/// `Process `, `for process `, `in process ` or `Process information: process `
/// (amdgpu_vm_print_task_info, the pre-2024 inline header form, amdgpu_job_timedout). Names may
/// contain spaces and colons or be empty. A cut line gives the fields before the cut.
TaskInfo parseTaskInfo(std::string_view s);

/// The text after the task keyword when `body` is a task line (` Process …`, ` for process …`,
/// ` in process …`, `Process information: process …`); nullopt otherwise.
std::optional<std::string_view> taskLineText(std::string_view body);

/// Copies the fields `t` states into `e`.
void applyTask(const TaskInfo& t, Evidence& e);

/// Appends `line` to a record's raw text ('\n'-joined), keeping at most 4096 bytes.
void appendRaw(std::string& raw, std::string_view line);

/// Decimal at the start of `s` that is followed by one of `ends` (or by the end of `s` when
/// `at_end_ok`). A number at the very end of a cut line may itself be cut, hence the option.
std::optional<int64_t> decFollowedBy(std::string_view s, std::string_view ends, bool at_end_ok);

}  // namespace gpufault::amdgpu
