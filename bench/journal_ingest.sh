#!/usr/bin/env bash
# Journal export ingest at growing sizes: generates N systemd-coredump entries (cores not kept,
# two-thread stack texts; bench/gen_journal_export.py) for each N given (default 1000 10000
# 100000), ingests each into a fresh store and prints wall and user seconds and peak memory.
# Linear ingest keeps seconds per 1,000 entries flat. usage: bench/journal_ingest.sh [N…]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
work=$(mktemp -d /var/tmp/gpufault-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000 10000 100000)
printf '%-8s %9s %9s %9s %10s\n' entries wall_s user_s s/1000 peak_MiB
for n in "${sizes[@]}"; do
    python3 bench/gen_journal_export.py "$n" "$work/j.export"
    rm -f "$work"/db*
    /usr/bin/time -f '%e %U %M' -o "$work/time" "$build/cli/gpufault" --db "$work/db" ingest -q \
        "$work/j.export" 2> "$work/err"
    read -r wall user kib < "$work/time"
    awk -v n="$n" -v w="$wall" -v u="$user" -v k="$kib" \
        'BEGIN{printf "%-8d %9.2f %9.2f %9.3f %10d\n", n, w, u, w*1000/n, k/1024}'
done
