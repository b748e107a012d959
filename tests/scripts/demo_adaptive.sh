#!/usr/bin/env bash
# weir-demo --adaptive (docs/transplant.md): a standby engine on the other
# backend shares the port; SIGWINCH switches. Under a keep-alive wrk run and a
# Connection: close churn, ten switches 400 ms apart (so some switch back
# inside the outgoing engine's 1.5 s linger): 0 socket errors, 0 non-2xx, and
# on SIGHUP both engines' ledgers balance with nothing in flight.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v wrk >/dev/null || { echo "wrk is not installed"; exit 77; }
for mode in inline deferred; do
    start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend epoll --mode "$mode" --workers 2 --adaptive
    wrk -t1 -c32 -d5s "http://127.0.0.1:$PORT/" >"$TMP/wrk.ka" 2>&1 &
    ka=$!
    wrk -t1 -c4 -d5s -H 'Connection: close' "http://127.0.0.1:$PORT/" >"$TMP/wrk.close" 2>&1 &
    cl=$!
    sleep 0.3
    for i in $(seq 10); do kill -WINCH "$SERVER_PID"; sleep 0.4; done
    wait "$ka" "$cl"
    for f in ka close; do
        grep -q 'requests in' "$TMP/wrk.$f" || fail "$mode: wrk ($f) did not run: $(cat "$TMP/wrk.$f")"
        grep -qE 'Socket errors|Non-2xx' "$TMP/wrk.$f" && fail "$mode: wrk ($f) across 10 switches: $(grep -E 'Socket errors|Non-2xx' "$TMP/wrk.$f")"
    done
    n=$(grep -c '^switched to' "$TMP/server.out")
    ((n == 10)) || fail "$mode: $n switches printed, want 10"
    sleep 2 # the last linger ends
    kill -HUP "$SERVER_PID"
    for ((i = 0; i < 100; i++)); do grep -q '^metrics end$' "$TMP/server.out" && break; sleep 0.05; done
    grep -q '^adaptive.switches 10$' "$TMP/server.out" || fail "$mode: SIGHUP: $(grep adaptive "$TMP/server.out")"
    grep -q '^transplant_in_flight 0$' "$TMP/server.out" || fail "$mode: active engine: images still in flight"
    grep -q '^standby.transplant_in_flight 0$' "$TMP/server.out" || fail "$mode: standby: images still in flight"
    grep -q '^standby.connections_open 0$' "$TMP/server.out" || fail "$mode: the standby still holds connections"
    for p in '' 'standby.'; do
        d=$(sed -n "s/^${p}transplant_detached \([0-9]*\)$/\1/p" "$TMP/server.out" | tail -n 1)
        a=$(sed -n "s/^${p}transplant_adopted \([0-9]*\)$/\1/p" "$TMP/server.out" | tail -n 1)
        r=$(sed -n "s/^${p}transplant_refused \([0-9]*\)$/\1/p" "$TMP/server.out" | tail -n 1)
        ((d == a + r)) || fail "$mode: ${p:-active }ledger: detached $d != adopted $a + refused $r"
        ((d > 0)) || fail "$mode: ${p:-active }engine moved nothing"
    done
    echo "$mode: ok ($(grep -Eo '^ *[0-9]+ requests' "$TMP/wrk.ka") keep-alive, $(grep -Eo '^ *[0-9]+ requests' "$TMP/wrk.close") close, 10 switches)"
    stop_server TERM
    [[ $STOP_RC -eq 0 ]] || fail "$mode: exit code $STOP_RC after SIGTERM"
done
