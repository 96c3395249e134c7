// Snapshots of live processes named by fault records (/proc/PID: status, stat, cgroup, maps).
#pragma once

#include <optional>
#include <string>

#include "schema/store.h"

namespace gpufault::daemon {

/// Reads /proc/PID (under `proc_root`) of a live process: name, ppid, uid, NSpid, start time,
/// cgroup, command line and mapped files. nullopt when the process is gone or unreadable.
/// `boot_id` and `taken_at` are copied into the record.
std::optional<ProcessRecord> snapshotProcess(int64_t pid,
                                             const std::string& boot_id,
                                             const std::string& proc_root = "/proc");

/// True when a process that started `start_ticks` clock ticks after boot can be the one a
/// record at `kernel_s` seconds after boot names (it started before the record, with a
/// second's slack); true when either time is unknown.
bool startedBefore(std::optional<int64_t> start_ticks, std::optional<double> kernel_s);

}  // namespace gpufault::daemon
