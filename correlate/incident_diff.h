// What turns the stored incidents into a new correlation's, row by row (pure). gpufaultd's
// worker writes these changes in short transactions (ingest/recorrelate.h), so that an
// incident that did not change keeps its id and its rows are not written again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "schema/incident_rows.h"

namespace gpufault {

/// Row changes, to be applied in this order: drops first (so that a reader between two
/// transactions may miss a record's incident, never see it in two), then updates and inserts.
struct IncidentChanges {
    std::vector<int64_t> drop;                              ///< incidents gone, with rows
    std::vector<std::pair<int64_t, int64_t>> drop_members;  ///< (incident, evidence)
    std::vector<std::pair<int64_t, size_t>> update;         ///< (incident, fresh index)
    std::vector<std::pair<int64_t, IncidentMember>> put;    ///< rows of kept incidents
    std::vector<size_t> add;                                ///< fresh indexes: new incidents
    /// Statements these changes take (an added incident: one plus one per member).
    size_t rows(const std::vector<IncidentRecord>& fresh) const;
    bool empty() const {
        return drop.empty() && drop_members.empty() && update.empty() && put.empty() && add.empty();
    }
};

/// Matches fresh incidents to stored ones by the record that opened them (first member) and
/// lists what differs: an incident's own fields, members and context rows added, changed (role
/// or link) or gone; stored incidents without a fresh one are dropped, fresh ones without a
/// stored one added. A member listed twice in a fresh incident counts once (the first).
IncidentChanges diffIncidents(const std::vector<StoredIncident>& stored,
                              const std::vector<IncidentRecord>& fresh);

}  // namespace gpufault
