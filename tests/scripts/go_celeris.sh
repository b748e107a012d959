#!/usr/bin/env bash
# go-binding/celeris against the real celeris v1.5.8 source: the shared
# snapshot (../shared/third_party/celeris-v1.5.8; the Go module proxy here
# refuses the module) is copied to a scratch folder, patched with
# go-binding/celeris/patches/celeris-v1.5.8-engine-factory.patch (the engine
# factory hook celeris lacks), and the module's vet and go test -race run
# against it on each weir backend through a scratch go.mod (-modfile) whose
# replace points there. The tests: the engine answers like celeris's own epoll
# engine, and a whole celeris.Server (router, middleware, Context, a streamed
# answer) runs on weir through the hook; then celeris's own server tests,
# every Server they start put on weir (see below). celeris's own dependencies
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
# celeris's own server tests, run on weir: the patch's DefaultEngineFactory,
# set by a TestMain dropped into the scratch copy, puts every Server they
# start on weir whatever Engine its Config names. Which served over weir and
# how each ended is held against patches/celeris-own-tests.expect (a failure
# must be listed there with its reason; a listed one that passes must leave).
root=$(cd ../.. && pwd)
# The packages whose tests start servers over sockets (celeris's root: its
# server tests; the middleware chain; server-sent events; websockets; the
# API conformance suite).
own_pkgs=". middleware middleware/sse middleware/websocket test/conformance"
for p in $own_pkgs; do
    name=$(basename "$(cd "$tmp/celeris/$p" && pwd)")
    [[ $p == . ]] && name=celeris
    sed "s/^package celeris_test$/package ${name}_test/" patches/celeris-testmain.go.in \
        > "$tmp/celeris/$p/zz_weir_testmain_test.go"
done
(cd "$tmp/celeris" && go mod edit \
    -require=github.com/weir-http/weir/go-binding@v0.0.0 -replace=github.com/weir-http/weir/go-binding="$root/go-binding" \
    -require=github.com/weir-http/weir/go-binding/celeris@v0.0.0 \
    -replace=github.com/weir-http/weir/go-binding/celeris="$root/go-binding/celeris")
status=0
for backend in epoll uring; do
    echo "== celeris's own tests on weir ($backend): $own_pkgs"
    # A test listed as "hang" would wait out the timeout: it is skipped, and
    # the summary says so with its reason.
    hang=$(awk -v b="$backend" '!/^#/ && $2 == "hang" && ($3 == "both" || $3 == b) {sub(/.*:/, "", $1); print $1}' \
        patches/celeris-own-tests.expect | paste -sd'|')
    (cd "$tmp/celeris" && WEIR_TEST_BACKEND=$backend timeout 600 go test -json -count=1 -timeout 300s \
        ${hang:+-skip "^($hang)\$"} $(for p in $own_pkgs; do echo "./$p"; done) > "$tmp/own-$backend.json" 2>&1) || true
    cp "$tmp/own-$backend.json" "$root/${B}/celeris-own-$backend.json" 2>/dev/null || true
    python3 "$root/tests/scripts/celeris_own_tests.py" "$tmp/own-$backend.json" \
        patches/celeris-own-tests.expect "$backend" || status=1
done
[[ $status == 0 ]] || { echo "celeris's own tests: outcomes differ from patches/celeris-own-tests.expect"; exit 1; }
echo "celeris interop ok"
