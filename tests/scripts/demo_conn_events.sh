#!/usr/bin/env bash
# weir-demo --conn-events (issue 30; weir_config.on_conn, docs/api.md §5.11),
# on both backends: five connections, each closed another way, must print one
# "conn open" and one "conn close" line each, paired by id, with the close
# reason weir counts it under:
#   curl GET / (HTTP/1.1), curl closes          -> peer
#   a request with a bad Content-Length: 400    -> bad_request
#   curl --http2-prior-knowledge GET /          -> peer
#   the HTTP/2 preface, then a DATA frame on
#   stream 0 (RFC 9113 §6.1): GOAWAY            -> h2_protocol
#   an idle keep-alive client at SIGTERM        -> shutdown
# The closes.* metrics (SIGHUP) must count the same reasons. The negative arm:
# without the flag the same traffic prints no "conn " line.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
help=$("$B/bin/weir-demo" --help 2>&1) || true
grep -q -- '--conn-events' <<<"$help" || fail "--help does not document --conn-events"

traffic() { # backend
    local code
    code=$(fetch /) || fail "$1: curl GET / failed"
    [[ $code == 200 ]] || fail "$1: GET / status $code"
    exec 3<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'POST / HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n' >&3
    read -r -t 5 line <&3 || fail "$1: no answer to the bad request"
    [[ $line == "HTTP/1.1 400"* ]] || fail "$1: bad request answered '$line'"
    cat <&3 >/dev/null # to its EOF: weir closes it
    exec 3<&-
    code=$(fetch / --http2-prior-knowledge) || fail "$1: curl --http2-prior-knowledge failed"
    [[ $code == 200 ]] || fail "$1: HTTP/2 GET / status $code"
    exec 3<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00' >&3
    timeout 5 cat <&3 >/dev/null # weir's SETTINGS and GOAWAY, then EOF
    exec 3<&-
    exec 4<>"/dev/tcp/127.0.0.1/$PORT" # kept open, idle, through the shutdown
    printf 'GET / HTTP/1.1\r\nHost: t\r\n\r\n' >&4
    read -r -t 5 line <&4 || fail "$1: the kept client got no answer"
}

for backend in $BACKENDS; do
    ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" --workers 1 \
        --no-defer-accept --conn-events || continue
    traffic "$backend"
    sleep 0.2 # the closes above reach the worker
    kill -HUP "$SERVER_PID"
    for ((i = 0; i < 50; i++)); do grep -q '^closes\.h2_protocol' "$TMP/server.out" && break; sleep 0.1; done
    stop_server TERM
    exec 4<&-
    [[ $STOP_RC -eq 0 ]] || fail "$backend: exit code $STOP_RC after SIGTERM, want 0"
    out=$TMP/server.out
    [[ -n ${SHOW:-} ]] && grep "^conn " "$out"
    opens=$(grep -c '^conn open id=[0-9]* worker=0 peer=127\.0\.0\.1:[0-9]*$' "$out")
    closes=$(grep -c '^conn close id=[0-9]* worker=0 reason=[a-z_0-9]* peer=127\.0\.0\.1:[0-9]*$' "$out")
    [[ $opens == 5 && $closes == 5 ]] || fail "$backend: $opens opens and $closes closes printed, want 5 and 5"
    # Each id opened once and closed once, its close after its open.
    bad=$(awk '/^conn open/ { split($3, a, "="); if (a[2] in o) print "twice " a[2]; o[a[2]] = NR }
               /^conn close/ { split($3, a, "="); if (!(a[2] in o) || (a[2] in c)) print "unpaired " a[2]; c[a[2]] = 1 }
               END { for (k in o) if (!(k in c)) print "unclosed " k }' "$out")
    [[ -z $bad ]] || fail "$backend: the ledger: $bad"
    got=$(sed -n 's/^conn close .* reason=\([a-z_0-9]*\) .*/\1/p' "$out" | sort | tr '\n' ' ')
    [[ $got == "bad_request h2_protocol peer peer shutdown " ]] ||
        fail "$backend: close reasons '$got', want 'bad_request h2_protocol peer peer shutdown '"
    # The metrics printed before the shutdown count the four closes before it.
    for r in peer:2 bad_request:1 h2_protocol:1; do
        grep -q "^closes\.${r%%:*} ${r##*:}\$" "$out" || fail "$backend: metrics do not show closes.${r%%:*} ${r##*:}"
    done
    # The negative arm: no flag, no lines.
    ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" --workers 1 \
        --no-defer-accept || continue
    traffic "$backend"
    stop_server TERM
    exec 4<&-
    ! grep -q '^conn ' "$TMP/server.out" || fail "$backend: connection events printed without --conn-events"
done
echo ok
