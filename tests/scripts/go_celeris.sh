#!/usr/bin/env bash
# go-binding/celeris against the real celeris module: compile-time checks that
# the engine satisfies engine.Engine and engine.AcceptController, and the same
# celeris handler answered by weir and by celeris's own epoll engine.
# Skips (77) when the Go module proxy does not serve celeris.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
SAN=${SAN:-0}
command -v go >/dev/null || { echo "go not found"; exit 77; }
[[ $SAN == tsan ]] && { echo "TSAN=1: Go's race detector (go test -race, in the plain pass) has a TSan runtime of its own, which cannot share a process with the libtsan a TSan-built libweir loads"; exit 77; }
[[ $SAN == 1 ]] && { echo "Go binding runs against the plain build only"; exit 77; }
cd go-binding/celeris
export GOWORK=off GOFLAGS=-mod=mod
if ! out=$(timeout 300 go mod download github.com/goceleris/celeris 2>&1); then
    echo "$out" | tail -n 3
    echo "celeris v1.5.8 is not available from the Go module proxy here: interop not tested"
    exit 77
fi
cd ../..
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s install PREFIX="$tmp" SAN="$SAN" >/dev/null
export PKG_CONFIG_PATH=$tmp/lib/pkgconfig
export LD_LIBRARY_PATH=$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# go's build cache does not key cgo packages on pkg-config's output, so a
# package built against an earlier $tmp would keep its -L; these variables are
# keyed, and make every run build against this run's library.
export CGO_CFLAGS="-O2 -g -I$tmp/include" CGO_LDFLAGS="-O2 -g -L$tmp/lib -Wl,-rpath,$tmp/lib"
cd go-binding/celeris
go vet ./...
go test -race -count=1 -timeout 300s ./...
echo "celeris interop ok"
