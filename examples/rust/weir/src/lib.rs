//! A small safe layer over libweir (through `weir-sys`).
//!
//! - [`Engine`] owns its handle: `Drop` shuts it down and destroys it, and only
//!   then frees the handler the loop threads call.
//! - Handlers are plain closures `Fn(&Request) -> Response`. They run on weir's
//!   loop threads (inline mode); a [`Request`] borrows the worker's buffers and
//!   cannot outlive the call, which is exactly how long weir keeps them valid.
//! - A handler never unwinds into C (that would be undefined behaviour): each
//!   call runs under `catch_unwind`, and a panic is answered with a 500 and the
//!   connection is closed.
//!
//! - [`Response::streamed`] answers with a body produced in pieces (chunked,
//!   `weir_stream_*`): weir's stream window pushes back, and the pieces go on
//!   when weir hands the stream back, without blocking the loop thread.
//! - [`Response::read_body`] reads a request body as it arrives.
//! - [`Response::file`] and [`Response::file_range`] answer from a file
//!   (`weir_respond_file`: sendfile or splice, no copy through the process).
//! - [`Response::serve_file`] answers as a static file server does
//!   (`weir_serve_file`): weir evaluates the request against the file's
//!   `ETag` and `Last-Modified` and answers 200, 206, 304, 412, 416 or 405;
//!   [`FileOptions`] names its `Content-Type` ([`content_type`] picks one by
//!   extension) and extra fields.
//! - [`Response::upgrade`] and [`Response::upgrade_raw`] answer an Upgrade
//!   request (`weir_upgrade*`); once the 101 has left, the connection is the
//!   host's: an [`Upgraded`] (a `std::net::TcpStream` and the bytes that came
//!   after the request) given to the response's callback.
//! - [`Request::peer_addr`] is the client's address (`weir_exchange_peer`).
//!
//! Every failure is an [`Error`]: the negative errno or `WEIR_E_*` code weir
//! returned. Deferred answers and the driven mode are left to `weir-sys` for
//! now.
use std::ffi::{c_int, c_void, CStr};
use std::fmt;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

pub use weir_sys as sys;

mod addr;
mod engine;
mod file;
mod serve;
mod stream;
mod upgrade;

pub use engine::{Builder, Engine};
pub use file::FileBody;
pub use serve::{content_type, FileOptions, ServedFile};
pub use upgrade::{Upgrade, Upgraded};

/// A negative errno or one of weir's own codes (`WEIR_E_*`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Error(pub i32);

impl Error {
    pub fn code(self) -> i32 {
        self.0
    }
    /// The symbolic name: "EADDRINUSE", "WEIR_E_STATE", ...
    pub fn name(self) -> &'static str {
        unsafe { static_str(sys::weir_err_name(self.0)) }
    }
}
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = unsafe { static_str(sys::weir_strerror(self.0)) };
        write!(f, "{} ({})", text, self.name())
    }
}
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({}, {})", self.0, self.name())
    }
}
impl std::error::Error for Error {}

/// An errno becomes an [`io::Error`](std::io::Error) of that errno; weir's
/// own codes become `ErrorKind::Other` with this error inside.
impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        if (-4095..0).contains(&e.0) {
            std::io::Error::from_raw_os_error(-e.0)
        } else {
            std::io::Error::other(e)
        }
    }
}

/// A std I/O failure as the crate's error: its errno, negated (`EIO` when it
/// has none).
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error(-e.raw_os_error().unwrap_or(5))
    }
}

pub(crate) fn io_error(e: std::io::Error) -> Error {
    Error::from(e)
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn check(rc: c_int) -> Result<c_int> {
    if rc < 0 {
        Err(Error(rc))
    } else {
        Ok(rc)
    }
}

/// weir's names and descriptions are static strings; never NULL by contract.
unsafe fn static_str(p: *const std::ffi::c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    CStr::from_ptr(p).to_str().unwrap_or("")
}

/// The library's version string ("0.2.0").
pub fn version() -> &'static str {
    unsafe { static_str(sys::weir_version_string()) }
}

/// Every backend of the linked library, by its short name, in its order
/// (`"epoll"` first): weir's one list (`weir_backend_name`), so a caller
/// that runs on each backend follows the library rather than a list of its
/// own. A backend this kernel refuses is listed too: [`Builder::serve`]
/// reports `WEIR_E_UNAVAILABLE` for it.
pub fn backends() -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut id = 1u32;
    loop {
        let p = unsafe { sys::weir_backend_name(id) };
        if p.is_null() {
            return out;
        }
        out.push(unsafe { static_str(p) });
        id += 1;
    }
}

unsafe fn view<'a>(s: sys::weir_str_t) -> &'a [u8] {
    if s.len == 0 || s.ptr.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(s.ptr as *const u8, s.len)
    }
}

/// One request, borrowed from the worker for the duration of the handler call.
pub struct Request<'a> {
    raw: &'a sys::weir_request,
    ex: *mut sys::weir_exchange,
}

impl<'a> Request<'a> {
    pub fn method(&self) -> &'a [u8] {
        unsafe { view(self.raw.method) }
    }
    /// The whole request-target.
    pub fn target(&self) -> &'a [u8] {
        unsafe { view(self.raw.target) }
    }
    pub fn path(&self) -> &'a [u8] {
        unsafe { view(self.raw.path) }
    }
    pub fn query(&self) -> &'a [u8] {
        unsafe { view(self.raw.query) }
    }
    pub fn host(&self) -> &'a [u8] {
        unsafe { view(self.raw.host) }
    }
    /// The decoded body, whole.
    pub fn body(&self) -> &'a [u8] {
        unsafe { view(self.raw.body) }
    }
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub fn version_minor(&self) -> u32 {
        self.raw.version_minor
    }
    pub fn connection_id(&self) -> u64 {
        self.raw.connection_id
    }
    /// Header fields in arrival order, as (name, value) byte views.
    pub fn headers(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        let hs: &'a [sys::weir_header_t] = if self.raw.num_headers == 0 || self.raw.headers.is_null() {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(self.raw.headers, self.raw.num_headers as usize) }
        };
        hs.iter().map(|h| unsafe { (view(h.name), view(h.value)) })
    }
    /// The first field named `name` (ASCII case-insensitive).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers().find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| v)
    }
    /// True when the request asks for an upgrade weir can give
    /// ([`Response::upgrade`]): `Connection: upgrade` with an `Upgrade` field
    /// on a connection that stays open. The protocol asked for is in
    /// `header("upgrade")`.
    pub fn wants_upgrade(&self) -> bool {
        let want = sys::WEIR_REQ_UPGRADE | sys::WEIR_REQ_KEEP_ALIVE;
        self.raw.flags & want == want
    }
    /// The client's address: the connection's peer (with the PROXY protocol
    /// on, the source address its header carried). Errors are weir's
    /// (`WEIR_E_STALE` cannot happen while the handler runs).
    pub fn peer_addr(&self) -> Result<SocketAddr> {
        addr::socket_addr(|ss, len| unsafe { sys::weir_exchange_peer(self.ex, ss, len) })
    }
}

/// An answer. weir adds Content-Length, Date and Connection itself and refuses
/// them (and Transfer-Encoding) here; such a response is replaced by a 500.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Close the connection after this answer.
    pub close: bool,
    /// A streamed body (then `body` is not used); see [`Response::streamed`].
    pub pieces: Option<Pieces>,
    /// Not an answer yet: the request's body is read first; see [`Response::read_body`].
    pub reader: Option<BodyReader>,
    /// A body sent from a file (then `body` is not used); see [`Response::file`].
    pub file: Option<FileBody>,
    /// A file answered by weir's validators (then `status` and `body` are
    /// not used); see [`Response::serve_file`].
    pub served: Option<ServedFile>,
    /// An upgrade (then `status` and `body` are not used); see [`Response::upgrade`].
    pub upgrade: Option<Upgrade>,
}

/// What a body reader is given ([`Response::read_body`]).
pub enum BodyPiece<'a> {
    /// The next bytes of the decoded body (valid for this call only).
    Data(&'a [u8]),
    /// The body is complete.
    End,
    /// The body cannot complete: -ETIMEDOUT (it stopped arriving),
    /// -ECONNABORTED (the peer left or the engine is closing), or a chunked
    /// body's parse error (`weir_http1_status` names its status).
    Failed(Error),
}

type BodyFn = dyn FnMut(BodyPiece<'_>) -> Option<Response> + Send;

/// A request body's reader. Clones share the one closure.
#[derive(Clone)]
pub struct BodyReader(Arc<Mutex<Box<BodyFn>>>);

impl fmt::Debug for BodyReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BodyReader(..)")
    }
}

/// A body produced in pieces. Clones share the one iterator.
#[derive(Clone)]
pub struct Pieces(Arc<Mutex<Box<dyn Iterator<Item = Vec<u8>> + Send>>>);

impl fmt::Debug for Pieces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Pieces(..)")
    }
}

impl Response {
    pub fn new(status: u16) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            close: false,
            pieces: None,
            reader: None,
            file: None,
            served: None,
            upgrade: None,
        }
    }
    /// Reads the request's body first, as it arrives, and answers with what
    /// `reader` returns: it is called with each piece, then with `End` (or
    /// `Failed`), on weir's loop thread (so it must not block), until it
    /// returns `Some`. `None` after `End` or `Failed` answers 500. Answering
    /// before `End` refuses the rest of the body (with `Expect:
    /// 100-continue`, before the client sends it) and closes the connection
    /// after the answer. Bodies are streamed for requests at or above
    /// [`Builder::stream_bodies`]; a buffered body is given whole, then `End`.
    pub fn read_body(reader: impl FnMut(BodyPiece<'_>) -> Option<Response> + Send + 'static) -> Self {
        let mut r = Response::new(500);
        r.reader = Some(BodyReader(Arc::new(Mutex::new(Box::new(reader)))));
        r
    }
    /// A streamed answer: each item of `pieces` is written as it comes (chunked
    /// for HTTP/1.1, delimited by the close for HTTP/1.0). The iterator runs on
    /// weir's loop thread, so it must not block; a panic in it cuts the body
    /// short (`weir_stream_abort`: the client sees it end unfinished, then the
    /// close).
    pub fn streamed(status: u16, pieces: impl Iterator<Item = Vec<u8>> + Send + 'static) -> Self {
        let mut r = Response::new(status);
        r.pieces = Some(Pieces(Arc::new(Mutex::new(Box::new(pieces)))));
        r
    }
    /// A text/plain answer.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Response::new(status).header("Content-Type", "text/plain").body(body.into().into_bytes())
    }
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }
    pub fn close(mut self) -> Self {
        self.close = true;
        self
    }

    // The fields as weir takes them: views into self, valid while it lives.
    pub(crate) fn fields(&self) -> Vec<sys::weir_header_t> {
        let str_t = |s: &str| sys::weir_str_t { ptr: s.as_ptr() as *const _, len: s.len() };
        self.headers.iter().map(|(n, v)| sys::weir_header_t { name: str_t(n), value: str_t(v) }).collect()
    }

    pub(crate) fn respond_flags(&self) -> u32 {
        if self.close {
            sys::WEIR_RESPOND_CLOSE
        } else {
            0
        }
    }
}

pub(crate) type Handler = dyn Fn(&Request<'_>) -> Response + Send + Sync + 'static;

unsafe fn respond(ex: *mut sys::weir_exchange, r: &Response) -> c_int {
    let hs = r.fields();
    // weir copies headers and body before it returns.
    sys::weir_respond(
        ex,
        r.status as c_int,
        hs.as_ptr(),
        hs.len(),
        r.body.as_ptr() as *const c_void,
        r.body.len(),
        r.respond_flags(),
    )
}

// Answers ex with resp (owner: the engine's handler, which an upgrade is
// parked under); false when weir left ex ours (-EINVAL, -EMSGSIZE, -EBADF,
// a dup's errno: the failure rule), for a 500 to follow.
unsafe fn answer(ex: *mut sys::weir_exchange, owner: usize, resp: &Response) -> bool {
    let rc = if let Some(up) = &resp.upgrade {
        upgrade::start(ex, owner, resp, up)
    } else if let Some(pieces) = resp.pieces.clone() {
        stream::start_stream(ex, resp, pieces)
    } else if let Some(f) = &resp.file {
        file::respond_file(ex, resp, f)
    } else if let Some(f) = &resp.served {
        serve::serve_file(ex, resp, f)
    } else {
        respond(ex, resp)
    };
    // Consumed (0, WEIR_E_GONE, -ENOMEM) or nothing to do (WEIR_E_STALE);
    // everything else leaves ex as it was.
    matches!(rc, 0 | sys::WEIR_E_GONE | ENOMEM | sys::WEIR_E_STALE)
}

const ENOMEM: c_int = -12;

unsafe fn respond_500(ex: *mut sys::weir_exchange) {
    let body = b"Internal Server Error\n";
    sys::weir_respond(
        ex,
        500,
        std::ptr::null(),
        0,
        body.as_ptr() as *const c_void,
        body.len(),
        sys::WEIR_RESPOND_CLOSE,
    );
}

// Called by weir on a loop thread for each request. Nothing may unwind out of
// an extern "C" function: the handler runs under catch_unwind, and so does
// everything else here that could panic.
pub(crate) unsafe extern "C" fn on_request(user: *mut c_void, ex: *mut sys::weir_exchange) {
    let owner = user as usize;
    // A handle weir hands back (an upgrade whose 101 left, a stream with room
    // again, a body with more bytes) goes on where it was parked.
    if matches!(catch_unwind(AssertUnwindSafe(|| upgrade::handed_back(ex) || stream::handed_back(ex, owner))), Ok(true))
    {
        return;
    }
    let answered = catch_unwind(AssertUnwindSafe(|| {
        let handler = &*(user as *const Box<Handler>);
        let raw = sys::weir_exchange_request(ex);
        if raw.is_null() {
            return false;
        }
        let req = Request { raw: &*raw, ex };
        let resp = match catch_unwind(AssertUnwindSafe(|| handler(&req))) {
            Ok(resp) => resp,
            Err(_) => return false,
        };
        if let Some(reader) = resp.reader.clone() {
            let streamed = req.raw.flags & sys::WEIR_REQ_BODY_STREAM != 0;
            stream::pump_body(ex, owner, reader, streamed, req.body());
            return true; // answered, parked, or given its 500 there
        }
        // -EINVAL (bad status, a header weir owns) and -EMSGSIZE (larger than
        // max_output_bytes) leave ex ours (the failure rule): a 500 follows.
        answer(ex, owner, &resp)
    }));
    if !matches!(answered, Ok(true)) {
        respond_500(ex);
    }
}
