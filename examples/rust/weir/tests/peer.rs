//! Request::peer_addr (weir_exchange_peer): the client's address as a
//! std::net::SocketAddr, equal to the client socket's own local address.
//! Both backends (io_uring skipped when the kernel refuses a ring), IPv4 and
//! IPv6 (skipped where ::1 cannot be bound). With the PROXY protocol
//! (Builder::proxy_trusted) the peer is the source a v1 or v2 header names.
mod common;

use std::io::Write;
use std::net::SocketAddr;

use common::{connect, each_backend, read_head};
use weir::{Engine, Response};

fn peer_handler(req: &weir::Request<'_>) -> Response {
    match req.peer_addr() {
        Ok(a) => Response::text(200, a.to_string()),
        Err(e) => Response::text(500, e.to_string()),
    }
}

fn check_peers(engine: Engine, backend: &str) {
    let addr = engine.local_addr().unwrap();
    // Two connections: two ports, each answered with its own.
    for _ in 0..2 {
        let mut s = connect(addr);
        let mine = s.local_addr().unwrap();
        write!(s, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
        let (head, mut body) = read_head(&mut s);
        std::io::Read::read_to_end(&mut s, &mut body).unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{backend}: {head}");
        let got: SocketAddr = String::from_utf8_lossy(&body).parse().expect("a socket address");
        assert_eq!(got, mine, "{backend}: the peer is the client's own address");
    }
}

#[test]
fn the_peer_is_the_clients_address() {
    each_backend(|| Engine::builder().workers(1), peer_handler, check_peers);
}

#[test]
fn the_peer_is_the_clients_address_over_ipv6() {
    let lo6: SocketAddr = "[::1]:0".parse().unwrap();
    if let Err(e) = std::net::TcpListener::bind(lo6) {
        eprintln!("skip: cannot bind [::1]: {e}");
        return;
    }
    each_backend(|| Engine::builder().addr(lo6).workers(1), peer_handler, check_peers);
}

/// A PROXY protocol v2 header: the PROXY command over TCP from `src` to
/// `dst` (both IPv4 or both IPv6).
fn proxy_v2(src: SocketAddr, dst: SocketAddr) -> Vec<u8> {
    let mut b = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    b.push(0x21); // version 2, PROXY
    let mut addrs = Vec::new();
    match (src, dst) {
        (SocketAddr::V4(s), SocketAddr::V4(d)) => {
            b.push(0x11); // TCP over IPv4
            addrs.extend_from_slice(&s.ip().octets());
            addrs.extend_from_slice(&d.ip().octets());
        }
        (SocketAddr::V6(s), SocketAddr::V6(d)) => {
            b.push(0x21); // TCP over IPv6
            addrs.extend_from_slice(&s.ip().octets());
            addrs.extend_from_slice(&d.ip().octets());
        }
        _ => panic!("one family"),
    }
    addrs.extend_from_slice(&src.port().to_be_bytes());
    addrs.extend_from_slice(&dst.port().to_be_bytes());
    b.extend_from_slice(&(addrs.len() as u16).to_be_bytes());
    b.extend_from_slice(&addrs);
    b
}

/// One connection that sends `header` then a request; the answer's status
/// line and body.
fn behind(addr: SocketAddr, header: &[u8]) -> (String, String) {
    let mut s = connect(addr);
    s.write_all(header).unwrap();
    write!(s, "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let (head, mut body) = read_head(&mut s);
    let _ = std::io::Read::read_to_end(&mut s, &mut body);
    (head.lines().next().unwrap_or("").to_owned(), String::from_utf8_lossy(&body).into_owned())
}

/// Behind a load balancer: the peer is the source a v1 header, a v2 IPv4 and
/// a v2 IPv6 header name, not the socket's 127.0.0.1 (trusted through
/// Builder::proxy_trusted). The other arm: a connection without a header is
/// answered 400, closed and counted (proxy_missing), and with the PROXY
/// protocol off the same header is no request (400) while a bare request's
/// peer is the socket's own (the tests above).
#[test]
fn the_peer_is_the_proxied_source() {
    let v2_4: SocketAddr = "198.51.100.9:40000".parse().unwrap();
    let v2_6: SocketAddr = "[2001:db8::7]:40000".parse().unwrap();
    each_backend(
        || Engine::builder().workers(1).proxy_trusted("127.0.0.0/8, ::1"),
        peer_handler,
        |engine, backend| {
            let addr = engine.local_addr().unwrap();
            let (status, body) = behind(addr, b"PROXY TCP4 203.0.113.7 127.0.0.1 51234 80\r\n");
            assert!(status.starts_with("HTTP/1.1 200"), "{backend}, v1: {status}");
            assert_eq!(body, "203.0.113.7:51234", "{backend}: v1's source");
            let (status, body) = behind(addr, &proxy_v2(v2_4, "127.0.0.1:443".parse().unwrap()));
            assert!(status.starts_with("HTTP/1.1 200"), "{backend}, v2: {status}");
            assert_eq!(body, v2_4.to_string(), "{backend}: v2's IPv4 source");
            let (status, body) = behind(addr, &proxy_v2(v2_6, "[2001:db8::1]:443".parse().unwrap()));
            assert!(status.starts_with("HTTP/1.1 200"), "{backend}, v2 IPv6: {status}");
            assert_eq!(body, v2_6.to_string(), "{backend}: v2's IPv6 source");
            let (status, _) = behind(addr, b"");
            assert!(status.starts_with("HTTP/1.1 400"), "{backend}, no header: {status}");
            let m = engine.metrics().unwrap();
            assert_eq!((m.proxy_v1, m.proxy_v2, m.proxy_missing), (1, 2, 1), "{backend}: proxy counters");
        },
    );
    each_backend(
        || Engine::builder().workers(1),
        peer_handler,
        |engine, backend| {
            let addr = engine.local_addr().unwrap();
            let (status, _) = behind(addr, b"PROXY TCP4 203.0.113.7 127.0.0.1 51234 80\r\n");
            assert!(status.starts_with("HTTP/1.1 400"), "{backend}, PROXY off: {status}");
        },
    );
}

/// A trusted list weir cannot parse (or with a NUL) fails serve with -EINVAL.
#[test]
fn a_bad_trusted_list_is_refused() {
    for list in ["not-an-address", "127.0.0.1\0"] {
        match Engine::builder().proxy_trusted(list).serve(peer_handler) {
            Err(e) => assert_eq!(e.name(), "EINVAL", "{list:?}: {e}"),
            Ok(_) => panic!("{list:?}: served"),
        }
    }
}
