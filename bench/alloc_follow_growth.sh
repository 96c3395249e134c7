#!/usr/bin/env bash
# gpufaultd following a growing allocation file (docs/performance.md "gpufaultd following a
# growing allocation file"): a shim-format file grows to MB megabytes in STEPS appends (8-frame
# stacks, a free after every second allocation); after each append the script waits until the
# daemon has stored every allocation, then reports the time that took, and at the end the
# daemon's peak RSS (VmHWM) and CPU time (user + system).
# Usage: bench/alloc_follow_growth.sh [GPUFAULTD] [MB] [STEPS]
set -euo pipefail
daemon=${1:-build/daemon/gpufaultd}
mb=${2:-100}
steps=${3:-10}
d=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$d"' EXIT
mkdir -p "$d/alloc" "$d/logs"
chmod 1733 "$d/alloc"
cat > "$d/gpufaultd.conf" <<CONF
[store]
path = "$d/g.db"
[kmsg]
enabled = false
[files]
globs = ["$d/logs/*.log"]
poll_interval_ms = 200
[allocations]
directory = "$d/alloc"
[control]
socket = "$d/ctl.sock"
group = ""
CONF
file="$d/alloc/gpufault-alloc.$$.log"
"$daemon" -c "$d/gpufaultd.conf" 2> "$d/daemon.err" &
pid=$!
sleep 1
python3 - "$file" "$mb" "$steps" "$d" "$$" <<'PY'
import os, sqlite3, sys, time
path, mb, steps, d, me = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
stack = ";".join(f"libtorch_cuda.so+0x{0x100000 + i * 0x1234:x}" for i in range(8))
per = mb * 1000000 // steps
n = 0
def rec(i):
    return (f"gpufault.alloc 1 alloc api=cudaMalloc ptr=0x{0x7f0000000000 + i * 0x200000:x} "
            f"size=2097152 mem=device device=0 rc=0 wall_us={1796033039216082 + i} "
            f"mono_us={51903521 + i} pid={me} tid={me} stack={stack}\n")
def free(i):
    return (f"gpufault.alloc 1 free api=cudaFree ptr=0x{0x7f0000000000 + i * 0x200000:x} size=0 "
            f"device=-1 rc=0 wall_us={1796033039216082 + i} mono_us={51903521 + i} pid={me} "
            f"tid={me} stack={stack}\n")
with open(path, "a") as f:
    f.write(f"gpufault.alloc 1 start pid={me} ppid=1 wall_us=1796033039216082 mono_us=51903521 exe=/usr/bin/python3\n")
db = None
total = 0.0
for s in range(steps):
    chunk = []
    size = 0
    while size < per:
        r = rec(n)
        if n % 2 == 1:
            r += free(n - 1)
        chunk.append(r)
        size += len(r)
        n += 1
    t0 = time.monotonic()
    with open(path, "a") as f:
        f.write("".join(chunk))
    while True:
        try:
            db = db or sqlite3.connect(f"file:{d}/g.db?mode=ro", uri=True, timeout=5)
            got = db.execute("SELECT count(*) FROM allocations").fetchone()[0]
        except sqlite3.Error:
            got = -1
        if got == n:
            break
        time.sleep(0.05)
    dt = time.monotonic() - t0
    total += dt
    print(f"step {s + 1}: file {os.path.getsize(path) / 1e6:.1f} MB, {n} allocations stored after {dt:.2f} s")
freed = db.execute("SELECT count(*) FROM allocations WHERE free_line IS NOT NULL").fetchone()[0]
print(f"all stored: {total:.2f} s in total, {freed} freed")
PY
cpu=$(awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat")
hwm=$(awk '/VmHWM/ {printf "%.1f MiB", $2 / 1024}' "/proc/$pid/status")
echo "gpufaultd: CPU $cpu s, peak RSS $hwm"
