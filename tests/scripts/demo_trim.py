#!/usr/bin/env python3
"""Memory that follows the load (issue 32; docs/reliability.md "Memory after
a burst"), for tests/scripts/demo_trim.sh: a child weir-demo (one worker,
--trim-interval-ms 200) on the backend given, 2,000 keep-alive connections
that each get one answer and then sit idle, arriving

  gentle    64 at a time (each wave answered before the next connects),
  burst     all 2,000 at once, with the trim on (the rule),
  held      all 2,000 at once, each head sent in two parts with a pause
            between, so every connection holds a state at the same moment,
            with the trim on (the rule),
  held-off  the same with --trim-interval-ms off (the negative arm).

Each run reads the child's VmRSS growth per connection from /proc/PID/status
after the trim's 3 windows (and two more) have passed, and its metrics
(SIGHUP): mem_pooled_bytes, mem_returned_bytes, mem_trims.

Checked: the bursts with the trim cost within their bound of the gentle
arrival per idle connection, their pools are back to at most 2 states'
bytes and the trim counted what it returned; the negative arm keeps more
than LOSS_MARGIN times the held burst's bound and its pool stays full (that
is the loss the rule prevents: without the trim the held burst's check
fails, which is what the negative arm shows).

Why the held burst carries the negative arm: how many states a burst of
whole requests holds at once depends on how its 2,000 reads meet the loop's
passes (on io_uring bimodal, 13-14 or 46 states), so its arm without the
trim kept 1.2x to 8x and once failed its margin on CI (at 96bacf2's parent:
793 B against a gentle 659, 1.20x). Held heads pin the count at 2,000: the
arm keeps ~50x, every run.
Exit 0 pass, 77 backend unavailable, 1 fail.
"""
import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import time

B = os.environ.get("B", "build")
N = 2000
WINDOW_MS = 200
SETTLE_S = 5 * WINDOW_MS / 1000 + 0.5  # three windows, a margin of two, and the last pass
# The bound for a burst of whole requests, on both backends. Measured
# here (2 cores, glibc 2.36, weir-demo's defaults, TCP_DEFER_ACCEPT on):
# epoll 1.01-1.04x, io_uring 1.03-1.07x. Before the quiet pool kept no slack
# (trim.h, TrimPolicy::end_window) epoll stayed at 1.32-1.37x: the 8 idle
# states of the slack (about 460 KiB) were what the burst left, and the
# mutant that keeps them fails this bound.
BURST_OVER_GENTLE = 1.1
# Held heads take 2,000 states (~130 MB) at once; after the trim the
# allocator keeps 120-230 KB of its freed heap resident, 1.13-1.17x on
# epoll and 1.20-1.22x on io_uring here (60-115 B a connection): the slot
# chunks taken during the burst (64 slots each, 31 of them) outlive the
# states between them, and each free chunk left between two keeps its first
# and torn last page (malloc_trim gives back only whole free pages; glibc's
# malloc_info read 29 free chunks after the trim). Tried 2026-12-07: slot
# and ticket chunks mmapped apart from the heap brought this to 1.12-1.15x
# but moved the burst of whole requests on io_uring from 1.01-1.05x to
# 1.07-1.10x, against its 1.1x bound; not kept.
HELD_OVER_GENTLE = 1.3
# The negative arm must fail the held burst's bound with a margin; without
# the trim it keeps ~50x. The pooled-bytes check below is its second
# witness: at least LOSS_STATES states kept, four times the rule's ceiling.
LOSS_MARGIN = 1.25
STATE_BYTES = (64 + 2) * 1024  # a 64 KiB buffer and the state itself
LOSS_STATES = 8
REQ = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
HALF = 16  # the request line; the rest follows after HOLD_S
HOLD_S = 0.3  # ample for one worker to read 2,000 partial heads


def fail(msg):
    print("FAIL:", msg, flush=True)
    sys.exit(1)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Lines:
    """The child's output, line by line, with a deadline (select on a
    buffered file object misses lines read ahead into its buffer)."""

    def __init__(self, f):
        self.fd, self.buf = f.fileno(), b""

    def next(self, deadline):
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            d = os.read(self.fd, 65536)
            if not d:
                return None
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")


def start(backend, trim):
    p = subprocess.Popen([f"{B}/bin/weir-demo", "--addr", "127.0.0.1:0", "--backend", backend, "--workers", "1",
                          "--app", "hello", "--trim-interval-ms", trim],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    p.lines = Lines(p.stdout)
    deadline = time.monotonic() + 10
    out = []
    while (line := p.lines.next(deadline)) is not None:
        out.append(line + "\n")
        m = re.search(r"listening on \[?[0-9.]+\]?:(\d+)", line)
        if m:
            return p, int(m.group(1))
    p.kill()
    p.wait()
    text = "".join(out)
    if "unavailable" in text:
        print(f"{backend}: unavailable on this kernel: {text.strip()}")
        sys.exit(77)
    fail(f"weir-demo did not start: {text}")


def metrics(p):
    p.send_signal(signal.SIGHUP)
    m = {}
    deadline = time.monotonic() + 5
    while (line := p.lines.next(deadline)) is not None:
        if line.startswith("metrics end"):
            return m
        t = line.split()
        if len(t) == 2 and t[1].isdigit():
            m[t[0]] = int(t[1])
    fail("no metrics after SIGHUP")


def answer(c):
    got = b""
    c.settimeout(10)
    while b"Hello, World!" not in got:
        d = c.recv(4096)
        if not d:
            fail("a connection closed before its answer")
        got += d


def run(backend, trim, wave, held=False):
    p, port = start(backend, trim)
    conns = []
    try:
        w = socket.create_connection(("127.0.0.1", port))  # warm: one request served
        w.sendall(REQ)
        answer(w)
        time.sleep(SETTLE_S)
        r0 = rss_kb(p.pid)
        t0 = time.monotonic()
        for i in range(0, N, wave):
            batch = [socket.create_connection(("127.0.0.1", port)) for _ in range(min(wave, N - i))]
            parts = (REQ[:HALF], REQ[HALF:]) if held else (REQ,)
            for k, part in enumerate(parts):
                if k:
                    time.sleep(HOLD_S)
                for c in batch:
                    c.sendall(part)
            for c in batch:
                answer(c)
            conns += batch
        arrive_s = time.monotonic() - t0
        time.sleep(SETTLE_S)
        per = (rss_kb(p.pid) - r0) * 1024 / N
        m = metrics(p)
        if m.get("connections_open", 0) != N + 1:
            fail(f"{backend}: {m.get('connections_open')} connections open, want {N + 1}")
        return per, m, arrive_s
    finally:
        for c in conns:
            c.close()
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def main():
    backend = sys.argv[1]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < N + 256:  # the client's; weir-demo raises its own
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, N + 1024), hard))
    gentle, mg, _ = run(backend, str(WINDOW_MS), 64)
    burst, mb, ab = run(backend, str(WINDOW_MS), N)
    held, mh, _ = run(backend, str(WINDOW_MS), N, held=True)
    off, mo, _ = run(backend, "off", N, held=True)
    print(f"{backend}: idle keep-alive bytes per connection after {N}: gentle (64 at a time) {gentle:.0f}, "
          f"burst with the trim {burst:.0f} ({burst / gentle:.2f}x, arrived in {ab:.2f} s), "
          f"held heads with the trim {held:.0f} ({held / gentle:.2f}x), without it {off:.0f} ({off / gentle:.2f}x); "
          f"pooled bytes {mb['mem_pooled_bytes']}, {mh['mem_pooled_bytes']} vs {mo['mem_pooled_bytes']} without; "
          f"returned {mb['mem_returned_bytes']} in {mb['mem_trims']} trims, {mh['mem_returned_bytes']} in "
          f"{mh['mem_trims']}", flush=True)
    # The rule, for both bursts.
    for name, per, m, bound in (("burst", burst, mb, BURST_OVER_GENTLE), ("held burst", held, mh, HELD_OVER_GENTLE)):
        if per > bound * gentle:
            fail(f"{backend}: after the {name} {per:.0f} B per idle connection, over {bound}x the gentle "
                 f"arrival's {gentle:.0f}")
        if m["mem_trims"] < 1 or m["mem_returned_bytes"] == 0:
            fail(f"{backend}: no trim counted after the {name}: {m}")
        # Once the burst is out of the remembered windows the pool keeps
        # what the quiet windows held at once (the warm connection's, the
        # metrics request's): a state or two, each a 64 KiB buffer plus
        # the state itself.
        if m["mem_pooled_bytes"] > 2 * STATE_BYTES:
            fail(f"{backend}: the pool kept {m['mem_pooled_bytes']} bytes after the {name} passed")
    # The negative arm: the loss the rule prevents is there without it.
    if off < LOSS_MARGIN * HELD_OVER_GENTLE * gentle:
        fail(f"{backend}: without the trim {off:.0f} B per connection, not {LOSS_MARGIN}x the rule's "
             f"bound ({HELD_OVER_GENTLE}x the gentle {gentle:.0f}): the arm shows no loss, "
             f"so the test could not fail")
    if mo["mem_trims"] != 0 or mo["mem_pooled_bytes"] < LOSS_STATES * STATE_BYTES:
        fail(f"{backend}: the arm without the trim trimmed or kept fewer than {LOSS_STATES} states' bytes: {mo}")
    print(f"{backend}: ok")


main()
