#!/usr/bin/env python3
"""bench/switch_dip.py — what an adaptive switch does to a keep-alive load.

weir-demo `--adaptive` (docs/transplant.md) serves build/bench/kaload
(bench/kaload/main.c: 64 keep-alive connections, one request in flight on
each, every request logged with the time it was sent and its latency), and
this script sends it SIGWINCH at known times: SWITCHES switches INTERVAL s
apart, the first LEAD s into the load, so the active engine goes epoll ->
io_uring -> epoll ... Each switch is read on buckets of completed requests
(BUCKET ms, aligned to the moment the signal was sent):

- steady: the requests/s of the STEADY s that end GUARD ms before the
  switch, with that stretch's own worst bucket and worst 100 ms window (the
  noise a dip has to be read against);
- the dip: the worst bucket and the worst 100 ms window from the switch to
  the next steady stretch (the transition), as fractions of steady;
- recovery: the start of the first 100 ms window after the switch that
  carries >= 95 % of steady's requests (None: not within the transition);
- plateau: the next steady stretch (the new engine settled) over steady;
  where it is below 95 % (the other backend may simply serve fewer
  requests/s on this machine), recovery to within 5 % of the plateau too;
- latency: p99.9 and max of the requests in flight at the switch or sent in
  the transition, against those sent in the steady stretch before it;
- others: the CPU that neither weir-demo nor kaload used in the switch's
  stretch and transition (/proc/stat, sampled every 100 ms): a switch
  where others took more than 15 % of a core is marked noisy;
- errors: kaload's count of failed, reset, closed or bad requests, a
  request unanswered for 1 s at the end, a switch weir-demo did not make
  (every one must be 0);
- the ledger on SIGHUP at the end: transplant detached == adopted + refused
  and in flight 0 on both engines.

A switch's time is when the signal left this script (time.monotonic_ns, the
CLOCK_MONOTONIC kaload stamps its records with), not when the engine acted
on it. Run after `make`:

  python3 bench/switch_dip.py [--switches 4 --interval 1 --lead 1.5 --json F] [--hello BIN]

--hello BIN measures examples/go/hello --adaptive (the Go binding's pair)
instead of weir-demo: the same signals, lines and SIGHUP block.

scripts/run-bench calls run() for `make bench` (its "switch" part).
"""
import argparse
import array
import bisect
import json
import os
import queue
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import uring  # noqa: E402  (bench/uring.py: the SIGHUP metrics reader)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DEMO_ARGS = ["--workers", "1", "--mode", "inline", "--app", "hello"]  # run-bench's weir-demo
WINDOW_MS = 100  # the window of "worst 100 ms" and of recovery
RECOVERED = 0.95
STALL_US = 1_000_000  # a request unanswered this long at the end counts as an error
NOISY = 0.15  # others' CPU, share of a core, above which a switch is marked noisy
SAMPLE_S = 0.1
CLK_TCK = os.sysconf("SC_CLK_TCK")
KALOAD_ERRORS = ("connect_errors", "read_errors", "write_errors", "eofs", "bad_answers", "non200", "server_closes")
LEDGER = ("transplant_detached", "transplant_adopted", "transplant_refused", "transplant_in_flight")


def _machine_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2]  # user + nice + system, every CPU (irq/softirq: mostly loopback traffic)


def _proc_ticks(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            t = f.read().rsplit(")", 1)[1].split()
        return int(t[11]) + int(t[12])  # utime + stime, all threads
    except OSError:
        return None


def start_demo(root, backend, extra=(), hello=None):
    """weir-demo --adaptive (or, with hello, examples/go/hello --adaptive: the
    same operator contract, issue 30) on an ephemeral port: (process, port,
    metrics reader, command)."""
    build = os.path.join(root, "build")
    if hello:
        cmd = [hello, "--addr", "127.0.0.1:0", "--api", "native", "--workers", "1", "--adaptive",
               "--backend", "io_uring" if backend == "uring" else backend] + list(extra)
    else:
        cmd = ([os.path.join(build, "bin", "weir-demo"), "--addr", "127.0.0.1:0", "--backend", backend, "--adaptive"]
               + DEMO_ARGS + list(extra))
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "lib"))  # its own libweir, as run-bench does
    demo = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    line = demo.stdout.readline()
    m = re.match(r"listening on .*:(\d+)$", line.strip())
    if not m:
        demo.kill()
        demo.wait()
        raise RuntimeError(f"weir-demo --adaptive: no 'listening on' line (got {line!r})")
    return demo, int(m.group(1)), uring.Metrics(demo), cmd


def stop_demo(demo):
    if demo.poll() is None:
        demo.send_signal(signal.SIGTERM)
        try:
            demo.wait(timeout=10)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.wait()


def ledger(snap):
    """Both engines' transplant ledgers from one SIGHUP, and whether they balance."""
    out = {}
    for eng, prefix in (("active", ""), ("standby", "standby.")):
        e = {k: snap.get(prefix + k) for k in LEDGER}
        e["balanced"] = (all(isinstance(v, int) for v in e.values())
                         and e["transplant_detached"] == e["transplant_adopted"] + e["transplant_refused"]
                         and e["transplant_in_flight"] == 0)
        out[eng] = e
    out["active_backend"] = snap.get("adaptive.active")
    out["switches"] = snap.get("adaptive.switches")
    out["balanced"] = out["active"]["balanced"] and out["standby"]["balanced"]
    return out


def switch_lines(metrics, n, wait_s=2.0):
    """weir-demo's answers to n SIGWINCHes ("switched to uring", "switch
    failed: ..."), read from its stdout before the next SIGHUP drops them."""
    out, end = [], time.monotonic() + wait_s
    while len(out) < n and (left := end - time.monotonic()) > 0:
        try:
            line = metrics.lines.get(timeout=left)
        except queue.Empty:
            break
        if line.startswith(("switched to", "switch failed")):
            out.append(line)
    return out


def settled_ledger(metrics, wait_s=3.0):
    """Polls SIGHUP until both ledgers balance (an image may still be in
    flight just after the load stops), at most wait_s; the last one read."""
    end = time.monotonic() + wait_s
    while True:
        snap = metrics.snapshot()
        if snap is None:
            return None
        led = ledger(snap)
        if led["balanced"] or time.monotonic() > end:
            return led
        time.sleep(0.1)


def read_records(path):
    """kaload's records: (sent_us, latency_us), in completion order."""
    a = array.array("I")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    return a[0::2], a[1::2]


def _pct(sorted_vals, p):
    if not sorted_vals:
        return None
    return sorted_vals[min(len(sorted_vals) - 1, max(0, -int(-len(sorted_vals) * p // 100) - 1))]


def _share(samples, t0_us, t1_us):
    """Others' CPU over [t0, t1) as a share of one core, from the 100 ms samples."""
    ticks = sum(o for t, _, _, o in samples if t0_us <= t < t1_us)
    span = sum(SAMPLE_S for t, _, _, _ in samples if t0_us <= t < t1_us)
    return round(ticks / CLK_TCK / span, 3) if span else None


def analyse(sent, lat, switch_us, end_us, cfg, directions, samples):
    """Per switch: steady, dip, recovery, plateau, latency, others (module text)."""
    bucket_ms = cfg["bucket_ms"]
    b = bucket_ms * 1000
    done = sorted(s + x for s, x in zip(sent, lat))
    by_sent = sorted(zip(sent, lat))
    sent_keys = [s for s, _ in by_sent]
    win = max(1, WINDOW_MS // bucket_ms)
    nsteady, guard = int(cfg["steady_s"] * 1e6) // b, cfg["guard_ms"] * 1000

    def buckets(t0, n):
        return [bisect.bisect_left(done, t0 + (j + 1) * b) - bisect.bisect_left(done, t0 + j * b) for j in range(n)]

    def windows(counts):
        return [sum(counts[j:j + win]) for j in range(0, len(counts) - win + 1)]

    def lat_sent(t0, t1):
        return [x for _, x in by_sent[bisect.bisect_left(sent_keys, t0):bisect.bisect_left(sent_keys, t1)]]

    out = []
    for k, s in enumerate(switch_us):
        pre_t0 = s - guard - nsteady * b
        pre_counts = buckets(pre_t0, nsteady)
        pre_b = sum(pre_counts) / nsteady  # steady requests per bucket
        nxt = switch_us[k + 1] if k + 1 < len(switch_us) else min(end_us, s + int(cfg["tail_s"] * 1e6))
        post_end = nxt - guard - nsteady * b  # the transition ends where the next steady stretch begins
        post_counts = buckets(s, max(win, (post_end - s) // b))
        plateau = buckets(post_end, nsteady)
        post_w = windows(post_counts)
        rec = next((j for j, w in enumerate(post_w) if w >= RECOVERED * pre_b * win), None)
        # the other backend may settle lower: back within 5 % of where it settled
        floor_b = min(pre_b, sum(plateau) / nsteady)
        rec_plateau = next((j for j, w in enumerate(post_w) if w >= RECOVERED * floor_b * win), None)
        # in flight at the switch (sent before, answered after), and sent in the transition
        lo = bisect.bisect_left(sent_keys, s - 10_000_000)
        around = [x for t, x in by_sent[lo:bisect.bisect_left(sent_keys, s)] if t + x >= s]
        around = sorted(around + lat_sent(s, post_end))
        st = sorted(lat_sent(pre_t0, s - guard))
        worst = min(post_counts)
        others = _share(samples, pre_t0, post_end)
        out.append({
            "at_s": round(s / 1e6, 3), "from": directions[k][0], "to": directions[k][1],
            "transition_ms": (len(post_counts)) * bucket_ms,
            "steady_rps": round(pre_b * 1e6 / b),
            "steady_worst_bucket": round(min(pre_counts) / pre_b, 3) if pre_b else None,
            "steady_worst_window": round(min(windows(pre_counts)) / (pre_b * win), 3) if pre_b else None,
            "worst_bucket": round(worst / pre_b, 3) if pre_b else None,
            "worst_bucket_at_ms": post_counts.index(worst) * bucket_ms,
            "worst_window": round(min(post_w) / (pre_b * win), 3) if pre_b else None,
            "recovery_ms": None if rec is None else rec * bucket_ms,
            "recovery_plateau_ms": None if rec_plateau is None else rec_plateau * bucket_ms,
            "plateau": round(sum(plateau) / nsteady / pre_b, 3) if pre_b else None,
            "steady_p999_us": _pct(st, 99.9), "steady_max_us": st[-1] if st else None,
            "around_p999_us": _pct(around, 99.9), "around_max_us": around[-1] if around else None,
            "steady_requests": len(st), "around_requests": len(around),
            "others_share": others, "noisy": others is not None and others > NOISY,
        })
    return out


def run(root=ROOT, backend="epoll", conns=64, switches=4, interval=1.0, lead=1.5, tail=None, bucket_ms=10,
        steady=None, guard_ms=50, hello=None):
    """One load with `switches` switches; the figures as a dict (JSON-able)."""
    tail = interval if tail is None else tail
    steady = round(min(0.5, interval / 2 - guard_ms / 1000), 3) if steady is None else steady
    if steady <= 0 or lead < steady + guard_ms / 1000 + 0.3:
        raise ValueError("lead must hold 0.3 s of warm-up and a steady stretch before the first switch")
    kaload = os.path.join(root, "build", "bench", "kaload")
    if not os.access(kaload, os.X_OK):
        raise RuntimeError(f"{kaload} is not built (make bench-tools)")
    duration = lead + (switches - 1) * interval + tail
    demo, port, metrics, cmd = start_demo(root, backend, hello=hello)
    rec = tempfile.NamedTemporaryFile(prefix="kaload-", suffix=".bin", delete=False)
    rec.close()
    load = None
    try:
        first = metrics.snapshot()
        if first is None or "adaptive.active" not in first:
            raise RuntimeError("weir-demo --adaptive printed no adaptive.* metrics on SIGHUP")
        load = subprocess.Popen([kaload, "127.0.0.1", str(port), str(conns), f"{duration:.3f}", rec.name],
                                stdout=subprocess.PIPE, text=True)
        line = load.stdout.readline().split()
        if len(line) != 2 or line[0] != "start":
            raise RuntimeError(f"kaload: no start line (got {line})")
        t0 = int(line[1])
        due = [t0 + int((lead + k * interval) * 1e9) for k in range(switches)]
        sent_at, samples = [], []
        prev = (time.monotonic_ns(), _machine_ticks(), _proc_ticks(demo.pid), _proc_ticks(load.pid))
        next_sample = prev[0] + int(SAMPLE_S * 1e9)
        while load.poll() is None:
            now = time.monotonic_ns()
            if due and now >= due[0]:
                due.pop(0)
                sent_at.append(time.monotonic_ns())
                demo.send_signal(signal.SIGWINCH)
                continue
            if now >= next_sample:
                cur = (now, _machine_ticks(), _proc_ticks(demo.pid), _proc_ticks(load.pid))
                if None not in cur + prev:
                    d = [c - p for c, p in zip(cur, prev)]
                    samples.append(((prev[0] - t0) // 1000, d[2], d[3], max(0, d[1] - d[2] - d[3])))
                prev, next_sample = cur, next_sample + int(SAMPLE_S * 1e9)
                continue
            if due and due[0] <= next_sample:  # sleep to 1 ms before the switch, then spin: it leaves on time
                left = due[0] - time.monotonic_ns() - 1_000_000
            else:
                left = next_sample - time.monotonic_ns()
            if left > 0:
                time.sleep(left / 1e9)
        stats = {}
        for line in load.stdout:
            name, _, value = line.strip().partition(" ")
            stats[name] = float(value) if "." in value else int(value)
        if load.returncode != 0 or len(sent_at) != switches:
            raise RuntimeError(f"kaload exited with {load.returncode} after {len(sent_at)} of {switches} switches")
        said = switch_lines(metrics, switches)
        led = settled_ledger(metrics)
    finally:
        if load is not None and load.poll() is None:
            load.kill()
            load.wait()
        stop_demo(demo)
    sent, lat = read_records(rec.name)
    os.unlink(rec.name)
    end_us = int(stats["seconds"] * 1e6)
    # what weir-demo said it switched to ("switched to uring"), so a standby
    # that fell back to epoll is named as such
    to = [m.group(1) if (m := re.match(r"switched to (\w+)", x)) else "failed" for x in said]
    to += ["?"] * (switches - len(to))
    directions = list(zip([first["adaptive.active"]] + to[:-1], to))
    cfg = {"bucket_ms": bucket_ms, "steady_s": steady, "guard_ms": guard_ms, "tail_s": tail}
    per_switch = analyse(sent, lat, [(t - t0) // 1000 for t in sent_at], end_us, cfg, directions, samples)
    b = bucket_ms * 1000
    series = [0] * (end_us // b + 1)
    for s, x in zip(sent, lat):
        if s + x < end_us:
            series[(s + x) // b] += 1
    errors = {k: stats.get(k, 0) for k in KALOAD_ERRORS}
    errors["stalled"] = int(stats.get("oldest_in_flight_us", 0) > STALL_US)
    errors["switches_failed"] = switches - sum(1 for x in said if x.startswith("switched to"))
    return {
        "cmd": " ".join(os.path.relpath(a, root) if a.startswith(root) else a for a in cmd),
        "load": f"build/bench/kaload 127.0.0.1 PORT {conns} {duration:g} FILE",
        "conns": conns, "switches": switches, "interval_s": interval, "lead_s": lead, "tail_s": tail,
        "bucket_ms": bucket_ms, "window_ms": WINDOW_MS, "steady_s": steady, "guard_ms": guard_ms,
        "duration_s": stats["seconds"], "requests": stats["requests"], "reconnects": stats.get("reconnects", 0),
        "oldest_in_flight_us": stats.get("oldest_in_flight_us"), "first_active": first["adaptive.active"],
        "per_switch": per_switch, "errors": errors, "error_total": sum(errors.values()), "ledger": led,
        "ledger_ok": bool(led and led["balanced"] and led["switches"] == switches and led["active_backend"] == to[-1]),
        "others_share": round(sum(o for *_, o in samples) / CLK_TCK / max(stats["seconds"], 1e-9), 3),
        "series": series, "cpu_samples": samples,
    }


def _ms(v, limit):
    return f">{limit} ms" if v is None else f"{v} ms"


def _us(v):
    return "–" if v is None else f"{v / 1000:.2f}"


def describe(r):
    """The log's lines for one run."""
    lines = [f"  {r['requests']:,} requests in {r['duration_s']:.1f} s over {r['conns']} keep-alive connections, "
             f"{r['switches']} switches {r['interval_s']:g} s apart; others used {r['others_share']:.0%} of a core"]
    for s in r["per_switch"]:
        rec = _ms(s["recovery_ms"], s["transition_ms"])
        if s["plateau"] < RECOVERED:
            rec += f" (to its plateau {_ms(s['recovery_plateau_ms'], s['transition_ms'])})"
        lines.append(
            f"  {s['at_s']:6.2f} s {s['from']:>5} -> {s['to']:<5} steady {s['steady_rps']:>7,} req/s "
            f"(its worst {r['bucket_ms']} ms {s['steady_worst_bucket']:.0%}, {r['window_ms']} ms "
            f"{s['steady_worst_window']:.0%}); worst {r['bucket_ms']} ms {s['worst_bucket']:.0%} "
            f"(+{s['worst_bucket_at_ms']} ms), {r['window_ms']} ms {s['worst_window']:.0%}; within 5% after {rec}; "
            f"plateau {s['plateau']:.0%}; p99.9/max {_us(s['around_p999_us'])}/{_us(s['around_max_us'])} ms "
            f"(steady {_us(s['steady_p999_us'])}/{_us(s['steady_max_us'])}); others {s['others_share']:.0%}"
            f"{' (noisy)' if s['noisy'] else ''}")
    led = r["ledger"] or {}
    parts = [f"{eng}: detached {e['transplant_detached']}, adopted {e['transplant_adopted']}, refused "
             f"{e['transplant_refused']}, in flight {e['transplant_in_flight']}"
             for eng in ("active", "standby") if (e := led.get(eng))]
    lines.append(f"  ledger {'balanced' if r['ledger_ok'] else 'NOT BALANCED'} ({'; '.join(parts) or 'unread'}); "
                 f"errors {r['error_total']} ({', '.join(f'{k} {v}' for k, v in r['errors'].items() if v) or 'none'})")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="epoll", help="the first active engine's (default epoll)")
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--switches", type=int, default=4)
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between switches (default 1)")
    ap.add_argument("--lead", type=float, default=1.5, help="seconds of load before the first (default 1.5)")
    ap.add_argument("--tail", type=float, help="seconds of load after the last (default: the interval)")
    ap.add_argument("--bucket-ms", type=int, default=10)
    ap.add_argument("--json", help="write the figures (with the bucket series) to this file")
    ap.add_argument("--hello", help="serve with this examples/go/hello binary (--api native --adaptive) instead of weir-demo")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    r = run(backend=a.backend, conns=a.conns, switches=a.switches, interval=a.interval, lead=a.lead, tail=a.tail,
            bucket_ms=a.bucket_ms, hello=a.hello)
    print("\n".join(describe(r)))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(r, f, indent=1)
    sys.exit(0 if r["error_total"] == 0 and r["ledger_ok"] else 1)


if __name__ == "__main__":
    main()
