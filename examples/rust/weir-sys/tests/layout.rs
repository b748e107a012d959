//! The hand-written bindings against the header as a C compiler reads it
//! (tables printed by layout.c in build.rs): sizes, alignments, offsets of
//! every field, values of every constant; both sides must list the same names.
use std::collections::BTreeMap;
use std::mem::{align_of, offset_of, size_of};
use weir_sys::*;

mod c {
    include!(concat!(env!("OUT_DIR"), "/layout.rs"));
}

macro_rules! sizes {
    ($($t:ty => $name:expr),* $(,)?) => { vec![$(($name.to_string(), size_of::<$t>(), align_of::<$t>())),*] };
}
macro_rules! fields {
    ($($t:ident { $($f:ident),* })*) => {
        vec![$($((concat!(stringify!($t), ".", stringify!($f)).to_string(), offset_of!($t, $f)),)*)*]
    };
}
macro_rules! consts {
    ($($c:ident),* $(,)?) => { vec![$((stringify!($c).to_string(), $c as i64)),*] };
}

fn compare<V: PartialEq + std::fmt::Debug + Clone>(what: &str, c: Vec<(String, V)>, rust: Vec<(String, V)>) {
    let c: BTreeMap<_, _> = c.into_iter().collect();
    let rust: BTreeMap<_, _> = rust.into_iter().collect();
    let mut bad = Vec::new();
    for (name, cv) in &c {
        match rust.get(name) {
            None => bad.push(format!("{what} {name}: in weir.h, missing from weir-sys")),
            Some(rv) if rv != cv => bad.push(format!("{what} {name}: C {cv:?}, Rust {rv:?}")),
            _ => {}
        }
    }
    for name in rust.keys().filter(|n| !c.contains_key(*n)) {
        bad.push(format!("{what} {name}: in weir-sys, not checked against weir.h (add it to layout.c)"));
    }
    assert!(bad.is_empty(), "weir-sys disagrees with weir.h:\n  {}", bad.join("\n  "));
}

#[test]
fn sizes_and_alignments_match_the_header() {
    let rust = sizes! {
        weir_str_t => "weir_str_t", weir_header_t => "weir_header_t", weir_http1_limits => "weir_http1_limits",
        weir_http1_request => "weir_http1_request", weir_http1_chunked => "weir_http1_chunked",
        weir_config => "weir_config", weir_metrics => "weir_metrics", weir_request => "weir_request", weir_answer_t => "weir_answer_t",
        weir_handover_options => "weir_handover_options", weir_handover_stats => "weir_handover_stats",
        weir_systemd_stats => "weir_systemd_stats",
        weir_file_options => "weir_file_options",
        weir_adaptive_config => "weir_adaptive_config",
        weir_adaptive_state => "weir_adaptive_state",
        sockaddr_storage => "struct sockaddr_storage", socklen_t => "socklen_t",
    };
    let c = c::C_SIZES.iter().map(|&(n, s, a)| (n.to_string(), (s, a))).collect();
    compare("size/align of", c, rust.into_iter().map(|(n, s, a)| (n, (s, a))).collect());
}

#[test]
fn field_offsets_match_the_header() {
    let rust = fields! {
        weir_str_t { ptr, len }
        weir_header_t { name, value }
        weir_http1_limits { size, max_request_line, max_header_bytes, max_headers, max_chunk_ext,
                            max_trailer_bytes, max_trailers, reserved_, max_body }
        weir_http1_request { size, version_minor, target_form, body_kind, flags, num_headers, method, target,
                             path, query, host, content_length, headers }
        weir_http1_chunked { size, state_, chunk_left_, body_len, raw_len, trailer_off, trailer_len,
                             num_trailers, count_, max_body_, max_chunk_ext_, max_trailer_bytes_,
                             max_trailers_, reserved_ }
        weir_config { size, port, host, backend, workers, mode, accept_batch, on_request, user, backlog,
                      defer_accept, linger_ms, tcp_nodelay, read_buffer_size, max_output_bytes, max_connections,
                      max_pipeline, header_timeout_ms, idle_timeout_ms, write_timeout_ms, body_timeout_ms, limits,
                      log, log_user, handler_timeout_ms, stream_window_bytes, stream_body_bytes, report_gone,
                      proxy_protocol, proxy_timeout_ms, proxy_trusted, proxy_max_bytes, reserved_,
                      request_timeout_ms, min_body_rate, min_send_rate, rate_window_ms,
                      overload_inflight, overload_conns, overload_fds, overload_mem_mb,
                      trim_interval_ms, reserved2_, on_conn, conn_user, protocols, h2_max_streams,
                      h2_header_table, h2_stream_window }
        weir_metrics { size, workers, accepted, accept_batches, accept_owed, accept_resource_errors,
                       accept_other_errors, handoffs, handoffs_owed, connections_open, requests, responses,
                       parse_errors, continues_sent, bytes_in, bytes_out, loop_passes, closes, pause_lingers,
                       pause_closes, pause_aborts, pause_defer_clears, pause_defer_restores, pause_guards,
                       pause_setsockopt_errors, pause_sysctl_unreadable, pause_drain_accepted, pause_reopens,
                       pause_reopen_errors, backend, uring_tier, uring_probed, uring_used, uring_enters,
                       uring_cq_overflows, uring_nobufs, uring_rearms, transplant_detached,
                       transplant_adopted, transplant_refused, transplant_in_flight, transplant_received, close_lingers,
                       close_linger_cuts, uring_sq_full, proxy_v1, proxy_v2, proxy_local, proxy_missing,
                       proxy_malformed, proxy_untrusted, proxy_oversized, proxy_timeouts,
                       overload_level, overload_engaged, overload_keepalive_off, overload_accept_shrunk,
                       overload_accept_pauses, overload_refused,
                       mem_pooled_bytes, mem_returned_bytes, mem_trims, overload_idle_closed,
                       h2_sessions, h2_upgrades, h2_streams, h2_resets_by_peer, h2_refused, h2_malformed, h2_floods,
                       h2_handler_timeouts }
        weir_request { size, version_minor, flags, num_headers, num_trailers, reserved_, method, target, path,
                       query, host, headers, trailers, body, connection_id, body_length }
        weir_answer_t { ex, status, flags, headers, num_headers, body, body_len, result, reserved_ }
        weir_handover_options { size, flags, wait_ms, deadline_ms }
        weir_handover_stats { size, state, error, listeners, sent, returned, closed, received, refused, lost,
                              moving_ns }
        weir_systemd_stats { size, listeners, connections, closed, fds, image_error }
        weir_file_options { size, flags, content_type, headers, num_headers, respond_flags, reserved_ }
        weir_adaptive_config { size, interval_ms, up_conns, up_rps, down_conns, down_rps, max_error_permille, hold,
                               cooldown_ms, flap_count, flap_window_ms, lockout_ms }
        weir_adaptive_state { size, controller, active_backend, standby_backend, role, last_reason, switches,
                              switch_failures, controller_switches, forced_switches, decisions, streak,
                              held_by_cooldown, held_by_errors, held_by_lockout, lockouts, last_conns_per_worker,
                              last_rps, last_error_permille }
    };
    let c = c::C_FIELDS.iter().map(|&(n, o)| (n.to_string(), o)).collect();
    compare("offset of", c, rust);
}

#[test]
fn constants_match_the_header() {
    let rust = consts![
        WEIR_VERSION_MAJOR,
        WEIR_VERSION_MINOR,
        WEIR_VERSION_PATCH,
        WEIR_VERSION_HEX,
        WEIR_E_BASE,
        WEIR_E_INCOMPLETE,
        WEIR_E_BAD_METHOD,
        WEIR_E_BAD_TARGET,
        WEIR_E_BAD_VERSION,
        WEIR_E_VERSION_UNSUPPORTED,
        WEIR_E_BAD_REQUEST_LINE,
        WEIR_E_REQUEST_LINE_TOO_LONG,
        WEIR_E_BAD_LINE_ENDING,
        WEIR_E_BAD_HEADER_NAME,
        WEIR_E_WS_BEFORE_COLON,
        WEIR_E_BAD_HEADER_VALUE,
        WEIR_E_OBS_FOLD,
        WEIR_E_HEADERS_TOO_LARGE,
        WEIR_E_TOO_MANY_HEADERS,
        WEIR_E_MISSING_HOST,
        WEIR_E_DUPLICATE_HOST,
        WEIR_E_BAD_HOST,
        WEIR_E_BAD_CONTENT_LENGTH,
        WEIR_E_CL_AND_TE,
        WEIR_E_BAD_TRANSFER_ENCODING,
        WEIR_E_UNKNOWN_TRANSFER_CODING,
        WEIR_E_BODY_TOO_LARGE,
        WEIR_E_EXPECTATION_FAILED,
        WEIR_E_BAD_CHUNK,
        WEIR_E_CHUNK_EXT_TOO_LONG,
        WEIR_E_TRAILERS_TOO_LARGE,
        WEIR_E_STATE,
        WEIR_E_GONE,
        WEIR_E_SHUTDOWN,
        WEIR_E_UNAVAILABLE,
        WEIR_E_STALE,
        WEIR_E_HANDOVER_VERSION,
        WEIR_E_LAST,
        WEIR_TARGET_ORIGIN,
        WEIR_TARGET_ABSOLUTE,
        WEIR_TARGET_AUTHORITY,
        WEIR_TARGET_ASTERISK,
        WEIR_BODY_NONE,
        WEIR_BODY_LENGTH,
        WEIR_BODY_CHUNKED,
        WEIR_REQ_KEEP_ALIVE,
        WEIR_REQ_EXPECT_CONTINUE,
        WEIR_REQ_UPGRADE,
        WEIR_REQ_BODY_STREAM,
        WEIR_BACKEND_EPOLL,
        WEIR_BACKEND_URING,
        WEIR_MODE_INLINE,
        WEIR_MODE_DRIVEN,
        WEIR_LOG_ERROR,
        WEIR_LOG_WARN,
        WEIR_LOG_INFO,
        WEIR_CLOSE_PEER,
        WEIR_CLOSE_NOT_KEEP_ALIVE,
        WEIR_CLOSE_BAD_REQUEST,
        WEIR_CLOSE_HEADER_TIMEOUT,
        WEIR_CLOSE_IDLE_TIMEOUT,
        WEIR_CLOSE_WRITE_TIMEOUT,
        WEIR_CLOSE_OUTPUT_LIMIT,
        WEIR_CLOSE_IO_ERROR,
        WEIR_CLOSE_MAX_CONNECTIONS,
        WEIR_CLOSE_SHUTDOWN,
        WEIR_CLOSE_HANDLER,
        WEIR_CLOSE_RESOURCE,
        WEIR_CLOSE_SILENT,
        WEIR_CLOSE_TRANSPLANT_REFUSED,
        WEIR_CLOSE_BODY_TIMEOUT,
        WEIR_CLOSE_HANDLER_TIMEOUT,
        WEIR_CLOSE_UPGRADED,
        WEIR_CLOSE_BODY_UNREAD,
        WEIR_CLOSE_ABORTED,
        WEIR_CLOSE_HANDOVER,
        WEIR_CLOSE_PROXY,
        WEIR_CLOSE_OVERLOAD,
        WEIR_OVERLOAD_OFF,
        WEIR_PROXY_OFF,
        WEIR_PROXY_ON,
        WEIR_CLOSE_REASONS,
        WEIR_RESPOND_CLOSE,
        WEIR_LENGTH_UNKNOWN,
        WEIR_TRANSPLANT_END,
        WEIR_HANDOVER_PROTOCOL,
        WEIR_HANDOVER_LISTENERS_ONLY,
        WEIR_HANDOVER_WAITING,
        WEIR_HANDOVER_MOVING,
        WEIR_HANDOVER_DONE,
        WEIR_HANDOVER_FAILED,
        AF_INET,
        AF_INET6,
        WEIR_FILE_NO_RANGES,
        WEIR_ADAPTIVE_NONE,
        WEIR_ADAPTIVE_STEADY,
        WEIR_ADAPTIVE_HOLD,
        WEIR_ADAPTIVE_LOCKOUT,
        WEIR_ADAPTIVE_COOLDOWN,
        WEIR_ADAPTIVE_ERRORS,
        WEIR_ADAPTIVE_UP,
        WEIR_ADAPTIVE_DOWN,
        WEIR_ADAPTIVE_REASON_COUNT,
    ];
    let c = c::C_CONSTS.iter().map(|&(n, v)| (n.to_string(), v)).collect();
    compare("value of", c, rust);
}

/// Every extern function resolves at link time against the installed library
/// and agrees with the version macros at run time.
#[test]
fn library_links_and_reports_the_header_version() {
    unsafe {
        assert_eq!(weir_version(), WEIR_VERSION_HEX);
        let s = std::ffi::CStr::from_ptr(weir_version_string()).to_str().unwrap();
        assert_eq!(s, format!("{WEIR_VERSION_MAJOR}.{WEIR_VERSION_MINOR}.{WEIR_VERSION_PATCH}"));
        let name = std::ffi::CStr::from_ptr(weir_err_name(WEIR_E_STATE)).to_str().unwrap();
        assert_eq!(name, "WEIR_E_STATE");
        assert_eq!(weir_http1_status(WEIR_E_BODY_TOO_LARGE), 413);
    }
    let fns: &[*const ()] = &[
        weir_version as *const (),
        weir_version_string as *const (),
        weir_strerror as *const (),
        weir_err_name as *const (),
        weir_http1_limits_init as *const (),
        weir_http1_parse_request as *const (),
        weir_http1_status as *const (),
        weir_http1_chunked_init as *const (),
        weir_http1_chunked_decode as *const (),
        weir_http1_parse_trailers as *const (),
        weir_config_init as *const (),
        weir_engine_create as *const (),
        weir_engine_listen as *const (),
        weir_engine_addr as *const (),
        weir_engine_start as *const (),
        weir_engine_shutdown as *const (),
        weir_engine_destroy as *const (),
        weir_engine_worker as *const (),
        weir_engine_workers as *const (),
        weir_engine_begin_pause as *const (),
        weir_engine_pause as *const (),
        weir_engine_resume as *const (),
        weir_worker_poll as *const (),
        weir_close_reason_name as *const (),
        weir_engine_metrics as *const (),
        weir_exchange_request as *const (),
        weir_exchange_peer as *const (),
        weir_respond as *const (),
        weir_respond_many as *const (),
        weir_defer as *const (),
        weir_serve_file as *const (),
        weir_file_options_init as *const (),
        weir_content_type as *const (),
        weir_adaptive_config_init as *const (),
        weir_adaptive_config_error as *const (),
        weir_adaptive_create as *const (),
        weir_adaptive_destroy as *const (),
        weir_adaptive_tick as *const (),
        weir_adaptive_timeout_ms as *const (),
        weir_adaptive_switch as *const (),
        weir_adaptive_engines as *const (),
        weir_adaptive_state_get as *const (),
        weir_adaptive_reason_name as *const (),
    ];
    assert!(fns.iter().all(|f| !f.is_null()));
}
