#!/usr/bin/env python3
"""gpufaultd's `status` reply latency and a new fault line's commit latency while the daemon
re-correlates a large store (docs/performance.md "gpufaultd: correlation off the loop").

Usage: bench/status_during_correlation.py GPUFAULTD STORE [SECONDS]
STORE is copied (e.g. made with `gpufault --db STORE ingest` of many fault lines); the daemon
follows one log file; after 3 s one ROCr fault line is appended (its commit asks for a
re-correlation of every record), 2 s after its commit a second one. A client asks `status` every 50 ms throughout (timeout 60 s).
"""
import json, os, shutil, signal, socket, sqlite3, subprocess, sys, tempfile, threading, time

def status(path, timeout=60.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    s.sendall(b"status\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    return json.loads(data)

def count(db):
    c = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    n = c.execute("SELECT count(*) FROM evidence").fetchone()[0]
    c.close()
    return n

def main():
    daemon, store = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 30
    tmp = tempfile.mkdtemp(prefix="gpufault-bench-")
    db = os.path.join(tmp, "store.db")
    shutil.copy(store, db)
    for ext in ("-wal", "-shm"):
        if os.path.exists(store + ext):
            shutil.copy(store + ext, db + ext)
    os.mkdir(os.path.join(tmp, "logs"))
    log = os.path.join(tmp, "logs", "job.log")
    open(log, "w").close()
    sock = os.path.join(tmp, "ctl.sock")
    conf = os.path.join(tmp, "gpufaultd.conf")
    with open(conf, "w") as f:
        f.write(f'[store]\npath = "{db}"\n[kmsg]\nenabled = false\n[files]\nglobs = ["{tmp}/logs/*.log"]\n'
                f'poll_interval_ms = 100\n[control]\nsocket = "{sock}"\ngroup = ""\n')
    err = open(os.path.join(tmp, "stderr"), "w")
    p = subprocess.Popen([daemon, "--config", conf], stderr=err)
    t0 = time.monotonic()
    while not os.path.exists(sock):
        time.sleep(0.01)
    samples, stop = [], threading.Event()

    def poll():
        while not stop.is_set():
            t = time.monotonic()
            try:
                st = status(sock)
                w = st.get("worker", {})
                samples.append((t - t0, time.monotonic() - t, w.get("busy"), st.get("correlations")))
            except Exception as e:  # noqa: BLE001
                samples.append((t - t0, time.monotonic() - t, "error " + str(e), None))
            time.sleep(0.05)

    th = threading.Thread(target=poll)
    th.start()
    time.sleep(3)
    n = count(db)
    ta = time.monotonic()
    with open(log, "a") as f:
        f.write("Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x10000000000. "
                "Reason: Page not present or supervisor privilege.\n")
    while count(db) == n and time.monotonic() - ta < 120:
        time.sleep(0.005)
    commit = time.monotonic() - ta
    # A second line 2 s later, while the re-correlation that the first asked for runs.
    time.sleep(2)
    n = count(db)
    tb = time.monotonic()
    with open(log, "a") as f:
        f.write("Memory access fault by GPU node-1 (Agent handle: 0x1) on address 0x20000000000. "
                "Reason: Page not present or supervisor privilege.\n")
    while count(db) == n and time.monotonic() - tb < 120:
        time.sleep(0.005)
    commit2 = time.monotonic() - tb
    while time.monotonic() - t0 < seconds:
        time.sleep(0.1)
    stop.set()
    th.join()
    p.send_signal(signal.SIGTERM)
    ts = time.monotonic()
    rc = p.wait()
    lat = sorted(s[1] for s in samples)
    print(f"fault line appended at {ta - t0:.2f} s: committed {commit * 1000:.0f} ms later")
    print(f"second line appended at {tb - t0:.2f} s (during the re-correlation): committed "
          f"{commit2 * 1000:.0f} ms later")
    print(f"status: {len(samples)} replies, p50 {lat[len(lat) // 2] * 1000:.1f} ms, "
          f"max {lat[-1] * 1000:.1f} ms")
    worst = max(samples, key=lambda s: s[1])
    print(f"slowest status sent at {worst[0]:.2f} s, busy={worst[2]}, correlations={worst[3]}")
    busy = [s for s in samples if s[2] is True]
    if busy:
        print(f"replies while the worker was busy: {len(busy)}, max {max(s[1] for s in busy) * 1000:.1f} ms")
    print(f"SIGTERM -> exit {rc} in {time.monotonic() - ts:.2f} s")
    shutil.rmtree(tmp)

main()
