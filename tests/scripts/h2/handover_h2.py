#!/usr/bin/env python3
"""The driver of tests/scripts/h2_handover.sh: weir-demo's hot upgrade across two
processes (--upgrade-socket, --take-over; docs/upgrade.md) with HTTP/2
clients on it. An HTTP/2 session is not moved by its image: the old
process drains it by GOAWAY (docs/http2.md, "Moves") and the client opens
its next connection to the successor, which took the listeners; a
connection that reached the old process during the move and sent only the
preface moves by image, undecided.

handover_h2.py --bin weir-demo --client h2client --tmp DIR [--arms A,B]
                    [--rounds N] [--backends epoll,uring] [--slow F]

Arms:
  h2        MUST HOLD. Go's HTTP/2 client (tests/support/h2client, h2c by
            prior knowledge, 16 requests in flight) runs through N
            back-to-back upgrades (epoll -> uring -> epoll ...): every
            request answered 200 as HTTP/2, and the client dialled again
            after each upgrade (its connection drained, not cut); each old
            process says "handover: done" with lost and refused 0 and exits
            0; each process served requests before its upgrade.
  h2-plain  MUST LOSE. SIGTERM the demo and start a new one on the same
            port under the same client: requests fail (refused connects in
            the gap). The h2 arm's client could see a loss.
Exits 0, or 1 after "FAIL:"."""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

import demo_handover as dh


def client(port, seconds, name):
    out = open(os.path.join(dh.OPT.tmp, name + ".out"), "w+")
    p = subprocess.Popen([OPT.client, "-addr", "127.0.0.1:%d" % port, "-n", "100000000", "-c", "16",
                          "-for", "%.1fs" % seconds, "-timeout", "%.0fs" % (seconds + dh.T(6))],
                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    return p, out


def client_result(p, out, seconds):
    try:
        rc = p.wait(seconds + dh.T(10))
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise dh.Failure("h2client still running %.0f s after its load ended" % dh.T(10))
    out.seek(0)
    text = out.read()
    m = re.search(r"^h2client: (\d+) requests, \d+ concurrent, (\d+) connections: ok$", text, re.M)
    return rc, text, (int(m.group(1)), int(m.group(2))) if m else None


def arm_h2(backends):
    seq = lambda g: backends[((g + 1) // 2) % len(backends)]
    deadline = ("--handover-deadline-ms", str(dh.OPT.deadline_ms))
    sock = os.path.join(dh.OPT.tmp, "upgrade.sock")
    cur = dh.demo("h2-0", seq(0), 0, "--upgrade-socket", sock, *deadline)
    port = cur.port
    seconds = 1.0 + OPT.rounds * (OPT.dwell + 0.6)
    p, out = client(port, seconds, "h2client-h2")
    time.sleep(0.5)
    bad, t0 = [], time.monotonic()
    for r in range(1, OPT.rounds + 1):
        time.sleep(OPT.dwell)
        met = cur.metrics()
        if int(met.get("requests", 0)) <= 0:
            bad.append("%s served no request before its upgrade" % cur.name)
        new, done, took = dh.upgrade(cur, "h2-%d" % r, seq(r), port, extra=deadline)
        for k in ("lost", "refused"):
            if done.get(k, 0) != 0:
                bad.append("upgrade %d: %s %s (%s)" % (r, k, done[k], done))
        print("upgrade %d %s: %s" % (r, dh.arrow(seq(r - 1), seq(r)), done))
        cur = new
    upgrades_s = time.monotonic() - t0
    if p.poll() is not None:
        bad.append("the client's load ended before the last upgrade (%.1f s of upgrades): it saw only part" %
                   upgrades_s)
    rc, text, res = client_result(p, out, seconds)
    met = cur.metrics()
    cur.stop()
    if rc != 0 or not res:
        bad.append("h2client across %d upgrades: exit %d: %s" % (OPT.rounds, rc, text.strip()[-800:]))
        return bad
    n, dials = res
    print("h2: %d upgrades; h2client %d requests ok over %d connections; the last process served %s" %
          (OPT.rounds, n, dials, met.get("requests")))
    if dials < OPT.rounds + 1:
        bad.append("h2client dialled %d times over %d upgrades: a connection was not drained to the successor" %
                   (dials, OPT.rounds))
    if int(met.get("requests", 0)) <= 0:
        bad.append("the last process served no request")
    return bad


def arm_h2_plain(backends):
    cur = dh.demo("h2plain-0", backends[0], 0)
    port = cur.port
    seconds = 1.0 + 3 * 0.6
    p, out = client(port, seconds, "h2client-plain")
    time.sleep(0.5)
    for k in range(1, 4):
        cur.stop()
        cur = dh.demo("h2plain-%d" % k, backends[0], port)
        time.sleep(0.4)
    rc, text, res = client_result(p, out, seconds)
    cur.stop()
    last = text.strip().splitlines()[-1] if text.strip() else ""
    print("h2-plain (must lose): 3 stop-and-starts: h2client exit %d: %s" % (rc, last))
    if rc == 0:
        return ["h2-plain: the client lost nothing across 3 stop-and-starts: this test could not see a loss"]
    if not re.search(r"requests failed$", last):
        return ["h2-plain: h2client failed for another reason: %s" % text.strip()[-800:]]
    return []


ARMS = {"h2": arm_h2, "h2-plain": arm_h2_plain}
OPT = None


def main():
    global OPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--client", required=True)
    ap.add_argument("--tmp", required=True)
    ap.add_argument("--arms", default="h2-plain,h2")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--backends", default="epoll,uring")
    ap.add_argument("--slow", type=float, default=1.0)
    ap.add_argument("--dwell", type=float, default=0.3)
    ap.add_argument("--deadline-ms", type=int, default=5000)
    OPT = dh.OPT = ap.parse_args()
    return dh.run_arms(ap, ARMS, OPT, dh.backend_runs, dh.sanitizer_reports)


if __name__ == "__main__":
    sys.exit(main())
