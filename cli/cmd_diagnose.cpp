// Diagnoses (a missing code object, a stack through a kernel launch …; analysis/diagnose.h): after
// `ingest`, and `gpufault diagnose` for a store written by gpufaultd.
#include <fmt/format.h>

#include <filesystem>

#include "analysis/diagnose.h"
#include "cli/commands.h"
#include "cli/output.h"
#include "schema/store.h"

namespace gpufault::cli {

int runDiagnoses(db::Db& d,
                 const std::string& sysfs_root,
                 const std::string& proc_root,
                 bool quiet) {
    diagnosis::DiagnoseOptions opt;
    opt.local_devices = [&] {
        std::vector<diagnosis::DeviceFact> out;
        for (const auto& dev : listDevices(sysfs_root, proc_root))
            out.push_back({dev.vendor, dev.target, dev.pci, dev.node, "this machine"});
        return out;
    };
    auto r = diagnosis::diagnoseIncidents(d, opt);
    if (!r) {
        printText(stderr, "gpufault: diagnosis: {}\n", r.error().message);
        return 2;
    }
    if (!quiet && r->diagnosed)
        fmt::print("{} diagnos{} (gpufault show INCIDENT)\n",
                   r->diagnosed,
                   r->diagnosed == 1 ? "is" : "es");
    return 0;
}

int cmdDiagnose(const Global& g, const std::string& sysfs_root, const std::string& proc_root) {
    if (std::error_code ec; !std::filesystem::exists(g.db, ec)) {
        printText(stderr, "gpufault diagnose: no store at {}\n", g.db);
        return 2;
    }
    auto store = Store::open(g.db, Store::Mode::ReadWrite);
    if (!store) {
        printText(stderr, "gpufault diagnose: {}\n", store.error().message);
        return 2;
    }
    if (int rc = runDiagnoses(store->db(), sysfs_root, proc_root, true); rc != 0) return rc;
    auto n = store->db().prepare("SELECT count(DISTINCT evidence_id) FROM diagnoses");
    int64_t total = 0;
    if (n && n->step().value_or(false)) total = n->i64(0);
    fmt::print("{} diagnos{} in {}\n", total, total == 1 ? "is" : "es", g.db);
    return 0;
}

}  // namespace gpufault::cli
