"""Client half of demo_proxy.sh: requests to weir-demo --app echo --proxy-protocol
through a real HAProxy, from a chosen loopback source address, checking that the
peer weir-demo reports is that address as HAProxy saw it. Also two direct
connections the demo must refuse with a 400 it lets the client read.
Usage: demo_proxy.py WEIR_PORT V1_PORT V2_PORT V2CRC_PORT V6_PORT|-"""
import json
import socket
import sys

WEIR, V1, V2, V2CRC, V6 = sys.argv[1:6]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


BUF = {}  # per socket: bytes read past the last response (pipelined answers)


def read_response(s):
    """One Content-Length framed response: (status, body); (0, b"") at a close."""
    data = BUF.pop(s.fileno(), b"")
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            return 0, data
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    n = 0
    for line in lines[1:]:
        k, v = line.split(":", 1)
        if k.strip().lower() == "content-length":
            n = int(v)
    while len(body) < n:
        chunk = s.recv(65536)
        if not chunk:
            fail("closed inside a body")
        body += chunk
    BUF[s.fileno()] = body[n:]
    return status, body[:n]


def connect(port, source, family=socket.AF_INET, host="127.0.0.1"):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(10)
    s.bind((source, 0))
    s.connect((host, int(port)))
    return s


GET = b"GET /who HTTP/1.1\r\nHost: t\r\n\r\n"


def through(label, port, source, family=socket.AF_INET, host="127.0.0.1"):
    with connect(port, source, family, host) as s:
        BUF.clear()
        sport = s.getsockname()[1]
        want = f"[{source}]:{sport}" if family == socket.AF_INET6 else f"{source}:{sport}"
        # Two pipelined requests and a keep-alive one after them: the same peer each time.
        s.sendall(GET + GET)
        for i in range(3):
            status, body = read_response(s)
            if status != 200:
                fail(f"{label}: status {status}: {body!r}")
            peer = json.loads(body)["peer"]
            if peer != want:
                fail(f"{label}: peer {peer}, want {want} (the client as HAProxy saw it)")
            if i == 1:
                s.sendall(GET)
    print(f"{label}: peer {want} ok")


through("send-proxy (v1)", V1, "127.0.0.5")
through("send-proxy-v2", V2, "127.0.0.6")
through("send-proxy-v2 with crc32c", V2CRC, "127.0.0.7")
if V6 != "-":
    through("send-proxy-v2 from ::1", V6, "::1", socket.AF_INET6, "::1")

# Direct to weir-demo, not through HAProxy: no header from a trusted source
# (127.0.0.1), and a valid header from a source outside --proxy-trusted.
for label, source, raw in (("missing header", "127.0.0.1", GET),
                           ("untrusted source", "127.0.0.9",
                            b"PROXY TCP4 192.0.2.1 192.0.2.2 1000 80\r\n" + GET)):
    with connect(WEIR, source) as s:
        BUF.clear()
        s.sendall(raw)
        status, body = read_response(s)
        if status != 400:
            fail(f"{label}: status {status}, want 400")
        try:
            end = s.recv(100)
        except ConnectionResetError:
            fail(f"{label}: reset after the 400 (want a FIN)")
        if end != b"":
            fail(f"{label}: bytes after the 400: {end!r}")
    print(f"{label}: 400 then FIN ok")
