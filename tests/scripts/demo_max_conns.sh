#!/usr/bin/env bash
# weir-demo --max-connections N (issue 32), on both backends: with one worker
# and --max-connections 1, one keep-alive client holds the only place; a
# second client is answered "503 Service Unavailable" with Retry-After: 1 and
# Connection: close, then EOF (curl exits 0: no reset); once the held client
# leaves, a new one is served. The negative arm (the close unanswered, as
# before) is tests/integration/test_max_conns_answer.cc's: it needs a hook.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
# The help is read whole first: grep -q stopping early would SIGPIPE the demo
# and fail the pipe under pipefail (it did under SAN=1).
help=$("$B/bin/weir-demo" --help 2>&1) || true
grep -q -- '--max-connections N' <<<"$help" || fail "--help does not document --max-connections"
for backend in $BACKENDS; do
    ALLOW_UNAVAILABLE=1 start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --backend "$backend" --workers 1 \
        --max-connections 1 --no-defer-accept || continue
    exec 3<>"/dev/tcp/127.0.0.1/$PORT"
    printf 'GET / HTTP/1.1\r\nHost: t\r\n\r\n' >&3
    read -r -t 5 line <&3 || fail "$backend: the held client got no answer"
    [[ $line == "HTTP/1.1 200"* ]] || fail "$backend: the held client got '$line'"
    code=$(fetch /) || fail "$backend: curl failed over the limit (exit $?: a reset or no answer)"
    [[ $code == 503 ]] || fail "$backend: over --max-connections 1: status $code, want 503"
    grep -qi '^Retry-After: 1' "$TMP/head" || fail "$backend: no Retry-After: 1 in the 503"
    grep -qi '^Connection: close' "$TMP/head" || fail "$backend: no Connection: close in the 503"
    exec 3<&-
    code=000
    for ((i = 0; i < 50; i++)); do # the held client's close reaches the worker
        code=$(fetch /)
        [[ $code == 200 ]] && break
        sleep 0.1
    done
    [[ $code == 200 ]] || fail "$backend: after the held client left: status $code, want 200"
    stop_server TERM
    [[ $STOP_RC -eq 0 ]] || fail "$backend: exit code $STOP_RC after SIGTERM, want 0"
done
echo ok
