#!/usr/bin/env bash
# Issue 5's speed check: `gpufault codeobj` on Debian's librocsparse.so.0.1 (package
# librocsparse0, 1.31 GB, 111 offload bundles) against the grep pipeline people used, in one
# run, warm cache; then its per-target entry counts against roc-obj-ls's (the tool when it is
# installed, else the listing kept in ../shared/fixtures/binaries/logs/).
# usage: bench/codeobj_vs_grep.sh [BUILD_DIR] [FILE]
# Without FILE it fetches the package with `apt-get download` (no install) into a temporary
# directory; when that fails it says so and uses the largest fat binary of tests/data.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
file=${2:-}
work=$(mktemp -d /var/tmp/gpufault-codeobj.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -z "$file" ]; then
    if (cd "$work" && apt-get download librocsparse0 > "$work/apt.log" 2>&1 &&
        dpkg-deb -x librocsparse0_*.deb x); then
        file=$(find "$work/x" -name 'librocsparse.so.0.1' | head -n 1)
        echo "package         $(basename "$work"/librocsparse0_*.deb)"
    else
        echo "apt-get download librocsparse0 failed ($(tail -n 1 "$work/apt.log")):"
        echo "benchmarking the largest fat binary of tests/data instead"
        file=$(ls -S tests/data/binaries/*/* | head -n 1)
    fi
fi
cat "$file" > /dev/null  # warm cache
# Best of 5: "wall cpu" in seconds (cpu = user + system of the command and its children, less
# disturbed than wall time on a shared machine); output to a file.
best() {
    local bw=999 bc=999 w u sy
    for _ in 1 2 3 4 5; do
        { TIMEFORMAT='%3R %3U %3S'; time "$@" > "$work/cmd.out" 2> /dev/null || true; } 2> "$work/time"
        read -r w u sy < <(tail -n 1 "$work/time")
        bw=$(awk -v x="$w" -v y="$bw" 'BEGIN{print (x < y) ? x : y}')
        bc=$(awk -v x="$u" -v s="$sy" -v y="$bc" 'BEGIN{c = x + s; print (c < y) ? c : y}')
    done
    echo "$bw $bc"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (b == 0) print "inf"; else printf "%.1f", a/b}'; }
line() {  # label, "wall cpu" of it, "wall cpu" of grep, what
    local w c gw gc
    read -r w c <<< "$2"
    read -r gw gc <<< "$3"
    printf '%-18s wall %6.3f s (%5sx)  cpu %6.3f s (%5sx)  %s\n' "$1" "$w" "$(ratio "$gw" "$w")" \
        "$c" "$(ratio "$gc" "$c")" "$4"
}
grep_t=$(best sh -c "grep -a -o -E 'hip[v0-9]*-amdgcn-amd-amdhsa--gfx[0-9a-z]+' '$file' | sort | uniq -c")
list_t=$(best "$build/cli/gpufault" codeobj --list "$file")
cp "$work/cmd.out" "$work/list.out"
json_t=$(best "$build/cli/gpufault" codeobj --list --json "$file")
pass_t=$(best "$build/cli/gpufault" codeobj --device gfx90a "$file")
fail_t=$(best "$build/cli/gpufault" codeobj --device gfx1100 "$file")
echo "file               $file, $(du -m "$file" | cut -f1) MiB, $(head -n 1 "$work/list.out" | sed 's/.*: //')"
echo "load average       $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; best of 5; (Nx) = how many times faster than grep"
line "grep pipeline" "$grep_t" "$grep_t" "grep -a -o -E … | sort | uniq -c"
line "codeobj --list" "$list_t" "$grep_t" "targets per bundle, headers checked"
line "--list --json" "$json_t" "$grep_t" "plus every code object's kernel names"
line "--device gfx90a" "$pass_t" "$grep_t" "a check that passes"
line "--device gfx1100" "$fail_t" "$grep_t" "a check naming the kernels of the 111 bundles lacking it"
# Entry IDs per target as codeobj lists them, and as roc-obj-ls does.
awk '/^    [a-z]/ {print $1}' "$work/list.out" | sort | uniq -c > "$work/ours"
listing=../shared/fixtures/binaries/logs/roc-obj-ls_librocsparse.txt
if command -v roc-obj-ls > /dev/null; then
    roc-obj-ls "$file" | awk '{print $2}' | sort | uniq -c > "$work/theirs"
    from="roc-obj-ls"
elif [ -f "$listing" ] && [ "$(basename "$file")" = librocsparse.so.0.1 ]; then
    awk '{print $2}' "$listing" | sort | uniq -c > "$work/theirs"
    from="$listing (roc-obj-ls is not installed)"
else
    echo "per-target counts: roc-obj-ls not installed and no kept listing for this file"
    cat "$work/ours"
    exit 0
fi
if diff -u "$work/theirs" "$work/ours" > "$work/diff"; then
    echo "per-target counts match $from:"
    cat "$work/ours"
else
    echo "per-target counts DIFFER from $from:"
    cat "$work/diff"
    exit 1
fi
