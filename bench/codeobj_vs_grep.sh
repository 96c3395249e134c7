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
# Best of 5 wall times, in seconds; output to a file.
best() {
    local b=999 s e d
    for _ in 1 2 3 4 5; do
        s=$(date +%s.%N); "$@" > "$work/cmd.out"; e=$(date +%s.%N)
        d=$(awk -v a="$s" -v b="$e" 'BEGIN{printf "%.4f", b-a}')
        b=$(awk -v x="$d" -v y="$b" 'BEGIN{print (x < y) ? x : y}')
    done
    echo "$b"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.1f", a/b}'; }
grep_pipeline() {
    grep -a -o -E "hip[v0-9]*-amdgcn-amd-amdhsa--gfx[0-9a-z]+" "$file" | sort | uniq -c
}
grep_s=$(best grep_pipeline)
list_s=$(best "$build/cli/gpufault" codeobj --list "$file")
cp "$work/cmd.out" "$work/list.out"
json_s=$(best "$build/cli/gpufault" codeobj --list --json "$file")
pass_s=$(best "$build/cli/gpufault" codeobj --device gfx90a "$file" || true)
fail_s=$(best "$build/cli/gpufault" codeobj --device gfx1100 "$file" || true)
echo "file            $file, $(du -m "$file" | cut -f1) MiB, $(head -n 1 "$work/list.out" | sed 's/.*: //')"
echo "grep pipeline   ${grep_s} s"
echo "codeobj --list  ${list_s} s   ($(ratio "$grep_s" "$list_s")x faster: targets per bundle, headers checked)"
echo "  --list --json     ${json_s} s   ($(ratio "$grep_s" "$json_s")x: plus every code object's kernel names)"
echo "  --device gfx90a   ${pass_s} s   ($(ratio "$grep_s" "$pass_s")x: a check that passes)"
echo "  --device gfx1100  ${fail_s} s   ($(ratio "$grep_s" "$fail_s")x: a check naming the kernels of every bundle lacking it)"
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
