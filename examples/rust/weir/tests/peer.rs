//! Request::peer_addr (weir_exchange_peer): the client's address as a
//! std::net::SocketAddr, equal to the client socket's own local address.
//! Both backends (io_uring skipped when the kernel refuses a ring), IPv4 and
//! IPv6 (skipped where ::1 cannot be bound).
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
