#!/usr/bin/env python3
"""bench/goab.py — A/B alternated rounds of two (or more) servers (issue 29).

On a shared machine one run of A then one of B measures the neighbours as
much as the servers; alternating them round after round and comparing the
medians (and each round's B/A ratio) does not. Each round starts every
server fresh, warms it 1 s, then counts DURATION s of keep-alive
`wrk -t1 -c64`: server CPU from /proc/PID/stat over the requests wrk counted.

Usage: bench/goab.py ROUNDS 'NAME=CMD ...' 'NAME=CMD ...' [...]
  e.g. bench/goab.py 4 'old=/tmp/hello-old --api native --backend io_uring --workers 1' \
                       'new=/tmp/hello-new --api native --backend io_uring --workers 1'
Every CMD must print "listening on HOST:PORT" and is given --addr 127.0.0.1:0.
Environment: AB_DURATION (s, default 4), AB_ENV_<NAME>=K=V,K=V for one server.
Loopback only; bounded (ROUNDS x servers x (DURATION + 2) s).
"""
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time

DURATION = int(os.environ.get("AB_DURATION", "4"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from goprofile import cpu_s, wrk  # noqa: E402  (the same /proc reading and wrk -t1 -c64 run)


def one(name, cmd):
    env = dict(os.environ)
    for kv in filter(None, os.environ.get(f"AB_ENV_{name}", "").split(",")):
        k, v = kv.split("=", 1)
        env[k] = v
    p = subprocess.Popen(shlex.split(cmd) + ["--addr", "127.0.0.1:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, env=env)
    try:
        m = re.search(r"listening on (\S+)", p.stdout.readline())
        if not m:
            raise RuntimeError(f"{cmd}: no 'listening on' line")
        url = f"http://{m.group(1)}/"
        wrk(url, 1)
        c0 = cpu_s(p.pid)
        n = wrk(url, DURATION)
        c1 = cpu_s(p.pid)
        return (c1 - c0) * 1e6 / max(n, 1), n / DURATION
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main():
    rounds = int(sys.argv[1])
    servers = [a.split("=", 1) for a in sys.argv[2:]]
    res = {name: [] for name, _ in servers}
    for r in range(rounds):
        order = servers if r % 2 == 0 else servers[::-1]  # alternate who goes first
        for name, cmd in order:
            res[name].append(one(name, cmd))
        print(f"round {r + 1}: " + "  ".join(f"{n} {res[n][-1][0]:.2f} us/req {res[n][-1][1]:.0f} req/s"
                                             for n, _ in servers), flush=True)
    base = servers[0][0]
    for name, _ in servers:
        us = [x[0] for x in res[name]]
        ratios = [a[0] / b[0] for a, b in zip(res[name], res[base])]
        print(f"{name}: median {statistics.median(us):.2f} us/req (min {min(us):.2f} max {max(us):.2f}), "
              f"req/s {statistics.median([x[1] for x in res[name]]):.0f}, "
              f"per-round ratio to {base}: median {statistics.median(ratios):.3f} "
              f"[{', '.join(f'{x:.3f}' for x in ratios)}]", flush=True)


if __name__ == "__main__":
    main()
