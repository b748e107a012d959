"""Client half of demo_echo.sh: raw HTTP/1.x requests to weir-demo --app echo,
checking the JSON it answers against what was sent. Usage: demo_echo.py PORT"""
import base64
import json
import socket
import sys

PORT = int(sys.argv[1])


LAST_PEER = None  # the client address of the last exchange, as weir-demo should report it


def exchange(raw):
    """Sends raw, reads one response (Content-Length framed); returns (status, headers, body)."""
    global LAST_PEER
    with socket.create_connection(("127.0.0.1", PORT), timeout=10) as s:
        LAST_PEER = "%s:%d" % s.getsockname()[:2]
        s.sendall(raw)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            assert chunk, f"closed before a response head: {data!r}"
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        n = int(headers["content-length"])
        while len(body) < n:
            chunk = s.recv(65536)
            assert chunk, "closed inside the body"
            body += chunk
        return status, headers, body[:n]


def echo(raw):
    status, headers, body = exchange(raw)
    assert status == 200, f"status {status}: {body!r}"
    assert headers.get("content-type") == "application/json", headers
    assert body.isascii(), "echo JSON must be ASCII (bytes >= 0x7f as \\u00XX)"
    return json.loads(body)


def as_bytes(s):  # each code point is one byte (the documented \u00XX mapping)
    return s.encode("latin-1")


def check(cond, what, got):
    if not cond:
        print(f"FAIL: {what}: {json.dumps(got)}")
        sys.exit(1)


# 1. chunked upload with a trailer, a header with bytes >= 0x80, quotes and a backslash
raw = (b"POST /up/load?x=1&y=%20 HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n"
       b"X-Odd: caf\xe9 \"q\" \\ end\r\nTrailer: X-Sum\r\n\r\n"
       b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Sum: 42\r\nX-Other: a b\r\n\r\n")
j = echo(raw)
check(j["method"] == "POST", "method", j)
check(j["url"] == "/up/load?x=1&y=%20", "url", j)
check(j["version"] == "1.1", "version", j)
check(["Host", "example.test"] in j["headers"], "Host header", j)
check(["Transfer-Encoding", "chunked"] in j["headers"], "Transfer-Encoding header", j)
odd = [as_bytes(v) for n, v in j["headers"] if n == "X-Odd"]
check(odd == [b'caf\xe9 "q" \\ end'], "X-Odd header bytes", j)
check(j["trailers"] == [["X-Sum", "42"], ["X-Other", "a b"]], "trailers", j)
check(base64.b64decode(j["body_b64"]) == b"hello world", "body", j)
check(list(j.keys()) == ["method", "url", "version", "headers", "trailers", "body_b64", "peer"], "key order", j)
check(j["peer"] == LAST_PEER, "peer is the client's ADDRESS:PORT (%s)" % LAST_PEER, j)

# 2. Content-Length body with every byte value (base64 of a binary body)
blob = bytes(range(256)) * 3 + b"x"
j = echo(b"PUT /bin HTTP/1.1\r\nHost: h\r\nContent-Length: %d\r\n\r\n" % len(blob) + blob)
check(base64.b64decode(j["body_b64"]) == blob, "binary body", j)
check(j["trailers"] == [], "no trailers", j)

# 3. HTTP/1.0, no body, control-free ASCII
j = echo(b"GET /old HTTP/1.0\r\nUser-Agent: t\r\n\r\n")
check(j["version"] == "1.0" and j["method"] == "GET" and j["url"] == "/old", "HTTP/1.0 request", j)
check(j["body_b64"] == "" and j["headers"] == [["User-Agent", "t"]], "HTTP/1.0 fields", j)

# 4. two pipelined requests on one connection come back in order
with socket.create_connection(("127.0.0.1", PORT), timeout=10) as s:
    s.sendall(b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    check(data.count(b"HTTP/1.1 200") == 2, "two pipelined answers", data.decode("latin-1"))
    check(data.index(b'"url":"/1"') < data.index(b'"url":"/2"'), "pipelined order", data.decode("latin-1"))
print("echo ok")
