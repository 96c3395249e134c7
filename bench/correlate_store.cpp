// Times the phases of re-correlating a store (docs/performance.md "gpufaultd: correlation off
// the loop"): reading the records, correlate() in memory, and writing the incidents.
// Usage: correlate_store STORE [ROUNDS]. Writes the incidents (as `ingest` does).
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>

#include "correlate/correlate.h"
#include "ingest/ingest.h"
#include "schema/queries.h"
#include "schema/store.h"

using namespace gpufault;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fmt::print(stderr, "usage: correlate_store STORE [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? std::atoi(argv[2]) : 1;
    auto store = Store::open(argv[1], Store::Mode::ReadWrite);
    if (!store) {
        fmt::print(stderr, "{}\n", store.error().message);
        return 2;
    }
    for (int r = 0; r < rounds; ++r) {
        auto t0 = Clock::now();
        EvidenceFilter f;
        f.with_text = false;
        auto ev = queryEvidence(store->db(), f);
        if (!ev) return 2;
        double read = since(t0);
        auto t1 = Clock::now();
        auto inc = correlate(*ev);
        double corr = since(t1);
        auto t2 = Clock::now();
        auto n = recorrelate(*store);
        if (!n) {
            fmt::print(stderr, "{}\n", n.error().message);
            return 2;
        }
        double whole = since(t2);
        fmt::print("{} records, {} incidents: read {:.3f} s, correlate {:.3f} s, recorrelate "
                   "(read + correlate + write) {:.3f} s\n",
                   ev->size(), inc.size(), read, corr, whole);
    }
    return 0;
}
