#!/usr/bin/env bash
# Issue 4's speed check: `gpufault ingest CORE` (unwound, symbolized, stored; a fresh --db each
# time) against `eu-stack -s -m --core CORE -e EXE` and `gdb -batch -ex 'thread apply all bt'`
# on the same core, in one run, warm cache: wall and CPU seconds and peak RSS (/usr/bin/time
# -f '%e %M %U %S'; a command's peak includes its waited-for children, so gpufault's unwinding
# child counts), best of 5 each. Two cores: the fixture core of tests/data/cores (1 thread) and a
# large one made here by bench/big_core (NTHREADS threads parked four libraries deep in NLIBS
# tiny dlopen()ed libraries built here with -g, then abort()). A second eu-stack row leaves
# /usr/lib/debug out of its search path: with libc6-dbg installed, eu-stack -s spends most of
# its time inflating libc's compressed DWARF for libc's source lines, which gpufault does not
# look up (collectors/coredump/unwind.cpp); that row is the fair one on such a machine.
# usage: bench/core_vs_eustack.sh [--keep|--core-only] [BUILD_DIR] [NLIBS] [NTHREADS]
#        (defaults: build 120 64)
# The work directory (a mkdtemp under /var/tmp) is removed on exit, the large core with it;
# --keep keeps it and prints the core's and its executable's paths at the end (delete the
# directory yourself); --core-only makes the large core, keeps it, prints the paths and runs no
# benchmark (it needs no eu-stack, gdb or GNU time). Otherwise needs eu-stack (elfutils), gdb
# and GNU time (scripts/install-deps.sh). Always a kernel.core_pattern that writes `core` or
# `core.PID` into the cwd.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=0 core_only=0
case ${1:-} in
    --keep) keep=1; shift ;;
    --core-only) keep=1; core_only=1; shift ;;
    -*) echo "usage: bench/core_vs_eustack.sh [--keep|--core-only] [BUILD_DIR] [NLIBS] [NTHREADS]" >&2
        exit 2 ;;
esac
build=${1:-build}
nlibs=${2:-120}
nthreads=${3:-64}
gpufault=$build/cli/gpufault
tools=("$gpufault" "$build/bench/big_core")
[ $core_only = 1 ] || tools+=(eu-stack gdb /usr/bin/time)
for tool in "${tools[@]}"; do
    command -v "$tool" > /dev/null || { echo "core_vs_eustack: $tool is missing" >&2; exit 2; }
done
work=$(mktemp -d /var/tmp/gpufault-corebench.XXXXXX)
if [ $keep = 0 ]; then
    trap 'rm -rf "$work"' EXIT
fi

# The large core: tiny libraries, each a two-frame hop to the next (bench_next in big_core).
mkdir -p "$work/big"
for i in $(seq 0 $((nlibs - 1))); do
    cat > "$work/big/lib$i.c" << EOF
int bench_next(int depth, void* arg);
__attribute__((noinline)) static int bench_step_$i(int depth, void* arg) {
    return bench_next(depth, arg) + $i;
}
int bench_enter_$i(int depth, void* arg) { return bench_step_$i(depth, arg) + 1; }
EOF
    gcc -g -O0 -fPIC -shared -Wl,--build-id -o "$work/big/libbench_$i.so" "$work/big/lib$i.c"
done
cp "$build/bench/big_core" "$work/big/"
(cd "$work/big" && ./big_core "$work/big" "$nlibs" "$nthreads" || true) 2> /dev/null
bigcore=$(ls "$work/big"/core* 2> /dev/null | head -n 1 || true)
if [ -z "$bigcore" ]; then
    echo "core_vs_eustack: big_core wrote no core in $work/big (kernel.core_pattern is" \
        "'$(cat /proc/sys/kernel/core_pattern)', not 'core')" >&2
    exit 2
fi
kept() {
    echo "kept: core $bigcore, executable $work/big/big_core (rm -r $work when done)"
}
if [ $core_only = 1 ]; then
    kept
    exit 0
fi

# Best of 5: "wall peak_kib cpu" (the lowest of each; cpu = user + system seconds of the
# command and its waited-for children, less disturbed than wall on a shared machine).
best() {
    local bw=999999 bm=999999999 bc=999999 w m u sy
    for _ in 1 2 3 4 5; do
        rm -f "$work/db" "$work/db-wal" "$work/db-shm"
        /usr/bin/time -f '%e %M %U %S' -o "$work/time" "$@" > "$work/cmd.out" 2> "$work/cmd.err" ||
            true
        read -r w m u sy < <(tail -n 1 "$work/time")
        bw=$(awk -v x="$w" -v y="$bw" 'BEGIN{print (x < y) ? x : y}')
        bc=$(awk -v x="$u" -v s="$sy" -v y="$bc" 'BEGIN{c = x + s; print (c < y) ? c : y}')
        bm=$((m < bm ? m : bm))
    done
    echo "$bw $bm $bc"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (b == 0) print "inf"; else printf "%.2f", a/b}'; }
row() {  # label, "wall kib cpu" of it, "wall kib cpu" of eu-stack, what
    local w m c ew em ec
    read -r w m c <<< "$2"
    read -r ew em ec <<< "$3"
    printf '  %-15s wall %5.2f s (%4sx)  cpu %5.2f s (%4sx)  peak RSS %5.1f MiB (%4sx)  %s\n' \
        "$1" "$w" "$(ratio "$w" "$ew")" "$c" "$(ratio "$c" "$ec")" \
        "$(awk -v k="$m" 'BEGIN{print k/1024}')" "$(ratio "$m" "$em")" "$4"
}
# One core: CORE EXE [DEBUGDIR LIBDIR]: DEBUGDIR (a .build-id tree) goes to eu-stack's and
# gpufault's --debuginfo-path, LIBDIR to gdb's solib-search-path (the core's recorded paths are
# gone for the fixture).
bench() {
    local core=$1 exe=$2 dbg=${3:-} libdir=${4:-}
    local euargs=(--debuginfo-path=":.debug:/usr/lib/debug") gfargs=() gdbargs=()
    local eunodbg=(--debuginfo-path=":.debug")
    if [ -n "$dbg" ]; then
        euargs=(--debuginfo-path="$PWD/$dbg:.debug:/usr/lib/debug")
        eunodbg=(--debuginfo-path="$PWD/$dbg:.debug")
        gfargs=(--debuginfo-path "$dbg")
        gdbargs=(-ex "set solib-search-path $libdir")
    fi
    cat "$core" "$exe" > /dev/null  # warm cache
    local eu eun gdbt ing frames summary
    eu=$(best eu-stack -s -m "${euargs[@]}" --core "$core" -e "$exe")
    frames=$(grep -c '^#' "$work/cmd.out" || true)
    eun=$(best eu-stack -s -m "${eunodbg[@]}" --core "$core" -e "$exe")
    gdbt=$(best gdb -batch -nx -ex 'set debuginfod enabled off' "${gdbargs[@]}" \
        -ex 'thread apply all bt' "$exe" "$core")
    ing=$(best "$gpufault" --db "$work/db" ingest --exe "$exe" "${gfargs[@]}" "$core")
    summary=$(head -n 1 "$work/cmd.out")
    echo "$(basename "$core"): $(stat -c %s "$core") bytes ($(du -k "$core" | cut -f1) KiB on" \
        "disk), $frames frames from eu-stack"
    echo "  gpufault: $summary"
    row "eu-stack -s -m" "$eu" "$eu" "(1.00x = the goal's yardstick)"
    row " without dbg" "$eun" "$eu" "eu-stack not searching /usr/lib/debug (no libc DWARF)"
    row "gdb -batch bt" "$gdbt" "$eu" "thread apply all bt"
    row "gpufault ingest" "$ing" "$eu" "unwound, symbolized, stored in a fresh --db"
}
echo "load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; best of 5; (Nx) = of eu-stack's"
echo "$(eu-stack --version | head -n 1), $(gdb --version | head -n 1)"
bench tests/data/cores/core tests/data/cores/crashmain tests/data/cores/buildid tests/data/cores
bench "$bigcore" "$work/big/big_core"
[ $keep = 0 ] || kept
