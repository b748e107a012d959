#!/usr/bin/env python3
"""The driver of go_handover.sh: examples/go/hello's hot upgrade (the Go
binding's Upgrader; --upgrade-socket, --take-over; docs/go.md "Hot upgrade")
across real Go processes, judged by demo_handover.py's loopback clients
(demo_handover_load.py: keep-alive, pipelined 8 deep with cut requests, a new
connection per request, connected-and-silent) and by both processes' ledgers.

go_handover.py --bin hello --tmp DIR [--arms A,B..] [--rounds N]
               [--backends epoll,uring] [--slow F]

Arms (each says whether it must hold or must lose):
  main            MUST HOLD. N back-to-back upgrades alternating the native
                  and the net/http API and the backends: 0 failed, 0 resets,
                  0 refused, 0 reconnects; each step's ledger balances and
                  moved every connection that lived through it.
  notready        MUST HOLD. A successor whose application takes 3 s to start
                  is killed before it says Ready: the old process never
                  handed anything over, its offer times out ("handover:
                  failed"), it serves on, the clients lose nothing; then an
                  upgrade succeeds and balances.
  ungated         MUST LOSE (the readiness gate's mutant, HELLO_TEST_UNGATED):
                  the same successor says Ready before its application starts,
                  so it takes the listeners and connections at once and dies
                  with them: the clients see failed requests, resets or
                  refused connects.
  listeners-only  MUST LOSE. --handover-listeners-only (tableflip's, nginx's
                  way): keep-alive clients reconnect > 0, the old process
                  counts closed > 0.
The figures (requests failed, and the pause the clients see: the longest
answer of a back-to-back keep-alive probe and of a new-connection probe
across each upgrade, against their median away from it) are printed per
step and in the arm's summary. Exits 0, or 1 after "FAIL:"."""
import argparse
import os
import signal
import statistics
import sys
import threading
import time

import demo_handover as dh
from demo_handover import Demo, Failure, Steps, finish, hold, ledger, parse_json
from demo_handover_load import REQUEST, Conn, Load

COUNTS = dict(dh.COUNTS)
WORKERS = 2
OPT = None
INIT_MS = 3000  # the slow successor's application start (HELLO_TEST_APP_INIT_MS)


def T(base=10.0):
    return base * OPT.slow


class Probe(threading.Thread):
    """Back-to-back requests, 1 ms apart, on one keep-alive connection (or a
    new connection each, churn): (start, seconds to the answer) of each, so
    the pause an upgrade causes shows as one long answer."""

    def __init__(self, port, churn):
        super().__init__(daemon=True)
        self.port, self.churn = port, churn
        self.stop = threading.Event()
        self.samples, self.errors = [], 0

    def run(self):
        conn = None
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                if conn is None:
                    conn = Conn(self.port, 5)
                conn.sock.sendall(REQUEST)
                conn.answer()
                self.samples.append((t0, time.monotonic() - t0))
            except Exception:
                self.errors += 1
                if conn is not None:
                    conn.close()
                conn = None
            if self.churn and conn is not None:
                conn.close()
                conn = None
            time.sleep(0.001)
        if conn is not None:
            conn.close()

    def pause(self, t0, t1):
        """The longest answer begun in [t0, t1], and the median of the rest."""
        inside = [d for t, d in self.samples if t0 <= t <= t1]
        outside = [d for t, d in self.samples if not (t0 - 0.2 <= t <= t1 + 0.2)]
        return (max(inside) if inside else 0.0), (statistics.median(outside) if outside else 0.0)


def hello(name, api, backend, port, *extra, env=None, listening=True):
    d = Demo(name, ["--api", api, "--workers", str(WORKERS), "--backend", backend,
                    "--addr", "127.0.0.1:%d" % port, *extra], env=dict(os.environ, **env) if env else None)
    if listening:
        m = d.wait_line(r"^listening on 127\.0\.0\.1:(\d+)$", T())
        d.port = int(m.group(1))
        if port and d.port != port:
            raise Failure("%s listens on port %d, want %d" % (name, d.port, port))
    return d


def sock():
    return os.path.join(OPT.tmp, "upgrade.sock")


def offer(old):
    off = len(old.text())
    old.signal(signal.SIGQUIT)
    m = old.wait_line(r"^handover: offered at (.+)$", T(), off)
    if m.group(1) != sock():
        raise Failure("%s offered at %r, want %r" % (old.name, m.group(1), sock()))
    return off


def upgrade(old, name, api, backend, port, extra=(), env=None, off=None):
    """SIGQUIT old (unless off says it already offered), start the successor;
    returns (new, done, took, t_offer, t_done)."""
    t0 = time.monotonic()
    if off is None:
        off = offer(old)
    new = hello(name, api, backend, port, "--take-over", sock(), "--upgrade-socket", sock(), *extra, env=env)
    m = old.wait_line(r"^handover: (done|failed: .*) (\{.*\})$", T() + OPT.deadline_ms / 1000.0, off)
    t1 = time.monotonic()
    if m.group(1) != "done":
        raise Failure("%s: handover: %s %s" % (old.name, m.group(1), m.group(2)))
    done = parse_json(m, old.name)
    rc = old.wait_exit(T())
    if rc != 0:
        raise Failure("%s exited with %s after handover: done" % (old.name, dh.describe(rc)))
    took = parse_json(new.wait_line(r"^handover: took (\{.*\})$", T()), name)
    return new, done, took, t0, t1


def start_probes(port):
    probes = [Probe(port, False), Probe(port, True)]
    for p in probes:
        p.start()
    return probes


def stop_probes(probes):
    for p in probes:
        p.stop.set()
    for p in probes:
        p.join(T(5))


def arm_main(backends):
    """MUST HOLD: N upgrades under the four kinds of load, native <-> net/http."""
    apis = ("native", "nethttp")
    seq = lambda g: (apis[g % 2], backends[((g + 1) // 2) % len(backends)])
    deadline = ("--handover-deadline-ms", str(OPT.deadline_ms))
    api, b = seq(0)
    cur = hello("main-0", api, b, 0, "--upgrade-socket", sock(), *deadline)
    port = cur.port
    load = Load(port, COUNTS, T(5))
    load.start()
    probes = start_probes(port)
    time.sleep(0.5)
    steps, bad, handed, pauses = Steps(load), [], [], []
    for r in range(1, OPT.rounds + 1):
        time.sleep(OPT.dwell)
        met = cur.metrics()
        if int(met.get("requests", 0)) <= 0:
            bad.append("%s served no request before its upgrade" % cur.name)
        if met.get("closes.handover", "0") != "0":
            bad.append("%s: closes.handover %s" % (cur.name, met["closes.handover"]))
        (a0, b0), (a1, b1) = seq(r - 1), seq(r)
        step = "upgrade %d %s/%s->%s/%s" % (r, a0, b0, a1, b1)
        new, done, took, t0, t1 = upgrade(cur, "main-%d" % r, a1, b1, port, extra=deadline)
        bad += ledger(step, done, took)
        d = steps.mark(step)
        handed.append(done["sent"])
        time.sleep(0.25)  # the probes' answers begun near the end come back
        ka, ka_med = probes[0].pause(t0, t1)
        ch, ch_med = probes[1].pause(t0, t1)
        pauses.append((ka, ch, ka_med, ch_med))
        print("%s: sent %d, received %d, listeners %d, moving %.1f ms; clients +%d ok, failed %d; "
              "longest answer keep-alive %.1f ms (median %.2f), new connection %.1f ms (median %.2f)" %
              (step, done["sent"], took["received"], done["listeners"], float(done["moving_ms"]), d["ok"],
               d["failed"], ka * 1e3, ka_med * 1e3, ch * 1e3, ch_med * 1e3))
        cur = new
    time.sleep(OPT.dwell)
    steps.mark("after the last upgrade")
    stop_probes(probes)
    totals = finish(load, cur)
    bad += steps.bad + hold(totals, "main")
    for p in probes:
        if p.errors:
            bad.append("the %s probe saw %d errors" % ("churn" if p.churn else "keep-alive", p.errors))
    persistent = load.persistent()
    if totals.reconnects == 0:
        for r, n in enumerate(handed, 1):
            if n < persistent:
                bad.append("upgrade %d sent %d connections, but %d client connections lived through it" %
                           (r, n, persistent))
    if pauses:
        print("main: %d upgrades (native<->nethttp, %s): requests %d ok (%s), failed %d, resets %d, refused %d, "
              "reconnects %d; connections handed per upgrade min %d, median %d; the pause the clients see: "
              "keep-alive probe longest answer median %.1f ms, max %.1f ms (%.2f ms away from upgrades); "
              "new-connection probe median %.1f ms, max %.1f ms (%.2f ms away)" %
              (len(pauses), "/".join(backends), totals.ok, load.by_kind(), totals.failed, totals.resets,
               totals.refused, totals.reconnects, min(handed), statistics.median(handed),
               statistics.median(p[0] for p in pauses) * 1e3, max(p[0] for p in pauses) * 1e3,
               statistics.median(p[2] for p in pauses) * 1e3, statistics.median(p[1] for p in pauses) * 1e3,
               max(p[1] for p in pauses) * 1e3, statistics.median(p[3] for p in pauses) * 1e3))
    return bad


def slow_successor(arm, cur, port, ungated):
    """Offers cur, starts a successor whose application takes INIT_MS to start
    (gated or not) and kills it before that init is over: 1 s in, or, ungated,
    as soon as the old process says it handed everything over (so a slow
    start on a loaded machine cannot hide the loss)."""
    env = {"HELLO_TEST_APP_INIT_MS": str(INIT_MS)}
    if ungated:
        env["HELLO_TEST_UNGATED"] = "1"
    off = offer(cur)
    new = hello(arm + "-slow", "native", "epoll", port, "--take-over", sock(), env=env, listening=False)
    if ungated:
        cur.wait_line(r"^handover: (done|failed: .*) (\{.*\})$", T(), off)
    else:
        time.sleep(1.0)
    if not new.alive():
        raise Failure("%s exited (%s) during its application's start" % (new.name, dh.describe(new.p.returncode)))
    new.p.kill()
    new.p.wait()
    return off, new


def arm_notready(backends):
    """MUST HOLD: a successor that dies before Ready costs nothing."""
    b = backends[0]
    cur = hello("notready-0", "nethttp", b, 0, "--upgrade-socket", sock(), "--handover-wait-ms", "2500")
    port = cur.port
    load = Load(port, COUNTS, T(5))
    load.start()
    time.sleep(0.5)
    steps, bad = Steps(load), []
    before = int(cur.metrics().get("requests", 0))
    off, slow = slow_successor("notready", cur, port, ungated=False)
    if "listening on" in slow.text():
        bad.append("the slow successor listened before it was Ready: the gate did not hold")
    m = cur.wait_line(r"^handover: (done|failed: .*) (\{.*\})$", T(), off)
    if not m.group(1).startswith("failed"):
        bad.append("the offer to a successor that died before Ready ended %r, want failed" % m.group(1))
    failed = parse_json(m, cur.name)
    time.sleep(0.3)
    served = int(cur.metrics().get("requests", 0)) - before
    d = steps.mark("successor killed before Ready")
    print("notready: successor killed before Ready (its app takes %d ms); the old process: handover: %s %s; "
          "served %d requests since; clients +%d ok, failed %d, resets %d, refused %d, reconnects %d" %
          (INIT_MS, m.group(1), m.group(2), served, d["ok"], d["failed"], d["resets"], d["refused"],
           d["reconnects"]))
    if served <= 0:
        bad.append("notready: the old process served nothing after its successor died")
    if failed.get("sent") or failed.get("closed") or failed.get("listeners"):
        bad.append("notready: the failed offer moved something: %s" % failed)
    new, done, took, _, _ = upgrade(cur, "notready-after", "native", backends[-1], port)
    bad += ledger("the upgrade after the dead successor", done, took)
    time.sleep(0.3)
    steps.mark("the upgrade after the dead successor")
    totals = finish(load, new)
    print("notready: then an upgrade: sent %d, received %d; clients: %s" % (done["sent"], took["received"],
                                                                           totals.line()))
    return bad + steps.bad + hold(totals, "notready")


def arm_ungated(backends):
    """MUST LOSE: the same successor without the gate takes everything and dies with it."""
    b = backends[0]
    cur = hello("ungated-0", "nethttp", b, 0, "--upgrade-socket", sock())
    port = cur.port
    load = Load(port, COUNTS, T(5))
    load.start()
    time.sleep(0.5)
    off, slow = slow_successor("ungated", cur, port, ungated=True)
    m = cur.wait_line(r"^handover: (done|failed: .*) (\{.*\})$", T(), off)
    time.sleep(0.5)
    stuck = load.stop()
    totals = load.snapshot()
    if cur.alive():
        cur.stop()
    print("ungated (must lose): the old process: handover: %s %s; clients: %s (%s)" %
          (m.group(1), m.group(2), totals.line(), "; ".join(totals.samples)))
    bad = ["clients still running after stop: %s" % stuck] if stuck else []
    if totals.losses() == 0:
        bad.append("ungated: the clients lost nothing: this test could not see the loss the gate prevents")
    return bad


def arm_listeners_only(backends):
    """MUST LOSE: only the listeners move; keep-alive connections are closed."""
    cur = hello("lonly-0", "native", backends[0], 0, "--upgrade-socket", sock(), "--handover-listeners-only")
    load = Load(cur.port, COUNTS, T(5))
    load.start()
    time.sleep(0.5)
    new, done, took, _, _ = upgrade(cur, "lonly-1", "nethttp", backends[-1], cur.port)
    time.sleep(0.5)
    totals = finish(load, new)
    print("listeners-only (must lose): old closed %s, sent %s; new received %s; clients: %s (%s)" %
          (done.get("closed"), done.get("sent"), took.get("received"), totals.line(), "; ".join(totals.samples)))
    bad = []
    if totals.reconnects == 0:
        bad.append("listeners-only: no keep-alive client reconnected: this test could not see the loss")
    if not done.get("closed"):
        bad.append("listeners-only: the old process closed %r connections, want > 0" % done.get("closed"))
    return bad


ARMS = {"main": arm_main, "notready": arm_notready, "ungated": arm_ungated, "listeners-only": arm_listeners_only}


def backend_runs(backend):
    d = Demo("probe-" + backend, ["--backend", backend, "--addr", "127.0.0.1:0"])
    try:
        d.wait_line(r"^listening on ", T())
    except Failure:
        with open(d.err) as f:
            print("%s: hello does not start: %s; skipped" % (backend, (f.readline() or "no message").strip()))
        d.p.kill()
        d.p.wait()
        return False
    d.stop()
    return True


def main():
    global OPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--arms", default="main,notready,ungated,listeners-only")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--backends", default="epoll,uring")
    ap.add_argument("--slow", type=float, default=1.0)
    ap.add_argument("--dwell", type=float, default=0.3)
    ap.add_argument("--deadline-ms", type=int, default=5000)
    OPT = ap.parse_args()
    dh.OPT = OPT  # Demo, Steps and finish read dh.OPT (bin, tmp, slow)
    return dh.run_arms(ap, ARMS, OPT, backend_runs)

if __name__ == "__main__":
    sys.exit(main())
