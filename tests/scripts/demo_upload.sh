#!/usr/bin/env bash
# weir-demo's POST /upload (weir_body_read) on epoll and io_uring:
# - 1 GiB (256 MiB under a sanitizer) with Content-Length, far above --max-body (1 MiB), inline: the
#   answer is "<bytes> <sha256>" and the server's RSS stays flat (its peak
#   during the upload minus its RSS before it, under 32 MiB);
# - 64 MiB chunked in every mode, and 64 MiB with Expect: 100-continue
#   (the 100 comes with the host's first read);
# - POST /upload?expect=refuse with Expect: 100-continue: a 417 and no 100
#   (the host refused the body before it was sent).
# The arm that must lose: --stream-body-bytes 0 (every body buffered) with
# --max-body 512 MiB, a 256 MiB upload makes the RSS grow by at least
# 256 MiB: the whole body sat in the engine.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "skip: python3 needed for the upload client"; exit 77; }
UP="python3 tests/scripts/demo_upload.py"
GiB=1073741824
MiB=1048576
# Under a sanitizer (SAN=1, SAN=tsan) the upload is 256 MiB and the bound 64
# MiB: the shadow memory and quarantine grow with what the process touches,
# and TSan runs the hashing 5-10 times slower.
BIG=$GiB BIG_NAME="1 GiB" RSS_BOUND=32768
if [[ ${SAN:-0} != 0 ]]; then
    BIG=$((256 * MiB)) BIG_NAME="256 MiB" RSS_BOUND=65536
fi

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status" 2>/dev/null || echo 0; }

# upload_rss ARGS...: runs the client while sampling the server's RSS; sets
# RSS_BEFORE and RSS_PEAK (KiB) and UP_OUT (the client's line).
upload_rss() {
    RSS_BEFORE=$(rss_kb)
    $UP "$@" >"$TMP/up.out" 2>&1 &
    local cpid=$! peak=$RSS_BEFORE r
    while kill -0 "$cpid" 2>/dev/null; do
        r=$(rss_kb)
        ((r > peak)) && peak=$r
        sleep 0.05
    done
    wait "$cpid"
    UP_RC=$?
    RSS_PEAK=$peak
    UP_OUT=$(cat "$TMP/up.out")
}

for backend in $BACKENDS; do
    if ! ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" --workers 1; then
        echo "$backend: backend not available: $(head -n 1 "$TMP/server.err")"
        continue
    fi
    upload_rss "$PORT" "$BIG" length
    ((UP_RC == 0)) || fail "$backend: $BIG_NAME upload: $UP_OUT"
    grow=$((RSS_PEAK - RSS_BEFORE))
    echo "$backend: $BIG_NAME streamed in ${UP_OUT#ok } s; RSS ${RSS_BEFORE} KiB before, peak ${RSS_PEAK} KiB (+${grow} KiB)"
    ((grow < RSS_BOUND)) || fail "$backend: RSS grew by ${grow} KiB during a streamed $BIG_NAME upload"
    out=$($UP "$PORT" $((64 * MiB)) length refuse) || fail "$backend: refused upload: $out"
    stop_server TERM
    [[ $STOP_RC == 0 ]] || fail "$backend: exit status $STOP_RC after SIGTERM"
done

for run in $(backend_modes inline driven deferred); do
    backend=${run%%:*} mode=${run#*:}
    ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" \
        --mode "$mode" --workers 2 || continue
    out=$($UP "$PORT" $((64 * MiB)) chunked) || fail "$run: 64 MiB chunked: $out"
    out=$($UP "$PORT" $((64 * MiB)) length expect) || fail "$run: 64 MiB with 100-continue: $out"
    out=$($UP "$PORT" 1000 length) || fail "$run: a small upload (buffered): $out"
    stop_server TERM
    [[ $STOP_RC == 0 ]] || fail "$run: exit status $STOP_RC after SIGTERM"
    echo "$run: ok"
done

# The arm: every body buffered. The whole upload sits in the engine.
ALLOW_UNAVAILABLE=0 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --workers 1 \
    --stream-body-bytes 0 --max-body $((512 * MiB))
upload_rss "$PORT" $((256 * MiB)) length
((UP_RC == 0)) || fail "arm: buffered 256 MiB upload: $UP_OUT"
grow=$((RSS_PEAK - RSS_BEFORE))
echo "arm (every body buffered): 256 MiB upload; RSS +${grow} KiB"
((grow >= 256 * 1024)) || fail "arm: a buffered 256 MiB body grew the RSS by only ${grow} KiB"
stop_server TERM
echo "ok"
