#!/usr/bin/env bash
# weir-demo's GET /stream (weir_stream_*) in each mode on epoll and io_uring:
# a 10,000-event stream (10,000 chunks of 64 bytes, in order), a 5 MiB
# answer (80 pieces of 64 KiB, read at a limited rate so the stream window
# pushes back and the stream is handed back many times), and the same over
# HTTP/1.0 (no chunking: the body ends with the connection).
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "skip: python3 needed to check the chunks"; exit 77; }

# check_chunks FILE N SIZE: the raw chunked body holds exactly N chunks of
# SIZE bytes, piece i of the letter 'a' + i % 26, then the last chunk.
check_chunks() {
    python3 - "$@" <<'PY'
import sys
raw = open(sys.argv[1], 'rb').read()
n, size = int(sys.argv[2]), int(sys.argv[3])
pos, i = 0, 0
while True:
    le = raw.index(b'\r\n', pos)
    sz = int(raw[pos:le], 16)
    if sz == 0:
        break
    data = raw[le + 2:le + 2 + sz]
    want = bytes([ord('a') + i % 26]) * size
    if sz != size or data != want:
        sys.exit(f"chunk {i}: {sz} bytes, want {size} of {want[:1]!r}")
    pos = le + 2 + sz + 2
    i += 1
if i != n:
    sys.exit(f"{i} chunks, want {n}")
PY
}

# check_body FILE N SIZE: the decoded body is the N pieces in order.
check_body() {
    python3 - "$@" <<'PY'
import sys
body = open(sys.argv[1], 'rb').read()
n, size = int(sys.argv[2]), int(sys.argv[3])
want = b''.join(bytes([ord('a') + i % 26]) * size for i in range(n))
if body != want:
    sys.exit(f"body of {len(body)} bytes, want {len(want)}")
PY
}

for run in $(backend_modes inline driven deferred); do
    backend=${run%%:*} mode=${run#*:}
    if ! ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" \
        --mode "$mode" --workers 2; then
        echo "$run: backend not available: $(head -n 1 "$TMP/server.err")"
        continue
    fi
    curl -s --noproxy '*' --max-time 30 --raw -o "$TMP/raw" -D "$TMP/head" "$(url '/stream?n=10000&size=64')" ||
        fail "$run: /stream?n=10000 failed"
    grep -qi '^transfer-encoding: chunked' "$TMP/head" || fail "$run: 10,000-event stream is not chunked"
    check_chunks "$TMP/raw" 10000 64 || fail "$run: 10,000-event stream"
    curl -s --noproxy '*' --max-time 60 --limit-rate 8M -o "$TMP/body" "$(url '/stream?n=80&size=65536')" ||
        fail "$run: 5 MiB stream failed"
    [[ $(stat -c %s "$TMP/body") == 5242880 ]] || fail "$run: 5 MiB stream gave $(stat -c %s "$TMP/body") bytes"
    check_body "$TMP/body" 80 65536 || fail "$run: 5 MiB stream content"
    curl -s --noproxy '*' --max-time 30 -0 -o "$TMP/body" -D "$TMP/head" "$(url '/stream?n=100&size=1000')" ||
        fail "$run: HTTP/1.0 stream failed"
    grep -qi '^transfer-encoding' "$TMP/head" && fail "$run: HTTP/1.0 stream was chunked"
    check_body "$TMP/body" 100 1000 || fail "$run: HTTP/1.0 stream content"
    stop_server TERM
    [[ $STOP_RC == 0 ]] || fail "$run: exit status $STOP_RC after SIGTERM"
    echo "$run: ok"
done
