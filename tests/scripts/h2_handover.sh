#!/usr/bin/env bash
# weir-demo's hot upgrade across two processes with HTTP/2 clients on it
# (docs/upgrade.md, docs/http2.md): an HTTP/2 connection is drained by
# GOAWAY on the old process, and Go's HTTP/2 client (tests/support/h2client,
# h2c by prior knowledge) opens its next one to the successor. Driven by
# tests/scripts/h2/handover_h2.py:
# - h2 (must hold): 4 back-to-back upgrades, epoll -> io_uring and back,
#   under 16 requests in flight: every request answered, the client dialled
#   again after each upgrade, each old process "handover: done" with lost
#   and refused 0;
# - h2-plain (must lose): SIGTERM and a new demo on the same port under the
#   same client: requests fail.
#
# The h2 arm held only once a connection whose preface reaches the old
# process while it is held moves undecided, by image (proto/session.cc,
# maybe_turn_h2): before, the old process turned it HTTP/2 and drained it
# before the client wrote its first request, and Go's transport failed that
# request ("http2: client conn could not be established"), 1-8 requests in
# about half the runs of 8 upgrades (docs/http2.md). The engine-level test
# with its negative arm is tests/integration/test_h2.cc
# (test_h2_preface_while_held_moves).
# Run: B=build bash tests/scripts/h2_handover.sh [--arms h2 --rounds 8]
here=$(cd "$(dirname "$0")" && pwd)
source "$here/demo_common.bash"
need_bin "$B/bin/weir-demo"
command -v python3 >/dev/null || { echo "skip: python3 needed for the driver"; exit 77; }
command -v go >/dev/null || { echo "FAIL: go is not installed"; exit 1; }
client=$(realpath -m "$B/tools/h2client")
mkdir -p "$B/tools"
(cd tests/support/h2client && GOWORK=off GOFLAGS=-mod=mod timeout 300 go build -o "$client" .) ||
    fail "go build of tests/support/h2client failed (golang.org/x/net from the Go module proxy)"
SLOW=1
[[ ${SAN:-0} != 0 ]] && SLOW=3
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$here" python3 "$here/h2/handover_h2.py" --bin "$B/bin/weir-demo" --client "$client" \
    --tmp "$TMP" --slow "$SLOW" "$@" || fail "the HTTP/2 handover arms"
echo "ok"
