#!/usr/bin/env python3
"""bench/handover.py — what a hot upgrade (docs/upgrade.md) costs.

  move FROM TO N   the time to hand N idle keep-alive connections (bench/idle:
                   each served one GET) from a weir-demo on backend FROM to a
                   successor on TO: from the SIGQUIT to the old process's
                   "handover: done" line (the successor was started first and
                   waits for the offer), and the offer's own moving_ms (the
                   listeners' move to Done). The successor's connections_open
                   (SIGHUP) must reach N, and its ledger received == N.
  dip FROM TO K    build/bench/kaload's 64 keep-alive connections (every
                   request logged) across K upgrades 1 s apart, the backend
                   alternating FROM, TO, FROM ...; each upgrade read as
                   bench/switch_dip.py reads a switch (steady, the worst
                   10 ms and 100 ms, recovery, p99.9/max around it), timed
                   from the SIGQUIT. kaload's errors and reconnects must be 0.

Run after `make` and `make bench-tools`:
  python3 bench/handover.py move epoll epoll 10000
  python3 bench/handover.py dip epoll uring 4
docs/benchmarks.md "Hot upgrade" holds the figures.
"""
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import switch_dip  # noqa: E402  (its kaload reading and its analysis)
import uring  # noqa: E402  (bench/uring.py: the SIGHUP metrics reader)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DEMO = ["--workers", "2", "--mode", "inline", "--app", "hello", "--idle-timeout-ms", "600000"]


class Demo:
    """One weir-demo process (the first listens, the others take over)."""

    def __init__(self, backend, sock, take_over=False, port=0):
        build = os.path.join(ROOT, "build")
        cmd = [os.path.join(build, "bin", "weir-demo"), "--addr", f"127.0.0.1:{port}", "--backend", backend,
               "--upgrade-socket", sock] + DEMO + (["--take-over", sock] if take_over else [])
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "lib"))
        self.backend = backend
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
        self.metrics = uring.Metrics(self.p)

    def line(self, timeout_s):
        try:
            return self.metrics.lines.get(timeout=timeout_s)  # its pump reads stdout
        except Exception:
            return ""

    def listening(self):
        line = self.line(10)
        m = re.match(r"listening on .*:(\d+)$", line.strip())
        if not m:
            raise RuntimeError(f"weir-demo: no 'listening on' line (got {line!r})")
        return int(m.group(1))

    def handover_line(self, what, timeout_s=30):
        """The next "handover: WHAT ..." line: (ok, stats dict)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            line = self.line(max(0.01, end - time.monotonic()))
            if not line:
                continue
            m = re.match(r"handover: (\S+?)(?::.*?)? (\{.*\})$", line.strip())
            if m and m.group(1) in what:
                nums = dict(re.findall(r'"(\w+)":([0-9.]+)', m.group(2)))
                return m.group(1) == what[0], {k: float(v) for k, v in nums.items()}
        raise RuntimeError(f"weir-demo: no 'handover: {what[0]}' line")

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def upgrade(old, backend, sock, port):
    """Starts the successor, lets it reach the socket, SIGQUITs old; returns
    (successor, the SIGQUIT's monotonic ns)."""
    new = Demo(backend, sock, take_over=True, port=port)
    time.sleep(0.2)  # it retries the connect until the offer is there
    at = time.monotonic_ns()
    old.p.send_signal(signal.SIGQUIT)
    return new, at


def move(src, dst, n):
    sock = tempfile.mktemp(prefix="weir-bench-", suffix=".sock")
    a = Demo(src, sock)
    b = idle = None
    try:
        port = a.listening()
        idle = subprocess.Popen([os.path.join(ROOT, "build", "bench", "idle"), "127.0.0.1", str(port), str(n)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if not idle.stdout.readline().startswith("ready"):
            raise RuntimeError("bench/idle: no ready line")
        b, at = upgrade(a, dst, sock, port)
        if b.listening() != port:
            raise RuntimeError("the successor listens elsewhere")
        ok, sa = a.handover_line(("done", "failed"))
        wall_ms = (time.monotonic_ns() - at) / 1e6
        a.p.wait(timeout=30)
        ok_b, sb = b.handover_line(("took", "took-failed"))
        # Admitted by the successor's workers (its hand-off doors), polled:
        # an upper bound on when the last one could be served there.
        while True:
            m = b.metrics.snapshot() or {}
            if m.get("connections_open", 0) >= n or time.monotonic_ns() - at > 10e9:
                break
        admitted_ms = (time.monotonic_ns() - at) / 1e6
        good = ok and ok_b and sb.get("received") == n and m.get("connections_open", 0) >= n
        return {"from": src, "to": dst, "conns": n, "wall_ms": round(wall_ms, 1), "admitted_ms": round(admitted_ms, 1),
                "moving_ms": sa.get("moving_ms"), "sent": int(sa.get("sent", 0)),
                "received": int(sb.get("received", 0)), "open_after": m.get("connections_open"), "ok": good}
    finally:
        if idle is not None:
            idle.stdin.close()
            idle.wait()
        for d in (a, b):
            if d is not None:
                d.stop()


def dip(src, dst, k, conns=64, interval=1.0, lead=1.5, bucket_ms=10):
    kaload = os.path.join(ROOT, "build", "bench", "kaload")
    sock = tempfile.mktemp(prefix="weir-bench-", suffix=".sock")
    duration = lead + (k - 1) * interval + interval
    procs = [Demo(src, sock)]
    rec = tempfile.NamedTemporaryFile(prefix="kaload-", suffix=".bin", delete=False)
    rec.close()
    load, results = None, []
    try:
        port = procs[0].listening()
        load = subprocess.Popen([kaload, "127.0.0.1", str(port), str(conns), f"{duration:.3f}", rec.name],
                                stdout=subprocess.PIPE, text=True)
        line = load.stdout.readline().split()
        if len(line) != 2 or line[0] != "start":
            raise RuntimeError(f"kaload: no start line (got {line})")
        t0 = int(line[1])
        sent_at, dirs = [], []
        for j in range(k):
            due = t0 + int((lead + j * interval) * 1e9) - 200_000_000  # upgrade() waits 0.2 s first
            time.sleep(max(0, (due - time.monotonic_ns()) / 1e9))
            old = procs[-1]
            backend = dst if j % 2 == 0 else src
            new, at = upgrade(old, backend, sock, port)
            procs.append(new)
            sent_at.append(at)
            dirs.append((old.backend, backend))
            new.listening()
            ok, sa = old.handover_line(("done", "failed"))
            old.p.wait(timeout=30)
            ok_b, sb = new.handover_line(("took", "took-failed"))
            results.append({"ok": ok and ok_b and sa.get("sent") == sb.get("received"),
                            "sent": int(sa.get("sent", 0)), "moving_ms": sa.get("moving_ms")})
        load.wait(timeout=duration + 30)
        stats = {}
        for line in load.stdout:
            name, _, value = line.strip().partition(" ")
            stats[name] = float(value) if "." in value else int(value)
    finally:
        if load is not None and load.poll() is None:
            load.kill()
            load.wait()
        for d in procs:
            d.stop()
    sent, lat = switch_dip.read_records(rec.name)
    os.unlink(rec.name)
    end_us = int(stats["seconds"] * 1e6)
    cfg = {"bucket_ms": bucket_ms, "steady_s": 0.45, "guard_ms": 50, "tail_s": interval}
    per = switch_dip.analyse(sent, lat, [(t - t0) // 1000 for t in sent_at], end_us, cfg, dirs, [])
    errors = {e: stats.get(e, 0) for e in switch_dip.KALOAD_ERRORS}
    errors["reconnects"] = stats.get("reconnects", 0)
    return {"requests": stats["requests"], "seconds": stats["seconds"], "per": per, "upgrades": results,
            "errors": errors, "ok": all(r["ok"] for r in results) and not any(errors.values())}


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    what, src, dst, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if what == "move":
        r = move(src, dst, n)
        print(f"{r['from']} -> {r['to']}: {r['conns']} idle connections handed over in {r['wall_ms']} ms from "
              f"SIGQUIT (moving {r['moving_ms']} ms), all open in the successor by {r['admitted_ms']} ms; sent {r['sent']}, received {r['received']}, open after "
              f"{r['open_after']}{'' if r['ok'] else '  FAILED'}")
        sys.exit(0 if r["ok"] else 1)
    r = dip(src, dst, n)
    print(f"{r['requests']:,} requests in {r['seconds']:.1f} s, {n} upgrades; errors "
          f"{sum(r['errors'].values())} ({', '.join(f'{k} {v}' for k, v in r['errors'].items() if v) or 'none'})")
    for s, u in zip(r["per"], r["upgrades"]):
        print(f"  {s['at_s']:6.2f} s {s['from']:>5} -> {s['to']:<5} steady {s['steady_rps']:>7,} req/s; worst "
              f"10 ms {s['worst_bucket']:.0%} (+{s['worst_bucket_at_ms']} ms), 100 ms {s['worst_window']:.0%}; "
              f"within 5% after {s['recovery_ms']} ms; p99.9/max {switch_dip._us(s['around_p999_us'])}/"
              f"{switch_dip._us(s['around_max_us'])} ms (steady {switch_dip._us(s['steady_p999_us'])}/"
              f"{switch_dip._us(s['steady_max_us'])}); handed {u['sent']} in {u['moving_ms']} ms"
              f"{'' if u['ok'] else '  LEDGER'}")
    sys.exit(0 if r["ok"] else 1)


if __name__ == "__main__":
    main()
