// Re-correlation in place, for gpufaultd's worker thread: the stored incidents are brought to
// a new correlation by changing only the rows that differ, in short transactions, so that the
// daemon's own commits (every 50 ms) never wait long behind it.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

#include "schema/store.h"

namespace gpufault {

struct InPlaceOptions {
    /// Asked every few thousand steps (queries, correlation, rows): true ends the pass with the
    /// error "interrupted"; what was committed stays, the next pass completes it.
    std::function<bool()> stop;
    size_t max_rows = 2000;                 ///< rows written per transaction at most ...
    std::chrono::milliseconds max_txn{20};  ///< ... and a transaction open this long at most
};

/// What one pass did.
struct InPlaceSummary {
    size_t records = 0;       ///< records correlated
    size_t incidents = 0;     ///< incidents after the pass
    size_t rows = 0;          ///< rows inserted, updated or deleted
    size_t transactions = 0;  ///< write transactions committed
    double correlate_s = 0;   ///< reading the records and correlating them (no lock held)
    double write_s = 0;       ///< reading the stored incidents and writing the changes
};

/// Correlates every record (correlateStored), diffs the result against the stored incidents
/// (diffIncidents: an unchanged incident keeps its id and rows) and writes the differences,
/// at most `max_rows` rows or `max_txn` per transaction, drops first. Between two of its
/// transactions a reader may find a record in no incident, never in two. Errors: the store's
/// (a busy store after its 5 s timeout included), or "interrupted".
db::Result<InPlaceSummary> recorrelateInPlace(Store& store, const InPlaceOptions& opt = {});

}  // namespace gpufault
