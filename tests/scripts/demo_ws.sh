#!/usr/bin/env bash
# weir-demo GET /ws (weir_upgrade, weir_upgrade_take) in each mode on both
# backends: the 101, then raw bytes echoed on the taken connection (the
# bytes sent with the request first), the close counted as "upgraded"; a
# GET /ws without Upgrade is a 426.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "skip: python3 needed"; exit 77; }
for run in $(backend_modes inline driven deferred); do
    backend=${run%%:*} mode=${run#*:}
    if ! ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" \
        --mode "$mode" --workers 2; then
        echo "$run: backend not available: $(head -n 1 "$TMP/server.err")"
        continue
    fi
    python3 - "$PORT" <<'PY' || fail "$run: /ws echo"
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\nfirst")
buf = b""
while b"\r\n\r\n" not in buf:
    buf += s.recv(4096)
head, rest = buf.split(b"\r\n\r\n", 1)
assert head.startswith(b"HTTP/1.1 101 "), head
assert b"Upgrade: echo" in head, head
while len(rest) < 5:
    rest += s.recv(4096)
assert rest == b"first", rest
for i in range(100):
    msg = b"message %d " % i * 50
    s.sendall(msg)
    got = b""
    while len(got) < len(msg):
        got += s.recv(65536)
    assert got == msg, (i, len(got))
s.close()
PY
    [[ $(fetch /ws) == 426 ]] || fail "$run: GET /ws without Upgrade is not a 426"
    kill -HUP "$SERVER_PID"
    for ((i = 0; i < 100; i++)); do grep -q '^metrics end$' "$TMP/server.out" && break; sleep 0.05; done
    grep -q '^closes.upgraded 1$' "$TMP/server.out" || fail "$run: closes.upgraded is not 1: $(grep upgraded "$TMP/server.out")"
    stop_server TERM
    [[ $STOP_RC == 0 ]] || fail "$run: exit status $STOP_RC after SIGTERM"
    echo "$run: ok"
done
