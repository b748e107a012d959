#!/usr/bin/env python3
"""A fake systemd for tests/scripts/demo_systemd.sh (stdlib only, no systemd).

  demo_systemd.py run BIN --backend B --arm ARM   one restart of weir-demo
  demo_systemd.py clients PORT N                  the keep-alive clients (a child of `run`)

`run` plays the service manager: a listening socket as a socket unit would
hold it, $NOTIFY_SOCKET (a datagram socket taking FDSTORE=1 / FDSTOREREMOVE=1
with SCM_RIGHTS, deduplicating one socket stored twice, dropping fds that
show POLLHUP as systemd does), and the restart: SIGTERM to the first demo,
then a second one started with the listener and the store's fds at 3..
($LISTEN_PID set by `sh -c 'LISTEN_PID=$$ exec ...'`, $LISTEN_FDS,
$LISTEN_FDNAMES). Keep-alive clients run across it. The last stdout line is
`result k=v ...` (integers) for the shell script to judge.

Arms:
  store         --fdstore: the connections live on in the store (must win)
  store-unit    the same, the socket unit's listener passed too (one socket twice)
  nostore       the same restart without --fdstore (must lose: keep-alive clients see closes)
  keep-store    store, but this fake ignores FDSTOREREMOVE (must lose: a close
                by the second demo never reaches the client)
  proto         store, the images' protocol field changed (refused cleanly:
                the listener serves, the connections close, counted)
  cap           store with FileDescriptorStoreMax too small ($FDSTORE): what does
                not fit is closed by the first demo, counted
  wrongpid      $LISTEN_PID names another process: ignored, --addr is used
"""
import errno
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

SCM_MAX_FD = 253


def deadline(seconds):
    return time.monotonic() + seconds


# ---------------------------------------------------------------- clients

def clients_main(port, n):
    """n keep-alive clients (one of them asks /slow?ms=300, so a request is in
    flight at the SIGTERM), each on one connection for as long as it lasts.
    stdin: 'mark' (the restart is over: count from here), 'stop'."""
    lock = threading.Lock()
    stop = threading.Event()
    marked = threading.Event()
    stats = []

    def one(i):
        st = {"ok": 0, "after": 0, "failed": 0, "resets": 0, "closes": 0, "timeouts": 0,
              "connects": 0, "eof_after_close": 0, "no_eof_after_close": 0}
        with lock:
            stats.append(st)
        # go_systemd.sh's hello has no /slow: it sets DEMO_SYSTEMD_SLOW_PATH=/
        path = os.environ.get("DEMO_SYSTEMD_SLOW_PATH", "/slow?ms=300") if i == 0 else "/"
        s = None
        buf = b""
        while not stop.is_set():
            if s is None:
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                st["connects"] += 1
                buf = b""
            try:
                s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: t\r\n\r\n")
                resp, buf = read_response(s, buf)
                if resp is None:
                    raise EOFError
                st["ok"] += 1
                if marked.is_set():
                    st["after"] += 1
            except ConnectionResetError:
                st["resets"] += 1
                st["failed"] += 1
                s.close()
                s = None
            except (EOFError, BrokenPipeError):
                st["closes"] += 1
                st["failed"] += 1
                s.close()
                s = None
            except socket.timeout:
                st["timeouts"] += 1
                st["failed"] += 1
                s.close()
                s = None
            time.sleep(0.005)
        # The last request asks for a close: the server's close must reach us.
        if s is None:
            return
        try:
            s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            resp, buf = read_response(s, buf)
            s.settimeout(2)
            if resp is not None and s.recv(1) == b"":
                st["eof_after_close"] += 1
            else:
                st["no_eof_after_close"] += 1
        except socket.timeout:
            st["no_eof_after_close"] += 1
        except OSError:
            st["no_eof_after_close"] += 1
        s.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    end = deadline(10)
    while time.monotonic() < end:
        with lock:
            if len(stats) == n and all(x["ok"] >= 2 for x in stats):
                break
        time.sleep(0.02)
    print("ready", flush=True)
    for line in sys.stdin:
        if line.strip() == "mark":
            marked.set()
        elif line.strip() == "stop":
            break
    stop.set()
    for t in threads:
        t.join(15)
    tot = {k: sum(x[k] for x in stats) for k in stats[0]}
    tot["reconnects"] = tot.pop("connects") - n
    tot["idle_after_mark"] = sum(1 for x in stats if x["after"] == 0)
    print(json.dumps(tot), flush=True)


def read_response(s, buf):
    """One response (Content-Length framed): (head+body, rest), or (None, rest) at EOF."""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            return None, buf
        buf += d
    head, _, rest = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            length = int(v.strip())
    while len(rest) < length:
        d = s.recv(65536)
        if not d:
            return None, rest
        rest += d
    if not head.startswith(b"HTTP/1.1 200"):
        raise EOFError
    return head + rest[:length], rest[length:]


# ---------------------------------------------------------- the manager

class FakeSystemd:
    def __init__(self, tmp, abstract, keep_store):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            self.addr = "@weir-test-notify-%d" % os.getpid()
            self.sock.bind("\0" + self.addr[1:])
        else:
            self.addr = os.path.join(tmp, "notify")
            self.sock.bind(self.addr)
        self.keep_store = keep_store
        self.store = []  # [name, fd]
        self.messages = []

    def pump(self, seconds):
        end = deadline(seconds)
        while True:
            left = end - time.monotonic()
            r, _, _ = select.select([self.sock], [], [], max(0, left))
            if not r:
                if left <= 0:
                    return
                continue
            data, anc, flags, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(4 * SCM_MAX_FD))
            if flags & (socket.MSG_CTRUNC | socket.MSG_TRUNC):
                raise SystemExit("FAIL: a truncated notification")
            fds = []
            for level, typ, cdata in anc:
                if level == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
                    fds += list(struct.unpack("%di" % (len(cdata) // 4), cdata[: len(cdata) - len(cdata) % 4]))
            for fd in fds:
                os.set_inheritable(fd, False)  # only what spawn() places at 3.. reaches a demo
            self.handle(data.decode(), fds)

    def handle(self, text, fds):
        kv = dict(l.split("=", 1) for l in text.split("\n") if "=" in l)
        self.messages.append((kv, len(fds)))
        name = kv.get("FDNAME", "stored")
        if kv.get("FDSTORE") == "1":
            for fd in fds:
                if any(same_file(fd, f) for _, f in self.store):
                    os.close(fd)  # systemd keeps one copy of a socket
                else:
                    self.store.append([name, fd])
            return
        for fd in fds:
            os.close(fd)
        if kv.get("FDSTOREREMOVE") == "1" and not self.keep_store:
            for e in [e for e in self.store if e[0] == name]:
                os.close(e[1])
                self.store.remove(e)

    def passable(self):
        """What the next start gets: the store less what hung up."""
        p = select.poll()
        for _, fd in self.store:
            p.register(fd, select.POLLIN)
        dead = {fd for fd, ev in p.poll(0) if ev & (select.POLLHUP | select.POLLERR)}
        for e in [e for e in self.store if e[1] in dead]:
            os.close(e[1])
            self.store.remove(e)
        return list(self.store)


def same_file(a, b):
    x, y = os.fstat(a), os.fstat(b)
    return (x.st_dev, x.st_ino) == (y.st_dev, y.st_ino)


def spawn(bin_args, fds, names, notify, out_path, pid_ok=True, extra_env=None):
    """Starts the demo with fds at 3.. as systemd passes them."""
    env = dict(os.environ)
    for k in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "FDSTORE"):
        env.pop(k, None)
    env["LISTEN_FDS"] = str(len(fds))
    env["LISTEN_FDNAMES"] = ":".join(names)
    env["NOTIFY_SOCKET"] = notify
    env.update(extra_env or {})
    if pid_ok:
        argv = ["sh", "-c", 'LISTEN_PID=$$ exec "$@"', "sh"] + bin_args
    else:
        env["LISTEN_PID"] = "1"  # init's: never the demo
        argv = bin_args

    def move():  # in the child, before exec: no threads here
        high = [os.dup(fd) for fd in fds]  # non-inheritable copies
        high = [fcntl_dup_high(fd) for fd in high]
        for i, fd in enumerate(high):
            os.dup2(fd, 3 + i, inheritable=True)

    out = open(out_path, "w")
    err = open(out_path + ".err", "w")
    return subprocess.Popen(argv, env=env, stdout=out, stderr=err, close_fds=False, preexec_fn=move)


def fcntl_dup_high(fd):
    import fcntl
    h = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 100)
    os.close(fd)
    return h


def wait_line(path, prefix, proc, seconds=10):
    end = deadline(seconds)
    while time.monotonic() < end:
        with open(path) as f:
            for line in f:
                if line.startswith(prefix):
                    return line.strip()
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    err = open(path + ".err").read()[-2000:]
    out = open(path).read()[-2000:]
    raise SystemExit("FAIL: no '%s' line from the demo (exit %s)\n%s\n%s" % (prefix, proc.poll(), out, err))


def nums(line):
    return [int(w) for w in line.replace(",", " ").split() if w.isdigit()]


def bump_images_proto(store):
    """Replaces the weir-images file by a copy whose protocol (bytes 4..5) is 99."""
    for e in store:
        if e[0] == "weir-images":
            data = os.pread(e[1], 1 << 26, 0)
            fd = os.memfd_create("bumped")
            os.write(fd, data[:4] + struct.pack("=H", 99) + data[6:])
            os.close(e[1])
            e[1] = fd


def run_main(bin_path, backend, arm, tmp):
    result = {}
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    fake = FakeSystemd(tmp, abstract=(backend == "uring"), keep_store=(arm == "keep-store"))
    base = [bin_path, "--backend", backend, "--workers", "2", "--addr", "127.0.0.1:0", "--systemd"]
    out1 = os.path.join(tmp, "demo1.out")

    if arm == "wrongpid":
        d = spawn(base, [listener.fileno()], ["weir.socket"], fake.addr, out1, pid_ok=False)
        line = wait_line(out1, "systemd:", d)
        lst = wait_line(out1, "listening on", d)
        got = int(lst.rsplit(":", 1)[1])
        result.update(passed_port=port, listening_port=got, fell_back=int(line.startswith("systemd: none passed")))
        d.send_signal(signal.SIGTERM)
        result["exit"] = d.wait(10)
        print("result " + " ".join("%s=%d" % kv for kv in result.items()))
        return

    store = arm != "nostore"
    restarts = 3 if arm in ("store", "store-unit") else 1
    args = base + (["--fdstore"] if store else [])
    extra = {"FDSTORE": "5"} if arm == "cap" else None  # 1 listener + 1 images + 3 connections
    cur = spawn(args, [listener.fileno()], ["weir.socket"], fake.addr, out1, extra_env=extra)
    line = wait_line(out1, "systemd:", cur)
    result["first_listeners"] = nums(line)[0]
    lst = wait_line(out1, "listening on", cur)
    result["first_port_is_passed"] = int(int(lst.rsplit(":", 1)[1]) == port)
    unit = arm in ("nostore", "store-unit")
    if not unit:
        listener.close()  # from here only the store keeps the listener
    nclients = 9
    cl = subprocess.Popen([sys.executable, os.path.abspath(__file__), "clients", str(port), str(nclients)],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if cl.stdout.readline().strip() != "ready":
        raise SystemExit("FAIL: the clients did not get going")
    agg = {"restarts": restarts, "stored_conns_min": 1 << 30, "adopted_min": 1 << 30, "store_closed": 0,
           "adopt_closed": 0, "image_version_error": 0, "second_listeners_min": 1 << 30,
           "second_port_is_passed": 1, "store_conns_left_max": 0, "store_images_left_max": 0,
           "exits_nonzero": 0, "restart_ms_max": 0, "stored_listeners_max": 0}
    out = out1
    for r in range(restarts):
        time.sleep(0.15)  # the slow client is in flight now, most likely
        t0 = time.monotonic()
        cur.send_signal(signal.SIGTERM)
        end = deadline(20)
        while cur.poll() is None and time.monotonic() < end:
            fake.pump(0.02)
        if cur.poll() is None:
            cur.kill()
            raise SystemExit("FAIL: demo %d did not exit within 20 s of SIGTERM" % (r + 1))
        fake.pump(0.1)
        agg["exits_nonzero"] += int(cur.returncode != 0)
        with open(out) as f:
            st = [l for l in f if l.startswith("fdstore:")]
        if store:
            if not st or not st[0].startswith("fdstore: stored"):
                raise SystemExit("FAIL: demo %d did not store: %s" % (r + 1, st or open(out + ".err").read()[-1500:]))
            n = nums(st[0])
            agg["stored_listeners_max"] = max(agg["stored_listeners_max"], n[0])
            agg["stored_conns_min"] = min(agg["stored_conns_min"], n[1])
            agg["store_closed"] += n[2]
        time.sleep(0.2)  # the gap: the clients' requests wait in their sockets

        passed = fake.passable()
        if arm == "proto":
            bump_images_proto(passed)
        fds = ([listener.fileno()] if unit else []) + [fd for _, fd in passed]
        names = (["weir.socket"] if unit else []) + [n for n, _ in passed]
        out = os.path.join(tmp, "demo%d.out" % (r + 2))
        cur = spawn(args, fds, names, fake.addr, out)
        line = wait_line(out, "systemd:", cur)
        agg["restart_ms_max"] = max(agg["restart_ms_max"], int((time.monotonic() - t0) * 1000))
        n = nums(line) if line.startswith("systemd: listening") else [0, 0, 0]
        agg["second_listeners_min"] = min(agg["second_listeners_min"], n[0])
        agg["adopted_min"] = min(agg["adopted_min"], n[1])
        agg["adopt_closed"] += n[2]
        agg["image_version_error"] += int("WEIR_E_HANDOVER_VERSION" in line)
        lst = wait_line(out, "listening on", cur)
        agg["second_port_is_passed"] &= int(int(lst.rsplit(":", 1)[1]) == port)
        fake.pump(0.3)  # its FDSTOREREMOVE messages
        left = [n for n, _ in fake.store]
        agg["store_conns_left_max"] = max(agg["store_conns_left_max"], sum(1 for n in left if n.startswith("weir-conn-")))
        agg["store_images_left_max"] = max(agg["store_images_left_max"], left.count("weir-images"))
        agg["store_listeners_left"] = left.count("weir-listen")
    if not store:
        agg["stored_conns_min"] = agg["stored_listeners_max"] = 0
    result.update(agg)
    d2 = cur

    cl.stdin.write("mark\n")
    cl.stdin.flush()
    time.sleep(1.0)
    cl.stdin.write("stop\n")
    cl.stdin.flush()
    rep = json.loads(cl.stdout.readline())
    cl.wait(20)
    result.update(rep)
    result["clients"] = nclients
    d2.send_signal(signal.SIGINT)  # INT: no store
    try:
        d2.wait(10)
    except subprocess.TimeoutExpired:
        d2.kill()
        raise SystemExit("FAIL: the second demo did not exit on SIGINT")
    result["last_exit"] = d2.returncode
    print("result " + " ".join("%s=%d" % kv for kv in result.items()))


def main():
    if sys.argv[1] == "clients":
        clients_main(int(sys.argv[2]), int(sys.argv[3]))
        return
    bin_path = sys.argv[2]
    opts = dict(zip(sys.argv[3::2], sys.argv[4::2]))
    run_main(bin_path, opts["--backend"], opts["--arm"], opts.get("--tmp", "/tmp"))


if __name__ == "__main__":
    main()
