// The gpufault subcommands. Each returns the process exit status: 0 done, 1 a check failed or
// an id does not exist, 2 usage or input error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ingest/local_devices.h"
#include "schema/sqlite.h"

namespace gpufault {
class Store;
}

namespace gpufault::cli {

/// Options shared by all subcommands.
struct Global {
    std::string db;  ///< resolved store path
    bool db_explicit = false;
};

/// --db, else $GPUFAULT_DB, else the system store /var/lib/gpufault/gpufault.db when it exists
/// and is readable, else $XDG_DATA_HOME/gpufault/gpufault.db (~/.local/share/...).
std::string resolveDbPath(const std::string& flag);

/// Options for cores given to `ingest`, and where the diagnosis finds this machine's GPUs.
struct CoreOptions {
    std::optional<std::string> exe;           ///< the executable, when its recorded path is gone
    std::vector<std::string> debuginfo_path;  ///< searched before `:.debug:/usr/lib/debug`
    std::string sysfs_root = "/sys", proc_root = "/proc";  ///< for listDevices (diagnoses)
    uint64_t max_unpacked_mib = 16384;  ///< cap on a compressed core decompressed for reading
    /// Seconds the unwinding child may run (ChildLimits::seconds); it stops itself a margin
    /// before and keeps the threads it has, crashing thread first.
    uint64_t unwind_seconds = 60;
};
/// Reads logs and cores (an ELF core is recognised by its header) into the store.
int cmdIngest(const Global& g,
              const std::vector<std::string>& files,
              int window,
              bool quiet,
              const CoreOptions& cores = {});
/// Ingests one allocation record file of the preload shim (`run`: the run that wrote it);
/// prints its summary unless quiet and its warnings as PATH:LINE. False on error (printed).
bool ingestOneAllocLog(Store& store,
                       const std::string& path,
                       std::optional<int64_t> run,
                       bool quiet);
/// Diagnoses the incidents whose records point at a missing code object (analysis/diagnose.h),
/// with this machine's GPUs under `sysfs_root`/`proc_root` when the store records none; prints
/// how many unless quiet. 0 done, 2 the store failed (printed).
int runDiagnoses(db::Db& d,
                 const std::string& sysfs_root,
                 const std::string& proc_root,
                 bool quiet);
/// `gpufault diagnose`: runDiagnoses on the store (e.g. one gpufaultd wrote).
int cmdDiagnose(const Global& g, const std::string& sysfs_root, const std::string& proc_root);
/// Cores in the store: pid, signal, si_addr, signature, top frame, incident.
int cmdCores(const Global& g, bool json);
/// One core's symbolized stack (the crashing thread; `all`: every thread); 1 when no such core.
int cmdStack(const Global& g, int64_t core, bool all, bool json);
int cmdEvents(const Global& g,
              bool json,
              const std::optional<std::string>& kind,
              const std::optional<std::string>& source);
int cmdIncidents(const Global& g, bool json);
int cmdFaults(const Global& g, bool json);
int cmdOperands(const Global& g, bool json);
int cmdDispatches(const Global& g, bool json);
int cmdKernels(const Global& g, bool json);
/// Incidents grouped by signature (schema/group_queries.h), the most frequent first: count,
/// processes, inputs, runs, hosts, first and last time seen, example incident ids. 0 done (also
/// for an empty store), 2 the store failed.
int cmdGroups(const Global& g, bool json);
int cmdShow(const Global& g, int64_t incident, int dispatches);
int cmdReport(const Global& g, int64_t incident, const std::string& format);
/// --socket, else $GPUFAULT_SOCKET, else /run/gpufault/gpufaultd.sock.
std::string resolveSocketPath(const std::string& flag);
/// gpufaultd's state (sources, positions, lag, losses, store); 2 when it is unreachable, does
/// not connect and answer within `timeout_s` seconds, or its reply is malformed (not JSON, a
/// field of the wrong type, a line over 16 MiB).
int cmdStatus(const std::string& socket, bool json, double timeout_s);
/// Records and incidents as gpufaultd commits them, until Ctrl-C; 1 when gpufaultd closes the
/// connection (it stopped). The connection and the first reply must come within `timeout_s`
/// seconds (else 2); a malformed line or a failed read ends it with 2.
int cmdWatch(const std::string& socket, bool json, double timeout_s);
/// `gpufault run` options.
struct RunOptions {
    std::vector<std::string> command;         ///< CMD ARGS…
    std::optional<int> amd_log_level;         ///< sets AMD_LOG_LEVEL
    std::optional<std::string> amd_log_mask;  ///< names or a number (parseAmdLogMask)
    bool serialize =
        false;  ///< AMD_SERIALIZE_KERNEL=3, HIP_LAUNCH_BLOCKING=1, CUDA_LAUNCH_BLOCKING=1
    std::string spool_dir;            ///< "" = the default spool directory
    bool record_allocations = false;  ///< LD_PRELOAD the allocation-recording shim
    std::string preload;              ///< the shim; "" = found (findPreloadShim)
    /// gpufaultd's allocation directory to record into ("" = /run/gpufault-alloc when it is
    /// root's and sticky, else a private directory beside the spooled output).
    std::string alloc_dir;
};
/// Runs a job on a pseudo-terminal, records the run and ingests its output; returns the
/// job's status (exit code, or 128 + signal), 2 when it could not be started.
int cmdRun(const Global& g, const RunOptions& o);
/// Process snapshots gpufaultd took of faulting processes (NSpid, cgroup, modules).
int cmdProcesses(const Global& g, bool json);
/// Recorded runs: command, exit, records from their output.
int cmdRuns(const Global& g, bool json);
/// `gpufault codeobj` options.
struct CodeobjOptions {
    std::vector<std::string> paths;          ///< files and directories (every ELF under them)
    std::optional<std::string> device;       ///< gfx1151, gfx90a:xnack+, sm_90
    std::vector<std::string> require;        ///< targets every code unit must cover
    std::string hsa_override_gfx_version;    ///< applied to AMD targets checked, "" = none
    uint64_t max_decompressed = 1ull << 30;  ///< per compressed bundle, bytes
    bool json = false;
    bool list = false;  ///< only list (no device or required target: no check)
    std::string sysfs_root = "/sys", proc_root = "/proc";  ///< local GPUs, when no --device
};
/// Inventories GPU code (offload bundles, CCOB, CUDA fat binaries; in directories also kernel
/// library files) and names every bundle lacking a target: `--device`, `--require`, else this
/// machine's GPUs (none: exit 2), unless `list`. 0 all covered (or a listing), 1 a bundle or
/// library directory lacks a target or is mislabeled, 2 usage or input error or no GPU.
int cmdCodeobj(const CodeobjOptions& o);
using gpufault::Device;  // ingest/local_devices.h
using gpufault::listDevices;
/// Lists them and, with `record` set, also writes them into its store (table devices, for
/// diagnoses and the evidence_device links): 0 found, 1 none, 2 the store failed.
int cmdDevices(const Global* record,
               const std::string& sysfs_root,
               const std::string& proc_root,
               bool json);
/// `gpufault preflight` options.
struct PreflightOptions {
    std::string sysfs_root = "/sys", proc_root = "/proc";
    uint64_t max_vram_used_mib = 1024;  ///< VRAM in use above this is dirty (AMD)
    std::vector<std::string> allow = {"rocm-smi",
                                      "amd-smi",
                                      "rdcd",
                                      "gpuagent",
                                      "amd-metrics-exporter",
                                      "device-metrics-exporter"};
    bool json = false;
};
/// Is each GPU clean before a run: faults or failed resets since its last successful reset
/// (from the store), VRAM in use, KFD processes other than monitoring agents. 0 clean, 1 a
/// device is dirty, 2 no device or nothing could be checked.
int cmdPreflight(const Global& g, const PreflightOptions& o);
int cmdQuery(const Global& g, const std::string& sql, bool json, bool csv, double timeout_s);

}  // namespace gpufault::cli
