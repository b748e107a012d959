//! Answers from a file (weir_respond_file): the body goes from the file to
//! the socket without passing through the process (sendfile on epoll, splice
//! on io_uring), as the connection drains; a file of any size costs at most a
//! stream window of memory.
use std::ffi::c_int;
use std::fmt;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;

use crate::{io_error, sys, Error, Response, Result};

const EINVAL: i32 = -22;

/// A file body: a range of a regular file, held open (a duplicate of the
/// caller's descriptor) until the answer is given. Clones share the one
/// descriptor.
#[derive(Clone)]
pub struct FileBody {
    fd: Arc<OwnedFd>,
    offset: u64,
    length: u64,
}

impl FileBody {
    /// Where the body starts in the file.
    pub fn offset(&self) -> u64 {
        self.offset
    }
    /// How many bytes the body has (its Content-Length).
    pub fn length(&self) -> u64 {
        self.length
    }
}

impl fmt::Debug for FileBody {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FileBody(fd {}, {}+{})", self.fd.as_raw_fd(), self.offset, self.length)
    }
}

impl Response {
    /// Answers with the whole of `file` (a `&File`, a `File`, a
    /// `BorrowedFd`: anything [`AsFd`]), `Content-Length` its size now. See
    /// [`Response::file_range`].
    pub fn file(status: u16, file: impl AsFd) -> Result<Response> {
        Response::file_with(status, file.as_fd(), |size| Ok((0, size)))
    }

    /// Answers with `length` bytes of `file` from `offset` (`Content-Length:
    /// length`; the status and fields such as `Content-Range` are the
    /// handler's to choose). The body is sent from the file without a copy
    /// through the process, after the answers before it on the connection.
    ///
    /// The descriptor is duplicated here, so the caller's stays the caller's
    /// (close it, or drop the `File`, whenever it likes) and the response may
    /// outlive the borrow; weir makes its own duplicate when the answer is
    /// given. Errors: `EINVAL` for a file that is not a regular file or is
    /// shorter than `offset + length` now, the `dup` or `fstat` errno
    /// (`EMFILE`, `EBADF`). A file that shrinks while it is being sent
    /// aborts the connection (the head promised the length), counted as
    /// `WEIR_CLOSE_IO_ERROR`; one that changes between this call and the
    /// answer so that weir refuses it is answered 500, as any answer weir
    /// refuses.
    ///
    /// ```no_run
    /// use std::fs::File;
    /// use weir::{Engine, Response};
    ///
    /// let engine = Engine::builder().serve(|_req| {
    ///     // The first KiB of a log, from a file opened for this request.
    ///     let answer = File::open("/var/log/app.log")
    ///         .map_err(weir::Error::from)
    ///         .and_then(|f| Response::file_range(200, &f, 0, 1024));
    ///     match answer {
    ///         Ok(r) => r.header("Content-Type", "text/plain"),
    ///         Err(e) => Response::text(404, e.to_string()),
    ///     }
    /// })?;
    /// # Ok::<(), weir::Error>(())
    /// ```
    pub fn file_range(status: u16, file: impl AsFd, offset: u64, length: u64) -> Result<Response> {
        Response::file_with(status, file.as_fd(), |size| match offset.checked_add(length) {
            Some(end) if end <= size => Ok((offset, length)),
            _ => Err(Error(EINVAL)),
        })
    }

    fn file_with(
        status: u16,
        fd: std::os::fd::BorrowedFd<'_>,
        range: impl FnOnce(u64) -> Result<(u64, u64)>,
    ) -> Result<Response> {
        let file = File::from(fd.try_clone_to_owned().map_err(io_error)?);
        let meta = file.metadata().map_err(io_error)?;
        if !meta.is_file() {
            return Err(Error(EINVAL));
        }
        let (offset, length) = range(meta.len())?;
        let mut r = Response::new(status);
        r.file = Some(FileBody { fd: Arc::new(OwnedFd::from(file)), offset, length });
        Ok(r)
    }
}

// Answers ex with the file body; the failure rule as weir_respond (also
// -EBADF, -EINVAL for a file changed since, -EMFILE: each leaves ex ours).
pub(crate) unsafe fn respond_file(ex: *mut sys::weir_exchange, r: &Response, f: &FileBody) -> c_int {
    let hs = r.fields();
    // weir dups the descriptor before it returns; ours closes with the
    // response.
    sys::weir_respond_file(
        ex,
        r.status as c_int,
        hs.as_ptr(),
        hs.len(),
        f.fd.as_raw_fd(),
        f.offset,
        f.length,
        r.respond_flags(),
    )
}
