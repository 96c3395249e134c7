#!/usr/bin/env python3
"""gpufaultd's SIGTERM → exit time under a fault flood (docs/performance.md "gpufaultd: SIGTERM
under a fault flood"): the daemon follows one log on a store of 600 000 ROCr fault records; 300 000
fault lines (distinct addresses) are appended at once; SIGTERM 1 s after the append; the time
until the process has exited (status 0 expected) is printed per run, with the phases the daemon
logged (`--stop-log` lines, if any) and what it had committed.

Usage: bench/sigterm_fault_flood.py GPUFAULTD GPUFAULT WORKDIR [RUNS=5] [DELAY_S=1]
WORKDIR keeps the 600 000-record store (base.db, made once with `gpufault ingest`) between calls.
"""
import os, shutil, signal, sqlite3, subprocess, sys, time

FAULT = ("Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x{:x}. "
         "Reason: Page not present or supervisor privilege.\n")

def faults(path, first, n):
    with open(path, "w") as f:
        f.write("".join(FAULT.format(0x7f0000000000 + (first + i) * 0x1000) for i in range(n)))

def count(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
    n = c.execute("SELECT count(*) FROM evidence").fetchone()[0]
    c.close()
    return n

def main():
    daemon, cli, work = sys.argv[1], sys.argv[2], sys.argv[3]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    delay = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0
    os.makedirs(work, exist_ok=True)
    base = os.path.join(work, "base.db")
    if not os.path.exists(base):
        log = os.path.join(work, "base.log")
        faults(log, 0, 600000)
        t = time.monotonic()
        subprocess.run([cli, "--db", base + ".tmp", "ingest", log], check=True,
                       stdout=subprocess.DEVNULL)
        os.rename(base + ".tmp", base)
        print(f"base store: {count(base)} records ({time.monotonic() - t:.1f} s)", flush=True)
    flood = os.path.join(work, "flood.txt")
    if not os.path.exists(flood):
        faults(flood, 1000000, 300000)
    data = open(flood).read()
    for run in range(runs):
        tmp = os.path.join(work, f"run{run}")
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.join(tmp, "logs"))
        db = os.path.join(tmp, "store.db")
        shutil.copy(base, db)
        log = os.path.join(tmp, "logs", "job.log")
        open(log, "w").close()
        sock = os.path.join(tmp, "ctl.sock")
        conf = os.path.join(tmp, "gpufaultd.conf")
        with open(conf, "w") as f:
            f.write(f'[store]\npath = "{db}"\n[kmsg]\nenabled = false\n[files]\n'
                    f'globs = ["{tmp}/logs/*.log"]\npoll_interval_ms = 100\n'
                    f'[control]\nsocket = "{sock}"\ngroup = ""\n')
        err = open(os.path.join(tmp, "stderr"), "w")
        p = subprocess.Popen([daemon, "--config", conf], stderr=err)
        while not os.path.exists(sock):
            time.sleep(0.01)
        time.sleep(1)
        with open(log, "a") as f:
            f.write(data)
        time.sleep(delay)
        t = time.monotonic()
        p.send_signal(signal.SIGTERM)
        rc = p.wait()
        took = time.monotonic() - t
        err.close()
        stored = count(db) - 600000
        print(f"run {run}: SIGTERM -> exit {took:.2f} s (status {rc}), {stored} of 300000 lines "
              f"committed", flush=True)
        shutil.copy(os.path.join(tmp, "stderr"), os.path.join(work, f"stderr{run}"))
        shutil.rmtree(tmp, ignore_errors=True)

if __name__ == "__main__":
    main()
