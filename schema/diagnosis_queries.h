// Devices and diagnoses in the store (schema/sql/008_diagnoses_devices.sql): writes and reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "schema/sqlite.h"

namespace gpufault {

/// A GPU as recorded by `gpufault devices --record` (table devices).
struct DeviceRecord {
    int64_t id = 0;  ///< set when read
    std::string host, boot_id, taken_at;
    std::string vendor;  ///< amd | nvidia
    std::optional<int64_t> node;
    std::string pci, target, name, uuid, vbios, driver;
    std::optional<int64_t> render_minor;
    std::optional<uint64_t> vram_total;  ///< bytes
};

/// Records (or refreshes: same host, vendor, PCI address and node) each device, in one
/// transaction. Returns how many rows were written.
db::Result<int> recordDevices(db::Db& d, const std::vector<DeviceRecord>& devices);
/// Stored devices, most recently recorded first.
db::Result<std::vector<DeviceRecord>> queryStoredDevices(db::Db& d);
/// The devices a record links to (view evidence_device): by PCI address, else by node-N.
db::Result<std::vector<DeviceRecord>> queryEvidenceDevices(db::Db& d, int64_t evidence_id);

/// One finding of a diagnosis (a row of table diagnoses).
struct DiagnosisFinding {
    std::string verdict;  ///< device (a target checked), no_code, covered, mislabeled,
                          ///< library_missing, library_present,
                          ///< modules, unreadable, no_device
    std::string module;
    std::optional<int64_t> bundle;     ///< 1-based
    std::optional<uint64_t> offset;    ///< file offset of the bundle, bytes
    std::vector<std::string> has;      ///< targets it carries
    std::vector<std::string> kernels;  ///< demangled
    std::string device_target, device, device_from;
    std::string detail;
};

/// A diagnosis: the record that triggered it, the rule, and its findings.
struct Diagnosis {
    int64_t evidence_id = 0;
    std::string rule, why;
    std::string inputs;  ///< digest of what it was computed from
    std::string created_at;
    std::vector<DiagnosisFinding> findings;
};

/// The digest of the stored diagnosis triggered by `evidence_id`; nullopt when none.
db::Result<std::optional<std::string>> diagnosisInputs(db::Db& d, int64_t evidence_id);
/// Incidents a diagnosis rule may fire on, by id: those with a member record of kind
/// missing_code_object or coredump (every rule reads one of them; analysis/diagnosis.h).
db::Result<std::vector<int64_t>> queryDiagnosisCandidates(db::Db& d);
/// Replaces the diagnosis of `dg.evidence_id` (in one transaction).
db::Result<void> replaceDiagnosis(db::Db& d, const Diagnosis& dg);
/// The paths of the files a core mapped (table core_files), in address order.
db::Result<std::vector<std::string>> queryCoreFilePaths(db::Db& d, int64_t core);
/// The diagnoses whose triggering record is a member of `incident`, oldest first.
db::Result<std::vector<Diagnosis>> queryIncidentDiagnoses(db::Db& d, int64_t incident);

}  // namespace gpufault
