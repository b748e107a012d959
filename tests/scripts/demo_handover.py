#!/usr/bin/env python3
"""The driver of demo_handover.sh: weir-demo's hot upgrade (--upgrade-socket,
--take-over; docs/upgrade.md) judged from outside, by loopback clients
(demo_handover_load.py) and by the two processes' ledgers.

demo_handover.py --bin weir-demo --tmp DIR [--arms A,B..] [--rounds N]
                 [--backends epoll,uring] [--slow F]

Arms (each says whether it must hold or must lose):
  plain           MUST LOSE. SIGTERM the demo, start a new one on the same
                  port: refused connects, resets or failed requests > 0.
                  Runs on today's demo: the clients can see a loss.
  main            MUST HOLD. N back-to-back upgrades (epoll -> uring,
                  uring -> uring, uring -> epoll, epoll -> epoll, ...):
                  0 failed, 0 resets, 0 refused, 0 reconnects; each step's
                  ledger balances (sent == received + refused, and refused,
                  lost, closed, returned all 0) and moved every connection.
  listeners-only  MUST LOSE. --handover-listeners-only (what nginx, HAProxy
                  and Envoy do): keep-alive clients reconnect > 0 and the
                  old process counts closed > 0.
  nosuccessor     MUST HOLD. Two offers nobody takes: each ends "handover:
                  failed" at --handover-wait-ms; the demo serves on.
  crash           MUST HOLD. A successor that SIGKILLs itself after taking
                  the listeners, then one after receiving 4 connections:
                  the old process says "handover: failed", serves on, the
                  clients lose nothing; then a normal upgrade still succeeds.
Prints one line per step and a summary per arm; exits 0, or 1 after "FAIL:".
Every wait is bounded (scaled by --slow under a sanitizer)."""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

from demo_handover_load import Load

COUNTS = {"keepalive": 32, "pipelined": 4, "churn": 4, "silent": 8}
WORKERS = 2
SAN_MARKS = ("WARNING: ThreadSanitizer:", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")
OPT = None  # the parsed command line
PROCS = []  # every demo started, for the failure report and the cleanup


class Failure(Exception):
    pass


def describe(rc):
    return "signal %s" % signal.Signals(-rc).name if rc < 0 else "status %d" % rc


class Demo:
    """One weir-demo process; stdout and stderr go to files in --tmp."""

    def __init__(self, name, args, env=None):
        self.name = name
        self.out = os.path.join(OPT.tmp, name + ".out")
        self.err = os.path.join(OPT.tmp, name + ".err")
        # setpriv --pdeathsig: the demo dies with the driver, however the driver ends.
        wrap = ["setpriv", "--pdeathsig", "KILL"] if shutil.which("setpriv") else []
        with open(self.out, "wb") as o, open(self.err, "wb") as e:
            self.p = subprocess.Popen(wrap + [OPT.bin] + args, stdout=o, stderr=e, env=env, stdin=subprocess.DEVNULL)
        self.port = None
        PROCS.append(self)

    def text(self):
        """stdout up to its last whole line."""
        with open(self.out, "rb") as f:
            data = f.read().decode("utf-8", "replace")
        return data[: data.rfind("\n") + 1]

    def alive(self):
        return self.p.poll() is None

    def signal(self, sig):
        if not self.alive():
            raise Failure("%s exited (%s) before it could be sent %s" % (self.name, describe(self.p.returncode), sig.name))
        self.p.send_signal(sig)

    def wait_line(self, regex, timeout, after=0):
        """The first match of regex (a whole line) in stdout past offset after."""
        rx = re.compile(regex, re.M)
        limit = time.monotonic() + timeout
        while True:
            exited = not self.alive()
            m = rx.search(self.text(), after)
            if m:
                return m
            if exited:
                raise Failure("%s exited (%s) before printing /%s/" % (self.name, describe(self.p.returncode), regex))
            if time.monotonic() > limit:
                raise Failure("%s printed no /%s/ in %.1f s" % (self.name, regex, timeout))
            time.sleep(0.01)

    def wait_exit(self, timeout):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Failure("%s still running %.1f s later" % (self.name, timeout))

    def metrics(self):
        """SIGHUP's block as {name: value} (the demo's "metrics begin/end")."""
        seen = self.text().count("metrics end\n")
        self.signal(signal.SIGHUP)
        limit = time.monotonic() + T()
        while self.text().count("metrics end\n") <= seen:
            if time.monotonic() > limit or not self.alive():
                raise Failure("%s printed no metrics after SIGHUP" % self.name)
            time.sleep(0.01)
        t = self.text()
        block = t[t.rindex("metrics begin\n") : t.rindex("metrics end\n")]
        return dict(l.split(" ", 1) for l in block.splitlines()[1:] if " " in l)

    def stop(self):
        """SIGTERM; the demo must exit 0."""
        self.signal(signal.SIGTERM)
        rc = self.wait_exit(T())
        if rc != 0:
            raise Failure("%s exited with %s after SIGTERM" % (self.name, describe(rc)))


def T(base=10.0):
    return base * OPT.slow


def demo(name, backend, port, *extra, env=None, listening=True):
    """Starts a demo; with listening, waits for its "listening on" line."""
    d = Demo(name, ["--app", "hello", "--workers", str(WORKERS), "--backend", backend,
                    "--addr", "127.0.0.1:%d" % port, *extra], env=env)
    if listening:
        m = d.wait_line(r"^listening on 127\.0\.0\.1:(\d+)$", T())
        d.port = int(m.group(1))
        if port and d.port != port:
            raise Failure("%s listens on port %d, want %d" % (name, d.port, port))
    return d


def backend_runs(backend):
    """Whether weir-demo starts on backend (the engine refuses io_uring on some kernels)."""
    d = Demo("probe-" + backend, ["--backend", backend, "--addr", "127.0.0.1:0"])
    try:
        d.wait_line(r"^listening on ", T())
    except Failure:
        with open(d.err) as f:
            print("%s: weir-demo does not start: %s; skipped" % (backend, (f.readline() or "no message").strip()))
        d.p.kill()
        d.p.wait()
        return False
    d.stop()
    return True


def parse_json(m, who):
    try:
        return json.loads(m.group(m.lastindex))
    except ValueError as e:
        raise Failure("%s: %r is not JSON: %s" % (who, m.group(m.lastindex), e))


def upgrade(old, name, backend, port, extra=(), env=None, crash=False):
    """SIGQUIT old, start the successor on SOCK (with extra flags; it is
    given --upgrade-socket too, so it can be upgraded in turn). Returns
    (new, done, took), or with crash (the successor kills itself):
    (None, failed_json, reason)."""
    sock = os.path.join(OPT.tmp, "upgrade.sock")
    off = len(old.text())
    old.signal(signal.SIGQUIT)
    m = old.wait_line(r"^handover: offered at (.+)$", T(), off)
    if m.group(1) != sock:
        raise Failure("%s offered at %r, want %r" % (old.name, m.group(1), sock))
    new = demo(name, backend, port, "--take-over", sock, "--upgrade-socket", sock, *extra,
               env=dict(os.environ, **env) if env else None, listening=not crash)
    if crash:
        rc = new.wait_exit(T())
        if rc != -signal.SIGKILL:
            raise Failure("%s (%s) exited with %s, want SIGKILL" % (name, env, describe(rc)))
        m = old.wait_line(r"^handover: failed: (.*) (\{.*\})$", T(), off)
        time.sleep(0.05)
        if not old.alive():
            raise Failure("%s exited (%s) after its successor crashed" % (old.name, describe(old.p.returncode)))
        return None, parse_json(m, old.name), m.group(1)
    # The deadline bounds the in-flight exchanges; the rest is process start and exit.
    m = old.wait_line(r"^handover: (done|failed: .*) (\{.*\})$", T() + OPT.deadline_ms / 1000.0, off)
    if m.group(1) != "done":
        raise Failure("%s: handover: %s %s" % (old.name, m.group(1), m.group(2)))
    done = parse_json(m, old.name)
    rc = old.wait_exit(T())
    if rc != 0:
        raise Failure("%s exited with %s after handover: done" % (old.name, describe(rc)))
    took = parse_json(new.wait_line(r"^handover: took (\{.*\})$", T()), name)
    return new, done, took


def ledger(step, done, took):
    """The rules of a handover that moved everything; returns the broken ones."""
    bad = []
    want = {"listeners", "sent", "returned", "closed", "moving_ms"} - done.keys()
    want |= {"listeners", "received", "refused", "lost"} - took.keys()
    if want:
        raise Failure("%s: keys missing from done/took: %s" % (step, sorted(want)))
    if not (done["listeners"] == took["listeners"] >= 1):
        bad.append("%s: listeners %s offered, %s taken" % (step, done["listeners"], took["listeners"]))
    if done["sent"] != took["received"] + took["refused"]:
        bad.append("%s: sent %d != received %d + refused %d" % (step, done["sent"], took["received"], took["refused"]))
    for side, k in ((took, "refused"), (took, "lost"), (done, "closed"), (done, "returned")):
        if side[k] != 0:
            bad.append("%s: %s %d, want 0" % (step, k, side[k]))
    return bad


def arrow(a, b):
    return "%s->%s" % (a, b)


class Steps:
    """Client counts between the steps of an arm, so a loss is pinned to one."""

    def __init__(self, load):
        self.load, self.last, self.bad = load, load.snapshot(), []

    def mark(self, step, clean=True):
        now = self.load.snapshot()
        d = {f: getattr(now, f) - getattr(self.last, f) for f in ("ok", "failed", "resets", "refused", "reconnects")}
        self.last = now
        if clean and (d["failed"] or d["resets"] or d["refused"] or d["reconnects"]):
            self.bad.append("%s: clients saw %s" % (step, d))
        return d


def finish(load, last):
    """Stops the clients, then the last demo; returns the totals."""
    stuck = load.stop()
    if stuck:
        raise Failure("clients still running after stop: %s" % stuck)
    last.stop()
    return load.snapshot()


def hold(totals, what):
    """The clients of an arm that must hold lost nothing."""
    bad = []
    for f in ("failed", "resets", "refused", "reconnects"):
        if getattr(totals, f):
            bad.append("%s: %s %d, want 0 (%s)" % (what, f, getattr(totals, f), "; ".join(totals.samples[:4])))
    if totals.ok == 0:
        bad.append("%s: no request answered" % what)
    return bad


def arm_plain(backends):
    """MUST LOSE: what a deploy without a handover does to the same clients."""
    b = backends[0]
    cur = demo("plain-0", b, 0)
    port = cur.port
    load = Load(port, COUNTS, T(5))
    load.start()
    time.sleep(0.5)
    steps = Steps(load)
    for k in range(1, 4):
        cur.stop()
        t0 = time.monotonic()
        cur = demo("plain-%d" % k, b, port)
        gap = (time.monotonic() - t0) * 1000
        time.sleep(0.5)  # the clients go on across the gap and past it
        d = steps.mark("restart %d" % k, clean=False)
        print("plain restart %d: no listener for %.0f ms; clients: %s" %
              (k, gap, ", ".join("%s %d" % kv for kv in d.items())))
    totals = finish(load, cur)
    print("plain (must lose): 3 stop-and-starts on %s: %s (%s)" % (b, totals.line(), "; ".join(totals.samples)))
    if totals.losses() == 0:
        raise Failure("plain stop-and-start lost nothing: this test could not see a loss")
    return []


def arm_main(backends):
    """MUST HOLD: N back-to-back upgrades under the four kinds of load."""
    seq = lambda g: backends[((g + 1) // 2) % len(backends)]  # e->u, u->u, u->e, e->e, ...
    deadline = ("--handover-deadline-ms", str(OPT.deadline_ms))
    sock = os.path.join(OPT.tmp, "upgrade.sock")
    cur = demo("main-0", seq(0), 0, "--upgrade-socket", sock, *deadline)
    port = cur.port
    load = Load(port, COUNTS, T(5))
    load.start()
    time.sleep(0.5)
    steps, bad, handed, moving, kinds = Steps(load), [], [], [], {}
    for r in range(1, OPT.rounds + 1):
        time.sleep(OPT.dwell)
        met = cur.metrics()
        if int(met.get("requests", 0)) <= 0:
            bad.append("%s served no request before its upgrade" % cur.name)
        if met.get("closes.handover", "0") != "0":
            bad.append("%s: closes.handover %s" % (cur.name, met["closes.handover"]))
        step = "upgrade %d %s" % (r, arrow(seq(r - 1), seq(r)))
        new, done, took = upgrade(cur, "main-%d" % r, seq(r), port, extra=deadline)
        bad += ledger(step, done, took)
        d = steps.mark(step)
        handed.append(done["sent"])
        moving.append(float(done["moving_ms"]))
        kinds[arrow(seq(r - 1), seq(r))] = kinds.get(arrow(seq(r - 1), seq(r)), 0) + 1
        print("%s: sent %d, received %d, listeners %d, moving %.1f ms; clients +%d ok" %
              (step, done["sent"], took["received"], done["listeners"], float(done["moving_ms"]), d["ok"]))
        cur = new
    time.sleep(OPT.dwell)
    steps.mark("after the last upgrade")
    totals = finish(load, cur)
    bad += steps.bad + hold(totals, "main")
    persistent = load.persistent()
    if totals.reconnects == 0:  # then every keep-alive and pipelined connection lived through every step
        for r, n in enumerate(handed, 1):
            if n < persistent:
                bad.append("upgrade %d sent %d connections, but %d client connections lived through it" %
                           (r, n, persistent))
    if handed:
        print("main: %d upgrades (%s): requests %d ok (%s); connections handed per upgrade "
              "min %d, median %d, max %d; max moving_ms %.1f; failed %d, resets %d, refused %d, reconnects %d" %
              (len(handed), ", ".join("%s %d" % kv for kv in sorted(kinds.items())), totals.ok, load.by_kind(),
               min(handed), statistics.median(handed), max(handed), max(moving),
               totals.failed, totals.resets, totals.refused, totals.reconnects))
    return bad


def arm_listeners_only(backends):
    """MUST LOSE: only the listeners move; keep-alive connections are closed."""
    sock = os.path.join(OPT.tmp, "upgrade.sock")
    cur = demo("lonly-0", backends[0], 0, "--upgrade-socket", sock, "--handover-listeners-only")
    load = Load(cur.port, COUNTS, T(5))
    load.start()
    time.sleep(0.5)
    new, done, took = upgrade(cur, "lonly-1", backends[-1], cur.port)
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


def arm_crash(backends):
    """MUST HOLD: a successor that dies mid-handover costs the clients nothing."""
    sock = os.path.join(OPT.tmp, "upgrade.sock")
    cur = demo("crash-0", backends[0], 0, "--upgrade-socket", sock)
    load = Load(cur.port, COUNTS, T(5))
    load.start()
    time.sleep(0.5)
    steps, bad = Steps(load), []
    for crash in ("listeners", "images:4"):
        before = int(cur.metrics().get("requests", 0))
        _, failed, reason = upgrade(cur, "crash-" + crash.replace(":", ""), backends[-1], cur.port,
                                    env={"WEIR_HANDOVER_TEST_CRASH": crash}, crash=True)
        time.sleep(0.5)
        met = cur.metrics()
        served = int(met.get("requests", 0)) - before
        d = steps.mark("crash=" + crash)
        print("crash=%s: handover: failed: %s %s; the old process served %d requests since; clients +%d ok" %
              (crash, reason, json.dumps(failed), served, d["ok"]))
        if served <= 0:
            bad.append("crash=%s: the old process served nothing after the failure" % crash)
        if met.get("closes.handover") != "0":  # the reason is named, and nothing was closed for it
            bad.append("crash=%s: the old process's closes.handover is %s, want 0" %
                       (crash, met.get("closes.handover", "missing")))
        if crash.startswith("images:") and failed.get("returned", 0) < int(crash.split(":")[1]):
            bad.append("crash=%s: returned %s, want >= %s (the images the successor died holding)" %
                       (crash, failed.get("returned"), crash.split(":")[1]))
    new, done, took = upgrade(cur, "crash-after", backends[-1], cur.port)
    bad += ledger("the upgrade after the crashes", done, took)
    time.sleep(0.3)
    steps.mark("the upgrade after the crashes")
    totals = finish(load, new)
    print("crash: then an upgrade: sent %d, received %d; clients: %s" % (done["sent"], took["received"], totals.line()))
    return bad + steps.bad + hold(totals, "crash")


def arm_nosuccessor(backends):
    """MUST HOLD: an offer nobody takes ends at --handover-wait-ms with
    "handover: failed" (weir_handover_wait returns -ETIMEDOUT then too, the
    handover's own error: the demo asks its state; told apart by the code
    alone, it polled such an offer for ever and refused every later SIGQUIT
    as "one is under way"), and the demo serves on and offers again."""
    sock = os.path.join(OPT.tmp, "upgrade.sock")
    cur = demo("nosucc-0", backends[0], 0, "--upgrade-socket", sock, "--handover-wait-ms", "300")
    load = Load(cur.port, {"keepalive": 4, "churn": 2}, T(5))
    load.start()
    bad = []
    for k in range(2):
        off = len(cur.text())
        cur.signal(signal.SIGQUIT)
        m = cur.wait_line(r"^handover: (offered at .*|not offered: .*)$", T(), off)
        if not m.group(1).startswith("offered"):
            bad.append("nosuccessor: offer %d: %s" % (k + 1, m.group(1)))
            break
        m = cur.wait_line(r"^handover: (done|failed: .*) (\{.*\})$", T(1), off)
        print("nosuccessor: offer %d with nobody to take it: handover: %s" % (k + 1, m.group(1)))
        if not m.group(1).startswith("failed"):
            bad.append("nosuccessor: offer %d ended %r, want failed" % (k + 1, m.group(1)))
    time.sleep(0.3)
    totals = finish(load, cur)
    return bad + hold(totals, "nosuccessor")


ARMS = {"plain": arm_plain, "main": arm_main, "listeners-only": arm_listeners_only, "crash": arm_crash,
        "nosuccessor": arm_nosuccessor}


def sanitizer_reports():
    found = []
    for d in PROCS:
        with open(d.err, errors="replace") as f:
            text = f.read()
        for mark in SAN_MARKS:
            if mark in text:
                i = text.index(mark)
                found.append("%s: %s" % (d.name, text[i : i + 2000]))
                break
    return found


def report_logs():
    for d in PROCS[-6:]:
        for path in (d.out, d.err):
            with open(path, errors="replace") as f:
                lines = [l for l in f.read().splitlines() if not re.match(r"^[a-z_.]+ \S+$", l)]
            if lines:
                print("--- %s" % path)
                print("\n".join(lines[-15:]))


def run_arms(ap, table, opt, backend_runs, after=lambda: []):
    """Runs the arms opt.arms names (out of table) on the backends of
    opt.backends that start, kills every process left, and reports: 0 when
    every arm held, else 1 with each failure and the logs. after() adds
    failures found once the processes are gone (sanitizer reports).
    go_handover.py runs its arms through this too."""
    arms = [a for a in opt.arms.split(",") if a]
    for a in arms:
        if a not in table:
            ap.error("unknown arm %r (of %s)" % (a, ", ".join(table)))
    backends = [b for b in opt.backends.split(",") if b and backend_runs(b)]
    if not backends:
        print("FAIL: no backend starts")
        return 1
    bad = []
    try:
        for a in arms:
            t0 = time.monotonic()
            bad += table[a](backends)
            print("arm %s: %.1f s" % (a, time.monotonic() - t0))
    except Failure as e:
        bad.append(str(e))
    finally:
        for d in PROCS:
            if d.alive():
                d.p.kill()
                d.p.wait()
    bad += after()
    if bad:
        print("FAIL: " + "\nFAIL: ".join(bad))
        report_logs()
        return 1
    return 0


def main():
    global OPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--arms", default="plain,main,listeners-only,crash,nosuccessor")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--backends", default="epoll,uring")
    ap.add_argument("--slow", type=float, default=1.0, help="time factor for every bound (sanitizers)")
    ap.add_argument("--dwell", type=float, default=0.15, help="s of load on each process before its upgrade")
    ap.add_argument("--deadline-ms", type=int, default=5000)
    OPT = ap.parse_args()
    return run_arms(ap, ARMS, OPT, backend_runs, sanitizer_reports)

if __name__ == "__main__":
    sys.exit(main())
