"""Client half of demo_controller.sh: the load the controller sees.

Usage: demo_controller.py PORT N DIR
Opens N keep-alive connections to 127.0.0.1:PORT, one GET each, then writes
DIR/ready and holds them open, idle, until DIR/release exists. Then it sends
one more GET on every connection: each must still answer 200 (whatever
engine it has moved to meanwhile), and closes them all. Exits 1 on any
failure, and on its own after 25 s or if DIR goes away (the test ended)."""
import os
import socket
import sys
import time

PORT, N, DIR = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
REQUEST = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
BODY = b"Hello, World!"


def answer(s):
    """Reads one answer to GET / (the hello app's fixed body); returns its status line."""
    data = b""
    while not data.endswith(BODY):
        chunk = s.recv(4096)
        if not chunk:
            raise RuntimeError(f"closed after {data!r}")
        data += chunk
    return data.split(b"\r\n", 1)[0]


def main():
    deadline = time.monotonic() + 25
    conns = []
    for _ in range(N):
        s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        s.sendall(REQUEST)
        conns.append(s)
    for s in conns:
        status = answer(s)
        if status != b"HTTP/1.1 200 OK":
            raise RuntimeError(f"first GET: {status!r}")
    open(os.path.join(DIR, "ready"), "w").close()
    while not os.path.exists(os.path.join(DIR, "release")):
        if time.monotonic() > deadline or not os.path.isdir(DIR):
            raise RuntimeError("never released")
        time.sleep(0.02)
    for s in conns:
        s.sendall(REQUEST)
    for i, s in enumerate(conns):
        status = answer(s)
        if status != b"HTTP/1.1 200 OK":
            raise RuntimeError(f"connection {i}, second GET: {status!r}")
    for s in conns:
        s.close()
    print(f"{N} connections, 2 GETs each: ok", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # the script reads the exit code and this line
        print(f"client: {e}", flush=True)
        sys.exit(1)
