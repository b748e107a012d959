#!/usr/bin/env bash
# Go's HTTP/2 client (golang.org/x/net/http2, h2c by prior knowledge:
# tests/support/h2client) against weir-demo --protocols h2c on each backend:
# 200 GETs of / 32 at a time, and 8 POST /echo of 1 MiB 4 at a time; each
# answer checked (status, body) and each must be resp.Proto "HTTP/2.0".
# No cgo, no libweir: the client is plain Go, built into build/tools/h2client.
# Not in make test until HTTP/2 lands (docs/http2-tests.md).
# H2_PEER=h2o|nginx, or H2_PEER_CMD='CMD @PORT@', runs the GETs against that
# server instead (tests/scripts/h2/selftest.sh).
here=$(dirname "$0")
[[ -f $here/demo_common.bash ]] || here=$here/..
source "$here/demo_common.bash"
source tests/scripts/h2/h2_common.bash
command -v go >/dev/null || { echo "FAIL: go is not installed"; exit 1; }
client=$(realpath -m "$B/tools/h2client")
mkdir -p "$B/tools"
# GOWORK=off: the client is its own module, outside go.work; -mod=mod: its
# go.sum may need x/net's hashes on a machine that has not fetched it yet.
(cd tests/support/h2client && GOWORK=off GOFLAGS=-mod=mod timeout 300 go build -o "$client" .) ||
    fail "go build of tests/support/h2client failed (golang.org/x/net from the Go module proxy)"

if [[ -n ${H2_PEER:-}${H2_PEER_CMD:-} ]]; then
    if [[ -n ${H2_PEER:-} ]]; then
        start_peer "$H2_PEER"
    else
        read -ra words <<<"$H2_PEER_CMD"
        start_cmd "${words[@]}"
    fi
    timeout 60 "$client" -addr "127.0.0.1:$PORT" -n 200 -c 32 || fail "${H2_PEER:-peer}: GETs"
    exit 0
fi
need_bin "$B/bin/weir-demo"
need_protocols_flag h2c
for backend in $BACKENDS; do
    if ! ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" \
        --protocols h2c --workers 2; then
        echo "$backend: backend not available on this kernel: $(head -n 1 "$TMP/server.err")"
        continue
    fi
    timeout 60 "$client" -addr "127.0.0.1:$PORT" -n 200 -c 32 || fail "$backend: GETs"
    timeout 60 "$client" -addr "127.0.0.1:$PORT" -n 8 -c 4 -echo $((1 << 20)) || fail "$backend: POST /echo"
    wait_requests 208
    stop_server TERM
    [[ $STOP_RC -eq 0 ]] || fail "$backend: exit code $STOP_RC after SIGTERM, want 0"
    echo "$backend: ok"
done
