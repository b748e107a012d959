# Shared by tests/scripts/demo_*.sh and hello_c.sh (sourced, not a test itself:
# run-tests only runs *.sh). Starts a server on 127.0.0.1:0, reads its port,
# and ends it at exit; every wait is bounded.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
B=${B:-build}
source tests/scripts/backends.bash # cwd: the root (above)
TMP=$(mktemp -d)
SERVER_PID=
PORT=
trap 'cleanup' EXIT

cleanup() {
    local rc=$?
    if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -KILL "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
    fi
    ((rc == 0)) && ! tsan_clean && rc=1
    rm -rf "$TMP"
    exit "$rc"
}

# Under TSAN (SAN=tsan, scripts/run-tests) a report in the server's stderr
# fails the script, even when the server went on (or its exit was missed).
tsan_clean() {
    [[ ${SAN:-0} == tsan && -s $TMP/server.err ]] || return 0
    grep -q 'WARNING: ThreadSanitizer:' "$TMP/server.err" || return 0
    echo "FAIL: ThreadSanitizer report in the server's stderr:"
    sed -n '/WARNING: ThreadSanitizer:/,/SUMMARY/p' "$TMP/server.err" | grep -v '^    #.* /usr/include/' | head -n 150
    return 1
}

fail() {
    echo "FAIL: $*"
    for f in "$TMP"/server.out "$TMP"/server.err; do
        [[ -s $f ]] && { echo "--- $f"; tail -n 30 "$f"; }
    done
    tsan_clean # a report, whole, when there is one
    exit 1
}

need_bin() { # path
    [[ -x $1 ]] || { echo "$1 is not built: the engine (weir_engine_*) has not landed yet"; exit 77; }
    command -v curl >/dev/null || { echo "curl is not installed"; exit 77; }
}

# start_server BIN ARGS...: sets SERVER_PID and PORT. Returns 1 only when
# ALLOW_UNAVAILABLE=1 and the engine refused the backend.
start_server() {
    tsan_clean || exit 1 # the previous server's, before its log is reused
    : >"$TMP/server.out"
    : >"$TMP/server.err"
    "$@" >"$TMP/server.out" 2>"$TMP/server.err" &
    SERVER_PID=$!
    local i
    for ((i = 0; i < 200; i++)); do
        PORT=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$TMP/server.out" | head -n 1)
        [[ -n $PORT ]] && return 0
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID"
            local rc=$?
            SERVER_PID=
            if grep -qiE 'not implemented|function not implemented' "$TMP/server.err"; then
                echo "engine not implemented yet: $(head -n 1 "$TMP/server.err")"
                exit 77
            fi
            # callers that probe an optional backend set ALLOW_UNAVAILABLE=1
            if [[ ${ALLOW_UNAVAILABLE:-0} == 1 ]] && grep -q 'not available on this kernel' "$TMP/server.err"; then
                return 1
            fi
            fail "$1 exited with $rc before listening"
        fi
        sleep 0.05
    done
    fail "$1 printed no 'listening on' line in 10 s"
}

# stop_server SIGNAL: sends it and waits (10 s at most); sets STOP_RC.
stop_server() {
    kill "-$1" "$SERVER_PID" || fail "could not signal the server"
    local i
    for ((i = 0; i < 200; i++)); do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            wait "$SERVER_PID"
            STOP_RC=$?
            SERVER_PID=
            tsan_clean || exit 1
            return 0
        fi
        sleep 0.05
    done
    fail "server still running 10 s after SIG$1"
}

url() { echo "http://127.0.0.1:$PORT$1"; }

# fetch PATH [curl args...]: body in $TMP/body, headers in $TMP/head, prints the status.
fetch() {
    local path=$1
    shift
    curl -s --noproxy '*' --max-time 10 -o "$TMP/body" -D "$TMP/head" -w '%{http_code}' "$@" "$(url "$path")"
}

# expect STATUS BODY PATH [curl args...]
expect() {
    local want=$1 want_body=$2 path=$3 got
    shift 3
    got=$(fetch "$path" "$@")
    [[ $got == "$want" ]] || fail "$path $*: status $got, want $want"
    [[ $(cat "$TMP/body") == "$want_body" ]] || fail "$path $*: body '$(head -c 200 "$TMP/body")', want '$want_body'"
}

# wait_requests N: polls the metrics (SIGHUP) until the engine has parsed at
# least N requests, so a test knows a request reached its handler.
wait_requests() {
    local i last=0
    for ((i = 0; i < 100; i++)); do
        kill -HUP "$SERVER_PID"
        sleep 0.1
        last=$(sed -n 's/^requests \([0-9]*\)$/\1/p' "$TMP/server.out" | tail -n 1)
        ((${last:-0} >= $1)) && return 0
    done
    fail "the engine parsed ${last:-0} requests in 10 s, want $1"
}

# count_lines REGEX: lines of the server's stdout that match.
count_lines() { grep -cE "$1" "$TMP/server.out"; }
