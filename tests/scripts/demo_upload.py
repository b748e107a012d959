#!/usr/bin/env python3
"""A client for weir-demo's POST /upload (tests/scripts/demo_upload.sh).

upload.py PORT BYTES FRAMING [expect|refuse]

Sends BYTES of a repeated 1 MiB pseudo-random block (chunked, in 64 KiB
chunks, or with Content-Length), hashing as it goes, and checks the answer
is "<BYTES> <sha256-hex>". With 'expect' it sends Expect: 100-continue and
waits for the 100 before the body; with 'refuse' it asks for
/upload?expect=refuse and checks the 417 comes with no 100 before it.
Prints one line: "ok <seconds>" or "FAIL <why>" (exit 1).
"""
import hashlib
import random
import socket
import sys
import time

port, total, framing = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
extra = sys.argv[4] if len(sys.argv) > 4 else ''
rng = random.Random(12)
block = bytes(rng.getrandbits(8) for _ in range(1 << 16)) * 16  # 1 MiB


def fail(why):
    print('FAIL', why)
    sys.exit(1)


def read_head(s, buf):
    while b'\r\n\r\n' not in buf:
        got = s.recv(65536)
        if not got:
            fail('closed before a head; got %r' % buf[:200])
        buf += got
    i = buf.index(b'\r\n\r\n') + 4
    return buf[:i].decode('latin-1'), buf[i:]


s = socket.create_connection(('127.0.0.1', port), timeout=60)
path = '/upload?expect=refuse' if extra == 'refuse' else '/upload'
head = 'POST %s HTTP/1.1\r\nHost: t\r\n' % path
head += 'Transfer-Encoding: chunked\r\n' if framing == 'chunked' else 'Content-Length: %d\r\n' % total
if extra in ('expect', 'refuse'):
    head += 'Expect: 100-continue\r\n'
s.sendall((head + '\r\n').encode())
buf = b''
if extra in ('expect', 'refuse'):
    h, buf = read_head(s, buf)
    if extra == 'refuse':
        if not h.startswith('HTTP/1.1 417'):
            fail('wanted a 417 first, got %r' % h[:60])
        print('ok refused')
        sys.exit(0)
    if not h.startswith('HTTP/1.1 100 '):
        fail('wanted a 100 Continue, got %r' % h[:60])
t0 = time.monotonic()
sha = hashlib.sha256()
sent = 0
while sent < total:
    n = min(len(block), total - sent)
    piece = block[:n]
    sha.update(piece)
    if framing == 'chunked':
        for off in range(0, n, 65536):
            c = piece[off:off + 65536]
            s.sendall(b'%x\r\n' % len(c) + c + b'\r\n')
    else:
        s.sendall(piece)
    sent += n
if framing == 'chunked':
    s.sendall(b'0\r\n\r\n')
h, buf = read_head(s, buf)
if not h.startswith('HTTP/1.1 200'):
    fail('status %r' % h[:60])
length = int([l.split(':', 1)[1] for l in h.split('\r\n') if l.lower().startswith('content-length:')][0])
while len(buf) < length:
    got = s.recv(65536)
    if not got:
        fail('closed mid-answer')
    buf += got
want = '%d %s\n' % (total, sha.hexdigest())
if buf.decode() != want:
    fail('answer %r, want %r' % (buf.decode(), want))
print('ok %.2f' % (time.monotonic() - t0))
