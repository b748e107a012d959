//! Static-file answers with validators through the safe crate
//! (Response::serve_file over weir_serve_file): a real engine on 127.0.0.1
//! and a raw std::net client sending the conditional and range fields
//! itself. Each case has its other arm beside it (the same request without
//! the condition that should hold, or with one that should not), so a
//! binding that dropped the field or the option would fail here. Each runs
//! on epoll and io_uring (skipped when the kernel refuses a ring).
mod common;

use std::fs::File;
use std::io::{Read, Write};
use std::net::SocketAddr;

use common::{connect, each_backend, field, read_head, TempFile};
use weir::{content_type, Engine, FileOptions, Response};

/// One request with extra fields (`"Name: value\r\n"` each) on a new
/// connection; reads the head, then the body until the server closes.
/// `close` adds `Connection: close`; without it the answer must close.
fn ask(addr: SocketAddr, method: &str, target: &str, fields: &str, close: bool) -> (String, Vec<u8>) {
    let mut s = connect(addr);
    let conn = if close { "Connection: close\r\n" } else { "" };
    write!(s, "{method} {target} HTTP/1.1\r\nHost: test\r\n{fields}{conn}\r\n").unwrap();
    let (head, mut body) = read_head(&mut s);
    s.read_to_end(&mut body).expect("read the body until the server closes");
    (head, body)
}

fn get(addr: SocketAddr, target: &str, fields: &str) -> (String, Vec<u8>) {
    ask(addr, "GET", target, fields, true)
}

fn status(head: &str) -> &str {
    head.split(' ').nth(1).unwrap_or("")
}

#[test]
fn a_served_file_answers_by_its_validators_and_ranges() {
    let (tmp, data) = TempFile::new("validators", 10_000);
    let len = data.len();
    let path = tmp.0.clone();
    let handler = move |req: &weir::Request<'_>| {
        let file = File::open(&path).unwrap();
        let opts = FileOptions::for_name("notes.txt").header("Cache-Control", "max-age=60");
        let answer = match req.path() {
            b"/file" => Response::serve_file(&file, opts),
            b"/whole" => Response::serve_file(&file, FileOptions { no_ranges: true, ..opts }),
            b"/close" => Response::serve_file(&file, FileOptions { close: true, ..opts }),
            b"/plain" => Response::serve_file(file, FileOptions::default()),
            // A field weir refuses on every answer, added after serve_file's
            // own check: weir leaves the exchange to the crate, which answers
            // 500.
            b"/refused" => Response::serve_file(&file, opts).map(|r| r.header("Content-Length", "1")),
            _ => return Response::text(404, "no"),
        };
        answer.unwrap_or_else(|e| Response::text(500, e.to_string()))
    };
    each_backend(
        || Engine::builder().workers(1),
        handler,
        |engine, backend| {
            let addr = engine.local_addr().unwrap();
            let size = len.to_string();

            // 200: the validators, the type by name, Accept-Ranges, the
            // host's field, the exact bytes.
            let (head, body) = get(addr, "/file", "");
            assert_eq!(status(&head), "200", "{backend}: {head}");
            let etag = field(&head, "etag").unwrap_or_else(|| panic!("{backend}: no ETag: {head}")).to_string();
            assert!(etag.starts_with('"') && etag.ends_with('"') && etag.len() > 2, "{backend}: strong ETag {etag}");
            let lm = field(&head, "last-modified").unwrap_or_else(|| panic!("{backend}: no Last-Modified")).to_string();
            assert!(lm.ends_with(" GMT"), "{backend}: Last-Modified {lm}");
            assert_eq!(field(&head, "content-type"), Some("text/plain; charset=utf-8"), "{backend}: {head}");
            assert_eq!(field(&head, "accept-ranges"), Some("bytes"), "{backend}: {head}");
            assert_eq!(field(&head, "cache-control"), Some("max-age=60"), "{backend}: {head}");
            assert_eq!(field(&head, "content-length"), Some(&*size), "{backend}: {head}");
            assert!(body == data, "{backend}: the body differs from the file");
            // No content_type: application/octet-stream; no host fields.
            let (head, body) = get(addr, "/plain", "");
            assert_eq!(status(&head), "200", "{backend}: {head}");
            assert_eq!(field(&head, "content-type"), Some("application/octet-stream"), "{backend}: {head}");
            assert_eq!(field(&head, "cache-control"), None, "{backend}: {head}");
            assert!(body == data, "{backend}: /plain differs");

            // 304 by If-None-Match (our tag, weakly compared: W/ too), with
            // the validators and the host's field, no body; another tag: 200.
            for inm in [etag.clone(), format!("\"x\", W/{etag}")] {
                let (head, body) = get(addr, "/file", &format!("If-None-Match: {inm}\r\n"));
                assert_eq!(status(&head), "304", "{backend} If-None-Match {inm}: {head}");
                assert_eq!(field(&head, "etag"), Some(&*etag), "{backend}: {head}");
                assert_eq!(field(&head, "last-modified"), Some(&*lm), "{backend}: {head}");
                assert_eq!(field(&head, "cache-control"), Some("max-age=60"), "{backend}: 304 {head}");
                assert_eq!(field(&head, "content-type"), None, "{backend}: 304 has no body fields: {head}");
                assert!(body.is_empty(), "{backend}: 304 with a body");
            }
            let (head, _) = get(addr, "/file", "If-None-Match: \"other\"\r\n");
            assert_eq!(status(&head), "200", "{backend}: a tag that does not match: {head}");

            // 304 by If-Modified-Since (the date we sent); an older date: 200.
            let (head, body) = get(addr, "/file", &format!("If-Modified-Since: {lm}\r\n"));
            assert_eq!(status(&head), "304", "{backend} If-Modified-Since {lm}: {head}");
            assert_eq!(field(&head, "cache-control"), Some("max-age=60"), "{backend}: {head}");
            assert!(body.is_empty(), "{backend}: 304 with a body");
            let (head, body) = get(addr, "/file", "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
            assert_eq!(status(&head), "200", "{backend}: modified since 1994: {head}");
            assert!(body == data, "{backend}");

            // 412 by If-Match (no host field on an error); our tag: 200.
            let (head, _) = get(addr, "/file", "If-Match: \"not-it\"\r\n");
            assert_eq!(status(&head), "412", "{backend}: {head}");
            assert_eq!(field(&head, "cache-control"), None, "{backend}: an error is not cacheable: {head}");
            let (head, _) = get(addr, "/file", &format!("If-Match: {etag}\r\n"));
            assert_eq!(status(&head), "200", "{backend}: If-Match that holds: {head}");

            // 206: the exact Content-Range and bytes, first-last and suffix.
            for (range, first, last) in [("10-29", 10, 29), ("0-0", 0, 0), ("-7", len - 7, len - 1)] {
                let (head, body) = get(addr, "/file", &format!("Range: bytes={range}\r\n"));
                assert_eq!(status(&head), "206", "{backend} {range}: {head}");
                let want = format!("bytes {first}-{last}/{len}");
                assert_eq!(field(&head, "content-range"), Some(&*want), "{backend}: {head}");
                assert_eq!(field(&head, "cache-control"), Some("max-age=60"), "{backend}: {head}");
                assert!(body == data[first..=last], "{backend}: range {range} differs");
            }
            // If-Range with another tag: the whole file.
            let (head, body) = get(addr, "/file", "Range: bytes=10-29\r\nIf-Range: \"old\"\r\n");
            assert_eq!(status(&head), "200", "{backend}: If-Range that fails: {head}");
            assert!(body == data, "{backend}");
            // Several ranges: the whole file, 200.
            let (head, body) = get(addr, "/file", "Range: bytes=0-1,5-6\r\n");
            assert_eq!(status(&head), "200", "{backend}: several ranges: {head}");
            assert!(body == data, "{backend}");

            // 416: no range inside the file, with the unsatisfied form.
            let (head, _) = get(addr, "/file", &format!("Range: bytes={len}-\r\n"));
            assert_eq!(status(&head), "416", "{backend}: {head}");
            assert_eq!(field(&head, "content-range"), Some(&*format!("bytes */{len}")), "{backend}: {head}");

            // HEAD: GET's head, its Content-Length, no body.
            let (head, body) = ask(addr, "HEAD", "/file", "", true);
            assert_eq!(status(&head), "200", "{backend}: {head}");
            assert_eq!(field(&head, "content-length"), Some(&*size), "{backend}: {head}");
            assert_eq!(field(&head, "etag"), Some(&*etag), "{backend}: {head}");
            assert!(body.is_empty(), "{backend}: HEAD sent {} body bytes", body.len());

            // no_ranges: the same Range answered whole, no Accept-Ranges.
            let (head, body) = get(addr, "/whole", "Range: bytes=10-29\r\n");
            assert_eq!(status(&head), "200", "{backend}: no_ranges: {head}");
            assert_eq!(field(&head, "accept-ranges"), None, "{backend}: {head}");
            assert!(body == data, "{backend}: no_ranges body differs");

            // Another method: 405 with Allow.
            let (head, _) = ask(addr, "POST", "/file", "Content-Length: 0\r\n", true);
            assert_eq!(status(&head), "405", "{backend}: {head}");
            assert_eq!(field(&head, "allow"), Some("GET, HEAD"), "{backend}: {head}");

            // close: the answer closes a connection the client kept open
            // (ask reads to the end, so a kept-alive one would time out).
            let (head, body) = ask(addr, "GET", "/close", "", false);
            assert_eq!(status(&head), "200", "{backend}: {head}");
            assert_eq!(field(&head, "connection"), Some("close"), "{backend}: {head}");
            assert!(body == data, "{backend}");

            // What weir refuses when it answers leaves the exchange to the
            // crate: 500.
            let (head, _) = get(addr, "/refused", "");
            assert_eq!(status(&head), "500", "{backend}: {head}");
        },
    );
}

#[test]
fn content_types_come_from_the_extension() {
    assert_eq!(content_type("a.css"), "text/css; charset=utf-8");
    assert_eq!(content_type("dir.d/APP.JS"), content_type("app.js"), "case-insensitive, last segment");
    assert_eq!(content_type("x.png"), "image/png");
    assert_eq!(content_type("archive.unknownext"), "application/octet-stream");
    assert_eq!(content_type("Makefile"), "application/octet-stream");
    assert_eq!(content_type(""), "application/octet-stream");
    assert_eq!(FileOptions::for_name("a.css").content_type.as_deref(), Some("text/css; charset=utf-8"));
    assert_eq!(FileOptions::default().content_type, None);
}

// What weir would refuse for every request, serve_file refuses first, as an
// Error: a field weir writes here (any case), a type with a NUL, a directory.
// The arms that pass show the checks are no wider than that.
#[test]
fn serve_file_refuses_weirs_fields_a_bad_type_or_a_directory() {
    let (tmp, _) = TempFile::new("refuse", 10);
    let f = File::open(&tmp.0).unwrap();
    for name in ["ETag", "last-modified", "Content-Type", "CONTENT-RANGE", "Accept-Ranges"] {
        let e = Response::serve_file(&f, FileOptions::default().header(name, "x")).unwrap_err();
        assert_eq!(e.name(), "EINVAL", "{name}");
    }
    let bad = FileOptions { content_type: Some("text/plain\0x".into()), ..FileOptions::default() };
    assert_eq!(Response::serve_file(&f, bad).unwrap_err().name(), "EINVAL");
    let dir = File::open(std::env::temp_dir()).unwrap();
    assert_eq!(Response::serve_file(&dir, FileOptions::default()).unwrap_err().name(), "EINVAL");

    let ok = Response::serve_file(&f, FileOptions { close: true, ..FileOptions::default() }.header("Vary", "Accept"))
        .expect("a regular file with a field of the host's");
    assert!(ok.served.is_some() && ok.close);
    assert_eq!(ok.headers, vec![("Vary".to_string(), "Accept".to_string())]);
}
