// Times the phases of re-correlating a store (docs/performance.md "gpufaultd: correlation off
// the loop"): reading the records, correlate() in memory, writing the incidents in one
// transaction (as `ingest` does), then in place as gpufaultd's worker does
// (recorrelateInPlace: only the rows that differ, in short transactions).
// Usage: correlate_store STORE [ROUNDS [in-place]]   (in-place: skip the full replace)
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string_view>

#include "correlate/correlate.h"
#include "ingest/ingest.h"
#include "ingest/recorrelate.h"
#include "schema/queries.h"
#include "schema/store.h"

using namespace gpufault;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

static bool fullPass(Store& store) {
    auto t0 = Clock::now();
    EvidenceFilter f;
    f.with_text = false;
    auto ev = queryEvidence(store.db(), f);
    if (!ev) return false;
    double read = since(t0);
    auto t1 = Clock::now();
    auto inc = correlate(*ev);
    double corr = since(t1);
    auto t2 = Clock::now();
    auto n = recorrelate(store);
    if (!n) {
        fmt::print(stderr, "{}\n", n.error().message);
        return false;
    }
    fmt::print(
        "{} records, {} incidents: read {:.3f} s, correlate {:.3f} s, recorrelate "
        "(read + correlate + write) {:.3f} s\n",
        ev->size(),
        inc.size(),
        read,
        corr,
        since(t2));
    return true;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fmt::print(stderr, "usage: correlate_store STORE [ROUNDS [in-place]]\n");
        return 2;
    }
    int rounds = argc > 2 ? std::atoi(argv[2]) : 1;
    bool inPlaceOnly = argc > 3 && std::string_view(argv[3]) == "in-place";
    auto store = Store::open(argv[1], Store::Mode::ReadWrite);
    if (!store) {
        fmt::print(stderr, "{}\n", store.error().message);
        return 2;
    }
    for (int r = 0; r < rounds; ++r) {
        if (!inPlaceOnly && !fullPass(*store)) return 2;
        auto t = Clock::now();
        auto p = recorrelateInPlace(*store);
        if (!p) {
            fmt::print(stderr, "{}\n", p.error().message);
            return 2;
        }
        fmt::print(
            "in place: {:.3f} s (correlate {:.3f} s, diff and write {:.3f} s), {} records, "
            "{} incidents, {} rows in {} transactions\n",
            since(t),
            p->correlate_s,
            p->write_s,
            p->records,
            p->incidents,
            p->rows,
            p->transactions);
    }
    return 0;
}
