#!/usr/bin/env bash
# go-binding/celeris against the real celeris v1.5.8 source: the shared
# snapshot (../shared/third_party/celeris-v1.5.8; the Go module proxy here
# refuses the module) is copied to a scratch folder, patched with
# go-binding/celeris/patches/celeris-v1.5.8-engine-factory.patch (the engine
# factory hook celeris lacks), and the module's vet and go test -race run
# against it on each weir backend through a scratch go.mod (-modfile) whose
# replace points there. The tests: the engine answers like celeris's own epoll
# engine, and a whole celeris.Server (router, middleware, Context, a streamed
# answer) runs on weir through the hook. celeris's own dependencies
# (golang.org/x/net, sys, text) come from the module proxy.
# Skips (77) only when the snapshot is absent.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
SAN=${SAN:-0}
command -v go >/dev/null || { echo "go not found"; exit 77; }
[[ $SAN == tsan ]] && { echo "TSAN=1: Go's race detector (go test -race, in the plain pass) has a TSan runtime of its own, which cannot share a process with the libtsan a TSan-built libweir loads"; exit 77; }
[[ $SAN == 1 ]] && { echo "Go binding runs against the plain build only"; exit 77; }
# The snapshot sits beside the repository (../shared); a clone elsewhere (a
# CI scratch folder) finds it through WEIR_CELERIS_SRC or the workspace's.
snap=
for c in "${WEIR_CELERIS_SRC:-}" "$(cd .. && pwd)/shared/third_party/celeris-v1.5.8" \
    /work/shared/third_party/celeris-v1.5.8; do
    [[ -n $c && -f $c/go.mod ]] && { snap=$c; break; }
done
if [[ -z $snap ]]; then
    echo "celeris v1.5.8 source not found (../shared/third_party/celeris-v1.5.8, WEIR_CELERIS_SRC): interop not tested"
    exit 77
fi
[[ -e $B/lib/libweir.so ]] || { echo "$B/lib/libweir.so not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R "$snap" "$tmp/celeris"
chmod -R u+w "$tmp/celeris"
(cd "$tmp/celeris" && patch -p1 --quiet --forward < "$OLDPWD/go-binding/celeris/patches/celeris-v1.5.8-engine-factory.patch")
make -s install PREFIX="$tmp/weir" SAN="$SAN" >/dev/null
export PKG_CONFIG_PATH=$tmp/weir/lib/pkgconfig
export LD_LIBRARY_PATH=$tmp/weir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# go's build cache does not key cgo packages on pkg-config's output, so a
# package built against an earlier $tmp would keep its -L; these variables are
# keyed, and make every run build against this run's library.
export CGO_CFLAGS="-O2 -g -I$tmp/weir/include" CGO_LDFLAGS="-O2 -g -L$tmp/weir/lib -Wl,-rpath,$tmp/weir/lib"
export GOWORK=off GOFLAGS=-mod=mod
cd go-binding/celeris
# The committed go.mod stays free of scratch paths: -modfile reads a copy
# (relative replaces still resolve from this folder, the module root).
cp go.mod "$tmp/go.mod"
cp go.sum "$tmp/go.sum"
go mod edit -replace "github.com/goceleris/celeris=$tmp/celeris" "$tmp/go.mod"
timeout 300 go mod download -modfile="$tmp/go.mod" golang.org/x/net golang.org/x/sys golang.org/x/text
echo "== go vet"
go vet -modfile="$tmp/go.mod" ./...
for backend in epoll uring; do
    echo "== go test -race ($backend)"
    WEIR_TEST_BACKEND=$backend go test -modfile="$tmp/go.mod" -race -count=1 -timeout 300s ./...
done
echo "celeris interop ok"
