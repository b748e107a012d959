#!/usr/bin/env bash
# weir-demo --mode deferred answers from its own threads: while one handler
# sleeps on a pool thread, the (single) loop keeps answering other requests.
# Inline mode is the control: there the sleep holds the loop.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --mode deferred --workers 1
curl -s --noproxy '*' --max-time 30 -o "$TMP/slow" "$(url '/slow?ms=3000')" &
slow=$!
wait_requests 1
for i in 1 2 3 4 5; do expect 200 "Hello, World!" /; done
kill -0 "$slow" 2>/dev/null || fail "the slow request finished before the fast ones: they were not answered meanwhile"
wait "$slow"
[[ $(cat "$TMP/slow") == "slept 3000 ms" ]] || fail "slow answer '$(cat "$TMP/slow")'"
# many deferred answers at once, across connections and pipelined, all in order
out=$(curl -s --no-progress-meter --noproxy '*' --max-time 20 --parallel --parallel-max 16 $(for i in $(seq 1 64); do echo "$(url /)"; done) 2>/dev/null)
[[ $out == "$(for i in $(seq 1 64); do printf 'Hello, World!'; done)" ]] || fail "64 parallel answers: '$out'"
stop_server TERM
[[ $STOP_RC -eq 0 ]] || fail "exit code $STOP_RC after SIGTERM, want 0"
echo "deferred: ok"
