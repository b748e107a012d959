#!/usr/bin/env python3
"""Server instructions per HTTP/2 request, by callgrind (issue 31's h2load gap).

  python3 bench/callgrind_h2.py BUILD_DIR [--small 2000] [--large 10000]
                                [--conns 4] [--streams 16] [--annotate FILE]
                                [--server weir|h2o]

Runs BUILD_DIR/bin/weir-demo (epoll, one worker, inline, --app hello,
--protocols h2c on 127.0.0.1:0; bench/h2/run.py's server) under
`valgrind --tool=callgrind` twice: once answering --small requests, once
--large, each from `h2load -c CONNS -m STREAMS -n N` (h2c by prior
knowledge, GET /, 13-byte body). The difference of the two totals over the
difference of the counts is the per-request cost, free of start-up, the
connections' prefaces and shutdown. Instruction counts do not depend on the
machine's load, so this is the figure to compare on a shared machine
(timings are not). Prints one line: "SERVER Ir/request".

--annotate FILE writes callgrind_annotate's per-function breakdown (inclusive
of nothing: self cost) of the large run to FILE.

--server h2o runs Debian's h2o instead (bench/h2/run.py's configuration:
file.file of the same 13-byte body, one thread) as the reference point; it
is daemonless and ends on SIGTERM like weir-demo. valgrind follows only the
process it starts, which for h2o is the server itself (no master).

Loopback only; each h2load run is bounded (10 minutes). epoll only: valgrind
does not follow io_uring (see bench/callgrind_h1.py).
"""
import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from callgrind_h1 import demo_port, stop_and_total  # noqa: E402  one way to start and read a server under callgrind

BODY = b"Hello, World!"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(a, tmp, out, n):
    log = open(os.path.join(tmp, "server.%d.out" % n), "w+")
    vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out]
    if a.server == "weir":
        cmd = vg + [os.path.join(a.build, "bin", "weir-demo"), "--addr", "127.0.0.1:0", "--backend", "epoll",
                    "--workers", "1", "--mode", "inline", "--app", "hello", "--protocols", "h2c"]
        p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.DEVNULL)
        return p, demo_port(p, log, 1200)
    hello = os.path.join(tmp, "hello.txt")
    with open(hello, "wb") as f:
        f.write(BODY)
    port = free_port()
    conf = os.path.join(tmp, "h2o.conf")
    user = os.environ.get("USER") or subprocess.run(["id", "-un"], capture_output=True, text=True).stdout.strip()
    with open(conf, "w") as f:
        f.write("listen:\n  host: 127.0.0.1\n  port: %d\nnum-threads: 1\nuser: %s\n"
                "error-log: %s/h2o-error.log\nhosts:\n  default:\n    paths:\n      /:\n"
                "        file.file: %s\n" % (port, user, tmp, hello))
    p = subprocess.Popen(vg + ["--trace-children=no", shutil.which("h2o"), "-m", "worker", "-c", conf],
                         stdout=log, stderr=log)
    for _ in range(1200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return p, port
        except OSError:
            time.sleep(0.05)
    p.kill()
    sys.exit("h2o did not listen")


def run(a, n, tmp):
    out = os.path.join(tmp, "cg.%s.%d" % (a.server, n))
    p, port = start(a, tmp, out, n)
    r = subprocess.run(["h2load", "-c%d" % a.conns, "-m%d" % a.streams, "-n%d" % n,
                        "http://127.0.0.1:%d/" % port], capture_output=True, text=True, timeout=600)
    m = re.search(r"requests: \d+ total, \d+ started, \d+ done, (\d+) succeeded", r.stdout)
    if not m or int(m.group(1)) != n:
        p.kill()
        sys.exit("h2load did not succeed %d requests:\n%s%s" % (n, r.stdout, r.stderr))
    return stop_and_total(p, out, a.server), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--large", type=int, default=10000)
    ap.add_argument("--conns", type=int, default=4)
    ap.add_argument("--streams", type=int, default=16)
    ap.add_argument("--annotate")
    ap.add_argument("--keep", help="copy the large run's callgrind file here")
    ap.add_argument("--server", choices=["weir", "h2o"], default="weir")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lo, _ = run(a, a.small, tmp)
        hi, out = run(a, a.large, tmp)
        if a.annotate:
            with open(a.annotate, "w") as f:
                subprocess.run(["callgrind_annotate", "--threshold=99", out], stdout=f, check=True)
        if a.keep:
            shutil.copyfile(out, a.keep)
    print("%s %s -c%d -m%d %.1f Ir/request" % (a.server, a.build if a.server == "weir" else "-", a.conns,
                                                 a.streams, (hi - lo) / (a.large - a.small)))


if __name__ == "__main__":
    main()
