#!/usr/bin/env bash
# examples/go: hello (native and net/http APIs) and the framework adapter,
# built against the installed library, run on 127.0.0.1, asked over HTTP, and
# stopped with SIGTERM (they must exit 0).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
SAN=${SAN:-0}
command -v go >/dev/null || { echo "go not found"; exit 77; }
command -v curl >/dev/null || { echo "curl not found"; exit 77; }
[[ $SAN == tsan ]] && { echo "TSAN=1: Go's race detector (go test -race, in the plain pass) has a TSan runtime of its own, which cannot share a process with the libtsan a TSan-built libweir loads"; exit 77; }
[[ $SAN == 1 ]] && { echo "Go examples run against the plain build only"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
make -s install PREFIX="$tmp" SAN="$SAN" >/dev/null
export PKG_CONFIG_PATH=$tmp/lib/pkgconfig
export LD_LIBRARY_PATH=$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# go's build cache does not key cgo packages on pkg-config's output, so a
# package built against an earlier $tmp would keep its -L; these variables are
# keyed, and make every run build against this run's library.
export CGO_CFLAGS="-O2 -g -I$tmp/include" CGO_LDFLAGS="-O2 -g -L$tmp/lib -Wl,-rpath,$tmp/lib"
# From the repository root, as the README says (go.work lists the modules).
go build -o "$tmp/hello" ./examples/go/hello
go build -o "$tmp/framework" ./examples/go/framework

run() { # name args... ; sets $addr and $pid
    local log=$tmp/$1.log; shift
    "$@" >"$log" 2>&1 &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 500); do
        if addr=$(grep -o 'listening on .*' "$log" | head -n1 | cut -d' ' -f3) && [[ -n $addr ]]; then return 0; fi
        kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "server exited early"; return 1; }
        sleep 0.02
    done
    cat "$log"; echo "no 'listening on' line"; return 1
}
stop() { # pid: SIGTERM, must exit 0 within 10 s
    kill -TERM "$1"
    local rc=0
    timeout 10 tail --pid="$1" -f /dev/null || { echo "did not exit after SIGTERM"; return 1; }
    wait "$1" || rc=$?
    [[ $rc -eq 0 ]] || { echo "exit status $rc after SIGTERM"; return 1; }
}
for api in native nethttp; do
    for extra in "" "--async"; do
        run "hello-$api" "$tmp/hello" --addr 127.0.0.1:0 --api "$api" --workers 2 $extra
        body=$(curl -sS --max-time 5 "http://$addr/")
        [[ $body == "Hello, World!" ]] || { echo "hello --api $api $extra: got '$body'"; exit 1; }
        code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 "http://$addr/nope")
        [[ $code == 404 ]] || { echo "hello --api $api: /nope gave $code"; exit 1; }
        # keep-alive: several requests on one connection
        n=$(curl -sS --max-time 5 "http://$addr/" "http://$addr/" "http://$addr/" | grep -o 'Hello, World!' | wc -l)
        [[ $n == 3 ]] || { echo "keep-alive: $n answers"; exit 1; }
        stop "$pid"
        echo "ok hello --api $api $extra"
    done
done
"$tmp/hello" --api bogus >/dev/null 2>&1 && { echo "bad --api accepted"; exit 1; }
run framework "$tmp/framework" --addr 127.0.0.1:0
body=$(curl -sS --max-time 5 "http://$addr/x")
[[ $body == "Hello from GET /x" ]] || { echo "framework: got '$body'"; exit 1; }
stop "$pid"
echo "go examples ok"
