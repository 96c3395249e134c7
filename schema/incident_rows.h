// Incidents row by row: what gpufaultd's worker needs to bring the stored incidents to a new
// correlation in place, in short transactions, instead of replacing them all in one
// (Store::replaceIncidents, the CLI's way). Only SQL with bound parameters.
#pragma once

#include <cstdint>
#include <vector>

#include "schema/sqlite.h"
#include "schema/store.h"

namespace gpufault {

/// An incident as stored: its id and its record (members in the order they were written).
struct StoredIncident {
    int64_t id = 0;
    int64_t first_evidence = 0;  ///< the record that opened it
    IncidentRecord record;
};

/// Every stored incident with its members and context records, by id.
db::Result<std::vector<StoredIncident>> loadIncidents(db::Db& d);

/// Single-row writes to incidents and incident_evidence, in the caller's transaction.
class IncidentWriter {
  public:
    /// Prepares the statements on `d` (which must outlive the writer).
    static db::Result<IncidentWriter> open(db::Db& d);

    /// Deletes an incident with all its member and context rows.
    db::Result<void> dropIncident(int64_t id);
    /// Deletes one member or context row of an incident.
    db::Result<void> dropMember(int64_t incident, int64_t evidence);
    /// Rewrites an incident's own fields (kind … signature, first_evidence = first member).
    db::Result<void> updateIncident(int64_t id, const IncidentRecord& r);
    /// Inserts or replaces one member or context row (role and link).
    db::Result<void> putMember(int64_t incident, const IncidentMember& m);
    /// Inserts an incident's own row (no members); returns its new id.
    db::Result<int64_t> addIncident(const IncidentRecord& r);

  private:
    explicit IncidentWriter(db::Db& d) : d_(&d) {}
    db::Db* d_;
    db::Stmt dropMembers_, dropRow_, dropMember_, update_, put_, add_;
};

}  // namespace gpufault
