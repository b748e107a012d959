/* Prints, as Rust source, what a C compiler makes of weir.h: each struct's
 * size and alignment, each field's offset, each constant's value.
 * build.rs runs it; tests/layout.rs compares the hand-written bindings. */
#include <stdio.h>
#include <weir.h>

#define S(t) printf("    (\"%s\", %zu, %zu),\n", #t, sizeof(t), _Alignof(t));
#define F(t, f) printf("    (\"%s.%s\", %zu),\n", #t, #f, offsetof(t, f));
#define K(c) printf("    (\"%s\", %lld),\n", #c, (long long)(c));

int main(void) {
    printf("pub const C_SIZES: &[(&str, usize, usize)] = &[\n");
    S(weir_str_t) S(weir_header_t) S(weir_http1_limits) S(weir_http1_request) S(weir_http1_chunked)
    S(weir_config) S(weir_metrics) S(weir_request) S(weir_answer_t) S(weir_handover_options) S(weir_handover_stats) S(weir_systemd_stats) S(struct sockaddr_storage) S(socklen_t)
    printf("];\npub const C_FIELDS: &[(&str, usize)] = &[\n");
    F(weir_str_t, ptr) F(weir_str_t, len)
    F(weir_header_t, name) F(weir_header_t, value)
    F(weir_http1_limits, size) F(weir_http1_limits, max_request_line) F(weir_http1_limits, max_header_bytes)
    F(weir_http1_limits, max_headers) F(weir_http1_limits, max_chunk_ext) F(weir_http1_limits, max_trailer_bytes)
    F(weir_http1_limits, max_trailers) F(weir_http1_limits, reserved_) F(weir_http1_limits, max_body)
    F(weir_http1_request, size) F(weir_http1_request, version_minor) F(weir_http1_request, target_form)
    F(weir_http1_request, body_kind) F(weir_http1_request, flags) F(weir_http1_request, num_headers)
    F(weir_http1_request, method) F(weir_http1_request, target) F(weir_http1_request, path)
    F(weir_http1_request, query) F(weir_http1_request, host) F(weir_http1_request, content_length)
    F(weir_http1_request, headers)
    F(weir_http1_chunked, size) F(weir_http1_chunked, state_) F(weir_http1_chunked, chunk_left_)
    F(weir_http1_chunked, body_len) F(weir_http1_chunked, raw_len) F(weir_http1_chunked, trailer_off)
    F(weir_http1_chunked, trailer_len) F(weir_http1_chunked, num_trailers) F(weir_http1_chunked, count_)
    F(weir_http1_chunked, max_body_) F(weir_http1_chunked, max_chunk_ext_)
    F(weir_http1_chunked, max_trailer_bytes_) F(weir_http1_chunked, max_trailers_) F(weir_http1_chunked, reserved_)
    F(weir_config, size) F(weir_config, port) F(weir_config, host) F(weir_config, backend) F(weir_config, workers)
    F(weir_config, mode) F(weir_config, accept_batch) F(weir_config, on_request) F(weir_config, user)
    F(weir_config, backlog) F(weir_config, defer_accept) F(weir_config, linger_ms) F(weir_config, tcp_nodelay)
    F(weir_config, read_buffer_size) F(weir_config, max_output_bytes) F(weir_config, max_connections)
    F(weir_config, max_pipeline) F(weir_config, header_timeout_ms) F(weir_config, idle_timeout_ms)
    F(weir_config, write_timeout_ms) F(weir_config, body_timeout_ms) F(weir_config, limits) F(weir_config, log)
    F(weir_config, log_user) F(weir_config, handler_timeout_ms) F(weir_config, stream_window_bytes) F(weir_config, stream_body_bytes) F(weir_config, report_gone)
    F(weir_metrics, size) F(weir_metrics, workers) F(weir_metrics, accepted) F(weir_metrics, accept_batches)
    F(weir_metrics, accept_owed) F(weir_metrics, accept_resource_errors) F(weir_metrics, accept_other_errors)
    F(weir_metrics, handoffs) F(weir_metrics, handoffs_owed) F(weir_metrics, connections_open)
    F(weir_metrics, requests) F(weir_metrics, responses) F(weir_metrics, parse_errors)
    F(weir_metrics, continues_sent) F(weir_metrics, bytes_in) F(weir_metrics, bytes_out)
    F(weir_metrics, loop_passes) F(weir_metrics, closes) F(weir_metrics, pause_lingers) F(weir_metrics, pause_closes)
    F(weir_metrics, pause_aborts) F(weir_metrics, pause_defer_clears) F(weir_metrics, pause_defer_restores)
    F(weir_metrics, pause_guards) F(weir_metrics, pause_setsockopt_errors) F(weir_metrics, pause_sysctl_unreadable)
    F(weir_metrics, pause_drain_accepted) F(weir_metrics, pause_reopens) F(weir_metrics, pause_reopen_errors)
    F(weir_metrics, backend) F(weir_metrics, uring_tier) F(weir_metrics, uring_probed) F(weir_metrics, uring_used)
    F(weir_metrics, uring_enters) F(weir_metrics, uring_cq_overflows) F(weir_metrics, uring_nobufs)
    F(weir_metrics, uring_rearms) F(weir_metrics, transplant_detached) F(weir_metrics, transplant_adopted)
    F(weir_metrics, transplant_refused) F(weir_metrics, transplant_in_flight) F(weir_metrics, transplant_received)
    F(weir_metrics, close_lingers) F(weir_metrics, close_linger_cuts) F(weir_metrics, uring_sq_full)
    F(weir_request, size) F(weir_request, version_minor) F(weir_request, flags) F(weir_request, num_headers)
    F(weir_request, num_trailers) F(weir_request, reserved_) F(weir_request, method) F(weir_request, target)
    F(weir_request, path) F(weir_request, query) F(weir_request, host) F(weir_request, headers)
    F(weir_request, trailers) F(weir_request, body) F(weir_request, connection_id) F(weir_request, body_length)
    F(weir_answer_t, ex) F(weir_answer_t, status) F(weir_answer_t, flags) F(weir_answer_t, headers)
    F(weir_answer_t, num_headers) F(weir_answer_t, body) F(weir_answer_t, body_len) F(weir_answer_t, result)
    F(weir_answer_t, reserved_)
    F(weir_handover_options, size) F(weir_handover_options, flags) F(weir_handover_options, wait_ms)
    F(weir_handover_options, deadline_ms)
    F(weir_handover_stats, size) F(weir_handover_stats, state) F(weir_handover_stats, error)
    F(weir_handover_stats, listeners) F(weir_handover_stats, sent) F(weir_handover_stats, returned)
    F(weir_handover_stats, closed) F(weir_handover_stats, received) F(weir_handover_stats, refused)
    F(weir_handover_stats, lost) F(weir_handover_stats, moving_ns)
    F(weir_systemd_stats, size) F(weir_systemd_stats, listeners) F(weir_systemd_stats, connections)
    F(weir_systemd_stats, closed) F(weir_systemd_stats, fds) F(weir_systemd_stats, image_error)
    printf("];\npub const C_CONSTS: &[(&str, i64)] = &[\n");
    K(WEIR_VERSION_MAJOR) K(WEIR_VERSION_MINOR) K(WEIR_VERSION_PATCH) K(WEIR_VERSION_HEX)
    K(WEIR_E_BASE) K(WEIR_E_INCOMPLETE) K(WEIR_E_BAD_METHOD) K(WEIR_E_BAD_TARGET) K(WEIR_E_BAD_VERSION)
    K(WEIR_E_VERSION_UNSUPPORTED) K(WEIR_E_BAD_REQUEST_LINE) K(WEIR_E_REQUEST_LINE_TOO_LONG)
    K(WEIR_E_BAD_LINE_ENDING) K(WEIR_E_BAD_HEADER_NAME) K(WEIR_E_WS_BEFORE_COLON) K(WEIR_E_BAD_HEADER_VALUE)
    K(WEIR_E_OBS_FOLD) K(WEIR_E_HEADERS_TOO_LARGE) K(WEIR_E_TOO_MANY_HEADERS) K(WEIR_E_MISSING_HOST)
    K(WEIR_E_DUPLICATE_HOST) K(WEIR_E_BAD_HOST) K(WEIR_E_BAD_CONTENT_LENGTH) K(WEIR_E_CL_AND_TE)
    K(WEIR_E_BAD_TRANSFER_ENCODING) K(WEIR_E_UNKNOWN_TRANSFER_CODING) K(WEIR_E_BODY_TOO_LARGE)
    K(WEIR_E_EXPECTATION_FAILED) K(WEIR_E_BAD_CHUNK) K(WEIR_E_CHUNK_EXT_TOO_LONG) K(WEIR_E_TRAILERS_TOO_LARGE)
    K(WEIR_E_STATE) K(WEIR_E_GONE) K(WEIR_E_SHUTDOWN) K(WEIR_E_UNAVAILABLE) K(WEIR_E_STALE) K(WEIR_E_HANDOVER_VERSION) K(WEIR_E_LAST)
    K(WEIR_TARGET_ORIGIN) K(WEIR_TARGET_ABSOLUTE) K(WEIR_TARGET_AUTHORITY) K(WEIR_TARGET_ASTERISK)
    K(WEIR_BODY_NONE) K(WEIR_BODY_LENGTH) K(WEIR_BODY_CHUNKED)
    K(WEIR_REQ_KEEP_ALIVE) K(WEIR_REQ_EXPECT_CONTINUE) K(WEIR_REQ_UPGRADE) K(WEIR_REQ_BODY_STREAM)
    K(WEIR_BACKEND_EPOLL) K(WEIR_BACKEND_URING) K(WEIR_MODE_INLINE) K(WEIR_MODE_DRIVEN)
    K(WEIR_LOG_ERROR) K(WEIR_LOG_WARN) K(WEIR_LOG_INFO)
    K(WEIR_CLOSE_PEER) K(WEIR_CLOSE_NOT_KEEP_ALIVE) K(WEIR_CLOSE_BAD_REQUEST) K(WEIR_CLOSE_HEADER_TIMEOUT)
    K(WEIR_CLOSE_IDLE_TIMEOUT) K(WEIR_CLOSE_WRITE_TIMEOUT) K(WEIR_CLOSE_OUTPUT_LIMIT) K(WEIR_CLOSE_IO_ERROR)
    K(WEIR_CLOSE_MAX_CONNECTIONS) K(WEIR_CLOSE_SHUTDOWN) K(WEIR_CLOSE_HANDLER) K(WEIR_CLOSE_RESOURCE)
    K(WEIR_CLOSE_SILENT) K(WEIR_CLOSE_TRANSPLANT_REFUSED) K(WEIR_CLOSE_BODY_TIMEOUT) K(WEIR_CLOSE_HANDLER_TIMEOUT) K(WEIR_CLOSE_UPGRADED) K(WEIR_CLOSE_BODY_UNREAD) K(WEIR_CLOSE_ABORTED) K(WEIR_CLOSE_HANDOVER) K(WEIR_CLOSE_REASONS) K(WEIR_RESPOND_CLOSE) K(WEIR_LENGTH_UNKNOWN) K(WEIR_TRANSPLANT_END) K(WEIR_HANDOVER_PROTOCOL) K(WEIR_HANDOVER_LISTENERS_ONLY)
    K(WEIR_HANDOVER_WAITING) K(WEIR_HANDOVER_MOVING) K(WEIR_HANDOVER_DONE) K(WEIR_HANDOVER_FAILED) K(AF_INET) K(AF_INET6)
    printf("];\n");
    return 0;
}
