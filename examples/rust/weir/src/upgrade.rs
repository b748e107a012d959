//! Upgrades (weir_upgrade, weir_upgrade_raw, weir_upgrade_take): the handler
//! answers an Upgrade request with [`Response::upgrade`] (weir writes the
//! 101) or [`Response::upgrade_raw`] (the host writes its own answer on the
//! socket). Once that answer and every one before it has left, the
//! connection leaves the engine and weir hands the handle back (on_request
//! again, on the same loop thread); the crate takes the socket there and
//! gives it, with the bytes that came past the request, to the callback.
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{FromRawFd, OwnedFd};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::{io_error, sys, Error, Response, Result};

const EAGAIN: c_int = -11;
const ENOBUFS: c_int = -105;

type UpgradeFn = dyn FnOnce(Result<Upgraded>) + Send;

/// The upgrade a [`Response`] asks for: what to do with the connection once
/// it is the host's. Clones share the one callback, which runs once.
#[derive(Clone)]
pub struct Upgrade {
    raw: bool,
    then: Arc<Mutex<Option<Box<UpgradeFn>>>>,
}

impl fmt::Debug for Upgrade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.raw { "Upgrade(raw, ..)" } else { "Upgrade(101, ..)" })
    }
}

impl Upgrade {
    // Runs the callback, at most once, never unwinding into weir.
    fn finish(&self, r: Result<Upgraded>) {
        let then = self.then.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(then) = then {
            let _ = catch_unwind(AssertUnwindSafe(move || then(r)));
        }
    }
}

impl Response {
    /// Answers an Upgrade request with `101 Switching Protocols`
    /// (`Connection: upgrade` is weir's; add `Upgrade: ...` and the new
    /// protocol's fields with [`Response::header`]). Nothing after the request
    /// is parsed as HTTP; once the 101 and every answer before it has left,
    /// the connection leaves the engine and `then` is called with it, on
    /// weir's loop thread: it must not block (move the connection to a
    /// thread or a runtime of its own).
    ///
    /// `then` is called once: `Ok(`[`Upgraded`]`)`, or an error:
    /// `EINVAL` when weir refused the upgrade (the request did not ask for
    /// one, [`Request::wants_upgrade`](crate::Request::wants_upgrade), or asked
    /// to close, or its body streams, or a field is weir's; the client is
    /// then answered 500), `WEIR_E_GONE` when the connection died before the
    /// 101 left, `WEIR_E_SHUTDOWN` when the engine was dropped first.
    ///
    /// ```no_run
    /// use std::io::{Read, Write};
    /// use weir::{Engine, Response};
    ///
    /// // An echo protocol: after the 101, every byte comes back.
    /// let engine = Engine::builder().serve(|req| {
    ///     if !req.wants_upgrade() {
    ///         return Response::text(426, "upgrade required").header("Upgrade", "echo");
    ///     }
    ///     Response::upgrade(|up| {
    ///         let Ok(mut up) = up else { return };
    ///         std::thread::spawn(move || {
    ///             let mut buf = [0u8; 4096];
    ///             while let Ok(n @ 1..) = up.read(&mut buf) {
    ///                 if up.write_all(&buf[..n]).is_err() {
    ///                     break;
    ///                 }
    ///             }
    ///         });
    ///     })
    ///     .header("Upgrade", "echo")
    /// })?;
    /// # Ok::<(), weir::Error>(())
    /// ```
    pub fn upgrade(then: impl FnOnce(Result<Upgraded>) + Send + 'static) -> Self {
        let mut r = Response::new(101);
        r.upgrade = Some(Upgrade { raw: false, then: Arc::new(Mutex::new(Some(Box::new(then)))) });
        r
    }

    /// [`Response::upgrade`] without the 101: weir writes nothing for this
    /// request, and the host writes its own answer on the socket it gets (a
    /// hijack, as a WebSocket library that writes its own handshake wants).
    /// The response's fields are not sent. Everything else is `upgrade`'s.
    pub fn upgrade_raw(then: impl FnOnce(Result<Upgraded>) + Send + 'static) -> Self {
        let mut r = Response::upgrade(then);
        if let Some(u) = r.upgrade.as_mut() {
            u.raw = true;
        }
        r
    }
}

/// A connection out of the engine after an upgrade: the socket, now the
/// host's (in blocking mode, as std opens sockets: `set_nonblocking(true)`
/// before handing it to an event loop), and the bytes that arrived past the
/// request, the new protocol's first bytes.
///
/// As [`Read`] it gives those bytes first, then reads the socket; as
/// [`Write`] it writes to the socket. [`Upgraded::into_parts`] hands both
/// over; the socket converts into an [`OwnedFd`] with `OwnedFd::from`.
pub struct Upgraded {
    stream: TcpStream,
    early: Vec<u8>,
    pos: usize,
}

impl Upgraded {
    /// The socket.
    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }
    /// The bytes that came past the request and have not been read yet.
    pub fn early(&self) -> &[u8] {
        &self.early[self.pos..]
    }
    /// The socket and the early bytes not read yet.
    pub fn into_parts(mut self) -> (TcpStream, Vec<u8>) {
        self.early.drain(..self.pos);
        (self.stream, self.early)
    }
}

impl fmt::Debug for Upgraded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upgraded").field("stream", &self.stream).field("early", &self.early().len()).finish()
    }
}

impl Read for Upgraded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.early.len() {
            let n = buf.len().min(self.early.len() - self.pos);
            buf[..n].copy_from_slice(&self.early[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        self.stream.read(buf)
    }
}

impl Write for Upgraded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.stream.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.stream.flush()
    }
}

// An upgrade given to weir whose hand-back has not come yet, and the engine
// it belongs to (its handler's address), so that dropping the engine can
// finish it.
struct Pending {
    owner: usize,
    up: Upgrade,
}

// How many upgrades wait in `pending`: while 0, no handle can be an upgrade
// handed back, and the request path asks nothing more.
static PENDING: AtomicUsize = AtomicUsize::new(0);

fn pending() -> MutexGuard<'static, HashMap<usize, Pending>> {
    static P: OnceLock<Mutex<HashMap<usize, Pending>>> = OnceLock::new();
    // Nothing panics while holding it (callbacks run after their removal).
    P.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner())
}

fn park(ex: *mut sys::weir_exchange, p: Pending) {
    if pending().insert(ex as usize, p).is_none() {
        PENDING.fetch_add(1, Ordering::SeqCst);
    }
}

fn unpark(ex: *mut sys::weir_exchange) -> Option<Pending> {
    let p = pending().remove(&(ex as usize));
    if p.is_some() {
        PENDING.fetch_sub(1, Ordering::SeqCst);
    }
    p
}

// Answers ex with the upgrade (the failure rule as weir_respond). The
// callback is parked before the call: the hand-back it waits for comes on
// this thread, after on_request returns, never inside weir_upgrade, but the
// order costs nothing and holds either way.
pub(crate) unsafe fn start(ex: *mut sys::weir_exchange, owner: usize, r: &Response, up: &Upgrade) -> c_int {
    park(ex, Pending { owner, up: up.clone() });
    let rc = if up.raw {
        sys::weir_upgrade_raw(ex)
    } else {
        let hs = r.fields();
        sys::weir_upgrade(ex, hs.as_ptr(), hs.len())
    };
    if rc < 0 {
        if let Some(p) = unpark(ex) {
            p.up.finish(Err(Error(rc)));
        }
    }
    rc
}

/// on_request: true when ex is an upgrade weir handed back (its 101 left, or
/// its connection died first); the connection is then taken and given to the
/// callback. False for a new request.
pub(crate) unsafe fn handed_back(ex: *mut sys::weir_exchange) -> bool {
    if PENDING.load(Ordering::SeqCst) == 0 {
        return false;
    }
    let Some(p) = unpark(ex) else { return false };
    let mut early = vec![0u8; 16 * 1024];
    let (mut fd, mut len) = (-1, 0usize);
    let rc = loop {
        let rc = sys::weir_upgrade_take(ex, &mut fd, early.as_mut_ptr() as *mut c_void, early.len(), &mut len);
        if rc != ENOBUFS {
            break rc;
        }
        early.resize(len, 0); // nothing taken: again with the room weir asked for
    };
    if rc == EAGAIN {
        park(ex, p); // the 101 has not left yet (not a hand-back): wait for it
        return true;
    }
    if rc < 0 {
        p.up.finish(Err(Error(rc)));
        return true;
    }
    early.truncate(len);
    // weir gave the socket up: it is ours to close from here.
    let stream = TcpStream::from(OwnedFd::from_raw_fd(fd));
    match stream.set_nonblocking(false) {
        Ok(()) => p.up.finish(Ok(Upgraded { stream, early, pos: 0 })),
        Err(e) => p.up.finish(Err(io_error(e))),
    }
    true
}

/// Engine drop, after destroy (no loop thread runs): the upgrades of that
/// engine still waiting for their hand-back will never have one.
pub(crate) fn engine_gone(owner: usize) {
    if PENDING.load(Ordering::SeqCst) == 0 {
        return;
    }
    let gone: Vec<Pending> = {
        let mut m = pending();
        let keys: Vec<usize> = m.iter().filter(|(_, p)| p.owner == owner).map(|(k, _)| *k).collect();
        keys.iter().filter_map(|k| m.remove(k)).collect()
    };
    PENDING.fetch_sub(gone.len(), Ordering::SeqCst);
    for p in gone {
        p.up.finish(Err(Error(sys::WEIR_E_SHUTDOWN)));
    }
}
