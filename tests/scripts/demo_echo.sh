#!/usr/bin/env bash
# weir-demo --app echo in each mode: the JSON answer is exactly what the
# engine parsed (chunked upload with trailers, bytes >= 0x80, binary body,
# HTTP/1.0, pipelining). The client is tests/scripts/demo_echo.py.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "python3 is not installed"; exit 77; }
for mode in inline driven deferred; do
    start_server "$B/bin/weir-demo" --addr 127.0.0.1:0 --mode "$mode" --app echo
    timeout 60 python3 tests/scripts/demo_echo.py "$PORT" || fail "$mode: echo checks failed"
    stop_server TERM
    [[ $STOP_RC -eq 0 ]] || fail "$mode: exit code $STOP_RC after SIGTERM, want 0"
    echo "$mode: ok"
done
