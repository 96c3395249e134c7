// Diagnosis on every crash: is this a missing code object? The rules, in one place. Pure: what
// the store holds about one incident in, a trigger, the modules and device targets to check,
// and findings out. The I/O (reading modules, the store) is analysis/diagnose.cpp.
// Rules and wording: docs/code-objects.md "Diagnosis on every crash".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "collectors/code_object/inventory.h"
#include "collectors/code_object/kernel_library.h"
#include "collectors/coredump/stack.h"
#include "schema/diagnosis_queries.h"
#include "schema/queries.h"

namespace gpufault::diagnosis {

/// A core of the incident, as the store keeps it.
struct CoreFacts {
    int64_t evidence_id = 0;              ///< its `coredump` record
    std::optional<int64_t> signal;        ///< SIGSEGV = 11
    std::optional<uint64_t> fault_addr;   ///< si_addr of the signal
    std::vector<coredump::Frame> frames;  ///< the crashing thread, innermost first
    std::vector<std::string> files;       ///< mapped files (NT_FILE)
    /// the executable: `ingest --exe` (where it is now), COREDUMP_EXE, apport's ExecutablePath
    std::optional<std::string> exe;
};

/// A GPU that may have run the process: from the store's devices table or this machine's sysfs.
struct DeviceFact {
    std::string vendor;  ///< amd | nvidia
    std::string target;  ///< gfx1030, "" when unknown
    std::string pci;
    std::optional<int64_t> node;
    std::string from;  ///< "devices recorded on HOST", "this machine"
};

/// What the rules read about one incident.
struct Facts {
    std::vector<StoredEvidence> members;  ///< member records (role "member")
    std::vector<CoreFacts> cores;
    std::vector<std::string> process_modules;  ///< /proc/PID/maps files of snapshots
    std::vector<DeviceFact> devices;
};

/// Why an incident gets a diagnosis: the record and the rule that fired.
struct Trigger {
    int64_t evidence_id = 0;
    std::string rule;  ///< no_binary_for_gpu | no_kernel_image | function_not_found |
                       ///< kernel_library | runtime_null_deref | stack_through_launch
    std::string why;   ///< in words, for `show`
};

/// The first rule that fires, in the order above (evidence before cores); nullopt when none.
std::optional<Trigger> trigger(const Facts& f);

/// True when a frame is in the HIP/ROCclr runtime: its module is libamdhip64 (or libhip_hcc,
/// libamdrocclr) or its symbol is in namespace amd:: / hip:: or named ihip….
bool inHipRuntime(const coredump::Frame& fr);
/// True when a frame's symbol launches a kernel (hipLaunchKernel, ihipModuleLaunchKernel,
/// hipExtLaunchKernelGGL, cudaLaunchKernel, cuLaunchKernel, …_launch_kernel…).
bool launchesKernel(const coredump::Frame& fr);

/// A device target to check modules against, and how it was chosen.
struct DeviceChoice {
    std::string target;  ///< gfx902:xnack-, gfx1030, sm_90
    std::string device;  ///< PCI address or node-N; "" when not known
    std::string from;    ///< "the runtime's device listing (file:line)", "node-1 → devices …"
};
/// Device targets, most exact source first: the runtime's own device listing
/// (hipErrorNoBinaryForGpu), a library error's `for GPU arch`, a record's PCI address or node-N
/// matched against `devices`, else every distinct target of `devices`. Empty when none is known.
std::vector<DeviceChoice> deviceTargets(const Facts& f);

/// A file to inventory and why.
struct ModuleRef {
    std::string path;
    std::string from;  ///< "core 3 mapped files", "process snapshot", "runtime error text"
};
/// Modules the process had: files named by runtime errors, the cores' executables and mapped
/// files (a mapped file named as the executable is left out: the executable stands for it), the
/// snapshots' modules; each path once, in that order.
std::vector<ModuleRef> modules(const Facts& f);
/// Directories of kernel library files the records name (rocBLAS `Cannot read PATH`,
/// hipBLASLt `No paths matched PATH`): the directory part of PATH.
std::vector<std::string> libraryDirs(const Facts& f);

/// One finding of a diagnosis (a row of table diagnoses).
using Finding = DiagnosisFinding;

/// Findings for one inventoried module: a `no_code` finding per bundle without code for the
/// device, a `mislabeled` one per mislabeled entry, else one `covered` finding; nothing for a
/// file without GPU code.
std::vector<Finding> checkModule(const std::string& path,
                                 const codeobj::Inventory& inv,
                                 const DeviceChoice& d);
/// Findings from the runtime's own listing of the bundled code objects (hipErrorNoBinaryForGpu
/// at AMD_LOG_LEVEL ≥ 1): `no_code` when none of them runs on the device; empty without one.
std::vector<Finding> checkRuntimeListing(const Facts& f, const DeviceChoice& d);
/// A kernel library directory against the device: `library_missing` or `library_present`.
Finding checkLibraryDir(const codeobj::KernelLibraryDir& dir, const DeviceChoice& d);

/// The finding's one-line text, as `show` prints it.
std::string findingText(const Finding& f);

}  // namespace gpufault::diagnosis
