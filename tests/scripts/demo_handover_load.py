"""The load of demo_handover.py: four kinds of loopback clients, each a thread,
each counting what it saw, so a hot upgrade is judged by what a client would
notice. Imported by demo_handover.py (not a test by itself).

Every request is GET / of weir-demo's hello app ("Hello, World!"); every
answer is parsed strictly (status line, one Content-Length, no
Transfer-Encoding, exactly that many body bytes), so a stray or missing
byte after a move shows as a failure, not as a slow read.

What each client counts (Stats):
  ok          answers that were right;
  failed      requests that got no right answer (a reset, a refused
              connect, a timeout, a close mid-answer, a malformed answer);
  resets      ECONNRESET / EPIPE on a send or a receive, in flight or not;
  refused     ECONNREFUSED on a connect;
  reconnects  a keep-alive connection the server closed (EOF where the next
              answer would begin, or "Connection: close" on an answer to a
              keep-alive request): the client opens a new one and sends the
              unanswered requests again, as an HTTP client does for
              idempotent requests. A hot upgrade that moves connections
              causes none; a listeners-only one causes one per connection.
"""
import errno
import random
import select
import socket
import threading
import time

BODY = b"Hello, World!"
REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
REQUEST_CLOSE = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
PIPELINE = 8  # requests per write on a pipelined connection
MAX_REQUESTS = 1_000_000  # per client: a bound on the count besides the time


class PeerClosed(Exception):
    """EOF from the server; at_boundary: where the next answer would begin."""

    def __init__(self, at_boundary):
        super().__init__("closed at a boundary" if at_boundary else "closed mid-answer")
        self.at_boundary = at_boundary


class BadAnswer(Exception):
    pass


class Stats:
    FIELDS = ("ok", "failed", "resets", "refused", "reconnects")

    def __init__(self):
        for f in self.FIELDS:
            setattr(self, f, 0)
        self.errors = []  # the first few failures and resets, for the report
        self.closes = []  # the first few reconnects' causes

    def note(self, what, reconnect=False):
        into = self.closes if reconnect else self.errors
        if len(into) < 4 and what not in into:
            into.append(what)

    def add(self, other):
        for f in self.FIELDS:
            setattr(self, f, getattr(self, f) + getattr(other, f))
        for mine, theirs, cap in ((self.errors, other.errors, 6), (self.closes, other.closes, 3)):
            mine.extend([w for w in theirs if w not in mine][: max(0, cap - len(mine))])

    @property
    def samples(self):
        return self.errors + self.closes

    def losses(self):
        return self.failed + self.resets + self.refused

    def line(self):
        return ", ".join("%s %d" % (f, getattr(self, f)) for f in self.FIELDS)


def is_reset(e):
    return isinstance(e, (ConnectionResetError, BrokenPipeError)) or getattr(e, "errno", None) in (
        errno.ECONNRESET,
        errno.EPIPE,
    )


class Conn:
    """One client connection with its own read buffer."""

    def __init__(self, port, timeout):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _fill(self, at_boundary):
        got = self.sock.recv(65536)
        if not got:
            raise PeerClosed(at_boundary and not self.buf)
        self.buf += got

    def closed_while_idle(self):
        """Whether the server closed this idle connection (EOF waiting)."""
        r, _, _ = select.select([self.sock], [], [], 0)
        if not r:
            return False
        got = self.sock.recv(65536)  # a reset raises here
        if got:
            raise BadAnswer("%d unasked bytes on an idle connection: %r" % (len(got), got[:80]))
        return True

    def answer(self):
        """Reads one answer; returns whether it said Connection: close."""
        first = True
        while b"\r\n\r\n" not in self.buf:
            self._fill(first)
            first = False
        i = self.buf.index(b"\r\n\r\n")
        head, self.buf = self.buf[:i].decode("latin-1"), self.buf[i + 4 :]
        lines = head.split("\r\n")
        if lines[0] != "HTTP/1.1 200 OK":
            raise BadAnswer("status line %r" % lines[0][:80])
        length, close = None, False
        for l in lines[1:]:
            name, _, value = l.partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                if length is not None or not value.isdigit():
                    raise BadAnswer("Content-Length %r" % value)
                length = int(value)
            elif name == "transfer-encoding":
                raise BadAnswer("Transfer-Encoding %r on GET /" % value)
            elif name == "connection" and "close" in value.lower():
                close = True
        if length is None:
            raise BadAnswer("no Content-Length in %r" % head[:200])
        while len(self.buf) < length:
            self._fill(False)
        body, self.buf = self.buf[:length], self.buf[length:]
        if body != BODY:
            raise BadAnswer("body %r" % body[:80])
        return close


def send_split(sock, data, rng, p, lo, hi):
    """Sends data whole, or (with probability p) cut at a random byte with
    lo-hi s between the halves: for that while the server holds part of a
    request, which an upgrade must carry over (the image's unread bytes) or
    wait for, never drop."""
    if rng.random() >= p:
        return sock.sendall(data)
    cut = rng.randrange(1, len(data))
    sock.sendall(data[:cut])
    time.sleep(rng.uniform(lo, hi))
    sock.sendall(data[cut:])


class Client(threading.Thread):
    """A client loop; run_once() does one unit of its kind's work."""

    kind = "?"

    def __init__(self, port, stop, timeout, seed):
        super().__init__(daemon=True)
        self.port, self.stop, self.timeout = port, stop, timeout
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.conn = None
        self.requests = 0

    def connect(self):
        self.conn = Conn(self.port, self.timeout)

    def drop(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def run(self):
        while not self.stop.is_set() and self.requests < MAX_REQUESTS:
            try:
                self.run_once()
            except Exception as e:  # the counts carry it; a thread never dies
                self.stats.failed += 1
                self.stats.note("%s: internal %r" % (self.kind, e))
                self.drop()
        self.drop()

    def failure(self, e, in_flight):
        """Counts e (raised by a connect, a send or a receive) and drops the connection."""
        s = self.stats
        if is_reset(e):
            s.resets += 1  # a failure too when a request was in flight
        else:
            in_flight = max(in_flight, 1)  # a request that could not go, or stray bytes
            if isinstance(e, ConnectionRefusedError):
                s.refused += 1
        s.failed += in_flight
        s.note("%s: %s" % (self.kind, e if str(e) else type(e).__name__))
        self.drop()
        if isinstance(e, ConnectionRefusedError):
            time.sleep(0.005)  # nobody listens: do not spin on the gap

    def reconnect(self, why):
        """The server closed this keep-alive connection: a new one next pass."""
        self.stats.reconnects += 1
        self.stats.note("%s: reconnect: %s" % (self.kind, why), reconnect=True)
        self.drop()

    def pause(self, lo, hi, idle_p, idle_lo, idle_hi):
        if self.rng.random() < idle_p:
            self.stop.wait(self.rng.uniform(idle_lo, idle_hi))
        else:
            time.sleep(self.rng.uniform(lo, hi))


class KeepAlive(Client):
    """(a) One keep-alive connection, request then answer in a loop, with
    short pauses and, now and then, a few hundred ms idle: an upgrade finds
    some idle and some mid-request (a tenth of the requests are sent in two
    writes 5-30 ms apart, so some are mid-head)."""

    kind = "keepalive"

    def run_once(self):
        in_flight = 0
        try:
            if self.conn is None:
                self.connect()
            elif self.conn.closed_while_idle():
                self.reconnect("closed while idle")
                return
            in_flight = 1
            self.requests += 1
            send_split(self.conn.sock, REQUEST, self.rng, 0.1, 0.005, 0.03)
            close = self.conn.answer()
            in_flight = 0
            self.stats.ok += 1
            if close:
                self.reconnect("Connection: close")
        except PeerClosed as e:
            if not e.at_boundary:
                return self.failure(e, in_flight)
            self.reconnect("closed before the answer")  # the request goes again on the next pass
            return
        except (OSError, BadAnswer) as e:
            return self.failure(e, in_flight)
        self.pause(0.0, 0.01, 0.15, 0.15, 0.5)


class Pipelined(Client):
    """(b) PIPELINE requests in one write, then their answers, read strictly
    by Content-Length. Half the batches are cut at a random byte, 10-60 ms
    between the halves, so most upgrades find a connection holding part of a
    request it has not answered (the image's unread bytes)."""

    kind = "pipelined"

    def run_once(self):
        owed = PIPELINE
        while owed and not self.stop.is_set():
            try:
                if self.conn is None:
                    self.connect()
                elif self.conn.closed_while_idle():
                    self.reconnect("closed while idle")
                    continue
                self.requests += owed
                send_split(self.conn.sock, REQUEST * owed, self.rng, 0.5, 0.01, 0.06)
                while owed:
                    close = self.conn.answer()
                    owed -= 1
                    self.stats.ok += 1
                    if close:
                        self.reconnect("Connection: close")
                        break
                if self.conn is not None and self.conn.buf:
                    raise BadAnswer("%d bytes past the last answer" % len(self.conn.buf))
            except PeerClosed as e:
                if not e.at_boundary:
                    return self.failure(e, owed)
                self.reconnect("closed with %d answers owed" % owed)  # they go again
            except (OSError, BadAnswer) as e:
                return self.failure(e, owed)
        self.pause(0.0, 0.01, 0.2, 0.1, 0.4)


class Churn(Client):
    """(c) A new connection per request (Connection: close)."""

    kind = "churn"
    silence = None

    def run_once(self):
        in_flight = 1
        self.requests += 1
        try:
            self.connect()
            if self.silence:
                time.sleep(self.rng.uniform(*self.silence))
            self.conn.sock.sendall(REQUEST_CLOSE)
            self.conn.answer()
            self.stats.ok += 1
            in_flight = 0
        except (OSError, BadAnswer, PeerClosed) as e:
            return self.failure(e, in_flight)
        self.drop()
        time.sleep(self.rng.uniform(0.001, 0.005))


class Silent(Churn):
    """(d) Connects, stays silent 100-800 ms, then asks. Under
    TCP_DEFER_ACCEPT such a connection waits in the listener's queue, not
    accepted by anyone, while the listener changes hands."""

    kind = "silent"
    silence = (0.1, 0.8)


KINDS = {"keepalive": KeepAlive, "pipelined": Pipelined, "churn": Churn, "silent": Silent}


class Load:
    """Starts the clients; snapshot() sums their counts at any time (each
    count is one thread's, read whole), stop() ends them within timeout."""

    def __init__(self, port, counts, timeout, seed=1):
        self.stop_event = threading.Event()
        self.clients = []
        n = 0
        for kind, count in counts.items():
            for _ in range(count):
                n += 1
                self.clients.append(KINDS[kind](port, self.stop_event, timeout, seed * 1000 + n))
        self.timeout = timeout
        self.t0 = None

    def start(self):
        self.t0 = time.monotonic()
        for c in self.clients:
            c.start()

    def snapshot(self, kind=None):
        total = Stats()
        for c in self.clients:
            if kind is None or c.kind == kind:
                total.add(c.stats)
        return total

    def persistent(self):
        """Connections that live for the whole run (when none reconnects)."""
        return sum(1 for c in self.clients if c.kind in ("keepalive", "pipelined"))

    def stop(self):
        """Ends every client; returns the names of those still running after
        the bound (each is blocked in a receive at most timeout)."""
        self.stop_event.set()
        limit = time.monotonic() + self.timeout + 2
        for c in self.clients:
            c.join(max(0.0, limit - time.monotonic()))
        return [c.kind for c in self.clients if c.is_alive()]

    def by_kind(self):
        return ", ".join("%s %d ok" % (k, self.snapshot(k).ok) for k in KINDS if any(c.kind == k for c in self.clients))
