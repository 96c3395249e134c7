#!/usr/bin/env python3
"""gpufaultd when many small files matching its patterns appear at once (docs/performance.md
"Session 19: many new files at once"): the daemon follows logs/*.log (files.max_open = 8192) on
an empty store; FILES files of two lines each (a first line of its own, or the same first line
in all with --same-head, then one ROCr fault line) are written while the daemon is stopped
(SIGSTOP), so that they appear to it at once. Printed per run: the time from its SIGCONT to the
first record committed and to every record committed, the slowest `status` reply meanwhile
(asked every 100 ms, 30 s timeout) and the time from SIGTERM to the exit (status 0 expected):
sent when every record is stored, or DELAY_S after the SIGCONT with --sigterm-after DELAY_S.

Usage: bench/many_new_files.py GPUFAULTD WORKDIR [FILES=3000] [RUNS=1] [--same-head]
       [--sigterm-after DELAY_S] [--verbose]
"""
import os, resource, shutil, signal, socket, sqlite3, subprocess, sys, threading, time

FAULT = ("Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x{:x}. "
         "Reason: Page not present or supervisor privilege.\n")


def count(db):
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
        n = c.execute("SELECT count(*) FROM evidence").fetchone()[0]
        c.close()
        return n
    except sqlite3.Error:
        return 0


def status(sock, timeout):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(sock)
        s.sendall(b"status\n")
        while s.recv(1 << 20):
            pass
        return True
    except OSError:
        return False
    finally:
        s.close()


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 16384)), hard))


def run(daemon, tmp, files, same_head, sigterm_after, verbose):
    shutil.rmtree(tmp, ignore_errors=True)
    logs = os.path.join(tmp, "logs")
    os.makedirs(logs)
    db, sock = os.path.join(tmp, "store.db"), os.path.join(tmp, "ctl.sock")
    conf = os.path.join(tmp, "gpufaultd.conf")
    with open(conf, "w") as f:
        f.write(f'[store]\npath = "{db}"\n[kmsg]\nenabled = false\n[files]\n'
                f'globs = ["{logs}/*.log"]\npoll_interval_ms = 100\nmax_open = 8192\n'
                f'[control]\nsocket = "{sock}"\ngroup = ""\n[allocations]\ndirectory = ""\n')
    err = open(os.path.join(tmp, "stderr"), "w")
    p = subprocess.Popen([daemon, "--config", conf], stderr=err, preexec_fn=raise_nofile)
    while not os.path.exists(sock):
        time.sleep(0.01)
    time.sleep(1)
    slowest, replies, done = [0.0], [0], threading.Event()

    def ask():
        while not done.is_set():
            t = time.monotonic()
            if status(sock, 30):
                replies[0] += 1
            slowest[0] = max(slowest[0], time.monotonic() - t)
            if verbose:
                print(f"  status at {t - t0:.2f} s: {time.monotonic() - t:.3f} s", flush=True)
            done.wait(0.1)

    p.send_signal(signal.SIGSTOP)  # the files appear at once to the daemon
    t = time.monotonic()
    for i in range(files):
        head = "=== job started ===\n" if same_head else f"job {i} started on node {i % 64}\n"
        with open(os.path.join(logs, f"job{i:05}.log"), "w") as f:
            f.write(head + FAULT.format(0x7f0000000000 + i * 0x200000))
    written = time.monotonic() - t
    t0 = time.monotonic()
    p.send_signal(signal.SIGCONT)
    asker = threading.Thread(target=ask)
    asker.start()
    first = every = None
    while every is None:
        n = count(db)
        now = time.monotonic() - t0
        if n > 0 and first is None:
            first = now
        if n >= files:
            every = now
        if sigterm_after is not None and now >= sigterm_after:
            break
        time.sleep(0.01)
    done.set()  # (a status request in flight is not waited for)
    t = time.monotonic()
    p.send_signal(signal.SIGTERM)
    rc = p.wait()
    took = time.monotonic() - t
    asker.join()
    err.close()
    stored = count(db)
    fmt = lambda x: "-" if x is None else f"{x:.2f} s"
    print(f"{files} files (written in {written:.2f} s): first record {fmt(first)}, all "
          f"{fmt(every)}; status: {replies[0]} replies, slowest {slowest[0]:.2f} s; "
          f"SIGTERM -> exit {took:.2f} s (status {rc}), {stored} records stored", flush=True)


def main():
    import argparse
    a = argparse.ArgumentParser()
    a.add_argument("gpufaultd")
    a.add_argument("workdir")
    a.add_argument("files", nargs="?", type=int, default=3000)
    a.add_argument("runs", nargs="?", type=int, default=1)
    a.add_argument("--same-head", action="store_true")
    a.add_argument("--sigterm-after", type=float)
    a.add_argument("--verbose", action="store_true", help="each status reply's time")
    o = a.parse_args()
    for r in range(o.runs):
        run(o.gpufaultd, os.path.join(o.workdir, f"run{r}"), o.files, o.same_head,
            o.sigterm_after, o.verbose)


if __name__ == "__main__":
    main()
