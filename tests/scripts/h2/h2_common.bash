# Shared by tests/scripts/h2spec.sh and demo_h2.sh (sourced after
# demo_common.bash, not a test itself: run-tests only runs *.sh). Starts the
# HTTP/2 peers weir is checked against, h2o and nginx, or any command, on a
# free loopback port, as SERVER_PID/PORT so demo_common's cleanup ends them.
# Each peer serves GET / as "Hello, World!" (13 bytes, text/plain), as
# weir-demo --app hello does, over h2c with prior knowledge.

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port: until 127.0.0.1:$PORT accepts (10 s at most) or the server exits.
wait_port() {
    local i
    for ((i = 0; i < 200; i++)); do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID"
            local rc=$?
            SERVER_PID=
            fail "the server exited with $rc before listening on $PORT"
        fi
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0
        sleep 0.05
    done
    fail "nothing listens on 127.0.0.1:$PORT after 10 s"
}

# start_cmd WORDS...: runs a command in which @PORT@ stands for a free port.
start_cmd() {
    PORT=$(free_port)
    : >"$TMP/server.out"
    : >"$TMP/server.err"
    "${@//@PORT@/$PORT}" >"$TMP/server.out" 2>"$TMP/server.err" &
    SERVER_PID=$!
    wait_port
}

# start_peer h2o|nginx: the peer in the foreground, one worker thread/process.
# h2o: `file.file` of a 13-byte file (its user root: as root h2o would switch to
# nobody, who cannot read $TMP). nginx: `listen ... http2` on a plain port
# speaks h2c by prior knowledge only (no HTTP/1.1 there, so no Upgrade).
start_peer() {
    local kind=$1
    PORT=$(free_port)
    printf 'Hello, World!' >"$TMP/hello.txt"
    mkdir -p "$TMP/nginx-tmp"
    case $kind in
    h2o)
        command -v h2o >/dev/null || fail "h2o is not installed (scripts/bootstrap installs it)"
        cat >"$TMP/h2o.conf" <<CONF
listen:
  host: 127.0.0.1
  port: $PORT
num-threads: 1
user: $(id -un)
error-log: $TMP/h2o-error.log
hosts:
  default:
    paths:
      /:
        file.file: $TMP/hello.txt
CONF
        : >"$TMP/server.out"
        : >"$TMP/server.err"
        h2o -c "$TMP/h2o.conf" >"$TMP/server.out" 2>"$TMP/server.err" &
        ;;
    nginx)
        [[ -x /usr/sbin/nginx ]] || fail "/usr/sbin/nginx is not installed (scripts/bootstrap installs nginx-light)"
        cat >"$TMP/nginx.conf" <<CONF
worker_processes 1;
daemon off;
master_process off;
pid $TMP/nginx.pid;
error_log $TMP/nginx-error.log warn;
events { worker_connections 1024; use epoll; }
http {
    access_log off;
    client_body_temp_path $TMP/nginx-tmp/body;
    proxy_temp_path $TMP/nginx-tmp/proxy;
    fastcgi_temp_path $TMP/nginx-tmp/fastcgi;
    uwsgi_temp_path $TMP/nginx-tmp/uwsgi;
    scgi_temp_path $TMP/nginx-tmp/scgi;
    server {
        listen 127.0.0.1:$PORT http2;
        location / { default_type text/plain; return 200 "Hello, World!"; }
    }
}
CONF
        : >"$TMP/server.out"
        : >"$TMP/server.err"
        /usr/sbin/nginx -p "$TMP" -c "$TMP/nginx.conf" >"$TMP/server.out" 2>"$TMP/server.err" &
        ;;
    *) echo "start_peer: unknown peer '$kind' (want h2o or nginx)" >&2; exit 2 ;;
    esac
    SERVER_PID=$!
    wait_port
}

# need_protocols_flag VALUE: weir-demo must take --protocols VALUE. Parsed in
# order, so `--protocols V --version` exits 0 only when the flag was taken;
# a weir-demo without HTTP/2 says "unknown option: --protocols" (exit 2), and
# the test fails with that line, never a skip.
need_protocols_flag() {
    local out
    out=$("$B/bin/weir-demo" --protocols "$1" --version 2>&1) ||
        fail "weir-demo refused --protocols $1 (HTTP/2 has not landed in this build?): $(head -n 1 <<<"$out")"
}
