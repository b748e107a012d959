//! File answers through the safe crate (weir_respond_file): a real engine on
//! 127.0.0.1 and a real client (std::net); the bytes must arrive exactly, for
//! a whole file, a range of one, and a file far larger than weir's output
//! bound. Each runs on epoll (sendfile) and io_uring (splice; skipped when
//! the kernel refuses a ring).
mod common;

use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::sync::Arc;

use common::{connect, each_backend, field, read_head, read_some, request, TempFile};
use weir::{Engine, Response};

fn query_u64(q: &[u8], key: &str) -> u64 {
    let q = std::str::from_utf8(q).unwrap();
    q.split('&').find_map(|kv| kv.strip_prefix(key)?.strip_prefix('=')?.parse().ok()).unwrap_or(0)
}

#[test]
fn a_file_answer_sends_the_exact_bytes_whole_and_ranged() {
    let (tmp, data) = TempFile::new("exact", (1 << 20) + 13);
    let path = tmp.0.clone();
    let shared = Arc::new(File::open(&path).unwrap());
    let handler = move |req: &weir::Request<'_>| match req.path() {
        // Opened per request and dropped when the handler returns: the
        // response holds its own descriptor until weir has its dup.
        b"/whole" => {
            Response::file(200, File::open(&path).unwrap()).unwrap().header("Content-Type", "application/octet-stream")
        }
        // One descriptor for every request, lent as a BorrowedFd.
        b"/range" => {
            let (o, l) = (query_u64(req.query(), "o"), query_u64(req.query(), "l"));
            match Response::file_range(206, shared.as_fd(), o, l) {
                Ok(r) => r.header("Content-Range", format!("bytes {}-{}/*", o, (o + l).saturating_sub(1))),
                Err(e) => Response::text(416, e.to_string()),
            }
        }
        _ => Response::text(200, "plain"),
    };
    each_backend(
        || Engine::builder().workers(1),
        handler,
        |engine, backend| {
            let addr = engine.local_addr().unwrap();
            let (head, body) = request(addr, "GET", "/whole");
            assert!(head.starts_with("HTTP/1.1 200"), "{backend}: {head}");
            assert_eq!(field(&head, "content-length"), Some(&*data.len().to_string()), "{backend}: {head}");
            assert!(body == data, "{backend}: the whole file differs ({} of {} bytes)", body.len(), data.len());
            // HEAD: the same head, no body.
            let (head, body) = request(addr, "HEAD", "/whole");
            assert!(head.starts_with("HTTP/1.1 200"), "{backend}: {head}");
            assert_eq!(field(&head, "content-length"), Some(&*data.len().to_string()), "{backend}: {head}");
            assert!(body.is_empty(), "{backend}: HEAD sent {} body bytes", body.len());

            for (o, l) in [(0u64, 1u64), (1000, 5000), (4095, 4097), (data.len() as u64 - 7, 7), (12345, 0)] {
                let (head, body) = request(addr, "GET", &format!("/range?o={o}&l={l}"));
                assert!(head.starts_with("HTTP/1.1 206"), "{backend} {o}+{l}: {head}");
                assert_eq!(field(&head, "content-length"), Some(&*l.to_string()), "{backend}: {head}");
                assert!(body == data[o as usize..(o + l) as usize], "{backend}: range {o}+{l} differs");
            }
            // Past the end: refused by Response::file_range, before weir.
            let (head, body) = request(addr, "GET", &format!("/range?o={}&l=2", data.len() - 1));
            assert!(head.starts_with("HTTP/1.1 416"), "{backend}: {head}");
            assert!(String::from_utf8_lossy(&body).contains("EINVAL"), "{backend}: {body:?}");

            // Pipelined on one connection: file answers keep their places
            // among the others.
            let mut s = connect(addr);
            s.write_all(
                b"GET /range?o=10&l=20 HTTP/1.1\r\nHost: t\r\n\r\n\
                  GET /plain HTTP/1.1\r\nHost: t\r\n\r\n\
                  GET /whole HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
            let mut rest = Vec::new();
            for want in [&data[10..30], &b"plain"[..], &data[..]] {
                let (head, more) = if rest.is_empty() { read_head(&mut s) } else { split_head(&mut s, rest) };
                let n: usize = field(&head, "content-length").unwrap().parse().unwrap();
                let mut body = more;
                while body.len() < n {
                    let mut buf = vec![0u8; 64 * 1024];
                    let k = read_some(&mut s, &mut buf);
                    assert!(k > 0, "{backend}: closed inside a body");
                    body.extend_from_slice(&buf[..k]);
                }
                rest = body.split_off(n);
                assert!(body == want, "{backend}: pipelined answer differs: {head}");
            }
        },
    );
}

// read_head, when the head's first bytes have been read already.
fn split_head(s: &mut std::net::TcpStream, mut raw: Vec<u8>) -> (String, Vec<u8>) {
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = raw.split_off(end + 4);
            return (String::from_utf8_lossy(&raw).into_owned(), rest);
        }
        let mut buf = [0u8; 4096];
        let n = read_some(s, &mut buf);
        assert!(n > 0, "closed inside a head");
        raw.extend_from_slice(&buf[..n]);
    }
}

// 40 MiB: ten times weir's max_output_bytes and 160 stream windows; it goes
// out as the client reads, whole and in order.
#[test]
fn a_large_file_arrives_whole() {
    let (tmp, data) = TempFile::new("large", 40 << 20);
    let file = Arc::new(File::open(&tmp.0).unwrap());
    let handler = move |_: &weir::Request<'_>| Response::file(200, &*file).unwrap();
    each_backend(
        || Engine::builder().workers(1),
        handler,
        |engine, backend| {
            let (head, body) = request(engine.local_addr().unwrap(), "GET", "/");
            assert!(head.starts_with("HTTP/1.1 200"), "{backend}: {head}");
            assert_eq!(body.len(), data.len(), "{backend}");
            let first_diff = body.iter().zip(&data).position(|(a, b)| a != b);
            assert_eq!(first_diff, None, "{backend}: the body differs from the file");
        },
    );
}

// What weir would refuse (answering 500), Response::file refuses first, as
// an Error the handler sees: a range past the end, an overflowing one, a
// directory. The arm that passes shows the limit is exact.
#[test]
fn a_file_response_refuses_a_bad_range_or_a_directory() {
    let (tmp, data) = TempFile::new("refuse", 100);
    let f = File::open(&tmp.0).unwrap();
    let len = data.len() as u64;
    let e = Response::file_range(200, &f, len - 1, 2).unwrap_err();
    assert_eq!(e.name(), "EINVAL");
    assert_eq!(std::io::Error::from(e).raw_os_error(), Some(22), "an errno converts to io::Error");
    assert_eq!(Response::file_range(200, &f, 1, u64::MAX).unwrap_err().name(), "EINVAL");
    assert_eq!(Response::file_range(200, &f, len + 1, 0).unwrap_err().name(), "EINVAL");
    let ok = Response::file_range(200, &f, len - 1, 1).expect("the last byte");
    let body = ok.file.as_ref().unwrap();
    assert_eq!((body.offset(), body.length()), (len - 1, 1));
    assert_eq!(Response::file(200, &f).unwrap().file.unwrap().length(), len);
    let dir = File::open(std::env::temp_dir()).unwrap();
    assert_eq!(Response::file(200, &dir).unwrap_err().name(), "EINVAL");
}
