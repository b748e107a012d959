//! The engine: [`Builder`] creates, binds and starts one; [`Engine`] owns its
//! handle and, on drop, destroys it before it frees the handler its loop
//! threads call.
use std::ffi::{c_void, CString};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use crate::{addr, check, on_request, sys, upgrade, Error, Handler, Request, Response, Result};

/// Settings for an engine; [`Builder::serve`] creates, binds and starts it.
pub struct Builder {
    addr: SocketAddr,
    workers: u32,
    backend: u32,
    stream_bodies: u32,
    proxy: bool,
    proxy_trusted: Option<String>,
    proxy_timeout: Duration,
    proxy_max_bytes: u32,
    max_body: Option<u64>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            workers: 0,
            backend: sys::WEIR_BACKEND_EPOLL,
            stream_bodies: 0,
            proxy: false,
            proxy_trusted: None,
            proxy_timeout: Duration::ZERO,
            proxy_max_bytes: 0,
            max_body: None,
        }
    }
}

impl Builder {
    /// Host and port to bind (port 0 picks one; see [`Engine::local_addr`]).
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }
    /// Event loops (threads); 0 = one per online CPU.
    pub fn workers(mut self, n: u32) -> Self {
        self.workers = n;
        self
    }
    /// Request bodies of at least `bytes` (and chunked ones, and those that
    /// expect 100-continue) reach a [`Response::read_body`] reader as they
    /// arrive; 0 (the default) buffers every body whole. Either way at most
    /// [`Builder::max_body`] bytes (weir answers 413 past it). A handler that
    /// does not return a reader for such a request answers without its body
    /// (and the connection then closes).
    pub fn stream_bodies(mut self, bytes: u32) -> Self {
        self.stream_bodies = bytes;
        self
    }
    /// The PROXY protocol (docs/api.md §5.8): every accepted connection
    /// must begin with a v1 or v2 header (HAProxy's send-proxy /
    /// send-proxy-v2, nginx stream, AWS NLB), read before its first request;
    /// its source address becomes the connection's peer
    /// ([`Request::peer_addr`]). A connection without a valid one is answered
    /// 400 and closed (`WEIR_CLOSE_PROXY`, counted by cause in the metrics'
    /// `proxy_*`); v2's LOCAL and v1's UNKNOWN keep the socket's own peer.
    pub fn proxy_protocol(mut self) -> Self {
        self.proxy = true;
        self
    }
    /// The sources allowed to send the PROXY header: comma-separated IPv4/IPv6
    /// addresses with an optional /prefix (`"10.0.0.0/8, ::1"`); a connection
    /// from elsewhere is refused. Unset: any source. A list weir cannot parse
    /// (or one with a NUL) makes [`Builder::serve`] fail with `-EINVAL`. Turns
    /// the PROXY protocol on.
    pub fn proxy_trusted(mut self, sources: &str) -> Self {
        self.proxy = true;
        self.proxy_trusted = Some(sources.to_owned());
        self
    }
    /// The PROXY header's own deadline from the accept (rounded up to whole
    /// milliseconds; zero: weir's 5 s). Turns the PROXY protocol on.
    pub fn proxy_timeout(mut self, d: Duration) -> Self {
        self.proxy = true;
        self.proxy_timeout = d;
        self
    }
    /// The longest v2 header accepted, TLVs included (232..=65551; 0: weir's
    /// 4096; v1 is 107 bytes by its spec). Turns the PROXY protocol on.
    pub fn proxy_max_bytes(mut self, n: u32) -> Self {
        self.proxy = true;
        self.proxy_max_bytes = n;
        self
    }
    /// The longest request body, buffered or streamed (weir's max_body; 1 MiB
    /// unless set): a declared length past it is answered 413 before the
    /// handler sees it, a chunked body at the chunk that crosses it.
    /// `sys::WEIR_BODY_UNLIMITED` (`u64::MAX`): no limit, for a handler that
    /// streams unbounded uploads.
    pub fn max_body(mut self, bytes: u64) -> Self {
        self.max_body = Some(bytes);
        self
    }
    /// Use io_uring instead of epoll.
    pub fn uring(mut self) -> Self {
        self.backend = sys::WEIR_BACKEND_URING;
        self
    }
    /// Use the backend the library's list names `name` ([`crate::backends`]:
    /// `"epoll"`, `"uring"`); a name no backend has is `-EINVAL`, never a
    /// silent epoll.
    pub fn backend(mut self, name: &str) -> Result<Self> {
        let c = CString::new(name).map_err(|_| Error(-22))?;
        let id = unsafe { sys::weir_backend_by_name(c.as_ptr()) };
        if id <= 0 {
            return Err(Error(id.min(-1)));
        }
        self.backend = id as u32;
        Ok(self)
    }
    /// Creates the engine, binds its listeners and starts its loop threads,
    /// each calling `handler` for every request.
    pub fn serve<F>(self, handler: F) -> Result<Engine>
    where
        F: Fn(&Request<'_>) -> Response + Send + Sync + 'static,
    {
        let host = CString::new(self.addr.ip().to_string()).map_err(|_| Error(-22))?;
        // Copied by weir_engine_create: dropped once it has returned.
        let trusted = match &self.proxy_trusted {
            Some(t) => Some(CString::new(t.as_str()).map_err(|_| Error(-22))?),
            None => None,
        };
        let handler: Box<Box<Handler>> = Box::new(Box::new(handler));
        let mut cfg: sys::weir_config = unsafe { std::mem::zeroed() };
        unsafe { sys::weir_config_init(&mut cfg) };
        cfg.host = host.as_ptr();
        cfg.port = self.addr.port() as u32;
        cfg.workers = self.workers;
        cfg.backend = self.backend;
        cfg.mode = sys::WEIR_MODE_INLINE;
        cfg.stream_body_bytes = self.stream_bodies;
        if self.proxy {
            cfg.proxy_protocol = sys::WEIR_PROXY_ON;
            cfg.proxy_timeout_ms = u32::try_from(self.proxy_timeout.as_nanos().div_ceil(1_000_000)).unwrap_or(u32::MAX);
            cfg.proxy_max_bytes = self.proxy_max_bytes;
            cfg.proxy_trusted = trusted.as_ref().map_or(std::ptr::null(), |t| t.as_ptr());
        }
        // Copied by weir_engine_create: it need only outlive the call.
        let mut limits: sys::weir_http1_limits = unsafe { std::mem::zeroed() };
        unsafe { sys::weir_http1_limits_init(&mut limits) };
        if let Some(max) = self.max_body {
            limits.max_body = max;
            cfg.limits = &limits;
        }
        cfg.on_request = Some(on_request);
        cfg.user = &*handler as *const Box<Handler> as *mut c_void;
        let mut raw = std::ptr::null_mut();
        check(unsafe { sys::weir_engine_create(&cfg, &mut raw) })?;
        drop(trusted);
        // From here Drop destroys the engine before the handler is freed.
        let engine = Engine { raw, _handler: handler, _host: host };
        check(unsafe { sys::weir_engine_listen(engine.raw) })?;
        check(unsafe { sys::weir_engine_start(engine.raw) })?;
        Ok(engine)
    }
}

/// A running engine. Dropping it shuts it down (grace 0) and frees it.
pub struct Engine {
    raw: *mut sys::weir_engine,
    _handler: Box<Box<Handler>>,
    _host: CString,
}

// The handle is only used through calls weir.h allows from any thread
// (addr, metrics) or through &mut self (shutdown, destroy on drop).
unsafe impl Send for Engine {}
unsafe impl Sync for Engine {}

impl Engine {
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The address the listeners are bound to.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        addr::socket_addr(|ss, len| unsafe { sys::weir_engine_addr(self.raw, ss, len) })
    }

    /// Counters summed over every worker.
    pub fn metrics(&self) -> Result<sys::weir_metrics> {
        let mut m: sys::weir_metrics = unsafe { std::mem::zeroed() };
        m.size = std::mem::size_of::<sys::weir_metrics>() as u32;
        check(unsafe { sys::weir_engine_metrics(self.raw, &mut m) })?;
        Ok(m)
    }

    /// Starts a pause and returns at once: each listener stops deferring
    /// accepts, keeps accepting for the linger (1.5 s by default), then closes.
    pub fn begin_pause(&self) -> Result<()> {
        check(unsafe { sys::weir_engine_begin_pause(self.raw) }).map(|_| ())
    }

    /// Pauses and waits until every listener has closed. A resume during the
    /// wait ends it with ECANCELED (-125), a shutdown with `WEIR_E_SHUTDOWN`.
    /// Never call it from a handler: it waits for the loops.
    pub fn pause(&self) -> Result<()> {
        check(unsafe { sys::weir_engine_pause(self.raw) }).map(|_| ())
    }

    /// Accepts again: a lingering listener keeps its fd; a closed one reopens.
    pub fn resume(&self) -> Result<()> {
        check(unsafe { sys::weir_engine_resume(self.raw) }).map(|_| ())
    }

    /// Stops accepting, lets in-flight exchanges finish within `grace`, closes
    /// the rest and joins the loop threads. Repeated calls are harmless.
    pub fn shutdown(&mut self, grace: Duration) -> Result<()> {
        let ns = i64::try_from(grace.as_nanos()).unwrap_or(i64::MAX);
        check(unsafe { sys::weir_engine_shutdown(self.raw, ns) }).map(|_| ())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Joins the loop threads: after this no thread can call the handler.
        unsafe { sys::weir_engine_destroy(self.raw) };
        // Upgrades whose 101 had not left get their error now, not never.
        upgrade::engine_gone(&*self._handler as *const Box<Handler> as usize);
    }
}
