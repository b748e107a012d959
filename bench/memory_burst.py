#!/usr/bin/env python3
"""Memory after a burst (issue 32), for scripts/run-bench's memory part and
on its own: `python3 bench/memory_burst.py [N] [RUNS]`.

N keep-alive connections (default 2000) each get one GET answered and then sit
idle, arriving either 64 at a time (gentle: each wave answered before the
next connects) or all N at once (burst). The server's VmRSS growth per
connection is read after SETTLE_S (weir's trim, 1 s windows by default,
gives a burst back 3 windows after it). Servers: weir-demo on epoll and on
io_uring, each with the trim (the default) and with --trim-interval-ms off,
nginx (one worker, the bench's config) where it is installed, and for
contrast the Go peers of scripts/bench-go (fasthttp, celeris v1.5.8 on its
two engines; built as bench-go builds them, left out where Go or the celeris
snapshot is missing). The Go peers run with GOMAXPROCS=1 where they allow it
(celeris asks for 2 workers): their RSS then holds one P's caches, as weir's
one worker does; Go returns freed heap to the kernel on its own scavenger's
schedule, which SETTLE_S does not wait for.
"""
import os
import resource
import shutil
import socket
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
B = os.path.join(ROOT, "build")
SETTLE_S = 4.5  # three 1 s windows and a margin
REQ = b"GET / HTTP/1.1\r\nHost: b\r\n\r\n"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def answer(c):
    got = b""
    c.settimeout(10)
    while b"Hello, World!" not in got:
        d = c.recv(4096)
        if not d:
            raise RuntimeError("closed before its answer")
        got += d


def connect(port, deadline=10.0):
    end = time.monotonic() + deadline
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port))
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


def nginx_conf(port):
    tmp = os.path.join(B, "bench", "burst-nginx")
    os.makedirs(os.path.join(tmp, "t"), exist_ok=True)
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1; daemon off; master_process off; pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn; worker_rlimit_nofile 20000;
events {{ worker_connections 12000; use epoll; }}
http {{ access_log off; keepalive_timeout 65; keepalive_requests 100000000;
  client_body_temp_path {tmp}/t/b; proxy_temp_path {tmp}/t/p; fastcgi_temp_path {tmp}/t/f;
  uwsgi_temp_path {tmp}/t/u; scgi_temp_path {tmp}/t/s;
  server {{ listen 127.0.0.1:{port} backlog=4096;
    location / {{ default_type text/plain; return 200 "Hello, World!"; }} }} }}
""")
    return ["/usr/sbin/nginx", "-p", tmp, "-c", conf]


def go_peers():
    """(label, command maker) for the Go peers bench-go builds; [] where they
    cannot be built here."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        from benchgo import servers as bg  # noqa: E402  (scripts/benchgo)
    except ImportError:
        return []
    kinds = ["fasthttp", "celeris-epoll", "celeris-iouring"]
    bg.SERVERS[:] = kinds
    try:
        bg.build()  # drops what it cannot build from bg.SERVERS
    except SystemExit as e:
        print(f"  burst: Go peers left out: {e}", flush=True)
        return []
    out = []
    for k in bg.SERVERS:
        cmd = [bg.binary(k)] + bg.KINDS[k][1][1:]
        out.append((bg.KINDS[k][0], lambda p, c=cmd: c + ["--addr", f"127.0.0.1:{p}"]))
    return out


def servers(peers=True):
    demo = os.path.join(B, "bin", "weir-demo")
    base = ["--workers", "1", "--mode", "inline", "--app", "hello"]
    out = []
    for backend, label in (("epoll", "weir"), ("uring", "weir-uring")):
        out.append((f"{label} (trim)", lambda p, b=backend: [demo, "--addr", f"127.0.0.1:{p}", "--backend", b] + base))
        out.append((f"{label} (trim off)", lambda p, b=backend: [demo, "--addr", f"127.0.0.1:{p}", "--backend", b,
                                                                 "--trim-interval-ms", "off"] + base))
    if os.path.exists("/usr/sbin/nginx"):
        out.append(("nginx", nginx_conf))
    return out + (go_peers() if peers else [])


def one(make_cmd, n, wave):
    port = free_port()
    # GOMAXPROCS=1 reaches only the Go peers; celeris raises it to its workers.
    p = subprocess.Popen(make_cmd(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=dict(os.environ, GOMAXPROCS="1"))
    conns = []
    try:
        w = connect(port)
        w.sendall(REQ)
        answer(w)
        conns.append(w)
        time.sleep(SETTLE_S)
        r0 = rss_kb(p.pid)
        for i in range(0, n, wave):
            batch = [socket.create_connection(("127.0.0.1", port)) for _ in range(min(wave, n - i))]
            for c in batch:
                c.sendall(REQ)
            for c in batch:
                answer(c)
            conns += batch
        time.sleep(SETTLE_S)
        return (rss_kb(p.pid) - r0) * 1024 / n
    finally:
        for c in conns:
            c.close()
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def run(n=2000, runs=1, log=print):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 256:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 1024), hard))
    results = {}
    for name, make in servers():
        g = sorted(one(make, n, 64) for _ in range(runs))
        b = sorted(one(make, n, n) for _ in range(runs))
        gm, bm = g[len(g) // 2], b[len(b) // 2]
        results[name] = {"gentle": gm, "burst": bm, "ratio": bm / gm if gm > 0 else None}
        log(f"  burst {name:20} gentle (64 at a time) {gm:.0f} B/conn, burst ({n} at once) {bm:.0f} B/conn, "
            f"{bm / gm:.2f}x")
    return results


def table(results, n):
    lines = [f"| server | gentle: {n} arriving 64 at a time, B per idle connection | burst: {n} at once | burst / gentle |",
             "|---|---:|---:|---:|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['gentle']:.0f} | {r['burst']:.0f} | {r['ratio']:.2f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    res = run(n, runs)
    print(table(res, n))
