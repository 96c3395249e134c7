#include "ingest/recorrelate.h"

#include <unordered_set>

#include "correlate/incident_diff.h"
#include "ingest/ingest.h"
#include "schema/incident_rows.h"

namespace gpufault {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

/// Runs `ops` (each one row) in transactions of at most opt.max_rows rows and opt.max_txn.
class Batcher {
  public:
    Batcher(Store& store, const InPlaceOptions& opt, InPlaceSummary& sum)
        : store_(store), opt_(opt), sum_(sum) {}
    ~Batcher() {
        if (open_) (void)store_.rollback();
    }

    /// Before `n` rows: commits the transaction when full, opens one when none is open.
    db::Result<void> before(size_t n = 1) {
        if (open_ && (inTxn_ >= opt_.max_rows || Clock::now() - began_ >= opt_.max_txn))
            if (auto r = commit(); !r) return r;
        if (!open_) {
            if (opt_.stop && opt_.stop()) return std::unexpected(db::Error{"interrupted"});
            if (auto r = store_.begin(); !r) return r;
            open_ = true;
            began_ = Clock::now();
        }
        inTxn_ += n;
        sum_.rows += n;
        return {};
    }

    db::Result<void> commit() {
        if (!open_) return {};
        open_ = false;
        inTxn_ = 0;
        if (auto r = store_.commit(); !r) {
            (void)store_.rollback();
            return r;
        }
        ++sum_.transactions;
        return {};
    }

  private:
    Store& store_;
    const InPlaceOptions& opt_;
    InPlaceSummary& sum_;
    bool open_ = false;
    size_t inTxn_ = 0;
    Clock::time_point began_{};
};

}  // namespace

db::Result<InPlaceSummary> recorrelateInPlace(Store& store, const InPlaceOptions& opt) {
    InPlaceSummary sum;
    auto t0 = Clock::now();
    auto fresh = correlateStored(store, opt.stop);
    if (!fresh) return std::unexpected(fresh.error());
    sum.correlate_s = since(t0);
    for (const auto& inc : *fresh) sum.records += inc.members.size();
    sum.incidents = fresh->size();

    auto t1 = Clock::now();
    std::vector<StoredIncident> stored;
    {
        StoreInterrupt guard(store.db(), opt.stop);
        auto s = loadIncidents(store.db());
        if (!s) {
            if (opt.stop && opt.stop()) return std::unexpected(db::Error{"interrupted"});
            return std::unexpected(s.error());
        }
        stored = std::move(*s);
    }
    auto ch = diffIncidents(stored, *fresh);
    stored.clear();
    if (!ch.empty()) {
        auto w = IncidentWriter::open(store.db());
        if (!w) return std::unexpected(w.error());
        Batcher batch(store, opt, sum);
        auto row = [&](auto&& write, size_t n = 1) -> db::Result<void> {
            if (auto r = batch.before(n); !r) return r;
            return write();
        };
        for (int64_t id : ch.drop)
            if (auto r = row([&] { return w->dropIncident(id); }); !r)
                return std::unexpected(r.error());
        for (const auto& [inc, ev] : ch.drop_members)
            if (auto r = row([&] { return w->dropMember(inc, ev); }); !r)
                return std::unexpected(r.error());
        for (const auto& [id, f] : ch.update)
            if (auto r = row([&] { return w->updateIncident(id, (*fresh)[f]); }); !r)
                return std::unexpected(r.error());
        for (const auto& [inc, m] : ch.put)
            if (auto r = row([&] { return w->putMember(inc, m); }); !r)
                return std::unexpected(r.error());
        std::unordered_set<int64_t> seen;
        for (size_t f : ch.add) {
            const auto& inc = (*fresh)[f];
            int64_t id = 0;
            // The incident's row and its first member in one transaction (a reader never sees
            // an incident without the record that opened it); the other members may follow in
            // the next ones. A member listed twice counts once, the first (INSERT OR IGNORE
            // in replaceIncidents).
            if (auto r = row(
                    [&]() -> db::Result<void> {
                        auto n = w->addIncident(inc);
                        if (!n) return std::unexpected(n.error());
                        id = *n;
                        return w->putMember(id, inc.members.front());
                    },
                    2);
                !r)
                return std::unexpected(r.error());
            seen.clear();
            seen.insert(inc.members.front().evidence_id);
            for (size_t m = 1; m < inc.members.size(); ++m) {
                if (!seen.insert(inc.members[m].evidence_id).second) continue;
                if (auto r = row([&] { return w->putMember(id, inc.members[m]); }); !r)
                    return std::unexpected(r.error());
            }
        }
        if (auto r = batch.commit(); !r) return std::unexpected(r.error());
    }
    sum.write_s = since(t1);
    return sum;
}

}  // namespace gpufault
