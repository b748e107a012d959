#!/usr/bin/env bash
# weir-demo --app hello in each mode (inline, driven, deferred) on epoll, and
# on io_uring where the engine offers it (and --backend auto): every route,
# SIGHUP names the backend (io_uring: its tier and features, 0 CQ overflows),
# then SIGTERM exits 0.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
for run in $(backend_modes inline driven deferred) auto:inline; do
    backend=${run%%:*} mode=${run#*:}
    if ! ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" \
        --mode "$mode" --workers 2; then
        echo "$run: backend not available in this build or kernel: $(head -n 1 "$TMP/server.err")"
        continue
    fi
    expect 200 "Hello, World!" /
    grep -qi '^content-type: text/plain' "$TMP/head" || fail "$run: GET / without Content-Type: text/plain"
    expect 200 "fast" /fast
    expect 200 "slept 50 ms" "/slow?ms=50"
    expect 200 "slept 0 ms" "/slow"
    expect 200 "ping pong" /echo --data-binary "ping pong"
    head -c 100000 /dev/urandom >"$TMP/blob"
    [[ $(fetch /echo --data-binary @"$TMP/blob") == 200 ]] || fail "$run: POST /echo of 100000 bytes"
    cmp -s "$TMP/blob" "$TMP/body" || fail "$run: POST /echo did not give the body back"
    expect 404 "Not Found" /nope
    expect 404 "Not Found" / -X POST -d x
    expect 404 "Not Found" /echo
    # keep-alive: several requests on one connection
    out=$(curl -s --noproxy '*' --max-time 10 "$(url /)" "$(url /fast)" "$(url /)")
    [[ $out == "Hello, World!fast"$'\n'"Hello, World!" ]] || fail "$run: keep-alive sequence gave '$out'"
    kill -HUP "$SERVER_PID"
    for ((i = 0; i < 100; i++)); do grep -q '^metrics end$' "$TMP/server.out" && break; sleep 0.05; done
    want=$backend
    [[ $backend == auto ]] && { grep -q 'falling back to epoll' "$TMP/server.err" && want=epoll || want=uring; }
    grep -q "^backend $want\$" "$TMP/server.out" || fail "$run: SIGHUP does not say 'backend $want'"
    if [[ $want == uring ]]; then
        tier=inline; [[ $mode == inline || $mode == deferred ]] && tier=defer || tier=coop
        grep -q "^uring_tier $tier\$" "$TMP/server.out" || fail "$run: SIGHUP does not say 'uring_tier $tier'"
        grep -q '^uring_feature.multishot_accept used$' "$TMP/server.out" || fail "$run: multishot accept not listed as used"
        grep -q '^uring_cq_overflows 0$' "$TMP/server.out" || fail "$run: CQ overflows: $(grep uring_cq_overflows "$TMP/server.out")"
    fi
    stop_server TERM
    [[ $STOP_RC -eq 0 ]] || fail "$run: exit code $STOP_RC after SIGTERM, want 0"
    echo "$run: ok"
done
