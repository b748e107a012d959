#!/usr/bin/env bash
# weir-demo --adaptive --adaptive-controller (docs/controller.md): under 300
# idle keep-alive connections (tests/scripts/demo_controller.py) the
# controller switches to the standby by itself, once, and stays there while
# the load lasts; when the load goes away it switches back, once. Every
# connection still answers after the move. Run twice: with the standby on
# io_uring (where the kernel runs it), and with io_uring refused (a preloaded
# io_uring_queue_init_params that fails, so the standby is a second epoll
# engine). The arm that must not switch: --adaptive without the controller,
# the same load held past the default interval x hold (3 s) with 300
# connections per worker, above the default up_conns (64): no switch.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
N=300
CONTROLLER=(--adaptive-controller --controller-interval-ms 100
    --controller up_conns=50,down_conns=10,up_rps=1000000,down_rps=100000,hold=3,cooldown_ms=1000)

# ---- flags: the controller needs --adaptive; its tunables need the controller
for args in "--adaptive-controller" "--adaptive --controller hold=1" "--adaptive --controller-interval-ms 100" \
    "--adaptive --adaptive-controller --controller up_conns=10" \
    "--adaptive --adaptive-controller --controller nope=1"; do
    # shellcheck disable=SC2086
    timeout 10 "$B/bin/weir-demo" $args >/dev/null 2>"$TMP/e"
    rc=$?
    [[ $rc -eq 2 ]] || fail "weir-demo $args: exit $rc, want 2"
    grep -q '^usage: weir-demo' "$TMP/e" || fail "weir-demo $args: no usage on stderr"
done

# metrics: a SIGHUP, and its whole block printed
metrics() {
    local before i
    before=$(count_lines '^metrics end$')
    kill -HUP "$SERVER_PID"
    for ((i = 0; i < 100; i++)); do
        (($(count_lines '^metrics end$') > before)) && return 0
        sleep 0.05
    done
    fail "no metrics block 5 s after SIGHUP"
}
# value NAME: the last printed value of a metric line
value() { sed -n "s/^$1 \(.*\)$/\1/p" "$TMP/server.out" | tail -n 1; }
expect_value() { # NAME WANT WHAT
    [[ $(value "$1") == "$2" ]] || fail "$3: $1 is '$(value "$1")', want '$2'"
}
# wait_switches N SECONDS: until N "switched to" lines (fails after SECONDS)
wait_switches() {
    local i
    for ((i = 0; i < $2 * 20; i++)); do
        (($(count_lines '^switched to') >= $1)) && return 0
        sleep 0.05
    done
    fail "$(count_lines '^switched to') switches after $2 s, want $1"
}
expect_switches() { # N WHAT
    local n
    n=$(count_lines '^switched to')
    ((n == $1)) || fail "$2: $n switches, want $1"
}
# load: N connections held open until release; sets CLIENT
load() {
    rm -f "$TMP/ready" "$TMP/release"
    python3 tests/scripts/demo_controller.py "$PORT" "$N" "$TMP" >"$TMP/client.out" 2>&1 &
    CLIENT=$!
    local i
    for ((i = 0; i < 200; i++)); do
        [[ -e $TMP/ready ]] && return 0
        kill -0 "$CLIENT" 2>/dev/null || break
        sleep 0.05
    done
    fail "the client did not open its connections: $(cat "$TMP/client.out")"
}
release() {
    touch "$TMP/release"
    wait "$CLIENT" || fail "$1: the client failed: $(cat "$TMP/client.out")"
}

on_arm() { # LABEL [env ...]
    local label=$1
    shift
    start_server env "$@" "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend epoll --workers 1 --adaptive \
        "${CONTROLLER[@]}"
    sleep 0.5 # 5 samples of an idle server: nothing asks for a switch
    expect_switches 0 "$label: idle"
    load
    wait_switches 1 5
    grep -q '^controller: up (' "$TMP/server.out" || fail "$label: the first switch was not the controller's 'up'"
    sleep 1.5 # past the 1 s cooldown, loaded: between the thresholds' far sides nothing moves
    expect_switches 1 "$label: loaded"
    metrics
    expect_value controller.role uring "$label: loaded"
    expect_value controller.switches 1 "$label: loaded"
    expect_value adaptive.switches 1 "$label: loaded"
    expect_value controller.last_reason steady "$label: loaded"
    expect_value controller.last_conns_per_worker "$N" "$label: loaded"
    expect_value connections_open "$N" "$label: the new active engine holds every connection"
    expect_value standby.connections_open 0 "$label: loaded"
    release "$label"
    wait_switches 2 5
    grep -q '^controller: down (' "$TMP/server.out" || fail "$label: the second switch was not the controller's 'down'"
    sleep 1
    expect_switches 2 "$label: after the load"
    metrics
    expect_value controller.role epoll "$label: after the load"
    expect_value controller.switches 2 "$label: after the load"
    expect_value controller.external_switches 0 "$label: after the load"
    expect_value controller.lockouts 0 "$label: after the load"
    expect_value adaptive.switches 2 "$label: after the load"
    expect_value transplant_in_flight 0 "$label: after the load"
    expect_value standby.transplant_in_flight 0 "$label: after the load"
    echo "$label: ok ($(grep '^switched to' "$TMP/server.out" | paste -sd, -); $(cat "$TMP/client.out"))"
    stop_server TERM
    [[ $STOP_RC -eq 0 ]] || fail "$label: exit code $STOP_RC after SIGTERM"
}

on_arm "controller"
if command -v "${CC:-cc}" >/dev/null; then
    printf '%s\n' '#include <errno.h>' 'struct io_uring;' 'struct io_uring_params;' \
        'int io_uring_queue_init_params(unsigned n, struct io_uring *r, struct io_uring_params *p) {' \
        '    (void)n; (void)r; (void)p; return -ENOSYS; }' >"$TMP/no_uring.c"
    "${CC:-cc}" -shared -fPIC -o "$TMP/no_uring.so" "$TMP/no_uring.c" || fail "could not build the io_uring refusal"
    # verify_asan_link_order: under SAN=1 the preload comes before ASan's runtime
    on_arm "controller, io_uring refused" LD_PRELOAD="$TMP/no_uring.so" \
        ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0"
    grep -q 'the standby runs on epoll' "$TMP/server.err" || fail "io_uring refused: the standby was not epoll"
else
    echo "note: no C compiler, the io_uring-refused arm is not run"
fi

# ---- off by default: the same load, past when the default controller would switch
start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend epoll --workers 1 --adaptive
load
sleep 4
expect_switches 0 "no controller"
metrics
expect_value controller.enabled 0 "no controller"
expect_value adaptive.switches 0 "no controller"
expect_value connections_open "$N" "no controller: the load was there"
release "no controller"
echo "no controller: ok (0 switches in 4 s at $N connections per worker)"
stop_server TERM
[[ $STOP_RC -eq 0 ]] || fail "no controller: exit code $STOP_RC after SIGTERM"
