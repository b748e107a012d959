#!/usr/bin/env bash
# h2spec v2.2.1 (every case: generic, http2, hpack; 145) against weir-demo
# --protocols h2c on each backend, each case bounded by -o 2 (seconds) and the
# whole run by 300 s. Prints `h2spec [backend]: P passed, F failed, S skipped
# of 145` and the failed cases' ids (h2spec takes them back: h2spec http2/3.5/2).
# Fails when any case fails, when the tally cannot be read, and when weir-demo
# refuses --protocols: never a silent skip. (Not in make test until HTTP/2
# lands: docs/http2-tests.md.)
#
# Against another server instead of weir-demo (docs/http2-tests.md has the
# tallies of h2o 2.2.5 and nginx 1.22 on our machines):
#   H2SPEC_PEER=h2o | nginx       that server, started here (tests/scripts/h2/h2_common.bash)
#   H2SPEC_PEER_CMD='CMD @PORT@'  any command; @PORT@ becomes a free port
#   H2SPEC_PEER_PORT=N            a server already listening on 127.0.0.1:N
#   H2SPEC_PEER_NAME=NAME         the label of the last two (default: peer)
# H2SPEC_TIMEOUT=S sets -o (default 2).
# In tests/scripts/h2/ until HTTP/2 lands (run-tests runs tests/scripts/*.sh
# only); moved up to tests/scripts/ to wire it into make test, unchanged.
here=$(dirname "$0")
[[ -f $here/demo_common.bash ]] || here=$here/..
source "$here/demo_common.bash"
source tests/scripts/h2/h2_common.bash
command -v python3 >/dev/null || { echo "FAIL: python3 is not installed"; exit 1; }
H2SPEC=$(scripts/h2spec-tool) || fail "h2spec v2.2.1 is not available (scripts/h2spec-tool says why above)"
CASE_TIMEOUT=${H2SPEC_TIMEOUT:-2}

# run_h2spec LABEL: against 127.0.0.1:$PORT; returns the tally's exit code.
run_h2spec() {
    local label=$1 rc
    rm -f "$TMP/junit.xml"
    timeout 300 "$H2SPEC" -h 127.0.0.1 -p "$PORT" -o "$CASE_TIMEOUT" -j "$TMP/junit.xml" >"$TMP/h2spec.out" 2>&1
    rc=$?
    ((rc == 124)) && echo "h2spec [$label]: h2spec did not finish in 300 s"
    cp "$TMP/h2spec.out" "$TMP/h2spec-$label.out"
    python3 tests/scripts/h2/h2spec_tally.py "$label" "$TMP/junit.xml" "$TMP/h2spec.out"
    local t=$?
    ((t == 2)) && { echo "--- h2spec's output (last 30 lines)"; tail -n 30 "$TMP/h2spec.out"; }
    ((rc == 124 && t == 0)) && t=2
    return "$t"
}

status=0
if [[ -n ${H2SPEC_PEER:-} ]]; then
    start_peer "$H2SPEC_PEER"
    run_h2spec "$H2SPEC_PEER" || status=1
elif [[ -n ${H2SPEC_PEER_CMD:-} ]]; then
    read -ra words <<<"$H2SPEC_PEER_CMD"
    start_cmd "${words[@]}"
    run_h2spec "${H2SPEC_PEER_NAME:-peer}" || status=1
elif [[ -n ${H2SPEC_PEER_PORT:-} ]]; then
    PORT=$H2SPEC_PEER_PORT
    run_h2spec "${H2SPEC_PEER_NAME:-peer}" || status=1
    PORT=
else
    need_bin "$B/bin/weir-demo"
need_protocols_flag h2c
    for backend in $BACKENDS; do
        # A weir-demo without --protocols exits at once: start_server fails
        # with its stderr ("weir-demo: unknown option: --protocols").
        if ! ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" \
            --protocols h2c --workers 2; then
            echo "h2spec [$backend]: backend not available on this kernel: $(head -n 1 "$TMP/server.err")"
            continue
        fi
        run_h2spec "$backend" || status=1
        stop_server TERM
        [[ $STOP_RC -eq 0 ]] || { echo "h2spec [$backend]: exit code $STOP_RC after SIGTERM, want 0"; status=1; }
    done
fi
exit "$status"
