//! Shared by the integration tests: an engine per backend, a raw HTTP/1.1
//! client over std::net.
#![allow(dead_code)] // each test binary uses its own share of these
use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use weir::{Builder, Engine, Request, Response};

/// Runs `check` with (and gives it to drop) an engine serving `handler` on each backend of the library's
/// list ([`weir::backends`]: epoll, then io_uring); a backend this kernel refuses
/// (`WEIR_E_UNAVAILABLE`: an old kernel, a seccomp filter, a container with
/// io_uring disabled) is skipped and says so. Never epoll, the one every
/// kernel has.
pub fn each_backend<H>(builder: impl Fn() -> Builder, handler: H, check: impl Fn(Engine, &str))
where
    H: Fn(&Request<'_>) -> Response + Clone + Send + Sync + 'static,
{
    let names = weir::backends();
    assert!(names.len() >= 2 && names[0] == "epoll", "the library's backends: {names:?}");
    for backend in names {
        let b = builder().backend(backend).unwrap_or_else(|e| panic!("{backend}: {e}"));
        let engine = match b.serve(handler.clone()) {
            Err(e) if backend != "epoll" && e.name() == "WEIR_E_UNAVAILABLE" => {
                eprintln!("skip {backend}: {e}");
                continue;
            }
            r => r.unwrap_or_else(|e| panic!("{backend}: engine: {e}")),
        };
        check(engine, backend);
    }
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// One read, again on EINTR. Read::read may return `Interrupted` (the
/// helpers that read whole, read_exact and read_to_end, retry it), and here
/// it does: the thread that creates the process's first io_uring engine runs
/// weir's io_uring probe, whose rings' teardown queues work on that thread
/// that interrupts its next timed socket read (SO_RCVTIMEO) once, a few
/// milliseconds later.
pub fn read_some(s: &mut impl Read, buf: &mut [u8]) -> usize {
    loop {
        match s.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r.expect("read"),
        }
    }
}

/// Reads up to the end of a response head; returns it and what came after it.
pub fn read_head(s: &mut TcpStream) -> (String, Vec<u8>) {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = raw.split_off(end + 4);
            return (String::from_utf8_lossy(&raw).into_owned(), rest);
        }
        let n = read_some(s, &mut buf);
        assert!(n > 0, "the connection closed inside a head: {}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&buf[..n]);
    }
}

/// One request on a new connection (`Connection: close`): the head and the
/// whole body, read until the server closes.
pub fn request(addr: SocketAddr, method: &str, target: &str) -> (String, Vec<u8>) {
    let mut s = connect(addr);
    write!(s, "{method} {target} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n").unwrap();
    let (head, mut body) = read_head(&mut s);
    s.read_to_end(&mut body).expect("read the body until the server closes");
    (head, body)
}

/// A field's value in a response head (first match, case-insensitive name).
pub fn field<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// A file under the temporary directory, removed on drop.
pub struct TempFile(pub PathBuf);

impl TempFile {
    pub fn new(tag: &str, len: usize) -> (TempFile, Vec<u8>) {
        let path = std::env::temp_dir().join(format!("weir-rust-{}-{tag}", std::process::id()));
        // Bytes that differ from their neighbours at every offset, so a body
        // shifted or cut anywhere cannot compare equal.
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8 ^ (i >> 12) as u8).collect();
        File::create(&path).and_then(|mut f| f.write_all(&data)).expect("write the test file");
        (TempFile(path), data)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
