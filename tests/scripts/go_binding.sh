#!/usr/bin/env bash
# The Go binding against the freshly built library, installed into a temporary
# prefix and found through pkg-config as a user's build would find it:
# vet, go test -race on each backend, the cgocheck2 run, the static (-tags weir_static) and
# no-directive (-tags weir_escape) builds, and the crossing benchmarks.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
SAN=${SAN:-0}
source tests/scripts/backends.bash # BACKENDS: the library's own list
command -v go >/dev/null || { echo "go not found: Go binding not tested"; exit 77; }
[[ $SAN == tsan ]] && { echo "TSAN=1: Go's race detector (go test -race, in the plain pass) has a TSan runtime of its own, which cannot share a process with the libtsan a TSan-built libweir loads"; exit 77; }
if [[ $SAN == 1 ]]; then
    # An ASan-built libweir needs the ASan runtime loaded before it; Go's own
    # test binaries are not built that way. The plain run covers the binding.
    echo "Go binding runs against the plain build only"; exit 77
fi
[[ -e $B/lib/libweir.so ]] || { echo "$B/lib/libweir.so not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s install PREFIX="$tmp" SAN="$SAN" >/dev/null
export PKG_CONFIG_PATH=$tmp/lib/pkgconfig
export LD_LIBRARY_PATH=$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# go's build cache does not key cgo packages on pkg-config's output, so a
# package built against an earlier $tmp would keep its -L; these variables are
# keyed, and make every run build against this run's library.
export CGO_CFLAGS="-O2 -g -I$tmp/include" CGO_LDFLAGS="-O2 -g -L$tmp/lib -Wl,-rpath,$tmp/lib"
export GOFLAGS=-count=1
export GOWORK=off
cd go-binding
# Every go build in one cache is fine; a fresh clone fills it once.
echo "== go vet"
go vet ./...
go vet -tags weir_escape ./...
# Every test on each backend (helpers_test.go's testBackend); a kernel
# without io_uring skips the io_uring pass's tests one by one.
for backend in $BACKENDS; do
    echo "== go test -race ($backend)"
    WEIR_TEST_BACKEND=$backend go test -race -timeout 300s ./...
done
echo "== cgocheck2 (GOEXPERIMENT=cgocheck2: checks every Go pointer stored where C can see it)"
GOEXPERIMENT=cgocheck2 go test -timeout 300s ./...
echo "== static link (-tags weir_static)"
CGO_CFLAGS="$(pkg-config --cflags weir)" CGO_LDFLAGS="$(pkg-config --libs-only-L weir)" \
    go test -tags weir_static -c -o "$tmp/static.test" .
if ldd "$tmp/static.test" | grep -q libweir; then echo "static test binary still needs libweir.so"; exit 1; fi
"$tmp/static.test" -test.run 'TestNativeAsyncAndInline|TestNetHTTPHandler' -test.count=1
echo "== crossings with and without #cgo noescape/nocallback"
go test -run '^$' -bench 'Crossing' -benchtime 200000x .
go test -tags weir_escape -run '^$' -bench 'Crossing' -benchtime 200000x .
echo "go binding ok"
