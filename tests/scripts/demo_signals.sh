#!/usr/bin/env bash
# weir-demo's command line and signals: bad flags exit 2 with the usage;
# engine errors exit 1 naming the step; SIGHUP prints every metric; SIGUSR1/2
# answer (pause, or "not supported"); SIGTERM lets an in-flight request finish
# and exits 0; SIGINT exits 0.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
demo=$B/bin/weir-demo

# ---- bad flags: usage on stderr, exit 2
for args in "--bogus" "--mode nope" "--app nope" "--backend nope" "--workers abc" "--workers -1" \
    "--addr nocolon" "--addr 127.0.0.1:70000" "--max-body" "--idle-timeout-ms 1x" "stray"; do
    # shellcheck disable=SC2086
    timeout 10 "$demo" $args >"$TMP/o" 2>"$TMP/e"
    rc=$?
    [[ $rc -eq 2 ]] || fail "weir-demo $args: exit $rc, want 2"
    grep -q '^usage: weir-demo' "$TMP/e" || fail "weir-demo $args: no usage on stderr"
    [[ -s $TMP/o ]] && fail "weir-demo $args: wrote to stdout"
done
timeout 10 "$demo" --help >"$TMP/o" 2>&1 || fail "--help did not exit 0"
grep -q -- '--accept-batch' "$TMP/o" || fail "--help lists no flags"

# ---- engine errors: "weir-demo: <what>: <weir_strerror>", exit 1
timeout 10 "$demo" --addr 999.1.2.3:0 >"$TMP/o" 2>"$TMP/e"
rc=$?
[[ $rc -eq 1 ]] || fail "bad host: exit $rc, want 1 ($(cat "$TMP/e"))"
grep -q '^weir-demo: create: ' "$TMP/e" || fail "bad host: stderr '$(cat "$TMP/e")'"
if command -v python3 >/dev/null; then
    # a plain (non-SO_REUSEPORT) listener holds the port: listen must fail
    python3 -c 'import socket,sys,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); print(s.getsockname()[1], flush=True); time.sleep(30)' \
        >"$TMP/holder" &
    holder=$!
    for ((i = 0; i < 100; i++)); do [[ -s $TMP/holder ]] && break; sleep 0.05; done
    hp=$(cat "$TMP/holder")
    timeout 10 "$demo" --addr "127.0.0.1:$hp" >"$TMP/o" 2>"$TMP/e"
    rc=$?
    kill "$holder"; wait "$holder" 2>/dev/null
    [[ $rc -eq 1 ]] || fail "busy port: exit $rc, want 1"
    grep -q "^weir-demo: listen 127.0.0.1:$hp: " "$TMP/e" || fail "busy port: stderr '$(cat "$TMP/e")'"
fi

# ---- SIGHUP: every metric, close reasons by name
start_server "$demo" --addr 127.0.0.1:0
for i in 1 2 3; do expect 200 "Hello, World!" /; done
kill -HUP "$SERVER_PID"
for ((i = 0; i < 100; i++)); do grep -q '^metrics end$' "$TMP/server.out" && break; sleep 0.05; done
grep -q '^metrics end$' "$TMP/server.out" || fail "no metrics after SIGHUP"
for f in workers accepted accept_batches accept_owed accept_resource_errors accept_other_errors handoffs \
    handoffs_owed connections_open requests responses parse_errors continues_sent bytes_in bytes_out loop_passes \
    closes.peer closes.not_keep_alive closes.bad_request closes.shutdown; do
    grep -qE "^$f [0-9]+$" "$TMP/server.out" || fail "metric $f missing"
done
req=$(sed -n 's/^requests \([0-9]*\)$/\1/p' "$TMP/server.out")
((req >= 3)) || fail "requests $req after 3 requests"
grep -q '^closes\.unknown' "$TMP/server.out" && fail "a close reason has no name"

# ---- SIGUSR1 / SIGUSR2: a pause and a resume, or the build says it has none
answers='^(pause: |resume: |pause not supported by this build$)'
kill -USR1 "$SERVER_PID"
for ((i = 0; i < 100; i++)); do (($(count_lines "$answers") >= 1)) && break; sleep 0.05; done
kill -USR2 "$SERVER_PID"
for ((i = 0; i < 100; i++)); do (($(count_lines "$answers") >= 2)) && break; sleep 0.05; done
if (($(count_lines '^pause not supported by this build$') != 2)); then
    grep -q '^pause: ok$' "$TMP/server.out" || fail "SIGUSR1: $(grep -E "$answers" "$TMP/server.out")"
    grep -q '^resume: ok$' "$TMP/server.out" || fail "SIGUSR2: $(grep -E "$answers" "$TMP/server.out")"
fi
expect 200 "Hello, World!" /

# ---- SIGTERM during a request: it is answered, then exit 0
curl -s --noproxy '*' --max-time 20 -o "$TMP/slow" -w '%{http_code}' "$(url '/slow?ms=1500')" >"$TMP/slow_status" &
slow=$!
wait_requests $((req + 2))
stop_server TERM
[[ $STOP_RC -eq 0 ]] || fail "exit code $STOP_RC after SIGTERM, want 0"
wait "$slow"
[[ $(cat "$TMP/slow_status") == 200 && $(cat "$TMP/slow") == "slept 1500 ms" ]] ||
    fail "in-flight request during SIGTERM: $(cat "$TMP/slow_status") '$(cat "$TMP/slow")'"

# ---- SIGINT: exit 0 too
start_server "$demo" --addr 127.0.0.1:0 --mode driven
expect 200 "Hello, World!" /
stop_server INT
[[ $STOP_RC -eq 0 ]] || fail "exit code $STOP_RC after SIGINT, want 0"
echo "signals: ok"
