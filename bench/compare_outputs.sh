#!/bin/bash
# Everything an ingest stores and prints, as text to compare between two binaries
# (docs/performance.md, "Tenth round"): the ingest output (seconds masked), `events --json`,
# and the rows of sources (without the time of ingest), evidence, warnings, kernels,
# dispatch_counts, dispatches and operands, for the real fixtures ingested into one store and
# for each extra log into its own.
# usage: bench/compare_outputs.sh GPUFAULT OUTDIR [LOG...]
#        then: diff -r OUTDIR_of_one OUTDIR_of_the_other
set -euo pipefail
bin=$(realpath "$1")
out=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

dump() {  # STORE NAME
    local db=$1 name=$2
    "$bin" --db "$db" events --json >"$out/$name.events.jsonl"
    for q in \
        "sources:SELECT id, path, kind, size, offset, line, max_line, complete FROM sources ORDER BY id" \
        "evidence:SELECT * FROM evidence ORDER BY id" \
        "warnings:SELECT * FROM warnings ORDER BY id" \
        "kernels:SELECT * FROM kernels ORDER BY id" \
        "dispatch_counts:SELECT * FROM dispatch_counts ORDER BY source_id, pid, kernel_id" \
        "dispatches:SELECT * FROM dispatches ORDER BY id" \
        "operands:SELECT * FROM operands ORDER BY id"; do
        "$bin" --db "$db" query "${q#*:}" >"$out/$name.${q%%:*}.txt"
    done
}

mask() { sed -E 's/, [0-9]+\.[0-9]+ s$/, S s/; s/in [0-9]+\.[0-9]+ s/in S s/g'; }

(cd "$here/tests/data/real" && "$bin" --db "$work/real.db" ingest $(ls | grep -v '\.expected\.') 2>&1) |
    sed "s|$work|WORK|g" | mask >"$out/real.ingest.txt"
dump "$work/real.db" real
for log in "$@"; do
    name=$(basename "$log")
    "$bin" --db "$work/$name.db" ingest "$log" 2>&1 | sed "s|$work|WORK|g" | mask >"$out/$name.ingest.txt"
    dump "$work/$name.db" "$name"
done
