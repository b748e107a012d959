//! Static-file answers with validators (weir_serve_file, 0.4): weir reads the
//! request and the file's `fstat`, decides 200/206/304/412/416/405 as nginx
//! does (docs/api.md §5.7), and answers through the zero-copy path of
//! [`Response::file`]. The handler only picks the file and its fields.
use std::ffi::{c_int, CString};
use std::fmt;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;

use crate::{io_error, static_str, sys, Error, Response, Result};

const EINVAL: i32 = -22;

/// Fields weir writes itself on a file answer; naming one in
/// [`FileOptions::headers`] is `EINVAL`.
const WEIRS_FIELDS: [&str; 5] = ["etag", "last-modified", "content-type", "content-range", "accept-ranges"];

/// How [`Response::serve_file`] answers (`weir_file_options`).
#[derive(Clone, Debug, Default)]
pub struct FileOptions {
    /// The `Content-Type` of a 200 or 206; `None` is
    /// `application/octet-stream`. [`FileOptions::for_name`] picks one by
    /// the file name's extension.
    pub content_type: Option<String>,
    /// Extra fields for 200, 206 and 304 (`Cache-Control`, `Vary`, ...), not
    /// for 405/412/416 (a `Cache-Control` meant for the file must not make
    /// an error cacheable). They must not name `ETag`, `Last-Modified`,
    /// `Content-Type`, `Content-Range` or `Accept-Ranges` (weir's here), nor
    /// the fields every answer refuses (`Content-Length`, `Date`,
    /// `Connection`, `Transfer-Encoding`).
    pub headers: Vec<(String, String)>,
    /// Ignore `Range` and `If-Range` (always the whole file) and send no
    /// `Accept-Ranges` (`WEIR_FILE_NO_RANGES`).
    pub no_ranges: bool,
    /// Close the connection after the answer (`WEIR_RESPOND_CLOSE`).
    pub close: bool,
}

impl FileOptions {
    /// The defaults with `content_type` chosen from `name`'s extension
    /// ([`content_type`]): `FileOptions::for_name("app.css")` answers
    /// `text/css; charset=utf-8`.
    pub fn for_name(name: &str) -> Self {
        FileOptions { content_type: Some(content_type(name).to_string()), ..FileOptions::default() }
    }
    /// Adds a field for 200, 206 and 304 (see [`FileOptions::headers`]).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// A `Content-Type` for a file name (a path: its last segment's extension,
/// ASCII case-insensitive) from weir's static table (`weir_content_type`:
/// html, css, js, json, svg, png, jpeg, wasm, woff2, mp4, ...); text types
/// carry `; charset=utf-8`, and an unknown or absent extension is
/// `application/octet-stream`. Any thread.
pub fn content_type(name: &str) -> &'static str {
    // weir reads name[0..len) only: no NUL needed; the result is static.
    unsafe { static_str(sys::weir_content_type(name.as_ptr() as *const _, name.len())) }
}

/// A file answered by weir's validators ([`Response::serve_file`]): a
/// duplicate of the caller's descriptor, held until the answer is given.
/// Clones share the one descriptor.
#[derive(Clone)]
pub struct ServedFile {
    fd: Arc<OwnedFd>,
    content_type: Option<CString>,
    flags: u32,
}

impl fmt::Debug for ServedFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServedFile(fd {}, {:?}, flags {:#x})", self.fd.as_raw_fd(), self.content_type, self.flags)
    }
}

impl Response {
    /// Answers the request with `file` (a regular file: `&File`, `File`,
    /// `BorrowedFd`, anything [`AsFd`]) as a static file server does: weir
    /// evaluates the request against the file's validators, a strong `ETag`
    /// and `Last-Modified` from its `fstat`, and answers
    ///
    /// - `304` when `If-None-Match` matches (or, without it,
    ///   `If-Modified-Since` is not older than the file), with `ETag`,
    ///   `Last-Modified` and `opts.headers`, no body;
    /// - `412` when `If-Match` fails (or, without it, the file changed after
    ///   `If-Unmodified-Since`);
    /// - `206` with `Content-Range` for a GET with one satisfiable byte range
    ///   (and a matching `If-Range`, if sent); `416` when no range is
    ///   satisfiable;
    /// - `200` with the whole file otherwise (several ranges are answered
    ///   whole); HEAD gets GET's head without the body;
    /// - `405` (`Allow: GET, HEAD`) to any other method.
    ///
    /// 200 and 206 carry `ETag`, `Last-Modified`, `Content-Type`
    /// (`opts.content_type`), `Accept-Ranges: bytes` (unless
    /// `opts.no_ranges`) and `opts.headers`. The status is weir's choice:
    /// the response's `status` is not used. `opts.headers` and `opts.close`
    /// become the response's `headers` and `close`, so
    /// [`Response::header`] and [`Response::close`] may add to them.
    ///
    /// The descriptor is duplicated here (the caller's stays the caller's);
    /// the body leaves without a copy through the process, as with
    /// [`Response::file`]. Errors, at once: `EINVAL` for a file that is not
    /// a regular file, a `content_type` with a NUL byte, or `opts.headers`
    /// naming a field weir writes here; the `dup` or `fstat` errno (`EMFILE`,
    /// `EBADF`). What weir refuses only when it answers (a field every answer
    /// refuses, one added later with [`Response::header`]) is answered 500,
    /// as any answer weir refuses.
    ///
    /// ```no_run
    /// use std::fs::File;
    /// use weir::{Engine, FileOptions, Response};
    ///
    /// let engine = Engine::builder().serve(|_req| {
    ///     let opts = FileOptions::for_name("site.css").header("Cache-Control", "max-age=60");
    ///     File::open("/srv/www/site.css")
    ///         .map_err(weir::Error::from)
    ///         .and_then(|f| Response::serve_file(&f, opts))
    ///         .unwrap_or_else(|e| Response::text(404, e.to_string()))
    /// })?;
    /// # Ok::<(), weir::Error>(())
    /// ```
    pub fn serve_file(file: impl AsFd, opts: FileOptions) -> Result<Response> {
        if opts.headers.iter().any(|(n, _)| WEIRS_FIELDS.iter().any(|w| n.eq_ignore_ascii_case(w))) {
            return Err(Error(EINVAL));
        }
        let content_type = match opts.content_type {
            Some(t) => Some(CString::new(t).map_err(|_| Error(EINVAL))?),
            None => None,
        };
        let file = File::from(file.as_fd().try_clone_to_owned().map_err(io_error)?);
        if !file.metadata().map_err(io_error)?.is_file() {
            return Err(Error(EINVAL));
        }
        let flags = if opts.no_ranges { sys::WEIR_FILE_NO_RANGES } else { 0 };
        let mut r = Response::new(200);
        r.headers = opts.headers;
        r.close = opts.close;
        r.served = Some(ServedFile { fd: Arc::new(OwnedFd::from(file)), content_type, flags });
        Ok(r)
    }
}

// Answers ex through weir_serve_file. A status (> 0) means consumed and is
// returned as 0; the rest is the failure rule as weir_respond_file's
// (WEIR_E_GONE, -ENOMEM consumed; -EINVAL, -EBADF, -EMFILE leave ex ours).
pub(crate) unsafe fn serve_file(ex: *mut sys::weir_exchange, r: &Response, f: &ServedFile) -> c_int {
    let hs = r.fields();
    let mut o = std::mem::MaybeUninit::<sys::weir_file_options>::zeroed();
    sys::weir_file_options_init(o.as_mut_ptr());
    let mut o = o.assume_init();
    o.flags = f.flags;
    o.content_type = f.content_type.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
    o.headers = hs.as_ptr();
    o.num_headers = hs.len();
    o.respond_flags = r.respond_flags();
    // weir copies the fields and dups the descriptor before it returns.
    let rc = sys::weir_serve_file(ex, f.fd.as_raw_fd(), &o);
    if rc > 0 {
        0
    } else {
        rc
    }
}
