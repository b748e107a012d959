//! Raw bindings to `weir.h`, written by hand (no bindgen) and checked against
//! the installed header by `tests/layout.rs`: every struct's size, alignment
//! and field offsets, and every constant's value, as a C compiler sees them.
//!
//! Everything here is `unsafe` to use; the `weir` crate is the safe layer.
//! The comments in `weir.h` are the contract (threads, lifetimes, errors).
#![allow(non_camel_case_types)]

use std::os::raw::{c_char, c_int, c_void};

// ---- version
pub const WEIR_VERSION_MAJOR: u32 = 0;
pub const WEIR_VERSION_MINOR: u32 = 4;
pub const WEIR_VERSION_PATCH: u32 = 0;
pub const WEIR_VERSION_HEX: u32 = (WEIR_VERSION_MAJOR << 16) | (WEIR_VERSION_MINOR << 8) | WEIR_VERSION_PATCH;

// ---- errors: negative errno, or weir's own band below -WEIR_E_BASE
pub const WEIR_E_BASE: c_int = 10000;
pub const WEIR_E_INCOMPLETE: c_int = -(WEIR_E_BASE + 1);
pub const WEIR_E_BAD_METHOD: c_int = -(WEIR_E_BASE + 2);
pub const WEIR_E_BAD_TARGET: c_int = -(WEIR_E_BASE + 3);
pub const WEIR_E_BAD_VERSION: c_int = -(WEIR_E_BASE + 4);
pub const WEIR_E_VERSION_UNSUPPORTED: c_int = -(WEIR_E_BASE + 5);
pub const WEIR_E_BAD_REQUEST_LINE: c_int = -(WEIR_E_BASE + 6);
pub const WEIR_E_REQUEST_LINE_TOO_LONG: c_int = -(WEIR_E_BASE + 7);
pub const WEIR_E_BAD_LINE_ENDING: c_int = -(WEIR_E_BASE + 8);
pub const WEIR_E_BAD_HEADER_NAME: c_int = -(WEIR_E_BASE + 9);
pub const WEIR_E_WS_BEFORE_COLON: c_int = -(WEIR_E_BASE + 10);
pub const WEIR_E_BAD_HEADER_VALUE: c_int = -(WEIR_E_BASE + 11);
pub const WEIR_E_OBS_FOLD: c_int = -(WEIR_E_BASE + 12);
pub const WEIR_E_HEADERS_TOO_LARGE: c_int = -(WEIR_E_BASE + 13);
pub const WEIR_E_TOO_MANY_HEADERS: c_int = -(WEIR_E_BASE + 14);
pub const WEIR_E_MISSING_HOST: c_int = -(WEIR_E_BASE + 15);
pub const WEIR_E_DUPLICATE_HOST: c_int = -(WEIR_E_BASE + 16);
pub const WEIR_E_BAD_HOST: c_int = -(WEIR_E_BASE + 17);
pub const WEIR_E_BAD_CONTENT_LENGTH: c_int = -(WEIR_E_BASE + 18);
pub const WEIR_E_CL_AND_TE: c_int = -(WEIR_E_BASE + 19);
pub const WEIR_E_BAD_TRANSFER_ENCODING: c_int = -(WEIR_E_BASE + 20);
pub const WEIR_E_UNKNOWN_TRANSFER_CODING: c_int = -(WEIR_E_BASE + 21);
pub const WEIR_E_BODY_TOO_LARGE: c_int = -(WEIR_E_BASE + 22);
pub const WEIR_E_EXPECTATION_FAILED: c_int = -(WEIR_E_BASE + 23);
pub const WEIR_E_BAD_CHUNK: c_int = -(WEIR_E_BASE + 24);
pub const WEIR_E_CHUNK_EXT_TOO_LONG: c_int = -(WEIR_E_BASE + 25);
pub const WEIR_E_TRAILERS_TOO_LARGE: c_int = -(WEIR_E_BASE + 26);
pub const WEIR_E_STATE: c_int = -(WEIR_E_BASE + 40);
pub const WEIR_E_GONE: c_int = -(WEIR_E_BASE + 41);
pub const WEIR_E_SHUTDOWN: c_int = -(WEIR_E_BASE + 42);
pub const WEIR_E_UNAVAILABLE: c_int = -(WEIR_E_BASE + 43);
pub const WEIR_E_STALE: c_int = -(WEIR_E_BASE + 44);
pub const WEIR_E_HANDOVER_VERSION: c_int = -(WEIR_E_BASE + 45);
pub const WEIR_E_LAST: c_int = -(WEIR_E_BASE + 63);

// ---- views
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_str_t {
    pub ptr: *const c_char,
    pub len: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_header_t {
    pub name: weir_str_t,
    pub value: weir_str_t,
}

// ---- HTTP/1 parser
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_http1_limits {
    pub size: u32,
    pub max_request_line: u32,
    pub max_header_bytes: u32,
    pub max_headers: u32,
    pub max_chunk_ext: u32,
    pub max_trailer_bytes: u32,
    pub max_trailers: u32,
    pub reserved_: u32,
    pub max_body: u64,
}

pub const WEIR_TARGET_ORIGIN: u32 = 1;
pub const WEIR_TARGET_ABSOLUTE: u32 = 2;
pub const WEIR_TARGET_AUTHORITY: u32 = 3;
pub const WEIR_TARGET_ASTERISK: u32 = 4;
pub const WEIR_BODY_NONE: u32 = 0;
pub const WEIR_BODY_LENGTH: u32 = 1;
pub const WEIR_BODY_CHUNKED: u32 = 2;
/// weir_http1_limits.max_body: no limit (0.4).
pub const WEIR_BODY_UNLIMITED: u64 = u64::MAX;
pub const WEIR_REQ_KEEP_ALIVE: u32 = 0x1;
pub const WEIR_REQ_EXPECT_CONTINUE: u32 = 0x2;
pub const WEIR_REQ_UPGRADE: u32 = 0x4;
pub const WEIR_REQ_BODY_STREAM: u32 = 0x8;
pub const WEIR_REQ_HTTP2: u32 = 0x10;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_http1_request {
    pub size: u32,
    pub version_minor: u32,
    pub target_form: u32,
    pub body_kind: u32,
    pub flags: u32,
    pub num_headers: u32,
    pub method: weir_str_t,
    pub target: weir_str_t,
    pub path: weir_str_t,
    pub query: weir_str_t,
    pub host: weir_str_t,
    pub content_length: u64,
    pub headers: *mut weir_header_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_http1_chunked {
    pub size: u32,
    pub state_: u32,
    pub chunk_left_: u64,
    pub body_len: u64,
    pub raw_len: u64,
    pub trailer_off: u64,
    pub trailer_len: u64,
    pub num_trailers: u32,
    pub count_: u32,
    pub max_body_: u64,
    pub max_chunk_ext_: u32,
    pub max_trailer_bytes_: u32,
    pub max_trailers_: u32,
    pub reserved_: u32,
}

// ---- engine
#[repr(C)]
pub struct weir_engine {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct weir_worker {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct weir_exchange {
    _opaque: [u8; 0],
}

pub const WEIR_BACKEND_EPOLL: u32 = 1;
pub const WEIR_BACKEND_URING: u32 = 2;

pub const WEIR_URING_TIER_DEFER: u32 = 1;
pub const WEIR_URING_TIER_COOP: u32 = 2;
pub const WEIR_URING_TIER_BASIC: u32 = 3;

pub const WEIR_URING_F_SINGLE_ISSUER: u64 = 1 << 0;
pub const WEIR_URING_F_DEFER_TASKRUN: u64 = 1 << 1;
pub const WEIR_URING_F_COOP_TASKRUN: u64 = 1 << 2;
pub const WEIR_URING_F_MULTISHOT_ACCEPT: u64 = 1 << 3;
pub const WEIR_URING_F_MULTISHOT_RECV: u64 = 1 << 4;
pub const WEIR_URING_F_BUF_RING: u64 = 1 << 5;
pub const WEIR_URING_F_BUF_RING_INC: u64 = 1 << 6;
pub const WEIR_URING_F_RECV_BUNDLE: u64 = 1 << 7;
pub const WEIR_URING_F_ACCEPT_DONTWAIT: u64 = 1 << 8;
pub const WEIR_URING_F_ACCEPT_POLL_FIRST: u64 = 1 << 9;
pub const WEIR_URING_F_NAPI: u64 = 1 << 10;
pub const WEIR_URING_F_EXT_ARG: u64 = 1 << 11;
pub const WEIR_URING_F_CQE_SKIP: u64 = 1 << 12;
pub const WEIR_URING_F_NODROP: u64 = 1 << 13;
pub const WEIR_URING_F_REG_RING_FD: u64 = 1 << 14;
pub const WEIR_URING_F_MIN_TIMEOUT: u64 = 1 << 15;
pub const WEIR_URING_F_COUNT: u32 = 16;
pub const WEIR_MODE_INLINE: u32 = 1;
pub const WEIR_MODE_DRIVEN: u32 = 2;
pub const WEIR_LOG_ERROR: c_int = 1;
pub const WEIR_LOG_WARN: c_int = 2;
pub const WEIR_LOG_INFO: c_int = 3;

pub type weir_handler_fn = Option<unsafe extern "C" fn(user: *mut c_void, ex: *mut weir_exchange)>;
pub type weir_log_fn = Option<unsafe extern "C" fn(user: *mut c_void, level: c_int, msg: *const c_char)>;
/// weir_config.on_conn (0.4): a connection's OPEN and CLOSE (peer: a struct sockaddr).
pub type weir_conn_fn = Option<
    unsafe extern "C" fn(
        user: *mut c_void,
        w: *mut weir_worker,
        worker: u32,
        conn_id: u64,
        event: u32,
        reason: u32,
        peer: *const c_void,
        len: socklen_t,
    ),
>;
pub const WEIR_CONN_OPEN: u32 = 1;
pub const WEIR_CONN_CLOSE: u32 = 2;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_config {
    pub size: u32,
    pub port: u32,
    pub host: *const c_char,
    pub backend: u32,
    pub workers: u32,
    pub mode: u32,
    pub accept_batch: u32,
    pub on_request: weir_handler_fn,
    pub user: *mut c_void,
    pub backlog: u32,
    pub defer_accept: u32,
    pub linger_ms: u32,
    pub tcp_nodelay: u32,
    pub read_buffer_size: u32,
    pub max_output_bytes: u32,
    pub max_connections: u32,
    pub max_pipeline: u32,
    pub header_timeout_ms: u32,
    pub idle_timeout_ms: u32,
    pub write_timeout_ms: u32,
    pub body_timeout_ms: u32,
    pub limits: *const weir_http1_limits,
    pub log: weir_log_fn,
    pub log_user: *mut c_void,
    pub handler_timeout_ms: u32,
    pub stream_window_bytes: u32,
    pub stream_body_bytes: u32,
    pub report_gone: u32,
    // The PROXY protocol (0.4).
    pub proxy_protocol: u32,
    pub proxy_timeout_ms: u32,
    pub proxy_trusted: *const c_char,
    pub proxy_max_bytes: u32,
    pub reserved_: u32,
    // Deadlines that bind (0.4): 0 = the default, WEIR_DEADLINE_OFF = off.
    pub request_timeout_ms: u32,
    pub min_body_rate: u32,
    pub min_send_rate: u32,
    pub rate_window_ms: u32,
    // The overload manager (0.4): watermarks, 0 = off.
    pub overload_inflight: u32,
    pub overload_conns: u32,
    pub overload_fds: u32,
    pub overload_mem_mb: u32,
    pub trim_interval_ms: u32,
    pub reserved2_: u32,
    pub on_conn: weir_conn_fn,
    pub conn_user: *mut c_void,
    pub protocols: u32,
    pub h2_max_streams: u32,
    pub h2_header_table: u32,
    pub h2_stream_window: u32,
}

/// weir_config.protocols (0.4): HTTP/1.1 only, h2c only, or both (auto).
pub const WEIR_PROTO_HTTP1: u32 = 0x1;
pub const WEIR_PROTO_H2C: u32 = 0x2;
pub const WEIR_PROTO_AUTO: u32 = WEIR_PROTO_HTTP1 | WEIR_PROTO_H2C;

/// weir_config.request_timeout_ms, min_body_rate, min_send_rate (0.4): off.
pub const WEIR_DEADLINE_OFF: u32 = 0xFFFF_FFFF;

/// weir_config.proxy_protocol (0.4).
pub const WEIR_PROXY_OFF: u32 = 0;
pub const WEIR_PROXY_ON: u32 = 1;
pub const WEIR_OVERLOAD_OFF: u32 = 0;
pub const WEIR_TRIM_OFF: u32 = 0xffff_ffff;

pub const WEIR_CLOSE_PEER: u32 = 0;
pub const WEIR_CLOSE_NOT_KEEP_ALIVE: u32 = 1;
pub const WEIR_CLOSE_BAD_REQUEST: u32 = 2;
pub const WEIR_CLOSE_HEADER_TIMEOUT: u32 = 3;
pub const WEIR_CLOSE_IDLE_TIMEOUT: u32 = 4;
pub const WEIR_CLOSE_WRITE_TIMEOUT: u32 = 5;
pub const WEIR_CLOSE_OUTPUT_LIMIT: u32 = 6;
pub const WEIR_CLOSE_IO_ERROR: u32 = 7;
pub const WEIR_CLOSE_MAX_CONNECTIONS: u32 = 8;
pub const WEIR_CLOSE_SHUTDOWN: u32 = 9;
pub const WEIR_CLOSE_HANDLER: u32 = 10;
pub const WEIR_CLOSE_RESOURCE: u32 = 11;
pub const WEIR_CLOSE_SILENT: u32 = 12;
pub const WEIR_CLOSE_TRANSPLANT_REFUSED: u32 = 13;
pub const WEIR_CLOSE_BODY_TIMEOUT: u32 = 14;
pub const WEIR_CLOSE_HANDLER_TIMEOUT: u32 = 15;
pub const WEIR_CLOSE_UPGRADED: u32 = 16;
pub const WEIR_CLOSE_BODY_UNREAD: u32 = 17;
pub const WEIR_CLOSE_ABORTED: u32 = 18;
pub const WEIR_CLOSE_HANDOVER: u32 = 19;
pub const WEIR_CLOSE_PROXY: u32 = 20;
pub const WEIR_CLOSE_REQUEST_TIMEOUT: u32 = 21;
pub const WEIR_CLOSE_SLOW_BODY: u32 = 22;
pub const WEIR_CLOSE_SLOW_READER: u32 = 23;
pub const WEIR_CLOSE_OVERLOAD: u32 = 24;
pub const WEIR_CLOSE_H2_PROTOCOL: u32 = 25;
pub const WEIR_CLOSE_H2_ABUSE: u32 = 26;
pub const WEIR_CLOSE_GOAWAY: u32 = 27;
pub const WEIR_CLOSE_REASONS: usize = 32;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_metrics {
    pub size: u32,
    pub workers: u32,
    pub accepted: u64,
    pub accept_batches: u64,
    pub accept_owed: u64,
    pub accept_resource_errors: u64,
    pub accept_other_errors: u64,
    pub handoffs: u64,
    pub handoffs_owed: u64,
    pub connections_open: u64,
    pub requests: u64,
    pub responses: u64,
    pub parse_errors: u64,
    pub continues_sent: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub loop_passes: u64,
    pub closes: [u64; WEIR_CLOSE_REASONS],
    pub pause_lingers: u64,
    pub pause_closes: u64,
    pub pause_aborts: u64,
    pub pause_defer_clears: u64,
    pub pause_defer_restores: u64,
    pub pause_guards: u64,
    pub pause_setsockopt_errors: u64,
    pub pause_sysctl_unreadable: u64,
    pub pause_drain_accepted: u64,
    pub pause_reopens: u64,
    pub pause_reopen_errors: u64,
    pub backend: u32,
    pub uring_tier: u32,
    pub uring_probed: u64,
    pub uring_used: u64,
    pub uring_enters: u64,
    pub uring_cq_overflows: u64,
    pub uring_nobufs: u64,
    pub uring_rearms: u64,
    pub transplant_detached: u64,
    pub transplant_adopted: u64,
    pub transplant_refused: u64,
    pub transplant_in_flight: u64,
    pub transplant_received: u64,
    pub close_lingers: u64,
    pub close_linger_cuts: u64,
    pub uring_sq_full: u64,
    // The PROXY protocol (0.4).
    pub proxy_v1: u64,
    pub proxy_v2: u64,
    pub proxy_local: u64,
    pub proxy_missing: u64,
    pub proxy_malformed: u64,
    pub proxy_untrusted: u64,
    pub proxy_oversized: u64,
    pub proxy_timeouts: u64,
    // The overload manager (0.4).
    pub overload_level: u64,
    pub overload_engaged: u64,
    pub overload_keepalive_off: u64,
    pub overload_accept_shrunk: u64,
    pub overload_accept_pauses: u64,
    pub overload_refused: u64,
    pub mem_pooled_bytes: u64,
    pub mem_returned_bytes: u64,
    pub mem_trims: u64,
    // The overload manager, continued (0.4): idle keep-alive closes.
    pub overload_idle_closed: u64,
    // HTTP/2 (0.4).
    pub h2_sessions: u64,
    pub h2_upgrades: u64,
    pub h2_streams: u64,
    pub h2_resets_by_peer: u64,
    pub h2_refused: u64,
    pub h2_malformed: u64,
    pub h2_floods: u64,
    pub h2_handler_timeouts: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_request {
    pub size: u32,
    pub version_minor: u32,
    pub flags: u32,
    pub num_headers: u32,
    pub num_trailers: u32,
    pub reserved_: u32,
    pub method: weir_str_t,
    pub target: weir_str_t,
    pub path: weir_str_t,
    pub query: weir_str_t,
    pub host: weir_str_t,
    pub headers: *const weir_header_t,
    pub trailers: *const weir_header_t,
    pub body: weir_str_t,
    pub connection_id: u64,
    pub body_length: u64,
}

pub const WEIR_RESPOND_CLOSE: u32 = 0x1;
/// (0.4) no answer: the connection closes after the answers before it.
pub const WEIR_RESPOND_ABORT: u32 = 0x2;
pub const WEIR_LENGTH_UNKNOWN: u64 = u64::MAX;
pub const WEIR_TRANSPLANT_END: u32 = 0x1;

// ---- hot upgrade (0.3)
pub const WEIR_HANDOVER_PROTOCOL: u32 = 1;
pub const WEIR_HANDOVER_LISTENERS_ONLY: u32 = 0x1;
pub const WEIR_HANDOVER_WAITING: u32 = 1;
pub const WEIR_HANDOVER_MOVING: u32 = 2;
pub const WEIR_HANDOVER_DONE: u32 = 3;
pub const WEIR_HANDOVER_FAILED: u32 = 4;

#[repr(C)]
pub struct weir_handover {
    _opaque: [u8; 0],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct weir_handover_options {
    pub size: u32,
    pub flags: u32,
    pub wait_ms: u32,
    pub deadline_ms: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct weir_handover_stats {
    pub size: u32,
    pub state: u32,
    pub error: i32,
    pub listeners: u32,
    pub sent: u64,
    pub returned: u64,
    pub closed: u64,
    pub received: u64,
    pub refused: u64,
    pub lost: u64,
    pub moving_ns: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct weir_systemd_stats {
    pub size: u32,
    pub listeners: u32,
    pub connections: u64,
    pub closed: u64,
    pub fds: u32,
    pub image_error: i32,
}

/// One answer of a batch given to weir_respond_many.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_answer_t {
    pub ex: *mut weir_exchange,
    pub status: i32,
    pub flags: u32,
    pub headers: *const weir_header_t,
    pub num_headers: usize,
    pub body: *const c_void,
    pub body_len: usize,
    pub result: i32,
    pub reserved_: u32,
}

// ---- from <sys/socket.h> (glibc, Linux): what weir_engine_addr and weir_exchange_peer fill
pub type socklen_t = u32;
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;

#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct sockaddr_storage {
    pub ss_family: u16,
    pub __ss_padding: [u8; 118],
    pub __ss_align: u64,
}

extern "C" {
    pub fn weir_version() -> u32;
    pub fn weir_version_string() -> *const c_char;
    pub fn weir_strerror(rc: c_int) -> *const c_char;
    pub fn weir_err_name(rc: c_int) -> *const c_char;

    pub fn weir_http1_limits_init(limits: *mut weir_http1_limits);
    pub fn weir_http1_parse_request(
        buf: *const c_char,
        len: usize,
        limits: *const weir_http1_limits,
        req: *mut weir_http1_request,
        headers: *mut weir_header_t,
        headers_cap: usize,
    ) -> c_int;
    pub fn weir_http1_status(rc: c_int) -> c_int;
    pub fn weir_http1_chunked_init(d: *mut weir_http1_chunked, limits: *const weir_http1_limits) -> c_int;
    pub fn weir_http1_chunked_decode(
        d: *mut weir_http1_chunked,
        input: *const c_char,
        in_len: usize,
        in_used: *mut usize,
        out: *mut c_char,
        out_len: *mut usize,
    ) -> c_int;
    pub fn weir_http1_parse_trailers(
        buf: *const c_char,
        len: usize,
        limits: *const weir_http1_limits,
        headers: *mut weir_header_t,
        headers_cap: usize,
    ) -> c_int;

    pub fn weir_config_init(cfg: *mut weir_config);
    pub fn weir_engine_create(cfg: *const weir_config, out: *mut *mut weir_engine) -> c_int;
    pub fn weir_engine_listen(e: *mut weir_engine) -> c_int;
    pub fn weir_engine_addr(e: *mut weir_engine, ss: *mut sockaddr_storage, len: *mut socklen_t) -> c_int;
    pub fn weir_engine_start(e: *mut weir_engine) -> c_int;
    pub fn weir_engine_shutdown(e: *mut weir_engine, grace_ns: i64) -> c_int;
    pub fn weir_engine_destroy(e: *mut weir_engine);
    pub fn weir_engine_worker(e: *mut weir_engine, index: u32, out: *mut *mut weir_worker) -> c_int;
    pub fn weir_engine_workers(e: *mut weir_engine) -> c_int;
    pub fn weir_engine_begin_pause(e: *mut weir_engine) -> c_int;
    pub fn weir_engine_pause(e: *mut weir_engine) -> c_int;
    pub fn weir_engine_resume(e: *mut weir_engine) -> c_int;
    pub fn weir_engine_transplant(from: *mut weir_engine, to: *mut weir_engine, flags: u32) -> c_int;
    pub fn weir_engine_switch(from: *mut weir_engine, to: *mut weir_engine) -> c_int;
    pub fn weir_worker_poll(w: *mut weir_worker, out: *mut *mut weir_exchange, max: u32, timeout_ms: c_int) -> c_int;
    pub fn weir_worker_wake(w: *mut weir_worker) -> c_int;
    pub fn weir_worker_own(w: *mut weir_worker, own: c_int) -> c_int;
    pub fn weir_close_reason_name(reason: u32) -> *const c_char;
    pub fn weir_backend_name(backend: u32) -> *const c_char;
    pub fn weir_backend_by_name(name: *const c_char) -> c_int;
    pub fn weir_uring_feature_name(bit: u64) -> *const c_char;
    pub fn weir_uring_tier_name(tier: u32) -> *const c_char;
    pub fn weir_engine_metrics(e: *mut weir_engine, out: *mut weir_metrics) -> c_int;
    pub fn weir_engine_listen_fds(e: *mut weir_engine, fds: *const c_int, n: usize) -> c_int;
    pub fn weir_handover_offer(
        e: *mut weir_engine,
        path: *const c_char,
        opt: *const weir_handover_options,
        out: *mut *mut weir_handover,
    ) -> c_int;
    pub fn weir_handover_take_over(
        e: *mut weir_engine,
        path: *const c_char,
        opt: *const weir_handover_options,
        out: *mut *mut weir_handover,
    ) -> c_int;
    pub fn weir_handover_wait(h: *mut weir_handover, timeout_ns: i64) -> c_int;
    pub fn weir_handover_stats_get(h: *const weir_handover, out: *mut weir_handover_stats) -> c_int;
    pub fn weir_handover_free(h: *mut weir_handover);
    pub fn weir_engine_listen_systemd(e: *mut weir_engine, name: *const c_char, out: *mut weir_systemd_stats) -> c_int;
    pub fn weir_engine_store_systemd(e: *mut weir_engine, timeout_ns: i64, out: *mut weir_systemd_stats) -> c_int;

    pub fn weir_exchange_request(ex: *mut weir_exchange) -> *const weir_request;
    pub fn weir_exchange_peer(ex: *mut weir_exchange, ss: *mut sockaddr_storage, len: *mut socklen_t) -> c_int;
    pub fn weir_respond(
        ex: *mut weir_exchange,
        status: c_int,
        headers: *const weir_header_t,
        num_headers: usize,
        body: *const c_void,
        body_len: usize,
        flags: u32,
    ) -> c_int;
    pub fn weir_respond_many(answers: *mut weir_answer_t, n: usize) -> c_int;
    pub fn weir_defer(ex: *mut weir_exchange) -> c_int;
    pub fn weir_stream_start(
        ex: *mut weir_exchange,
        status: c_int,
        headers: *const weir_header_t,
        num_headers: usize,
        length: u64,
        flags: u32,
    ) -> c_int;
    pub fn weir_stream_write(ex: *mut weir_exchange, data: *const c_void, len: usize) -> c_int;
    pub fn weir_stream_end(ex: *mut weir_exchange, trailers: *const weir_header_t, num_trailers: usize) -> c_int;
    pub fn weir_stream_room(ex: *mut weir_exchange) -> i64;
    pub fn weir_stream_abort(ex: *mut weir_exchange) -> c_int;
    pub fn weir_respond_file(
        ex: *mut weir_exchange,
        status: c_int,
        headers: *const weir_header_t,
        num_headers: usize,
        fd: c_int,
        offset: u64,
        length: u64,
        flags: u32,
    ) -> c_int;
    pub fn weir_upgrade(ex: *mut weir_exchange, headers: *const weir_header_t, num_headers: usize) -> c_int;
    pub fn weir_upgrade_raw(ex: *mut weir_exchange) -> c_int;
    /// (0.4) A 1xx answer (103 Early Hints, ...) before the final one; ex stays the host's.
    pub fn weir_respond_interim(
        ex: *mut weir_exchange,
        status: c_int,
        headers: *const weir_header_t,
        num_headers: usize,
    ) -> c_int;
    pub fn weir_exchange_gone(ex: *mut weir_exchange) -> c_int;
    pub fn weir_upgrade_take(
        ex: *mut weir_exchange,
        fd: *mut c_int,
        buf: *mut c_void,
        cap: usize,
        len: *mut usize,
    ) -> c_int;
    pub fn weir_body_read(ex: *mut weir_exchange, buf: *mut c_void, cap: usize) -> i64;
}

// ---- file answers with validators (0.4)
pub const WEIR_FILE_NO_RANGES: u32 = 0x1;

/// How weir_serve_file answers; weir_file_options_init sets size and the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_file_options {
    pub size: u32,
    pub flags: u32,
    pub content_type: *const c_char,
    pub headers: *const weir_header_t,
    pub num_headers: usize,
    pub respond_flags: u32,
    pub reserved_: u32,
}

extern "C" {
    pub fn weir_file_options_init(o: *mut weir_file_options);
    pub fn weir_serve_file(ex: *mut weir_exchange, fd: c_int, opts: *const weir_file_options) -> c_int;
    pub fn weir_content_type(name: *const c_char, len: usize) -> *const c_char;
}

// ---- the adaptive pair (0.4, docs/adaptive.md)
#[repr(C)]
pub struct weir_adaptive {
    _opaque: [u8; 0],
}

/// The controller's tunables; weir_adaptive_config_init sets size and the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct weir_adaptive_config {
    pub size: u32,
    pub interval_ms: u32,
    pub up_conns: u64,
    pub up_rps: u64,
    pub down_conns: u64,
    pub down_rps: u64,
    pub max_error_permille: u64,
    pub hold: u64,
    pub cooldown_ms: u64,
    pub flap_count: u64,
    pub flap_window_ms: u64,
    pub lockout_ms: u64,
}

pub const WEIR_ADAPTIVE_NONE: u32 = 0;
pub const WEIR_ADAPTIVE_STEADY: u32 = 1;
pub const WEIR_ADAPTIVE_HOLD: u32 = 2;
pub const WEIR_ADAPTIVE_LOCKOUT: u32 = 3;
pub const WEIR_ADAPTIVE_COOLDOWN: u32 = 4;
pub const WEIR_ADAPTIVE_ERRORS: u32 = 5;
pub const WEIR_ADAPTIVE_UP: u32 = 6;
pub const WEIR_ADAPTIVE_DOWN: u32 = 7;
pub const WEIR_ADAPTIVE_REASON_COUNT: u32 = 8;

/// The pair's state and counters (weir_adaptive_state_get; size set by the caller).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct weir_adaptive_state {
    pub size: u32,
    pub controller: u32,
    pub active_backend: u32,
    pub standby_backend: u32,
    pub role: u32,
    pub last_reason: u32,
    pub switches: u64,
    pub switch_failures: u64,
    pub controller_switches: u64,
    pub forced_switches: u64,
    pub decisions: u64,
    pub streak: u64,
    pub held_by_cooldown: u64,
    pub held_by_errors: u64,
    pub held_by_lockout: u64,
    pub lockouts: u64,
    pub last_conns_per_worker: u64,
    pub last_rps: u64,
    pub last_error_permille: u64,
}

extern "C" {
    pub fn weir_adaptive_config_init(cfg: *mut weir_adaptive_config);
    pub fn weir_adaptive_config_error(cfg: *const weir_adaptive_config) -> *const c_char;
    pub fn weir_adaptive_create(
        active: *mut weir_engine,
        standby: *mut weir_engine,
        cfg: *const weir_adaptive_config,
        out: *mut *mut weir_adaptive,
    ) -> c_int;
    pub fn weir_adaptive_destroy(a: *mut weir_adaptive);
    pub fn weir_adaptive_tick(a: *mut weir_adaptive) -> c_int;
    pub fn weir_adaptive_timeout_ms(a: *mut weir_adaptive) -> c_int;
    pub fn weir_adaptive_switch(a: *mut weir_adaptive) -> c_int;
    pub fn weir_adaptive_engines(
        a: *mut weir_adaptive,
        active: *mut *mut weir_engine,
        standby: *mut *mut weir_engine,
    ) -> c_int;
    pub fn weir_adaptive_state_get(a: *mut weir_adaptive, out: *mut weir_adaptive_state) -> c_int;
    pub fn weir_adaptive_reason_name(reason: u32) -> *const c_char;
}
