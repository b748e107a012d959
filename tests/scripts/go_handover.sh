#!/usr/bin/env bash
# Hot upgrade from Go (issue 30; docs/go.md "Hot upgrade"): examples/go/hello
# with --upgrade-socket/--take-over (the binding's Upgrader), across real Go
# processes under demo_handover.py's four kinds of loopback clients. Driven by
# go_handover.py:
# - main (must hold): back-to-back upgrades alternating the native and the
#   net/http API and epoll/io_uring: 0 failed, 0 resets, 0 refused,
#   0 reconnects; ledgers balance; every connection moved. Prints the pause
#   the clients see (a keep-alive and a new-connection probe);
# - notready (must hold): a successor killed before its application said
#   Ready: the old process serves on, its offer fails, nothing is lost; an
#   upgrade after it succeeds;
# The arms that must lose:
# - ungated (the readiness gate's mutant, HELLO_TEST_UNGATED=1): the same
#   successor takes everything before its application is ready and dies with
#   it: failed requests, resets or refused connects > 0;
# - listeners-only (--handover-listeners-only: tableflip's, nginx's way):
#   keep-alive clients reconnect, the old process counts closed > 0.
# Arguments are the driver's: --rounds N --backends epoll,uring --arms A,B.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
SAN=${SAN:-0}
command -v go >/dev/null || { echo "skip: go not found"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 needed for the clients"; exit 77; }
[[ $SAN == tsan ]] && { echo "skip: TSAN=1: Go's runtime cannot share a process with a TSan-built libweir (go_examples.sh)"; exit 77; }
[[ $SAN == 1 ]] && { echo "skip: the Go examples run against the plain build only"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s install PREFIX="$tmp" SAN="$SAN" >/dev/null
export PKG_CONFIG_PATH=$tmp/lib/pkgconfig
export LD_LIBRARY_PATH=$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# keyed by go's build cache, unlike pkg-config's output (go_examples.sh)
export CGO_CFLAGS="-O2 -g -I$tmp/include" CGO_LDFLAGS="-O2 -g -L$tmp/lib -Wl,-rpath,$tmp/lib"
go build -o "$tmp/hello" ./examples/go/hello
mkdir "$tmp/run"
PYTHONDONTWRITEBYTECODE=1 python3 tests/scripts/go_handover.py --bin "$tmp/hello" --tmp "$tmp/run" "$@" ||
    { echo "FAIL: go_handover"; exit 1; }
echo "ok"
