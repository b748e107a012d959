#!/usr/bin/env python3
"""Server instructions per HTTP/1 request, by callgrind (issue 31's +3 % rule).

  python3 bench/callgrind_h1.py BUILD_DIR [--backend epoll] [--small 500] [--large 3000]

Runs BUILD_DIR/bin/weir-demo (one worker, inline, 127.0.0.1:0) under
`valgrind --tool=callgrind` twice: once answering --small keep-alive `GET /`
requests on one connection, once --large, from a client that sends the next
request only when the whole answer is in (so every request is one read and
one write on the server). The difference of the two totals over the
difference of the counts is the per-request cost, free of start-up and
shutdown. Prints one line: "BUILD_DIR backend Ir/request". Loopback only,
bounded in time (each request waits at most 10 s). epoll only in practice:
valgrind does not follow io_uring (the server under it never ends its run),
so the uring backend is killed after 60 s and reported as not measured.
"""
import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time


def demo_port(p, log, tries):
    """The port weir-demo (started as p, its stdout in log) says it listens on."""
    for _ in range(tries):
        log.seek(0)
        m = re.search(r"^listening on .*:(\d+)$", log.read(), re.M)
        if m:
            return int(m.group(1))
        time.sleep(0.05)
    p.kill()
    sys.exit("weir-demo printed no 'listening on' line")


def stop_and_total(p, out, what):
    """Ends a server under callgrind by SIGTERM and returns its total Ir (callgrind writes them at exit)."""
    p.send_signal(signal.SIGTERM)
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        sys.exit("%s under valgrind did not end within 60 s of SIGTERM: not measured" % what)
    for line in open(out):
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    sys.exit("no totals in " + out)


def run(build, backend, n, tmp):
    out = os.path.join(tmp, "cg.%s.%d" % (backend, n))
    log = open(os.path.join(tmp, "server.%d.out" % n), "w+")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
                          os.path.join(build, "bin", "weir-demo"), "--addr", "127.0.0.1:0",
                          "--backend", backend, "--workers", "1", "--mode", "inline"],
                         stdout=log, stderr=subprocess.DEVNULL)
    port = demo_port(p, log, 600)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    req = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n"
    for _ in range(n):
        s.sendall(req)
        buf = b""
        while True:
            buf += s.recv(65536)
            head, sep, body = buf.partition(b"\r\n\r\n")
            if sep:
                m = re.search(rb"content-length: *(\d+)", head, re.I)
                if m and len(body) >= int(m.group(1)):
                    break
    s.close()
    return stop_and_total(p, out, "%s: weir-demo" % backend)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--backend", default="epoll")
    ap.add_argument("--small", type=int, default=500)
    ap.add_argument("--large", type=int, default=3000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lo = run(a.build, a.backend, a.small, tmp)
        hi = run(a.build, a.backend, a.large, tmp)
    print("%s %s %.1f" % (a.build, a.backend, (hi - lo) / (a.large - a.small)))


if __name__ == "__main__":
    main()
