#!/usr/bin/env python3
"""Writes N systemd-coredump journal entries in journalctl's export format (-o export) to PATH:
each a crash whose core was not kept (size limit), with a MESSAGE carrying systemd's
"Stack trace of thread" text (a binary field: it holds newlines), as journald attests them
(_UID=0, _COMM=systemd-coredum). Distinct pids and timestamps: N crashes, N sources.
usage: bench/gen_journal_export.py N PATH [THREADS] [FRAMES]"""
import struct
import sys

n, path = int(sys.argv[1]), sys.argv[2]
threads = int(sys.argv[3]) if len(sys.argv) > 3 else 2
frames = int(sys.argv[4]) if len(sys.argv) > 4 else 8
boot = "0123456789abcdef0123456789abcdef"
t0 = 1764000000000000


def field(out, name, value):
    b = value.encode()
    if b"\n" in b:
        out += name.encode() + b"\n" + struct.pack("<Q", len(b)) + b + b"\n"
    else:
        out += name.encode() + b"=" + b + b"\n"


with open(path, "wb") as f:
    for i in range(n):
        pid = 1000 + i
        ts = t0 + i * 1000000
        msg = [f"Process {pid} (python3) of user 1000 dumped core.", "",
               "Module libamdhip64.so.6 with build-id 00112233445566778899aabbccddeeff00112233"]
        for t in range(threads):
            msg.append(f"Stack trace of thread {pid + t}:")
            for k in range(frames):
                msg.append(f"#{k}  0x00007f00{k:08x} fn_{t}_{k} (libamdhip64.so.6 + 0x{k * 16 + 0x1000:x})")
            msg.append("")
        e = bytearray()
        field(e, "__CURSOR", f"s=0;i={i:x};b={boot};m={i:x};t={ts:x};x=0")
        field(e, "__REALTIME_TIMESTAMP", str(ts + 500))
        field(e, "_BOOT_ID", boot)
        field(e, "_UID", "0")
        field(e, "_COMM", "systemd-coredum")
        field(e, "SYSLOG_IDENTIFIER", "systemd-coredump")
        field(e, "MESSAGE_ID", "fc2e22bc6ee647b6b90729ab34a250b1")
        field(e, "COREDUMP_PID", str(pid))
        field(e, "COREDUMP_UID", "1000")
        field(e, "COREDUMP_SIGNAL", "11")
        field(e, "COREDUMP_TIMESTAMP", str(ts))
        field(e, "COREDUMP_COMM", "python3")
        field(e, "COREDUMP_EXE", "/usr/bin/python3.11")
        field(e, "MESSAGE", "\n".join(msg))
        f.write(bytes(e) + b"\n")
