#!/usr/bin/env bash
# Installs the dependencies, builds gpufault, gpufaultd, the allocation-recording shim
# (libgpufault-preload.so, for `gpufault run --record-allocations`) and the GPU-less allocation
# demo (a host program and stand-in runtime: README "Recording allocations"), ingests the bundled
# fault logs (real ones from public bug reports and H200 runs, plus two examples) into a fresh
# store, and prints the triage of three incidents. Usage: scripts/quickstart.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/install-deps.sh
echo "== building gpufault in $build (log: $build/quickstart-build.log)"
mkdir -p "$build"
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFAULT_WERROR=ON &&
       cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)" --target gpufault gpufaultd \
         gpufault_preload gpufault_preload_host gpufault_standin_fw; } > "$build/quickstart-build.log" 2>&1; then
  tail -n 30 "$build/quickstart-build.log"; exit 1
fi
db=$(mktemp -d)/gpufault.db
gf() { "$build/cli/gpufault" --db "$db" "$@"; }
echo; echo "== gpufault ingest examples/*.log tests/data/real/*.txt"
gf ingest -q examples/*.log tests/data/real/*.txt
gf query "SELECT (SELECT count(*) FROM sources) AS files, (SELECT count(*) FROM evidence) AS records, (SELECT count(*) FROM incidents) AS incidents, (SELECT count(*) FROM operands) AS operands, (SELECT count(*) FROM dispatches) AS dispatches"
incident_of() {  # the incident whose first record comes from a file ending in $1
  gf query --csv "SELECT i.id FROM incidents i JOIN evidence e ON e.id = i.first_evidence JOIN sources s ON s.id = e.source_id WHERE s.path LIKE '%$1' ORDER BY i.id LIMIT 1" | tail -n 1
}
for f in gfx1201-worked-example.log amdlog3-scatter-fault.log 012-llamabench-rocr-fault-plus-journalctl.txt; do
  id=$(incident_of "$f")
  echo; echo "== gpufault show $id    ($f)"
  gf show "$id"
done
echo
echo "The store is $db. Next:"
echo "  export PATH=\"$PWD/$build/cli:$PWD/$build/daemon:\$PATH\""
echo "  gpufault --db $db groups       # incidents grouped by signature"
echo "  gpufault --db $db faults       # each fault: 2 MiB alignment, nearest operand, last kernel"
echo "  gpufault --db $db incidents"
echo "  gpufault --db $db report $(incident_of gfx1201-worked-example.log) --format md"
