// gpufault: triage GPU memory-access faults from kernel logs, runtime logs and cores.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdlib>
#include <charconv>
#include <cstdint>
#include <cstdio>

#include "cli/commands.h"
#include "cli/output.h"

namespace {

/// A row id: decimal, 1 to INT64_MAX (CLI11 alone would clamp `9223372036854775808`).
const CLI::Validator kRowId(
    [](std::string& s) -> std::string {
        int64_t v = 0;
        auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc::result_out_of_range)
            return "id " + s + " is out of range (1 to 9223372036854775807)";
        if (ec != std::errc{} || end != s.data() + s.size() || v < 1)
            return "id " + s + " is not a positive whole number";
        return {};
    },
    "ID");

/// `stack`'s core id: a row id, and a path given instead gets told where core files go.
const CLI::Validator kCoreId(
    [](std::string& s) -> std::string {
        auto err = kRowId(s);
        if (err.empty() || (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos))
            return err;  // a number: in range, or out of range as kRowId says
        return "stack takes a core id (see `gpufault cores`), not '" + s +
               "'; to read a core file use `gpufault ingest FILE`";
    },
    "CORE_ID");

}  // namespace

namespace {
/// A number that is not NaN or infinite (CLI::Range lets NaN through: no comparison fails).
const CLI::Validator kFiniteNumber(
    [](std::string& v) -> std::string {
        char* end = nullptr;
        double d = std::strtod(v.c_str(), &end);
        return end != v.c_str() && std::isfinite(d) ? "" : "not a finite number: " + v;
    },
    "FINITE");
}  // namespace

int main(int argc, char** argv) {
    using namespace gpufault::cli;
    CLI::App app{"gpufault: crash forensics for GPU memory-access faults", "gpufault"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "gpufault " GPUFAULT_VERSION);
    std::string dbFlag;
    app.add_option(
        "--db", dbFlag, "store path (else $GPUFAULT_DB, the system store, or the XDG data dir)");

    std::vector<std::string> files;
    int window = 64;
    bool quiet = false;
    auto* ingest = app.add_subcommand(
        "ingest",
        "read logs (kernel, runtime, sanitizer, container) and core files into the store");
    ingest->add_option("files", files, "files to read, - for stdin")->required();
    ingest->add_option("--window", window, "dispatches kept per thread before a fault")
        ->check(CLI::Range(1, 100000))
        ->capture_default_str();
    ingest->add_flag("-q,--quiet", quiet, "no summary");
    CoreOptions coreOpt;
    ingest->add_option(
        "--exe", coreOpt.exe, "cores: the executable, when the path the core records is gone");
    ingest
        ->add_option("--debuginfo-path",
                     coreOpt.debuginfo_path,
                     "cores: directories with debug files or a .build-id tree (DIR[:DIR…]; "
                     "searched before :.debug:/usr/lib/debug)")
        ->allow_extra_args(false);
    ingest
        ->add_option("--sysfs-root",
                     coreOpt.sysfs_root,
                     "diagnoses: sysfs of this machine's GPUs, when none is recorded")
        ->capture_default_str();
    ingest->add_option("--proc-root", coreOpt.proc_root, "diagnoses: procfs mount")
        ->capture_default_str();
    ingest
        ->add_option("--max-unpacked-mib",
                     coreOpt.max_unpacked_mib,
                     "cores: cap on a compressed core decompressed into a temporary file "
                     "($TMPDIR, else /var/tmp)")
        ->check(CLI::Range(1, 1 << 24))
        ->capture_default_str();
    ingest
        ->add_option("--unwind-seconds",
                     coreOpt.unwind_seconds,
                     "cores: time limit of the unwinding child; a core too big for it keeps the "
                     "crashing thread and the threads unwound in time, marked partial")
        ->check(CLI::Range(1, 86400))
        ->capture_default_str();

    bool json = false, csv = false;
    std::optional<std::string> kind, source;
    auto* events = app.add_subcommand("events", "list evidence records (docs/evidence.md)");
    events->add_flag("--json", json, "JSON Lines");
    events->add_option("--kind", kind, "only this kind");
    events->add_option(
        "--source", source, "only records of the source whose path is PATH or ends in /PATH");

    auto* cores = app.add_subcommand("cores", "cores read by ingest: signal, address, signature");
    cores->add_flag("--json", json, "JSON Lines");
    int64_t coreId = 0;
    bool allThreads = false;
    auto* stack = app.add_subcommand("stack", "one core's symbolized stack");
    stack->add_option("core", coreId, "core id (gpufault cores)")->required()->check(kCoreId);
    stack->add_flag("--all-threads", allThreads, "every thread, not only the crashing one");
    stack->add_flag("--json", json, "one JSON object");

    auto* incidents = app.add_subcommand("incidents", "list incidents");
    incidents->add_flag("--json", json, "JSON Lines");
    auto* faults = app.add_subcommand(
        "faults",
        "fault records (INCIDENT: the id show takes; RECORD: the evidence id): alignment, "
        "nearest operand, last kernel");
    faults->add_flag("--json", json, "JSON Lines");
    auto* operands = app.add_subcommand("operands", "recorded buffers");
    operands->add_flag("--json", json, "JSON Lines");
    auto* dispatches = app.add_subcommand("dispatches", "dispatch rows kept before faults");
    dispatches->add_flag("--json", json, "JSON Lines");
    auto* kernels = app.add_subcommand("kernels", "dispatch counts per kernel and process");
    kernels->add_flag("--json", json, "JSON Lines");
    auto* groups = app.add_subcommand(
        "groups", "incidents grouped by signature: how often the same fault came back");
    groups->add_flag("--json", json, "JSON Lines");

    int64_t incident = 0;
    int lastN = 16;
    auto* show = app.add_subcommand("show", "everything about one incident");
    show->add_option("incident", incident, "incident id")->required()->check(kRowId);
    show->add_option("--dispatches", lastN, "last dispatches to print")
        ->check(CLI::Range(0, 100000))
        ->capture_default_str();

    std::string format = "md";
    auto* report = app.add_subcommand("report", "an upstream bug-report draft for one incident");
    report->add_option("incident", incident, "incident id")->required()->check(kRowId);
    report->add_option("--format", format, "md or json")
        ->check(CLI::IsMember({"md", "json"}))
        ->capture_default_str();

    std::string sql;
    auto* query = app.add_subcommand("query", "run one read-only SQL statement on the store");
    query->add_option("sql", sql, "SQL")->required();
    query->add_flag("--json", json, "JSON Lines");
    query->add_flag("--csv", csv, "CSV");
    double timeout = 60;
    query->add_option("--timeout", timeout, "seconds before the query is interrupted")
        ->check(kFiniteNumber & CLI::Range(0.001, 86400.0))
        ->capture_default_str();

    RunOptions runOpt;
    auto* runCmd = app.add_subcommand(
        "run", "run a job under observation: gpufault run [OPTIONS] -- CMD ARGS…");
    runCmd->add_option("--amd-log-level", runOpt.amd_log_level, "set AMD_LOG_LEVEL")
        ->check(CLI::Range(0, 7));
    runCmd->add_option("--amd-log-mask",
                       runOpt.amd_log_mask,
                       "AMD_LOG_MASK bits by name (kern = dispatches and arguments without the "
                       "API trace) or a number");
    runCmd->add_flag("--serialize",
                     runOpt.serialize,
                     "AMD_SERIALIZE_KERNEL=3, HIP_LAUNCH_BLOCKING=1, CUDA_LAUNCH_BLOCKING=1");
    runCmd->add_option("--spool",
                       runOpt.spool_dir,
                       "directory for the captured output (default /var/lib/gpufault/spool for "
                       "root, else ~/.local/share/gpufault/spool)");
    runCmd->add_flag("--record-allocations",
                     runOpt.record_allocations,
                     "preload libgpufault-preload.so: record every GPU allocation and free "
                     "(GPUFAULT_ALLOC_DIR = a run directory in gpufaultd's /run/gpufault-alloc, "
                     "else beside the spooled output)");
    runCmd->add_option("--alloc-dir",
                       runOpt.alloc_dir,
                       "gpufaultd's allocation directory (allocations.directory) to record into "
                       "(default /run/gpufault-alloc when it is root's and sticky)");
    runCmd->add_option("--preload",
                       runOpt.preload,
                       "the shim to preload (default: $GPUFAULT_PRELOAD, else beside gpufault, "
                       "else /usr/lib/gpufault/libgpufault-preload.so)");
    runCmd->add_option("command", runOpt.command, "the job")->required();
    auto* processes = app.add_subcommand(
        "processes",
        "what /proc said about faulting processes (gpufaultd): NSpid, cgroup, modules");
    processes->add_flag("--json", json, "JSON Lines");
    auto* runs = app.add_subcommand("runs", "jobs recorded by gpufault run");
    runs->add_flag("--json", json, "JSON Lines");

    CodeobjOptions co;
    auto* codeobj = app.add_subcommand(
        "codeobj",
        "which GPU targets a binary carries; with --device/--require, which bundles lack one");
    codeobj->footer(
        "Reads .hip_fatbin offload bundles (plain and CCOB zlib/zstd), .nv_fatbin CUDA fat "
        "binaries, bare bundles and AMDGPU code objects; a directory: every ELF under it and "
        "its Tensile kernel library files.\n"
        "Exit: 0 covered (or listed), 1 a bundle lacks a target or is mislabeled, 2 usage or "
        "input error (or no GPU found).\nWithout --device/--require it checks for this "
        "machine's GPUs (as `gpufault devices` lists them); --list only lists.");
    codeobj->add_option("paths", co.paths, "files or directories")->required();
    codeobj->add_option("--device",
                        co.device,
                        "a device target: gfx1151, gfx90a:xnack+, sm_90 (a feature left out "
                        "matches either setting)");
    codeobj->add_option("--require", co.require, "targets every bundle must carry (release gate)")
        ->delimiter(',');
    codeobj->add_option("--hsa-override-gfx-version",
                        co.hsa_override_gfx_version,
                        "as HSA_OVERRIDE_GFX_VERSION (e.g. 10.3.0): the AMD device reports this "
                        "processor");
    codeobj
        ->add_option("--max-decompressed",
                     co.max_decompressed,
                     "bytes one compressed bundle may inflate to (1 GiB)")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
        ->capture_default_str();
    codeobj->add_flag("--json", co.json, "JSON Lines, one object per file");
    codeobj->add_flag("--list", co.list, "only list what each file carries (no check)");
    codeobj->add_option("--sysfs-root", co.sysfs_root, "sysfs mount (local GPUs)")
        ->capture_default_str();
    codeobj->add_option("--proc-root", co.proc_root, "procfs mount (local GPUs)")
        ->capture_default_str();

    std::string sysfsRoot = "/sys", procRoot = "/proc";
    auto* devices = app.add_subcommand("devices", "the GPUs of this machine (sysfs, /proc)");
    devices->add_flag("--json", json, "JSON Lines");
    devices->add_option("--sysfs-root", sysfsRoot, "sysfs mount (a copy for tests)")
        ->capture_default_str();
    devices->add_option("--proc-root", procRoot, "procfs mount")->capture_default_str();
    bool recordDevices = false;
    devices->add_flag("--record",
                      recordDevices,
                      "also write them into the store (diagnoses, evidence_device links)");

    PreflightOptions pre;
    auto* preflight = app.add_subcommand(
        "preflight",
        "is each GPU clean before a run (faults since its last reset, VRAM, processes)");
    preflight->add_flag("--json", pre.json, "JSON Lines");
    preflight
        ->add_option(
            "--max-vram-used-mib", pre.max_vram_used_mib, "VRAM in use above this is dirty")
        ->capture_default_str();
    preflight->add_option("--allow", pre.allow, "process names that may hold a GPU (monitoring)")
        ->capture_default_str();
    preflight->add_option("--sysfs-root", pre.sysfs_root, "sysfs mount")->capture_default_str();
    preflight->add_option("--proc-root", pre.proc_root, "procfs mount")->capture_default_str();

    std::string diagSysfs = "/sys", diagProc = "/proc";
    auto* diagnose = app.add_subcommand(
        "diagnose", "diagnose incidents that point at a missing code object (ingest does it too)");
    diagnose->add_option("--sysfs-root", diagSysfs, "this machine's GPUs, when none is recorded")
        ->capture_default_str();
    diagnose->add_option("--proc-root", diagProc, "procfs mount")->capture_default_str();

    std::string socketFlag;
    auto* status = app.add_subcommand("status", "the running gpufaultd: sources, lag, losses");
    status->add_flag("--json", json, "one JSON object");
    status->add_option("--socket",
                       socketFlag,
                       "control socket (else $GPUFAULT_SOCKET or "
                       "/run/gpufault/gpufaultd.sock)");
    double daemonTimeout = 5;
    status
        ->add_option(
            "--timeout", daemonTimeout, "seconds to connect and get the answer (then exit 2)")
        ->check(kFiniteNumber & CLI::Range(0.001, 86400.0))
        ->capture_default_str();
    auto* watch = app.add_subcommand("watch", "records and incidents as gpufaultd stores them");
    watch->add_flag("--json", json, "JSON Lines");
    watch->add_option("--socket", socketFlag, "control socket");
    watch
        ->add_option("--timeout",
                     daemonTimeout,
                     "seconds to connect and be acknowledged (then exit 2); records may take "
                     "any time")
        ->check(kFiniteNumber & CLI::Range(0.001, 86400.0))
        ->capture_default_str();

    // The first word that is not an option (or --db's value) must be a subcommand.
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--db") {
            ++i;
            continue;
        }
        if (a.rfind("-", 0) == 0) continue;
        bool known = false;
        for (const auto* sub : app.get_subcommands({})) known |= sub->get_name() == a;
        if (!known) {
            printText(stderr, "gpufault: unknown command '{}' (see gpufault --help)\n", a);
            return 2;
        }
        break;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        printText(stderr, "gpufault: {} (see gpufault --help)\n", e.what());
        return 2;
    }
    if (*codeobj) return cmdCodeobj(co);
    if (*status) return cmdStatus(resolveSocketPath(socketFlag), json, daemonTimeout);
    if (*watch) return cmdWatch(resolveSocketPath(socketFlag), json, daemonTimeout);
    Global g;
    g.db_explicit = !dbFlag.empty();
    g.db = resolveDbPath(dbFlag);
    if (*devices) return cmdDevices(recordDevices ? &g : nullptr, sysfsRoot, procRoot, json);
    if (*ingest) return cmdIngest(g, files, window, quiet, coreOpt);
    if (*diagnose) return cmdDiagnose(g, diagSysfs, diagProc);
    if (*cores) return cmdCores(g, json);
    if (*stack) return cmdStack(g, coreId, allThreads, json);
    if (*events) return cmdEvents(g, json, kind, source);
    if (*incidents) return cmdIncidents(g, json);
    if (*faults) return cmdFaults(g, json);
    if (*operands) return cmdOperands(g, json);
    if (*dispatches) return cmdDispatches(g, json);
    if (*kernels) return cmdKernels(g, json);
    if (*groups) return cmdGroups(g, json);
    if (*show) return cmdShow(g, incident, lastN);
    if (*report) return cmdReport(g, incident, format);
    if (*runCmd) return cmdRun(g, runOpt);
    if (*preflight) return cmdPreflight(g, pre);
    if (*runs) return cmdRuns(g, json);
    if (*processes) return cmdProcesses(g, json);
    if (*query) return cmdQuery(g, sql, json, csv, timeout);
    return 2;
}
