#!/usr/bin/env bash
# examples/go/hello --adaptive (docs/adaptive.md), native and net/http: 8
# keep-alive clients keep asking while 4 SIGWINCHs switch the pair there and
# back; every request answered ("Hello, World!"), 4 "switched to" lines
# alternating backends, SIGHUP's metrics block (weir's names, the pair's
# adaptive.* lines, the standby's prefixed standby.), exit 0 on SIGTERM. The arm that must not switch:
# without --adaptive a SIGWINCH changes nothing (no "switched to" line).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
SAN=${SAN:-0}
command -v go >/dev/null || { echo "go not found"; exit 77; }
command -v python3 >/dev/null || { echo "python3 not found"; exit 77; }
[[ $SAN != 0 ]] && { echo "Go examples run against the plain build only"; exit 77; }
tmp=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
make -s install PREFIX="$tmp" SAN="$SAN" >/dev/null
export PKG_CONFIG_PATH=$tmp/lib/pkgconfig
export LD_LIBRARY_PATH=$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CGO_CFLAGS="-O2 -g -I$tmp/include" CGO_LDFLAGS="-O2 -g -L$tmp/lib -Wl,-rpath,$tmp/lib"
go build -o "$tmp/hello" ./examples/go/hello

start() { # args...: sets pid, port
    "$tmp/hello" --addr 127.0.0.1:0 --workers 1 "$@" >"$tmp/out" 2>&1 &
    pid=$!
    for _ in $(seq 1 500); do
        port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$tmp/out" | cut -d: -f2) && [[ -n $port ]] && return 0
        kill -0 "$pid" 2>/dev/null || { cat "$tmp/out"; echo "hello exited early"; exit 1; }
        sleep 0.02
    done
    echo "no 'listening on' line"; exit 1
}
stop() {
    kill -TERM "$pid"
    local rc=0
    timeout 15 tail --pid="$pid" -f /dev/null || { echo "did not exit after SIGTERM"; exit 1; }
    wait "$pid" || rc=$?
    pid=
    [[ $rc -eq 0 ]] || { cat "$tmp/out"; echo "exit status $rc after SIGTERM"; exit 1; }
}
client() { # port seconds: prints "ok N failed M"
    python3 - "$1" "$2" <<'PY'
import socket, sys, time
port, secs = int(sys.argv[1]), float(sys.argv[2])
conns = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(8)]
ok = failed = 0
end = time.time() + secs
while time.time() < end:
    for c in conns:
        try:
            c.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
            buf = b""
            while not (b"\r\n\r\n" in buf and buf.endswith(b"Hello, World!")):
                d = c.recv(4096)
                if not d:
                    raise IOError("closed")
                buf += d
            ok += 1
        except Exception:
            failed += 1
    time.sleep(0.01)
print("ok %d failed %d" % (ok, failed))
PY
}
for api in native nethttp; do
    start --api "$api" --adaptive
    sleep 2 # the standby's linger (1.5 s) before the pair is made
    client "$port" 4 >"$tmp/client" &
    cpid=$!
    for _ in 1 2 3 4; do sleep 0.7; kill -WINCH "$pid"; done
    wait "$cpid"
    read -r _ okn _ failn <"$tmp/client"
    # SIGHUP: weir-demo's block, both ledgers (the standby's prefixed).
    kill -HUP "$pid"
    for _ in $(seq 1 250); do grep -q '^metrics end' "$tmp/out" && break; sleep 0.02; done
    for want in '^metrics begin$' '^transplant_detached [0-9]' '^adaptive.switches 4$' \
        '^adaptive.active (epoll|uring)$' '^standby.transplant_adopted [0-9]' '^metrics end$'; do
        grep -Eq "$want" "$tmp/out" || { cat "$tmp/out"; echo "$api: SIGHUP printed no line matching $want"; exit 1; }
    done
    stop
    n=$(grep -c '^switched to' "$tmp/out" || true)
    [[ $n -eq 4 ]] || { cat "$tmp/out"; echo "$api: $n switches, want 4"; exit 1; }
    [[ $failn -eq 0 && $okn -gt 100 ]] || { echo "$api: $okn answered, $failn failed"; exit 1; }
    echo "$api --adaptive: ok ($okn requests, 0 failed; $(grep '^switched to' "$tmp/out" | paste -sd, -))"
done
# The arm that must not switch.
start --api native
kill -WINCH "$pid"
sleep 0.3
stop
if grep -q '^switched to' "$tmp/out"; then echo "without --adaptive: a switch"; exit 1; fi
echo "without --adaptive: ok (no switch)"
