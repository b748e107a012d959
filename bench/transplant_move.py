#!/usr/bin/env python3
"""bench/transplant_move.py BACKEND N [MOVES] — the time to move N idle
keep-alive connections from weir-demo's active engine to its standby
(`--adaptive`, docs/transplant.md): bench/idle holds N connections that each
served one GET, SIGWINCH switches, and SIGHUP is polled until the new active
engine holds all N. The figure includes the polling (each SIGHUP prints the
whole metrics block), so it is an upper bound. With MOVES, the same
connections move back and forth MOVES times in all (BACKEND -> other ->
BACKEND ...), each timed, each after the previous engine's linger has
ended. Run after `make`:
python3 bench/transplant_move.py epoll 10000 4

scripts/run-bench calls move() for `make bench` (its "switch" part).
"""
import os
import resource
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import switch_dip  # noqa: E402  (bench/switch_dip.py: weir-demo --adaptive and its ledger)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TIMEOUT_S = 30
# weir-demo's default pause linger (--linger-ms 1500): the next move waits it
# out, so each one switches to a standby whose listener has closed, as the
# first does, rather than to one still lingering (a flap)
SETTLE_S = 1.5 + 0.2


def move(backend, n, root=ROOT, moves=1, settle_s=SETTLE_S):
    """Moves n idle connections off a `backend` active engine, and back and
    forth `moves` times in all (one weir-demo, one set of connections); a
    dict per move, with the ledger of the engine it left counted over that
    move alone."""
    demo, port, metrics, _ = switch_dip.start_demo(root, backend, ["--idle-timeout-ms", "600000"])
    idle, out = None, []
    try:
        idle = subprocess.Popen([os.path.join(root, "build", "bench", "idle"), "127.0.0.1", str(port), str(n)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = idle.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"bench/idle: no ready line (got {line!r})")
        for _ in range(moves):
            before = metrics.snapshot()  # the active engine's own ledger: the one it is about to leave
            if before is None:
                raise RuntimeError("weir-demo did not answer SIGHUP")
            src = before.get("adaptive.active")
            t0 = time.monotonic()
            demo.send_signal(signal.SIGWINCH)
            polls = 0
            while True:
                m = metrics.snapshot()
                polls += 1
                if m is None:
                    raise RuntimeError("weir-demo did not answer SIGHUP")
                if m.get("adaptive.active") != src and m.get("connections_open", 0) >= n:
                    break
                if time.monotonic() - t0 > TIMEOUT_S:
                    raise RuntimeError(f"not moved in {TIMEOUT_S} s: {m}")
            ms = (time.monotonic() - t0) * 1000
            # the engine they left is the standby now
            led = {k: m.get("standby." + k, 0) - before.get(k, 0) for k in switch_dip.LEDGER[:3]}
            led["transplant_in_flight"] = m.get("standby.transplant_in_flight")
            led["balanced"] = switch_dip.ledger(m)["standby"]["balanced"]
            out.append({"from": src, "to": m.get("adaptive.active"), "conns": n, "ms": round(ms, 1),
                        "polls": polls, "ledger": led, "ok": led["balanced"] and led["transplant_adopted"] == n})
            if len(out) < moves:
                time.sleep(settle_s)
        return out
    finally:
        if idle is not None:
            idle.stdin.close()
            idle.wait()
        switch_dip.stop_demo(demo)


def describe(r):
    e = r["ledger"]
    return (f"{r['from']} -> {r['to']}: {r['conns']} idle connections moved in {r['ms']:.1f} ms "
            f"({r['polls']} SIGHUP polls); ledger of the engine they left: detached {e['transplant_detached']}, "
            f"adopted {e['transplant_adopted']}, refused {e['transplant_refused']}, in flight "
            f"{e['transplant_in_flight']}{'' if r['ok'] else '  NOT BALANCED'}")


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rs = move(sys.argv[1], int(sys.argv[2]), moves=int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    for r in rs:
        print(describe(r))
    sys.exit(0 if all(r["ok"] for r in rs) else 1)


if __name__ == "__main__":
    main()
