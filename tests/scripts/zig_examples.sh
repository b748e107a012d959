#!/usr/bin/env bash
# examples/zig (Zig 0.11, fetched by scripts/zig-toolchain) against an installed
# weir: weir.h translated by @cImport from the installed copy, linked through
# pkg-config; `zig build test` serves one request on 127.0.0.1:0, and the
# hello server answers GET / and exits 0 on SIGTERM.
source "$(dirname "$0")/install_common.bash"
command -v curl >/dev/null || skip "curl not installed: cannot query the hello example"
zig=$(scripts/zig-toolchain 2>"$tmp/zig.err") || skip "no Zig 0.11: $(tail -n 1 "$tmp/zig.err")"
echo "zig $("$zig" version) at $zig"
install_weir
cd examples/zig
zflags=(--cache-dir "$root/build/zig-cache" --global-cache-dir "$root/build/zig-global-cache")

# Semantic analysis and @cImport of the installed weir.h, no link: runs even
# before the engine lands. (An object file is all this produces.)
# shellcheck disable=SC2046
"$zig" build-obj src/hello.zig -lc $(pkg-config --cflags weir) "${zflags[@]}" -femit-bin="$tmp/hello.o" ||
    die "zig build-obj (translate weir.h and compile)"
engine_landed || skip "the engine has not landed in libweir.so yet (no weir_engine_create): Zig example not linked or run"

"$zig" build test "${zflags[@]}" --summary all || die "zig build test"
"$zig" build "${zflags[@]}" --prefix "$tmp/zig-out" || die "zig build"
start_server "$tmp/hello.log" "$tmp/zig-out/bin/hello" --addr 127.0.0.1:0
check_hello "$server_addr"
stop_server
