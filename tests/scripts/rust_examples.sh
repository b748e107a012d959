#!/usr/bin/env bash
# examples/rust against an installed weir (make install into a temporary
# prefix, PKG_CONFIG_PATH pointing there): weir-sys's layout tests (the
# hand-written bindings against the installed header), the safe crate's tests
# (a real engine on 127.0.0.1:0), and the hello example run as a user would:
# GET / -> 200 "Hello, World!", exit 0 on SIGTERM.
source "$(dirname "$0")/install_common.bash"
command -v cargo >/dev/null || skip "cargo not installed: Rust examples not built (install Rust with rustup)"
command -v curl >/dev/null || skip "curl not installed: cannot query the hello example"
install_weir
export CARGO_TARGET_DIR=$root/build/rust-target
cd examples/rust
cargo --version

# Compiles everything (no link) even before the engine lands.
cargo check --locked --all-targets || die "cargo check"
engine_landed || skip "the engine has not landed in libweir.so yet (no weir_engine_create): Rust tests not linked or run"

cargo test --locked 2>&1 | tee "$tmp/cargo-test.log" || die "cargo test"
grep -q '^test result: ok' "$tmp/cargo-test.log" || die "cargo test ran no tests"
cargo build --locked --example hello || die "cargo build --example hello"
start_server "$tmp/hello.log" "$CARGO_TARGET_DIR/debug/examples/hello" --addr 127.0.0.1:0
check_hello "$server_addr"
stop_server
