#!/usr/bin/env bash
# weir-demo --overload (issue 32), the operator's contract: documented in
# --help; a bad item (unknown name, not a number, past 32 bits) is a clear
# error and exit 2 (a value weir_engine_create refuses, -EINVAL, is its exit
# 1); a good one starts, serves, and SIGHUP prints the overload_* counters
# with weir's names (closes.overload appears once nonzero, as every close). The
# actions themselves are tests/integration/test_overload.cc's (it holds
# requests in the host, which the demo's apps do not).
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
help=$("$B/bin/weir-demo" --help 2>&1) || true
grep -q -- '--overload LIST' <<<"$help" || fail "--help does not document --overload"
for bad in 'inflight=x' 'bogus=1' 'inflight' 'conns=-1' 'mem_mb=99999999999'; do
    rc=0
    err=$("$B/bin/weir-demo" --addr 127.0.0.1:0 --overload "$bad" 2>&1 >/dev/null) || rc=$?
    [[ $rc -eq 2 ]] || fail "--overload '$bad': exit $rc, want 2"
    grep -q 'bad --overload' <<<"$err" || fail "--overload '$bad': no clear error ($err)"
done
for backend in $BACKENDS; do
    ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" --workers 1 \
        --overload inflight=64,conns=100,fds=4000,mem_mb=256 || continue
    code=$(fetch /) || fail "$backend: curl failed (exit $?)"
    [[ $code == 200 ]] || fail "$backend: status $code, want 200"
    kill -HUP "$SERVER_PID"
    for ((i = 0; i < 50; i++)); do
        grep -q '^overload_refused ' "$TMP/server.out" && break
        sleep 0.1
    done
    for name in overload_level overload_engaged overload_keepalive_off overload_accept_shrunk \
        overload_accept_pauses overload_refused overload_idle_closed; do
        grep -q "^$name 0$" "$TMP/server.out" || fail "$backend: SIGHUP did not print '$name 0'"
    done
    stop_server TERM
    [[ $STOP_RC -eq 0 ]] || fail "$backend: exit code $STOP_RC after SIGTERM, want 0"
done
echo ok
