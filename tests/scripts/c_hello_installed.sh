#!/usr/bin/env bash
# examples/c/hello.c built against an installed weir with
# `pkg-config --cflags --libs weir`, as a user would: GET / -> 200
# "Hello, World!", "listening on HOST:PORT" once bound, exit 0 on SIGTERM.
source "$(dirname "$0")/install_common.bash"
[[ -f examples/c/hello.c ]] || skip "examples/c/hello.c does not exist yet"
command -v curl >/dev/null || skip "curl not installed: cannot query the hello example"
install_weir
engine_landed || skip "the engine has not landed in libweir.so yet (no weir_engine_create): hello not built"
libdir=$(pkg-config --variable=libdir weir)
# shellcheck disable=SC2046
cc -std=c11 -O2 -Wall -Wextra -Werror -o "$tmp/hello" examples/c/hello.c $(pkg-config --cflags --libs weir) \
    -lpthread -Wl,-rpath,"$libdir" || die "build examples/c/hello.c against the installed weir"
deps=$(env -u LD_LIBRARY_PATH ldd "$tmp/hello")
[[ $deps == *"libweir.so.0 => $libdir/"* ]] || die "hello does not load the installed libweir: $deps"
start_server "$tmp/hello.log" env -u LD_LIBRARY_PATH "$tmp/hello" --addr 127.0.0.1:0
check_hello "$server_addr"
stop_server
