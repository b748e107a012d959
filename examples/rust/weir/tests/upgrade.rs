//! Upgrades through the safe crate: a real engine on 127.0.0.1, a real
//! client (std::net); after the 101 the bytes on the connection are the
//! host's (here an echo on a thread of its own). Each test runs on epoll and
//! on io_uring (skipped when the kernel refuses a ring).
mod common;

use std::io::{Read, Write};
use std::net::Shutdown;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{connect, each_backend, field, read_head, read_some};
use weir::{Engine, Response, Upgraded};

// Echoes every byte (the early ones first) until the client's FIN. The
// socket must be in blocking mode: a non-blocking one would fail the first
// read with WouldBlock and the client would wait for an echo that never
// comes.
fn echo(mut up: Upgraded) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match up.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => up.write_all(&buf[..n]).expect("echo"),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => panic!("read on the upgraded socket: {e}"),
            }
        }
    });
}

fn read_exact(s: &mut impl Read, mut got: Vec<u8>, n: usize) -> Vec<u8> {
    while got.len() < n {
        let mut buf = vec![0u8; n - got.len()];
        let k = read_some(s, &mut buf);
        assert!(k > 0, "closed after {} of {n} bytes: {:?}", got.len(), String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..k]);
    }
    got
}

#[test]
fn an_upgrade_hands_the_socket_and_the_early_bytes_to_the_host() {
    let early_seen = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    let seen = early_seen.clone();
    let handler = move |req: &weir::Request<'_>| {
        if req.path() == b"/ws" && req.wants_upgrade() {
            assert_eq!(req.header("upgrade"), Some(&b"websocket"[..]));
            let seen = seen.clone();
            return Response::upgrade(move |up| {
                let up = up.expect("the upgraded connection");
                seen.lock().unwrap().push(up.early().to_vec());
                echo(up);
            })
            .header("Upgrade", "websocket");
        }
        Response::text(200, "plain")
    };
    each_backend(
        || Engine::builder().workers(1),
        handler,
        |engine, backend| {
            let mut s = connect(engine.local_addr().unwrap());
            // A plain request, then the upgrade and the new protocol's first
            // bytes, in one write: the 101 waits for the answer before it,
            // and the bytes past the request reach the host, not the parser.
            s.write_all(
                b"GET /plain HTTP/1.1\r\nHost: t\r\n\r\n\
                  GET /ws HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\
                  EARLY-BYTES",
            )
            .unwrap();
            let (head, rest) = read_head(&mut s);
            assert!(head.starts_with("HTTP/1.1 200"), "{backend}: {head}");
            assert_eq!(field(&head, "content-length"), Some("5"), "{backend}: {head}");
            let mut rest = read_exact(&mut s, rest, 5);
            assert_eq!(&rest[..5], b"plain", "{backend}");
            // The 101's head may have come in the same read.
            let mut s2 = std::io::Cursor::new(rest.split_off(5)).chain(s.try_clone().unwrap());
            let mut raw = Vec::new();
            while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
                let mut b = [0u8; 1];
                assert_eq!(read_some(&mut s2, &mut b), 1, "{backend}: closed before the 101");
                raw.push(b[0]);
            }
            let head = String::from_utf8_lossy(&raw).into_owned();
            assert!(head.starts_with("HTTP/1.1 101"), "{backend}: {head}");
            assert_eq!(field(&head, "upgrade"), Some("websocket"), "{backend}: {head}");
            assert!(field(&head, "connection").is_some_and(|v| v.eq_ignore_ascii_case("upgrade")), "{head}");
            let got = read_exact(&mut s2, Vec::new(), 11);
            assert_eq!(got, b"EARLY-BYTES", "{backend}: the early bytes come back first");
            for msg in [&b"hello, raw world"[..], &[0u8, 0xff, b'\r', b'\n', 0x80][..]] {
                s.write_all(msg).unwrap();
                assert_eq!(read_exact(&mut s2, Vec::new(), msg.len()), msg, "{backend}: echo");
            }
            s.shutdown(Shutdown::Write).unwrap();
            let mut tail = Vec::new();
            s.read_to_end(&mut tail).expect("the host closes after the FIN");
            assert!(tail.is_empty(), "{backend}: {tail:?}");
            let m = engine.metrics().unwrap();
            assert_eq!(m.closes[weir::sys::WEIR_CLOSE_UPGRADED as usize], 1, "{backend}");
        },
    );
    let seen = early_seen.lock().unwrap();
    assert!(!seen.is_empty() && seen.iter().all(|e| e == b"EARLY-BYTES"), "{seen:?}");
}

#[test]
fn a_raw_upgrade_leaves_the_whole_answer_to_the_host() {
    const OWN: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n";
    let handler = |req: &weir::Request<'_>| {
        if !req.wants_upgrade() {
            return Response::text(400, "no upgrade asked for");
        }
        Response::upgrade_raw(|up| {
            let (mut stream, early) = up.expect("the hijacked connection").into_parts();
            assert!(early.is_empty(), "nothing was sent past the request");
            stream.write_all(OWN).unwrap();
            echo_stream(stream);
        })
        .header("X-Not-Sent", "raw upgrades send no fields")
    };
    each_backend(
        || Engine::builder().workers(1),
        handler,
        |engine, backend| {
            let mut s = connect(engine.local_addr().unwrap());
            s.write_all(b"GET /echo HTTP/1.1\r\nHost: t\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n").unwrap();
            // Byte for byte what the host wrote: weir wrote nothing (no Date,
            // no status line of its own).
            let got = read_exact(&mut s, Vec::new(), OWN.len());
            assert_eq!(String::from_utf8_lossy(&got), String::from_utf8_lossy(OWN), "{backend}");
            s.write_all(b"ping").unwrap();
            assert_eq!(read_exact(&mut s, Vec::new(), 4), b"ping", "{backend}");
        },
    );
}

fn echo_stream(mut s: std::net::TcpStream) {
    std::thread::spawn(move || {
        let mut r = s.try_clone().unwrap();
        let _ = std::io::copy(&mut r, &mut s);
    });
}

// The callback learns every upgrade that did not happen, as an error:
// weir refused it (the request asked for none: EINVAL, and the client is
// answered 500).
#[test]
fn an_upgrade_the_request_did_not_ask_for_is_an_error_and_a_500() {
    let (tx, rx) = mpsc::channel::<weir::Result<Upgraded>>();
    let tx = Arc::new(Mutex::new(tx));
    let handler = move |_req: &weir::Request<'_>| {
        let tx = tx.clone();
        Response::upgrade(move |r| tx.lock().unwrap().send(r).unwrap()).header("Upgrade", "websocket")
    };
    each_backend(
        || Engine::builder().workers(1),
        handler,
        |engine, backend| {
            let (head, _) = common::request(engine.local_addr().unwrap(), "GET", "/");
            assert!(head.starts_with("HTTP/1.1 500"), "{backend}: {head}");
            let r = rx.recv_timeout(Duration::from_secs(10)).expect("the callback is called");
            assert_eq!(r.err().map(|e| e.name()), Some("EINVAL"), "{backend}");
        },
    );
}

// An upgrade whose 101 never leaves (a streamed answer before it that the
// client does not read holds it back) when the engine is dropped: the
// callback gets an error, never nothing. Today weir closes the connection in
// the shutdown and hands it back dead (WEIR_E_GONE from the take);
// WEIR_E_SHUTDOWN is the crate's own net (Engine's Drop finishes what is
// still parked) should a hand-back ever not come.
#[test]
fn an_upgrade_cut_off_by_the_engine_drop_is_an_error_for_the_callback() {
    let (tx, rx) = mpsc::channel::<weir::Result<Upgraded>>();
    let tx = Arc::new(Mutex::new(tx));
    let handler = move |req: &weir::Request<'_>| {
        if req.path() == b"/big" {
            return Response::streamed(200, std::iter::repeat(vec![b'x'; 32 * 1024]));
        }
        let tx = tx.clone();
        Response::upgrade(move |r| tx.lock().unwrap().send(r).unwrap()).header("Upgrade", "websocket")
    };
    each_backend(
        || Engine::builder().workers(1),
        handler,
        |engine, backend| {
            let mut s = connect(engine.local_addr().unwrap());
            s.write_all(
                b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n\
                  GET /ws HTTP/1.1\r\nHost: t\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
            )
            .unwrap();
            std::thread::sleep(Duration::from_millis(300));
            assert!(rx.try_recv().is_err(), "{backend}: the 101 cannot leave behind an unread endless answer");
            drop(engine);
            let r = rx.recv_timeout(Duration::from_secs(10)).expect("the callback is called after the drop");
            let name = r.err().map(|e| e.name());
            assert!(matches!(name, Some("WEIR_E_SHUTDOWN" | "WEIR_E_GONE")), "{backend}: {name:?}");
            drop(s);
        },
    );
}
