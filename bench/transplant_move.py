#!/usr/bin/env python3
"""bench/transplant_move.py BACKEND N — the time to move N idle keep-alive
connections from weir-demo's active engine to its standby (`--adaptive`,
docs/transplant.md): bench/idle holds N connections that each served one
GET, SIGWINCH switches, and SIGHUP is polled until the new active engine
holds all N. The figure includes the polling (each SIGHUP prints the whole
metrics block), so it is an upper bound. Run from the repository root after
`make`: python3 bench/transplant_move.py epoll 10000
"""
import re
import signal
import subprocess
import sys
import time


def metrics(demo):
    demo.send_signal(signal.SIGHUP)
    out = {}
    for line in demo.stdout:
        if line.startswith("metrics end"):
            return out
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    raise SystemExit("weir-demo exited")


def main():
    backend, n = sys.argv[1], int(sys.argv[2])
    demo = subprocess.Popen(["build/bin/weir-demo", "--addr", "127.0.0.1:0", "--backend", backend, "--workers", "1",
                             "--adaptive", "--idle-timeout-ms", "600000"], stdout=subprocess.PIPE, text=True)
    port = None
    for line in demo.stdout:
        m = re.search(r"listening on .*:(\d+)", line)
        if m:
            port = m.group(1)
            break
    idle = subprocess.Popen(["build/bench/idle", "127.0.0.1", port, str(n)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    for line in idle.stdout:
        if line.startswith("ready"):
            break
    t0 = time.monotonic()
    demo.send_signal(signal.SIGWINCH)
    while True:
        m = metrics(demo)
        if m.get("adaptive.active") != backend and int(m.get("connections_open", 0)) >= n:
            break
        if time.monotonic() - t0 > 30:
            raise SystemExit(f"not moved in 30 s: {m}")
    ms = (time.monotonic() - t0) * 1000
    print(f"{backend} -> {m.get('adaptive.active')}: {n} idle connections moved in {ms:.1f} ms; ledger of the "
          f"engine they left: detached {m.get('standby.transplant_detached')}, adopted "
          f"{m.get('standby.transplant_adopted')}, refused {m.get('standby.transplant_refused')}, in flight "
          f"{m.get('standby.transplant_in_flight')}")
    idle.stdin.close()
    idle.wait()
    demo.terminate()
    demo.wait()


if __name__ == "__main__":
    main()
