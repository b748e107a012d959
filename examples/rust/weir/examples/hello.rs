//! cargo run --example hello -- --addr 127.0.0.1:8080
//! Answers GET / with "Hello, World!", prints "listening on HOST:PORT" once
//! bound, and exits 0 on SIGTERM or SIGINT.
use std::ffi::c_int;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use weir::{Engine, Response};

// weir installs no signal handlers; the host decides. Block SIGTERM/SIGINT in
// the main thread before weir spawns its loop threads (they inherit the mask)
// and wait for them with sigwait. glibc's sigset_t is 1024 bits.
#[repr(C)]
struct SigSet([u64; 16]);
extern "C" {
    fn sigemptyset(set: *mut SigSet) -> c_int;
    fn sigaddset(set: *mut SigSet, sig: c_int) -> c_int;
    fn pthread_sigmask(how: c_int, set: *const SigSet, old: *mut SigSet) -> c_int;
    fn sigwait(set: *const SigSet, sig: *mut c_int) -> c_int;
}
const SIG_BLOCK: c_int = 0;
const SIGINT: c_int = 2;
const SIGTERM: c_int = 15;

fn block_stop_signals() -> SigSet {
    let mut set = SigSet([0; 16]);
    unsafe {
        sigemptyset(&mut set);
        sigaddset(&mut set, SIGINT);
        sigaddset(&mut set, SIGTERM);
        pthread_sigmask(SIG_BLOCK, &set, std::ptr::null_mut());
    }
    set
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let mut addr = "127.0.0.1:8080".to_string();
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--addr" if i + 1 < args.len() => {
                addr = args[i + 1].clone();
                i += 1;
            }
            other => {
                eprintln!("usage: hello [--addr HOST:PORT] (unexpected {other:?})");
                return ExitCode::from(2);
            }
        }
        i += 1;
    }
    let addr: SocketAddr = match addr.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("hello: bad --addr {addr:?}: {e}");
            return ExitCode::from(2);
        }
    };

    let stop = block_stop_signals();
    let mut engine = match Engine::builder().addr(addr).serve(|req| {
        if req.method() == b"GET" && req.path() == b"/" {
            Response::text(200, "Hello, World!")
        } else {
            Response::text(404, "Not Found\n")
        }
    }) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("hello: {addr}: {e}");
            return ExitCode::from(1);
        }
    };
    match engine.local_addr() {
        Ok(bound) => println!("listening on {bound}"),
        Err(e) => {
            eprintln!("hello: {e}");
            return ExitCode::from(1);
        }
    }

    let mut sig: c_int = 0;
    unsafe { sigwait(&stop, &mut sig) };
    if let Err(e) = engine.shutdown(Duration::from_secs(5)) {
        eprintln!("hello: shutdown: {e}");
    }
    ExitCode::SUCCESS
}
