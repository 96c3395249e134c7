#!/usr/bin/env bash
# Rounds of `grep -c ShaderName` against `gpufault ingest` on one generated 2 GiB AMD_LOG_LEVEL=3
# log (docs/performance.md, "Session 12: wall time"): R rounds unpinned, then P rounds pinned to
# two cores; each round prints both wall times, their ratio, ingest's user time and peak RSS.
# DIR holds `gpufault` and `gen_amdlog` (and lib/ with their shared libraries when they are
# carried to another machine). usage: R=10 P=6 bench/ingest_rounds.sh DIR [SIZE_MIB]
set -euo pipefail
B=$(cd "${1:?usage: bench/ingest_rounds.sh DIR [SIZE_MIB]}" && pwd)
size=${2:-2048}
[ -d "$B/lib" ] && export LD_LIBRARY_PATH=$B/lib
R=${R:-6}
P=${P:-4}
timer=/usr/bin/time
[ -x "$B/time" ] && timer=$B/time  # GNU time carried along where the machine has none
w=$(mktemp -d /var/tmp/gpufault-rounds.XXXXXX)
trap 'rm -rf "$w"' EXIT
"$B/gen_amdlog" "$size" "$w/amd.log"
echo "lines $(wc -l < "$w/amd.log") nproc $(nproc) load $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$w/amd.log" > /dev/null
t() { local s e; s=$(date +%s.%N); "$@" > "$w/cmd.out"; e=$(date +%s.%N); awk -v a="$s" -v b="$e" 'BEGIN{printf "%.2f", b-a}'; }
round() {  # PIN-COMMAND-OR-EMPTY TAG
    local g s u m
    g=$(t $1 grep -c ShaderName "$w/amd.log")
    rm -f "$w"/db*
    "$timer" -f '%e %U %M' -o "$w/time" $1 "$B/gpufault" --db "$w/db" ingest "$w/amd.log" > "$w/out"
    read -r s u m < "$w/time"
    echo "$2 grep $g gpufault $s ratio $(awk -v a="$s" -v b="$g" 'BEGIN{printf "%.2f", a/b}') user $u rss_mib $((m / 1024))"
}
for i in $(seq 1 "$R"); do round "" "round$i"; done
for i in $(seq 1 "$P"); do round "taskset -c 0,1" "pinned$i"; done
cat "$w/out"
