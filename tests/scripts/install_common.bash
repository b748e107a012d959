# Sourced (not run: no .sh suffix) by the scripts that build consumers against
# an installed weir: install_pkgconfig.sh, c_hello_installed.sh,
# rust_examples.sh, zig_examples.sh. Exit 77 = skip, with the reason last.
#
# Under SAN=1 they skip: `make install` would install the ASan+UBSan build, and
# loading an ASan library into a program not built with ASan (cargo, zig, a
# plain cc link) aborts unless libasan is LD_PRELOADed into every process in
# the chain, build tools included. The plain pass covers them; the ABI itself
# is still tested under SAN by build/san/tests/capi/test_* (linked with ASan).
# Under SAN=tsan (make test TSAN=1) likewise: the consumers (cargo, zig, a
# plain cc link) are not built with -fsanitize=thread, and TSan sees races
# only in code it instrumented; what these scripts test (the install, the
# pkg-config flags, the bindings' layout) has no threads of its own to race.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root=$PWD
B=${B:-build}
SAN=${SAN:-0}

skip() { echo "$*"; exit 77; }
die() { echo "FAIL  $*"; exit 1; }

[[ $SAN == 1 ]] && skip "SAN=1: consumers of the installed (non-sanitized) library run in the plain pass"
[[ $SAN == tsan ]] && skip "TSAN=1: consumers of the installed library are not built with TSan; they run in the plain pass"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/weir-install.XXXXXX")
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

# Installs weir under $tmp/prefix (PREFIX, no DESTDIR: a real install, in a
# place of our own) and points pkg-config and the loader at it.
install_weir() {
    prefix=$tmp/prefix
    make -s install PREFIX="$prefix" SAN=0 >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; die "make install PREFIX=$prefix"; }
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    export LD_LIBRARY_PATH=$prefix/lib
    local got
    got=$(pkg-config --variable=prefix weir) || die "pkg-config cannot find weir in $PKG_CONFIG_PATH"
    [[ $got == "$prefix" ]] || die "pkg-config found weir at '$got', not at $prefix"
    echo "installed weir $(pkg-config --modversion weir) in $prefix"
}

# True when the installed library has the engine (it is being written while
# these tests are): a missing symbol is the only reason to skip a run.
engine_landed() {
    [[ $(nm -D --defined-only "$prefix/lib/libweir.so") == *" weir_engine_create@"* ]]
}

# start_server LOG CMD...: runs CMD in the background,
# waits up to 30 s for "listening on HOST:PORT" in LOG, sets $server_pid and
# $server_addr.
start_server() {
    local log=$1; shift
    "$@" >"$log" 2>&1 &
    server_pid=$!
    pids+=("$server_pid")
    local i line
    for ((i = 0; i < 300; i++)); do
        line=$(grep -m1 -o 'listening on [^ ]*' "$log" || true)
        if [[ -n $line ]]; then
            server_addr=${line#listening on }
            [[ $server_addr == *:0 ]] && die "server printed its requested port 0, not the bound one: $line"
            return 0
        fi
        kill -0 "$server_pid" 2>/dev/null || { cat "$log"; die "server exited before listening: $*"; }
        sleep 0.1
    done
    cat "$log"
    die "server did not print 'listening on HOST:PORT' within 30 s: $*"
}

# check_hello ADDR: GET / answers 200 "Hello, World!".
check_hello() {
    local addr=$1 out code
    out=$(curl -sS --max-time 10 -o "$tmp/body" -w '%{http_code}' "http://$addr/") || die "curl http://$addr/ failed"
    code=$out
    [[ $code == 200 ]] || die "GET / on $addr answered $code"
    [[ $(cat "$tmp/body") == "Hello, World!" ]] || die "GET / body was '$(head -c 200 "$tmp/body")'"
    echo "ok    GET http://$addr/ -> 200 Hello, World!"
}

# stop_server: SIGTERM, then the server must exit 0 within 15 s.
stop_server() {
    kill -TERM "$server_pid"
    local i rc
    for ((i = 0; i < 150; i++)); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
        kill -KILL "$server_pid" 2>/dev/null || true
        die "server still running 15 s after SIGTERM"
    fi
    rc=0
    wait "$server_pid" || rc=$?
    [[ $rc == 0 ]] || die "server exited $rc after SIGTERM, want 0"
    echo "ok    exited 0 on SIGTERM"
}
