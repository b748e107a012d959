#!/usr/bin/env bash
# weir-demo --request-timeout-ms / --min-body-rate / --min-send-rate (issue 32),
# on both backends: --help documents the three; with --request-timeout-ms 400
# and the header timeout long (20 s), a client trickling its head a byte
# every 50 ms is answered 408 and closed with a FIN, and SIGHUP's metrics
# print closes.request_timeout 1 (and the other two reasons by name). The arm:
# --request-timeout-ms 0 (off), the same client is still open at 1.2 s, its
# head completes and is answered 200.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
help=$("$B/bin/weir-demo" --help 2>&1) || true
for f in '--request-timeout-ms N' '--min-body-rate BYTES_PER_S' '--min-send-rate BYTES_PER_S'; do
    grep -q -- "$f" <<<"$help" || fail "--help does not document $f"
done

# Prints "<status> <how it ended> <ms>": trickles a 60-byte head, a byte each 50 ms.
trickle() {
    python3 - "$PORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(0.05)
head = b"GET / HTTP/1.1\r\nHost: t\r\nX-Pad: " + b"a" * 30 + b"\r\n\r\n"
t0, got, end = time.time(), b"", "open"
for i in range(len(head)):
    try:
        s.send(head[i:i + 1])
    except OSError:
        end = "send-error"
        break
    try:
        while True:
            b = s.recv(4096)
            if not b:
                end = "fin"
                break
            got += b
    except socket.timeout:
        pass
    except ConnectionResetError:
        end = "reset"
    if end != "open":
        break
if end == "open":  # the whole head went: read its answer
    s.settimeout(2)
    try:
        got += s.recv(4096)
    except OSError:
        pass
status = got.split(b" ")[1].decode() if got.startswith(b"HTTP/1.1 ") else "none"
print(status, end, int((time.time() - t0) * 1000))
PY
}

for backend in $BACKENDS; do
    ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" --workers 1 \
        --header-timeout-ms 20000 --request-timeout-ms 400 --min-body-rate 100 --min-send-rate 100 \
        --no-defer-accept || continue
    read -r status end ms <<<"$(trickle)"
    [[ $status == 408 && $end == fin ]] || fail "$backend: trickled head: $status $end after $ms ms, want 408 fin"
    ((ms >= 350 && ms < 2000)) || fail "$backend: trickled head cut after $ms ms, want ~400"
    kill -HUP "$SERVER_PID"
    for ((i = 0; i < 50; i++)); do
        grep -q '^closes.request_timeout 1$' "$TMP/server.out" && break
        sleep 0.1
    done
    grep -q '^closes.request_timeout 1$' "$TMP/server.out" || fail "$backend: SIGHUP: no closes.request_timeout 1"
    grep -q '^closes.slow_body ' "$TMP/server.out" || fail "$backend: SIGHUP: no closes.slow_body"
    grep -q '^closes.slow_reader ' "$TMP/server.out" || fail "$backend: SIGHUP: no closes.slow_reader"
    stop_server TERM
    [[ $STOP_RC -eq 0 ]] || fail "$backend: exit code $STOP_RC after SIGTERM, want 0"

    # The arm: the deadline off, the head completes (3 s) and is answered.
    ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" --workers 1 \
        --header-timeout-ms 20000 --request-timeout-ms 0 --no-defer-accept || continue
    read -r status end ms <<<"$(trickle)"
    [[ $status == 200 ]] || fail "$backend: arm (deadline off): $status $end after $ms ms, want 200"
    ((ms >= 1200)) || fail "$backend: arm: answered after $ms ms, before the head could be whole"
    stop_server TERM
done
echo ok
