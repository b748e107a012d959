#!/usr/bin/env bash
# go-binding/celeris against the real celeris v1.5.8 source: the shared
# snapshot (../shared/third_party/celeris-v1.5.8; the Go module proxy here
# refuses the module) is copied to a scratch folder, patched with
# go-binding/celeris/patches/celeris-v1.5.8-engine-factory.patch (the engine
# factory hook celeris lacks), and the module's vet and go test -race run
# against it on each weir backend through a scratch go.mod (-modfile) whose
# replace points there: the engine answers like celeris's own epoll engine, a
# whole celeris.Server runs on weir through the hook, and each celeris Config
# field is honoured or refused. Then celeris's own suites run on weir under
# -race (see below), judged by tests/scripts/celeris_own_tests.py, whose last
# line ends this script's output: "celeris: N passed, N failed, N skipped".
# celeris's own dependencies (golang.org/x/net, sys, text) come from the
# module proxy. Skips (77) only when the snapshot is absent.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-build}
SAN=${SAN:-0}
source tests/scripts/backends.bash # BACKENDS: the library's own list
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
root=$(pwd)
case $B in /*) bdir=$B ;; *) bdir=$root/$B ;; esac
# A fixed scratch folder under the build directory, rebuilt each run: go's
# build cache keys cgo packages on the flags below and on file contents, so
# a fixed path lets a second run reuse what -race compiled (minutes).
work=$bdir/celeris-work
rm -rf "$work"
mkdir -p "$work"
cp -R "$snap" "$work/celeris"
chmod -R u+w "$work/celeris"
for p in celeris-v1.5.8-engine-factory.patch celeris-v1.5.8-weir-test-hooks.patch; do
    (cd "$work/celeris" && patch -p1 --quiet --forward < "$root/go-binding/celeris/patches/$p")
done
make -s install PREFIX="$work/weir" SAN="$SAN" >/dev/null
export PKG_CONFIG_PATH=$work/weir/lib/pkgconfig
export LD_LIBRARY_PATH=$work/weir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# go's build cache does not key cgo packages on pkg-config's output; these
# variables are keyed, and make every run build against this run's library.
export CGO_CFLAGS="-O2 -g -I$work/weir/include" CGO_LDFLAGS="-O2 -g -L$work/weir/lib -Wl,-rpath,$work/weir/lib"
export GOWORK=off GOFLAGS=-mod=mod
cd go-binding/celeris
# The committed go.mod stays free of scratch paths: -modfile reads a copy
# (relative replaces still resolve from this folder, the module root).
cp go.mod "$work/go.mod"
cp go.sum "$work/go.sum"
go mod edit -replace "github.com/goceleris/celeris=$work/celeris" "$work/go.mod"
timeout 300 go mod download -modfile="$work/go.mod" golang.org/x/net golang.org/x/sys golang.org/x/text
echo "== go vet"
go vet -modfile="$work/go.mod" ./...
for backend in $BACKENDS; do
    echo "== go test -race ($backend)"
    WEIR_TEST_BACKEND=$backend go test -modfile="$work/go.mod" -race -count=1 -timeout 300s ./...
done
# celeris's own suites on weir (patches/celeris-own-tests.plan says which,
# with every exclusion's reason): the patch's test-only hook puts every
# celeris.Server their tests start on weir (celeris-testmain.go.in), and
# test/spec, test/conformance and test/integration get weir registered
# through their own hooks (celeris-*-weir.go.in), dropped in as the last
# files of their packages.
drop() { # template package file
    local name
    name=$(basename "$(cd "$work/celeris/$2" && pwd)")
    [[ $2 == . ]] && name=celeris
    sed -e "s/^package celeris_test$/package ${name}_test/" -e "s/^package spec$/package ${name}/" \
        "patches/$1" > "$work/celeris/$2/$3"
}
for p in . middleware middleware/sse middleware/websocket test/conformance test/integration; do
    drop celeris-testmain.go.in "$p" zz_weir_testmain_test.go
done
drop celeris-spec-weir.go.in test/spec zz_weir_engines_test.go
drop celeris-conformance-weir.go.in test/conformance zz_weir_factory_test.go
drop celeris-integration-weir.go.in test/integration zz_weir_engines_test.go
(cd "$work/celeris" && go mod edit \
    -require=github.com/weir-http/weir/go-binding@v0.0.0 -replace=github.com/weir-http/weir/go-binding="$root/go-binding" \
    -require=github.com/weir-http/weir/go-binding/celeris@v0.0.0 \
    -replace=github.com/weir-http/weir/go-binding/celeris="$root/go-binding/celeris")
# test/spec's TestH2Spec and TestH2SpecFull look h2spec up on PATH (they
# skip without it, and the plan's minimum then fails the run): the same
# h2spec v2.2.1 tests/scripts/h2spec.sh runs, built into build/tools.
if h2spec=$("$root/scripts/h2spec-tool"); then
    PATH=$(dirname "$h2spec"):$PATH
else
    echo "h2spec not available (scripts/h2spec-tool says why above): test/spec's h2spec tests will skip"
fi
manifest=$work/runs.tsv
: > "$manifest"
start=$SECONDS
for backend in $BACKENDS; do
    echo "== celeris's own suites on weir, go test -race ($backend)"
    out=$bdir/celeris-own-$backend.json
    : > "$out"
    n=0
    while read -r pkg min run skip; do
        [[ -z $pkg || $pkg == \#* ]] && continue
        n=$((n + 1))
        json=$work/own-$backend-$n.json
        args=()
        [[ $run != - ]] && args+=(-run "$run")
        [[ $skip != - ]] && args+=(-skip "$skip")
        rc=0
        (cd "$work/celeris" && WEIR_TEST_BACKEND=$backend timeout 600 go test -race -json -count=1 -timeout 300s \
            "${args[@]}" "./$pkg" > "$json" 2>&1) || rc=$?
        cat "$json" >> "$out"
        printf '%s\t%s\t%s\t%s\t%s\n' "$backend" "$pkg" "$min" "$rc" "$json" >> "$manifest"
    done < patches/celeris-own-tests.plan
done
echo "celeris's own suites took $((SECONDS - start))s"
python3 "$root/tests/scripts/celeris_own_tests.py" "$manifest"
