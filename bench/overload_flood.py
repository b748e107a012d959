#!/usr/bin/env python3
"""A sustained flood of slow requests on a multi-worker weir-demo, with the
overload manager and without it (issue 32; docs/reliability.md, "Overload").

    python3 bench/overload_flood.py [--build build] [--backend epoll|uring]
        [--workers 2] [--conns 256] [--seconds 10] [--slow-ms 20]
        [--defer-threads 4] [--inflight 16] [--rounds 1] [--md FILE]

(--md writes docs/benchmarks.md's "Overload" section; scripts/run-bench's
part "overload" runs it on both backends.)

The server: weir-demo --mode deferred --app hello, its pool of
--defer-threads threads answering GET /slow?ms=N after sleeping N ms (a
handler waiting on a database), so it serves at most threads x 1000/N
requests a second whatever arrives. The flood: wrk -t2 -c CONNS on
/slow for SECONDS. Beside it a probe, as a new client would: every 50 ms it
opens a connection, sends one /slow request and times the answer from the
moment its request was written (the earliest an answer could have been sent),
recording the status, and every 50 ms one request on a connection
accepted before the flood (its head begun then, finished now: a client the
server already holds; --header-timeout-ms 60000 keeps the begun heads open
through the flood in both arms). After the flood the probe asks for /fast until one is
answered 200: the time from the flood's end to that answer is the recovery.

Arms, alternated per round:
- manager: --overload inflight=INFLIGHT (per worker): past the watermark new
  requests are answered 503 + Retry-After at once;
- none: the manager off (weir's default): every request queues for the pool.
Printed per arm: wrk's 2xx and non-2xx rates, the probe's status counts and
its latency percentiles per status, the recovery, and the server's
overload_* metrics (SIGHUP). Loopback only; every run bounded in time.
"""
import argparse
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uring  # noqa: E402  (bench/uring.py: the SIGHUP metrics reader)
from switch_dip import stop_demo  # noqa: E402  (SIGTERM, then a kill if the demo does not end)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def start(a, arm):
    cmd = [os.path.join(a.build, "bin", "weir-demo"), "--addr", "127.0.0.1:0", "--backend", a.backend,
           "--workers", str(a.workers), "--mode", "deferred", "--defer-threads", str(a.defer_threads),
           "--app", "hello", "--header-timeout-ms", "60000"]
    if arm == "manager":
        cmd += ["--overload", "inflight=%d" % a.inflight]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = []
    port = None
    end = time.monotonic() + 10
    while time.monotonic() < end:
        line = p.stdout.readline()
        if not line:
            break
        out.append(line)
        m = re.search(r"^listening on .*:(\d+)$", line)
        if m:
            port = int(m.group(1))
            break
    if port is None:
        p.kill()
        sys.exit("weir-demo printed no 'listening on' line: %s" % "".join(out))
    return p, port, uring.Metrics(p)


def answer_of(s, t0):
    """(status, seconds from t0 to the answer's status line) or (None, error)."""
    got = b""
    while b"\r\n" not in got:
        d = s.recv(4096)
        if not d:
            return None, "closed without an answer"
        got += d
    return int(got.split(b" ", 2)[1]), time.monotonic() - t0


def one(port, path, timeout=30.0):
    """A new client's one request: (status, seconds from its write to the answer) or (None, error)."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    except OSError as e:
        return None, str(e)
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
        return answer_of(s, time.monotonic())
    except OSError as e:
        return None, str(e)
    finally:
        s.close()


def opened(port, path, n):
    """n connections accepted before the flood, each with its request's head begun (so TCP_DEFER_ACCEPT
    lets it through and the server holds it as a request in progress, owed an answer)."""
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"GET " + path + b" HTTP/1.1\r\nHost: b\r\n")
        out.append(s)
    return out


def finish(s):
    """Ends an opened connection's head: (status, seconds from that write to the answer)."""
    try:
        s.sendall(b"Connection: close\r\n\r\n")
        return answer_of(s, time.monotonic())
    except OSError as e:
        return None, str(e)
    finally:
        s.close()


def pct(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def wrk(a, port):
    r = subprocess.run(["wrk", "-t2", "-c%d" % a.conns, "-d%ds" % a.seconds, "--timeout", "30s",
                        "http://127.0.0.1:%d/slow?ms=%d" % (port, a.slow_ms)],
                       capture_output=True, text=True, timeout=a.seconds + 60)
    total = int(re.search(r"(\d+) requests in", r.stdout).group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", r.stdout)
    non2xx = int(m.group(1)) if m else 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", r.stdout)
    errors = sum(int(x) for x in m.groups()) if m else 0
    return total, non2xx, errors


def overload_metrics(metrics):
    """The overload counters of one SIGHUP ({} when the demo does not answer)."""
    snap = metrics.snapshot() or {}
    return {k: v for k, v in snap.items() if k.startswith("overload_") or k in ("closes.overload", "requests")}


def arm_run(a, arm):
    p, port, metrics = start(a, arm)
    slow = b"/slow?ms=%d" % a.slow_ms
    nprobe = int((a.seconds - 2) / 0.05)
    pre = opened(port, slow, nprobe)
    fresh, held = [], []
    lock = threading.Lock()

    def record(into, r):
        with lock:
            into.append(r)

    try:
        w = {}
        th = threading.Thread(target=lambda: w.update(r=wrk(a, port)))
        th.start()
        time.sleep(1.0)  # the flood established before the probes start
        probes = []
        for i in range(nprobe):  # one of each kind every 50 ms, each on its own thread
            t = time.monotonic()
            probes.append(threading.Thread(target=lambda: record(fresh, one(port, slow))))
            probes.append(threading.Thread(target=lambda c=pre[i]: record(held, finish(c))))
            probes[-2].start()
            probes[-1].start()
            time.sleep(max(0.0, 0.05 - (time.monotonic() - t)))
        th.join()
        flood_end = time.monotonic()
        recovery = None
        while time.monotonic() - flood_end < 60:
            st, _ = one(port, b"/fast")
            if st == 200:
                recovery = time.monotonic() - flood_end
                break
            time.sleep(0.01)
        for t in probes:
            t.join()
        m = overload_metrics(metrics)
        # The flood's tail (wrk's last requests, queued for the pool or in the
        # kernel's queue when it closed) is still served: the level must come
        # back to 0 once it is, or a paused accept would strand new clients.
        level0 = None
        while time.monotonic() - flood_end < 60:
            if overload_metrics(metrics).get("overload_level") == 0:
                level0 = time.monotonic() - flood_end
                break
            time.sleep(0.2)
        after = one(port, b"/fast")
    finally:
        stop_demo(p)
    total, non2xx, errors = w["r"]
    return dict(arm=arm, total=total, non2xx=non2xx, errors=errors, fresh=split(fresh), held=split(held),
                recovery=recovery, metrics=m, level0=level0, after=after)


def split(rs):
    by, failed = {}, []
    for st, v in rs:
        if st is None:
            failed.append(v)
        else:
            by.setdefault(st, []).append(v * 1000)
    return dict(n=len(rs), by=by, failed=failed)


def show(a, r):
    s = a.seconds
    print("%-8s wrk: %7.0f answers/s (2xx %6.0f/s, non-2xx %7.0f/s), socket errors %d" %
          (r["arm"], r["total"] / s, (r["total"] - r["non2xx"]) / s, r["non2xx"] / s, r["errors"]))
    for kind, what in (("held", "an accepted connection's request"), ("fresh", "a new client's request")):
        pr = r[kind]
        for st in sorted(pr["by"]):
            xs = pr["by"][st]
            print("         %s -> %d: %4d of %d, ms: p50 %.1f  p99 %.1f  max %.1f" %
                  (what, st, len(xs), pr["n"], pct(xs, 0.5), pct(xs, 0.99), max(xs)))
        if pr["failed"]:
            print("         %s failed: %d (%s)" % (what, len(pr["failed"]), pr["failed"][0]))
    rec = "%.1f ms" % (r["recovery"] * 1000) if r["recovery"] is not None else "none in 60 s"
    print("         recovery (flood end to a 200 on /fast): %s" % rec)
    l0 = "%.1f s" % r["level0"] if r["level0"] is not None else "not in 60 s"
    st, v = r["after"]
    print("         level back to 0 after the flood's end: %s; then a new client's /fast: %s" %
          (l0, "%d in %.1f ms" % (st, v * 1000) if st else "failed (%s)" % v))
    if r["metrics"]:
        print("         " + ", ".join("%s %s" % kv for kv in sorted(r["metrics"].items())))


def row(backend, r, seconds):
    def lat(pr, st):
        xs = pr["by"].get(st, [])
        return "%d: %.1f / %.1f" % (len(xs), pct(xs, 0.5), pct(xs, 0.99)) if xs else "0"

    rec = "%.0f" % (r["recovery"] * 1000) if r["recovery"] is not None else "none in 60 s"
    held, fresh = r["held"], r["fresh"]
    lost = len(held["failed"]) + len(fresh["failed"])
    return ("| %s | %s | %.0f / %.0f | %s | %s | %s | %s | %s | %s | %s |" %
            (backend, "inflight=%s" % r["inflight"] if r["arm"] == "manager" else "off",
             (r["total"] - r["non2xx"]) / seconds, r["non2xx"] / seconds,
             lat(held, 503), lat(held, 200), lat(fresh, 503), lat(fresh, 200), lost + r["errors"], rec,
             r["metrics"].get("overload_refused", "-")))


READING = (
    "Reading it: with the manager, a request on a connection the server holds is answered at once, `503` + "
    "`Retry-After: 1` past the watermark or served behind at most the watermark's exchanges (about inflight x "
    "workers / capacity); without it every request queues behind the whole flood. A new client meets a paused "
    "accept (level 3 and up): it waits in the kernel's queue, neither accepted nor reset, until the held exchanges "
    "fall below the release point, and is then served or refused; that wait is the pause's by design "
    "(docs/reliability.md, \"Overload\"). Nothing is lost in either arm; the level returns to 0 about a second "
    "after the flood, once its tail (requests wrk left queued) is served.")


def markdown(a, rows):
    cap = a.defer_threads * 1000.0 / a.slow_ms
    out = ["<!-- overload-flood: begin (bench/overload_flood.py; scripts/run-bench part overload) -->",
           "## Overload: a sustained flood of slow requests", "",
           "`python3 bench/overload_flood.py` (%s): weir-demo, %d workers, `--mode deferred`, a pool of %d threads "
           "answering `GET /slow?ms=%d` (at most %.0f answers/s whatever arrives), flooded by `wrk -t2 -c%d` "
           "for %d s; beside the flood, every 50 ms, one request on a connection accepted before it (its head "
           "begun) and one from a new client, each timed from its request's last write. The manager arm runs "
           "`--overload inflight=%d` (per worker); the other has it off, weir's default. Latency cells: "
           "`count: p50 / p99` in ms. Recovery: the flood's end to a `200` for a new client's `/fast`." %
           (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), a.workers, a.defer_threads, a.slow_ms, cap,
            a.conns, a.seconds, a.inflight), "",
           "| backend | manager | flood answers/s 2xx / 503 | accepted conn: 503 | accepted conn: 200 "
           "| new client: 503 | new client: 200 | probes lost + wrk socket errors | recovery ms | overload_refused |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    out += rows
    out += ["", READING, "<!-- overload-flood: end -->", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--backend", default="epoll", help="epoll, uring or a comma list")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--conns", type=int, default=256)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--slow-ms", type=int, default=20)
    ap.add_argument("--defer-threads", type=int, default=4)
    ap.add_argument("--inflight", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--md", help="write the section (docs/benchmarks.md's markers) here")
    a = ap.parse_args()
    cap = a.defer_threads * 1000.0 / a.slow_ms
    rows = []
    for backend in a.backend.split(","):
        a1 = argparse.Namespace(**vars(a))
        a1.backend = backend
        print("weir-demo %s, %d workers, deferred pool %d x /slow?ms=%d (at most %.0f answers/s); "
              "wrk -c%d for %d s; manager inflight=%d per worker" %
              (backend, a.workers, a.defer_threads, a.slow_ms, cap, a.conns, a.seconds, a.inflight), flush=True)
        for i in range(a.rounds):
            for arm in (("manager", "none") if i % 2 == 0 else ("none", "manager")):
                r = arm_run(a1, arm)
                r["inflight"] = a.inflight
                show(a1, r)
                rows.append(row(backend, r, a.seconds))
    if a.md:
        with open(a.md, "w") as f:
            f.write(markdown(a, rows))


if __name__ == "__main__":
    main()
