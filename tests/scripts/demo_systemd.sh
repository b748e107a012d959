#!/usr/bin/env bash
# weir-demo under a fake systemd (demo_systemd.py: socket activation and the
# fd store over $NOTIFY_SOCKET, no systemd needed), on epoll and io_uring
# (the io_uring runs use an abstract '@' $NOTIFY_SOCKET, epoll a path).
# 9 keep-alive clients (one of them in a 300 ms request at each SIGTERM) run
# across each restart: SIGTERM to the demo (--systemd --fdstore), then a new
# demo given the listener and the store's fds at 3.. ($LISTEN_PID via sh's $$).
# Arms that must win:
#   store       3 restarts, the listener kept by the store alone: every
#               connection stored and adopted each time, 0 failed requests,
#               0 resets, 0 reconnects (every client on its first TCP
#               connection), each served after the last restart; the second
#               demo removes the connections and the images from the store,
#               so its Connection: close reaches every client (EOF)
#   store-unit  the same with a socket unit's listener passed too (one socket
#               twice: one listener)
# Arms that must lose, each against the rule it shows:
#   nostore     the same restart without --fdstore: every keep-alive client
#               sees its connection close (counted) and reconnects
#   keep-store  a store that ignores FDSTOREREMOVE: the demo's close of an
#               adopted connection never reaches the client (no EOF), which
#               is why weir removes what it adopted
#   proto       images of another protocol: refused cleanly (the listener
#               serves on the passed port, every connection is closed and
#               counted, WEIR_E_HANDOVER_VERSION reported)
#   cap         FileDescriptorStoreMax=5 ($FDSTORE): 3 connections fit and
#               are adopted, the other 6 are closed by the first demo, counted
#   wrongpid    $LISTEN_PID names another process: ignored, the demo listens
#               on --addr (another port), as with nothing passed; its pair is
#               every other arm's first demo, given the same socket with the
#               right pid, which serves the passed port
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "skip: python3 needed for the fake systemd"; exit 77; }
PY="python3 tests/scripts/demo_systemd.py"

# run BACKEND ARM: sets R_<key> from the result line.
run() {
    local dir=$TMP/$1-$2 line
    mkdir -p "$dir"
    line=$(timeout 180 $PY run "$B/bin/weir-demo" --backend "$1" --arm "$2" --tmp "$dir" 2>"$dir/py.err" | tail -n 1)
    # A sanitizer's report in any demo's stderr fails the arm, whatever it counted.
    for f in "$dir"/*.err; do
        if grep -qE 'WARNING: ThreadSanitizer:|ERROR: (Address|Leak)Sanitizer|runtime error:' "$f"; then
            grep -E -A30 'WARNING: ThreadSanitizer:|ERROR: (Address|Leak)Sanitizer|runtime error:' "$f" | head -n 60
            fail "$1 $2: a sanitizer report in $f"
        fi
    done
    if [[ $line != result\ * ]]; then
        cat "$dir/py.err" >&2
        for f in "$dir"/demo*.out*; do [[ -s $f ]] && { echo "--- $f"; tail -n 20 "$f"; }; done
        fail "$1 $2: the fake systemd gave no result: $(tail -n 3 "$dir/py.err")"
    fi
    echo "$1 $2: ${line#result }"
    unset "${!R_@}"
    local kv
    for kv in ${line#result }; do
        [[ $kv =~ ^[a-z_]+=-?[0-9]+$ ]] || fail "$1 $2: bad result item $kv"
        printf -v "R_${kv%%=*}" '%s' "${kv#*=}"
    done
}

want() { # "what" LHS OP RHS
    (($2 $3 $4)) || fail "$CASE: $1: $2 $3 $4 does not hold"
}

for be in $BACKENDS; do
    if ! "$B/tests/support/backend_probe" "$be" >/dev/null 2>&1; then
        echo "$be: backend not available here; its arms are not run"
        continue
    fi
    for arm in store store-unit; do
        CASE="$be $arm"
        run "$be" "$arm"
        want "the passed socket is served" "$R_first_port_is_passed$R_second_port_is_passed" == 11
        want "one listener (one socket passed twice counts once)" "$R_first_listeners" == 1
        want "one listener stored" "$R_stored_listeners_max" == 1
        want "every connection stored" "$R_stored_conns_min" == "$R_clients"
        want "every connection adopted" "$R_adopted_min" == "$R_clients"
        want "nothing closed by the store" "$R_store_closed + $R_adopt_closed" == 0
        want "failed requests" "$R_failed" == 0
        want "resets" "$R_resets" == 0
        want "reconnects (a client off its first TCP connection)" "$R_reconnects" == 0
        want "clients not served after the last restart" "$R_idle_after_mark" == 0
        want "adopted connections and images left in the store" "$R_store_conns_left_max + $R_store_images_left_max" == 0
        want "the listener left in the store" "$R_store_listeners_left" == 1
        want "Connection: close reached the client" "$R_eof_after_close" == "$R_clients"
        want "demos exiting non-zero" "$R_exits_nonzero + $R_last_exit" == 0
    done

    CASE="$be nostore (must lose)"
    run "$be" nostore
    want "demos exiting non-zero" "$R_exits_nonzero + $R_last_exit" == 0
    want "adopted" "$R_adopted_min" == 0
    want "keep-alive clients that saw their connection close" "$R_closes + $R_resets" ">=" "$R_clients"
    want "reconnects" "$R_reconnects" ">=" "$R_clients"
    echo "$be nostore: $R_closes closes, $R_resets resets, $R_reconnects reconnects of $R_clients keep-alive clients"

    CASE="$be keep-store (must lose)"
    run "$be" keep-store
    want "demos exiting non-zero" "$R_exits_nonzero + $R_last_exit" == 0
    want "adopted" "$R_adopted_min" == "$R_clients"
    want "connections the store still holds" "$R_store_conns_left_max" == "$R_clients"
    want "closes that reached no client" "$R_no_eof_after_close" == "$R_clients"

    CASE="$be proto (refused cleanly)"
    run "$be" proto
    want "the listener serves" "$R_second_listeners_min$R_second_port_is_passed" == 11
    want "demos exiting non-zero" "$R_exits_nonzero + $R_last_exit" == 0
    want "WEIR_E_HANDOVER_VERSION reported" "$R_image_version_error" == 1
    want "adopted" "$R_adopted_min" == 0
    want "connections closed, counted" "$R_adopt_closed" == "$R_clients"
    want "nothing left in the store" "$R_store_conns_left_max + $R_store_images_left_max" == 0
    want "clients that reconnected and were served" "$R_idle_after_mark" == 0

    CASE="$be cap (FileDescriptorStoreMax=5)"
    run "$be" cap
    want "demos exiting non-zero" "$R_exits_nonzero + $R_last_exit" == 0
    want "connections stored" "$R_stored_conns_min" == 3
    want "connections closed by the store, counted" "$R_store_closed" == $((R_clients - 3))
    want "adopted" "$R_adopted_min" == 3
    want "closes the clients saw" "$R_closes + $R_resets" == $((R_clients - 3))

    CASE="$be wrongpid"
    run "$be" wrongpid
    want "fell back to --addr" "$R_fell_back" == 1
    want "listening on another port than the passed one" "$R_listening_port" != "$R_passed_port"
    want "exit status" "$R_exit" == 0
done
echo "ok"
