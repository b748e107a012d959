#!/usr/bin/env bash
# examples/c/hello.c: answers GET / with Hello, World!, anything else 404,
# prints its bound port, exits 0 on SIGTERM.
source "$(dirname "$0")/demo_common.bash"
need_bin "$B/bin/hello"
start_server "$B/bin/hello" --addr 127.0.0.1:0
expect 200 "Hello, World!" /
grep -qi '^content-type: text/plain' "$TMP/head" || fail "no Content-Type: text/plain"
expect 404 "Not Found" /nope
expect 404 "Not Found" / -X POST -d x
stop_server TERM
[[ $STOP_RC -eq 0 ]] || fail "exit code $STOP_RC after SIGTERM, want 0"
echo "hello: ok"
