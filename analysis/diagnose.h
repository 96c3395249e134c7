// Diagnosis on every crash, the I/O side: for each incident a rule of analysis/diagnosis.h
// fires on, read what the store knows (members, cores' frames and mapped files, process
// snapshots, recorded devices), inventory the modules on disk and the kernel library
// directories named, and store the findings (table diagnoses). Run by `gpufault ingest`.
#pragma once

#include <functional>
#include <vector>

#include "analysis/diagnosis.h"
#include "collectors/code_object/inventory.h"
#include "schema/sqlite.h"

namespace gpufault::diagnosis {

struct DiagnoseOptions {
    /// This machine's GPUs, asked for only when the store has no recorded devices.
    std::function<std::vector<DeviceFact>()> local_devices;
    codeobj::InventoryOptions inventory;
    /// Asked before each incident: true ends the pass with the error "interrupted" (the
    /// diagnoses stored so far stay; gpufaultd's worker on exit). May be empty.
    std::function<bool()> stop;
};

struct DiagnoseSummary {
    int diagnosed = 0;  ///< diagnoses (re)computed
    int unchanged = 0;  ///< triggered incidents whose inputs had not changed
};

/// Diagnoses every incident a rule fires on (only incidents with a missing_code_object or
/// coredump member are read: queryDiagnosisCandidates) whose inputs (trigger, modules with their
/// sizes and modification times, device targets, library directories) changed since it was last
/// diagnosed. Unreadable modules become findings, not errors; errors are the store's.
db::Result<DiagnoseSummary> diagnoseIncidents(db::Db& d, const DiagnoseOptions& o);

/// Loads the facts of one incident (devices given).
db::Result<Facts> loadFacts(db::Db& d, int64_t incident, const std::vector<DeviceFact>& devices);

}  // namespace gpufault::diagnosis
