#!/usr/bin/env bash
# Whole-process ingest benchmark: generates an AMD_LOG_LEVEL=3 log of SIZE_MIB (default 2048),
# warms the page cache, then times in one run `grep -c ShaderName`, `wc -l` and
# `gpufault ingest` on the same file and prints the ratios and gpufault's peak memory.
# usage: bench/ingest_vs_grep.sh [SIZE_MIB] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-2048}
build=${2:-build}
work=$(mktemp -d /var/tmp/gpufault-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
log=$work/amd.log
"$build/bench/gen_amdlog" "$size" "$log"
cat "$log" > /dev/null  # warm cache
# Output goes to a file: GNU grep stops at the first match when its output is /dev/null.
t() { local s e; s=$(date +%s.%N); "$@" > "$work/cmd.out"; e=$(date +%s.%N); awk -v a="$s" -v b="$e" 'BEGIN{printf "%.2f", b-a}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
grep_s=$(t grep -c ShaderName "$log")
shader_lines=$(cat "$work/cmd.out")
wc_s=$(t wc -l "$log")
lines=$(wc -l < "$log")
/usr/bin/time -f '%e %M' -o "$work/time" "$build/cli/gpufault" --db "$work/db" ingest "$log" > "$work/out" &
# Peak anonymous and file-backed resident memory, sampled from /proc every 10 ms (the issue's
# goal is anonymous memory; mapped input pages would be file-backed).
anon_kib=0 file_kib=0
while pid=$(pgrep -n -f "gpufault --db $work/db ingest") && [[ -r /proc/$pid/status ]]; do
  read -r a f < <(awk '/^RssAnon:/{a=$2} /^RssFile:/{f=$2} END{print a+0, f+0}' "/proc/$pid/status" 2>/dev/null || echo "0 0")
  (( a > anon_kib )) && anon_kib=$a
  (( f > file_kib )) && file_kib=$f
  sleep 0.01
done
wait
read -r ingest_s peak_kib < "$work/time"
echo "file            $(du -m "$log" | cut -f1) MiB, $lines lines"
echo "grep -c         ${grep_s} s   ($shader_lines ShaderName lines)"
echo "wc -l           ${wc_s} s"
echo "gpufault ingest ${ingest_s} s   ($(ratio "$ingest_s" "$grep_s")x grep, $(ratio "$ingest_s" "$wc_s")x wc -l)"
echo "peak RSS        $((peak_kib / 1024)) MiB (read(2) buffers, no mapped input)"
echo "peak RssAnon    $((anon_kib / 1024)) MiB, RssFile $((file_kib / 1024)) MiB (sampled every 10 ms)"
echo "store           $(du -m "$work/db" | cut -f1) MiB"
cat "$work/out"
