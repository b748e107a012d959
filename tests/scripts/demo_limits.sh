#!/usr/bin/env bash
# weir-demo's limit and timeout flags reach the engine: --max-body (413),
# --max-request-line (414), --max-headers and --max-header-bytes (431),
# --idle-timeout-ms and --header-timeout-ms (the connection is closed); the
# accept flags are taken and the server still serves.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --max-body 10 --max-request-line 64 --max-headers 8 \
    --max-header-bytes 300 --idle-timeout-ms 300 --header-timeout-ms 300 --accept-batch 2 --linger-ms 100 \
    --no-defer-accept
expect 200 "0123456789" /echo --data-binary 0123456789
[[ $(fetch /echo --data-binary 0123456789x) == 413 ]] || fail "--max-body 10: 11 bytes not refused with 413"
[[ $(fetch "/$(printf 'a%.0s' $(seq 1 80))") == 414 ]] || fail "--max-request-line 64: no 414"
# curl sends Host, User-Agent and Accept: 3 + 5 = 8 fields pass, 3 + 6 = 9 do not
[[ $(fetch / -H 'A: 1' -H 'B: 2' -H 'C: 3' -H 'D: 4' -H 'E: 5') == 200 ]] || fail "--max-headers 8: 8 fields refused"
[[ $(fetch / -H 'A: 1' -H 'B: 2' -H 'C: 3' -H 'D: 4' -H 'E: 5' -H 'F: 6') == 431 ]] ||
    fail "--max-headers 8: 9 fields not refused with 431"
[[ $(fetch / -H "X-Big: $(printf 'b%.0s' $(seq 1 400))") == 431 ]] || fail "--max-header-bytes 300: no 431"

# idle keep-alive: closed about 300 ms after the answer (allowed: 5 s)
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET / HTTP/1.1\r\nHost: t\r\n\r\n' >&3
timeout 5 cat <&3 >"$TMP/idle" || fail "--idle-timeout-ms 300: keep-alive connection still open after 5 s"
grep -q 'Hello, World!' "$TMP/idle" || fail "no answer before the idle close"
exec 3<&-
# a head that never completes: closed by the header timeout (allowed: 5 s)
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET / HTTP/1.1\r\nHost: t\r\n' >&3
timeout 5 cat <&3 >/dev/null || fail "--header-timeout-ms 300: partial head still open after 5 s"
exec 3<&-
expect 200 "Hello, World!" /
stop_server TERM
[[ $STOP_RC -eq 0 ]] || fail "exit code $STOP_RC after SIGTERM, want 0"

# control: with the default idle timeout (60 s) the same connection stays open
start_server "$B/bin/weir-demo" --addr 127.0.0.1:0
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET / HTTP/1.1\r\nHost: t\r\n\r\n' >&3
timeout 2 cat <&3 >/dev/null && fail "default idle timeout: connection closed within 2 s"
exec 3<&-
stop_server TERM
[[ $STOP_RC -eq 0 ]] || fail "exit code $STOP_RC after SIGTERM, want 0"
echo "limits: ok"
