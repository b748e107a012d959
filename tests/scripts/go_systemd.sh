#!/usr/bin/env bash
# systemd from Go (issue 30; docs/go.md "systemd"): examples/go/hello with
# --systemd --fdstore (the binding's Systemd: socket activation and the fd
# store) under demo_systemd.py's fake systemd, for the native and the
# net/http API, on epoll and io_uring. 9 keep-alive clients run across each
# restart (SIGTERM stores, a new hello is given the store's fds at 3..).
# hello has no /slow, so the request demo_systemd.sh keeps in flight at each
# SIGTERM is a plain one here (weir-demo's run covers the in-flight case;
# the library call is the same).
#   store (must win): 3 restarts, every connection stored and adopted, 0
#     failed, 0 resets, 0 reconnects, nothing left in the store but the
#     listener, Connection: close reaches every client;
#   nostore (must lose): the same restart without --fdstore: every keep-alive
#     client sees its connection close and reconnects;
#   wrongpid: $LISTEN_PID of another process is ignored (--addr is used).
source "$(dirname "$0")/demo_common.bash"
command -v go >/dev/null || { echo "skip: go not found"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 needed for the fake systemd"; exit 77; }
[[ $SAN == tsan ]] && { echo "skip: TSAN=1: Go's runtime cannot share a process with a TSan-built libweir (go_examples.sh)"; exit 77; }
[[ $SAN == 1 ]] && { echo "skip: the Go examples run against the plain build only"; exit 77; }
make -s install PREFIX="$TMP/prefix" SAN="$SAN" >/dev/null
export PKG_CONFIG_PATH=$TMP/prefix/lib/pkgconfig
export LD_LIBRARY_PATH=$TMP/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export CGO_CFLAGS="-O2 -g -I$TMP/prefix/include" CGO_LDFLAGS="-O2 -g -L$TMP/prefix/lib -Wl,-rpath,$TMP/prefix/lib"
go build -o "$TMP/hello" ./examples/go/hello
# demo_systemd.py starts BIN --backend B ... through sh's exec (same pid, fds
# kept), so the API is chosen by a wrapper that execs hello in turn.
for api in native nethttp; do
    printf '#!/bin/sh\nexec "%s" --api %s "$@"\n' "$TMP/hello" "$api" >"$TMP/hello-$api"
    chmod +x "$TMP/hello-$api"
done
PY="python3 tests/scripts/demo_systemd.py"
export DEMO_SYSTEMD_SLOW_PATH=/ # hello has no /slow (above)

run() { # API BACKEND ARM: sets R_<key> from the result line
    local dir=$TMP/$1-$2-$3 line kv
    mkdir -p "$dir"
    line=$(timeout 180 $PY run "$TMP/hello-$1" --backend "$2" --arm "$3" --tmp "$dir" 2>"$dir/py.err" | tail -n 1)
    if [[ $line != result\ * ]]; then
        cat "$dir/py.err" >&2
        for f in "$dir"/demo*.out*; do [[ -s $f ]] && { echo "--- $f"; tail -n 20 "$f"; }; done
        fail "$1 $2 $3: the fake systemd gave no result"
    fi
    echo "$1 $2 $3: ${line#result }"
    unset "${!R_@}"
    for kv in ${line#result }; do
        [[ $kv =~ ^[a-z_]+=-?[0-9]+$ ]] || fail "$1 $2 $3: bad result item $kv"
        printf -v "R_${kv%%=*}" '%s' "${kv#*=}"
    done
}
want() { # "what" LHS OP RHS
    (($2 $3 $4)) || fail "$CASE: $1: $2 $3 $4 does not hold"
}

need_bin "$B/tests/support/backend_probe"
ran=0
for be in $BACKENDS; do
    if ! "$B/tests/support/backend_probe" "$be" >/dev/null 2>&1; then
        echo "$be: backend not available here; its arms are not run"
        continue
    fi
    ran=$((ran + 1))
    for api in native nethttp; do
        CASE="$api $be store"
        run "$api" "$be" store
        want "the passed socket is served" "$R_first_port_is_passed$R_second_port_is_passed" == 11
        want "one listener stored" "$R_stored_listeners_max" == 1
        want "every connection stored" "$R_stored_conns_min" == "$R_clients"
        want "every connection adopted" "$R_adopted_min" == "$R_clients"
        want "nothing closed by the store" "$R_store_closed + $R_adopt_closed" == 0
        want "failed requests" "$R_failed" == 0
        want "resets" "$R_resets" == 0
        want "reconnects" "$R_reconnects" == 0
        want "clients not served after the last restart" "$R_idle_after_mark" == 0
        want "adopted connections and images left in the store" "$R_store_conns_left_max + $R_store_images_left_max" == 0
        want "the listener left in the store" "$R_store_listeners_left" == 1
        want "Connection: close reached the client" "$R_eof_after_close" == "$R_clients"
        want "hellos exiting non-zero" "$R_exits_nonzero + $R_last_exit" == 0
        echo "$api $be store: restart (SIGTERM to the next 'listening', with a 200 ms gap) max ${R_restart_ms_max} ms"
    done
    CASE="$be nostore (must lose)"
    run native "$be" nostore
    want "hellos exiting non-zero" "$R_exits_nonzero + $R_last_exit" == 0
    want "adopted" "$R_adopted_min" == 0
    want "keep-alive clients that saw their connection close" "$R_closes + $R_resets" ">=" "$R_clients"
    want "reconnects" "$R_reconnects" ">=" "$R_clients"
    CASE="$be wrongpid"
    run nethttp "$be" wrongpid
    want "fell back to --addr" "$R_fell_back" == 1
    want "listening on another port than the passed one" "$R_listening_port" != "$R_passed_port"
    want "exit status" "$R_exit" == 0
done
((ran > 0)) || { echo "skip: no backend starts here"; exit 77; }
echo "ok"
