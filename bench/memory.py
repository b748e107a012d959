"""Server memory per held connection, for scripts/run-bench.

Two kinds of connection, N of each, held by build/bench/idle:
  idle    served one GET and now sits idle (keep-alive)
  silent  connected and never sent a byte

A silent connection is invisible to the server until accept(2) returns it, and
a TCP_DEFER_ACCEPT listener (weir's default, 1 s) keeps it in SYN-RECV until
its SYN-ACK retransmit, so "ready" from the client proves nothing: before RSS
is read, wait_accepted() watches the kernel's queues for that port until both
are empty, and the sockets the server process holds are counted from
/proc/PID/fd rather than assumed.
"""
import os
import subprocess
import time

ACCEPT_WAIT_S = 15.0  # longest wait for the server to accept every silent connection
SETTLE_S = 1.0  # after the last accept (or answer): lazily built per-connection state lands
# netns-wide TCP counters worth a line when a silent run misbehaves (/proc/net/netstat)
COUNTERS = ("TCPReqQFullDoCookies", "SyncookiesSent", "TCPDeferAcceptDrop", "ListenOverflows", "ListenDrops")


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def socket_fds(pid):
    """Sockets the process holds open (its listener included)."""
    n = 0
    d = f"/proc/{pid}/fd"
    for name in os.listdir(d):
        try:
            n += os.readlink(os.path.join(d, name)).startswith("socket:")
        except OSError:  # closed meanwhile
            pass
    return n


def _ss(*args):
    return subprocess.run(["ss", "-Htn"] + list(args), text=True, capture_output=True, timeout=10).stdout


def pending(port):
    """(accept queue, SYN-RECV) for the listener on port: connections the kernel
    holds that the server has not accepted yet."""
    queue = 0
    for line in _ss("-l", f"sport = :{port}").splitlines():
        t = line.split()
        if t and not t[0].isdigit():  # "LISTEN Recv-Q Send-Q ...": a listener's Recv-Q is its accept queue
            t = t[1:]
        if t and t[0].isdigit():
            queue += int(t[0])
    syn_recv = len(_ss("state", "syn-recv", f"sport = :{port}").splitlines())
    return queue, syn_recv


def wait_accepted(port, timeout=ACCEPT_WAIT_S):
    """Waits until nothing for port waits in the accept queue or in SYN-RECV.
    Returns (seconds waited, timed out, (queue, syn_recv) when it stopped)."""
    t0 = time.monotonic()
    while True:
        q = pending(port)
        waited = time.monotonic() - t0
        if q == (0, 0) or waited >= timeout:
            return waited, q != (0, 0), q
        time.sleep(0.1)


def tcp_counters():
    with open("/proc/net/netstat") as f:
        lines = f.read().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            d = dict(zip(names.split()[1:], (int(v) for v in values.split()[1:])))
            return {k: d.get(k, 0) for k in COUNTERS}
    return {}


def hold(pid, port, idle_bin, n, mode):
    """RSS of the (warmed-up) server at pid before and while N connections of
    the mode are held. Bytes per connection divide by the connections the
    server really holds (its socket count grew by), which is N unless some
    were lost or refused."""
    before_kb, fds0, c0 = rss_kb(pid), socket_fds(pid), tcp_counters()
    args = [idle_bin, "127.0.0.1", str(port), str(n)] + (["silent"] if mode == "silent" else [])
    client = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        line = client.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"{mode} client failed (got {line!r})")
        r = {"n": n}
        if mode == "silent":
            r["accept_wait_s"], r["timed_out"], left = wait_accepted(port)
            r["left_queue"], r["left_syn_recv"] = left
        time.sleep(SETTLE_S)
        after_kb = rss_kb(pid)
        held = socket_fds(pid) - fds0
    finally:
        client.stdin.close()
        client.wait(timeout=30)
    c1 = tcp_counters()
    r.update({"rss_before_kb": before_kb, "rss_after_kb": after_kb, "held": held,
              "bytes_per_conn": (after_kb - before_kb) * 1024 / (held if held > 0 else n),
              "tcp_counters": {k: c1[k] - c0[k] for k in c1 if c1[k] != c0.get(k)}})
    return r


def describe(r):
    """One log line's worth of a hold() result."""
    s = (f"RSS {r['rss_before_kb']} -> {r['rss_after_kb']} kB, held {r['held']}/{r['n']}, "
         f"{r['bytes_per_conn']:.0f} bytes per connection")
    if "accept_wait_s" in r:
        s += f", accepted after {r['accept_wait_s']:.1f} s"
        if r["timed_out"]:
            s += (f" (TIMED OUT: {r['left_queue']} still in the accept queue, "
                  f"{r['left_syn_recv']} in SYN-RECV)")
    # a deferred listener drops the bare ACK of every connection, silent or not:
    # worth a word only where it is what the wait is for
    shown = {k: v for k, v in r.get("tcp_counters", {}).items()
             if k != "TCPDeferAcceptDrop" or "accept_wait_s" in r}
    if shown:
        s += "; kernel (all of this netns) " + ", ".join(f"{k} +{v}" for k, v in shown.items())
    return s
