#!/usr/bin/env bash
# Installs the dependencies, builds gpufault, ingests the bundled real fault logs into a fresh
# store and prints the triage. Usage: scripts/quickstart.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
scripts/install-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUFAULT_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc 2>/dev/null || echo 2)"
db=$(mktemp -d)/gpufault.db
gf() { "$build/cli/gpufault" --db "$db" "$@"; }
echo; echo "== gpufault ingest (bundled real logs, store $db)"
gf ingest -q examples/*.log tests/data/real/*.txt
echo; echo "== gpufault incidents"
gf incidents
echo; echo "== gpufault faults"
gf faults
worked=$(gf query "SELECT i.id FROM incidents i JOIN evidence e ON e.id = i.first_evidence JOIN sources s ON s.id = e.source_id WHERE s.path LIKE '%gfx1201-worked-example%'" --csv | tail -n 1)
echo; echo "== gpufault show $worked   (the worked gfx1201 example)"
gf show "$worked"
echo; echo "Store kept at $db: try 'build/cli/gpufault --db $db report $worked'"
