#!/usr/bin/env bash
# weir-demo --proxy-protocol behind a real HAProxy (Debian's haproxy, started
# here in the foreground on free 127.0.0.1 ports, killed at exit), on each
# backend: send-proxy (v1), send-proxy-v2, send-proxy-v2 with a CRC32C, and
# from ::1 where the machine has IPv6 loopback. The client binds 127.0.0.5-7
# (or ::1) and weir-demo's echo must report exactly that address and port
# as its "peer"; HAProxy's own health checks (check-send-proxy: a v2 LOCAL
# header, then an HTTP GET it waits for) count as proxy_local. Connecting to weir-demo directly, without a
# header or from outside --proxy-trusted, is answered 400 and closed with a
# FIN. The SIGHUP metrics count each. Client: tests/scripts/demo_proxy.py.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
HAPROXY=$(command -v haproxy || ls /usr/sbin/haproxy 2>/dev/null)
[[ -n $HAPROXY ]] || { echo "haproxy is not installed (scripts/bootstrap installs it)"; exit 77; }
HA_PID=
stop_haproxy() {
    if [[ -n $HA_PID ]]; then
        kill -TERM "$HA_PID" 2>/dev/null
        wait "$HA_PID" 2>/dev/null
        HA_PID=
    fi
}
trap 'r=$?; stop_haproxy; (exit $r); cleanup' EXIT

# free_port HOST: a port nothing listens on now (the kernel's pick, released).
free_port() { python3 -c 'import socket,sys; s=socket.socket(socket.AF_INET6 if ":" in sys.argv[1] else socket.AF_INET); s.bind((sys.argv[1],0)); print(s.getsockname()[1])' "$1"; }
has_v6() { python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1",0))' 2>/dev/null; }

# metric NAME: its value in the last SIGHUP block.
metric() { sed -n "s/^$1 \([0-9]*\)$/\1/p" "$TMP/server.out" | tail -n 1; }

for backend in $BACKENDS; do
    ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" --app echo \
        --proxy-protocol --proxy-trusted 127.0.0.1/32,::1 --proxy-timeout-ms 3000 ||
        { echo "$backend: not available on this kernel, skipped"; continue; }
    P1=$(free_port 127.0.0.1) P2=$(free_port 127.0.0.1) P3=$(free_port 127.0.0.1) P6=-
    bind6=
    if has_v6; then
        P6=$(free_port ::1)
        bind6="frontend f6
    bind [::1]:$P6
    default_backend b6
backend b6
    server weir 127.0.0.1:$PORT send-proxy-v2"
    fi
    cat >"$TMP/haproxy.cfg" <<CFG
global
    maxconn 100
defaults
    mode tcp
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend f1
    bind 127.0.0.1:$P1
    default_backend b1
backend b1
    server weir 127.0.0.1:$PORT send-proxy
frontend f2
    bind 127.0.0.1:$P2
    default_backend b2
backend b2
    option httpchk
    http-check send meth GET uri /health ver HTTP/1.1 hdr Host check
    http-check expect status 200
    server weir 127.0.0.1:$PORT send-proxy-v2 check check-send-proxy inter 200
frontend f3
    bind 127.0.0.1:$P3
    default_backend b3
backend b3
    server weir 127.0.0.1:$PORT send-proxy-v2 proxy-v2-options crc32c
$bind6
CFG
    "$HAPROXY" -f "$TMP/haproxy.cfg" -db >"$TMP/haproxy.out" 2>&1 &
    HA_PID=$!
    for ((i = 0; i < 100; i++)); do
        python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$P3" \
            2>/dev/null && break
        kill -0 "$HA_PID" 2>/dev/null || { cat "$TMP/haproxy.out"; fail "$backend: haproxy exited"; }
        sleep 0.05
    done
    timeout 60 python3 tests/scripts/demo_proxy.py "$PORT" "$P1" "$P2" "$P3" "$P6" ||
        { cat "$TMP/haproxy.cfg" "$TMP/haproxy.out"; fail "$backend: proxy checks failed"; }
    sleep 0.5 # a health check or two (every 200 ms) has sent its LOCAL header
    kill -HUP "$SERVER_PID"
    sleep 0.3
    grep -q '^metrics end' "$TMP/server.out" || fail "$backend: no metrics after SIGHUP"
    v1=$(metric proxy_v1) v2=$(metric proxy_v2) local=$(metric proxy_local)
    [[ $v1 -ge 1 ]] || fail "$backend: proxy_v1 $v1, want >= 1"
    [[ $v2 -ge 2 ]] || fail "$backend: proxy_v2 $v2, want >= 2"
    [[ $local -ge 1 ]] || fail "$backend: proxy_local $local, want >= 1 (HAProxy's health checks)"
    [[ $(metric proxy_missing) == 1 ]] || fail "$backend: proxy_missing $(metric proxy_missing), want 1"
    [[ $(metric proxy_untrusted) == 1 ]] || fail "$backend: proxy_untrusted $(metric proxy_untrusted), want 1"
    [[ $(sed -n 's/^closes.proxy \([0-9]*\)$/\1/p' "$TMP/server.out" | tail -n 1) == 2 ]] ||
        fail "$backend: closes.proxy, want 2"
    stop_haproxy
    stop_server TERM
    [[ $STOP_RC -eq 0 ]] || fail "$backend: exit code $STOP_RC after SIGTERM, want 0"
    echo "$backend: ok (v1 $v1, v2 $v2, local $local)"
done
