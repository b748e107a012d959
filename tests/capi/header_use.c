/* Compiled (never run) by tests/scripts/capi_header.sh as strict C99, C11 and
 * C++17, with gcc and clang: weir.h must be plain C a binding generator can
 * read, and every type and function in it must be usable as declared.
 * Assigning each function to a pointer of the exact type spelled out here
 * catches a signature that drifts from what bindings hand-wrote. */
#include <weir.h>

#include <errno.h>

#define WEIR_CHECK(name, cond) typedef char weir_check_##name[(cond) ? 1 : -1]

/* Every struct that may grow begins with its size. */
WEIR_CHECK(limits_size_first, offsetof(weir_http1_limits, size) == 0);
WEIR_CHECK(request_size_first, offsetof(weir_http1_request, size) == 0);
WEIR_CHECK(chunked_size_first, offsetof(weir_http1_chunked, size) == 0);
WEIR_CHECK(config_size_first, offsetof(weir_config, size) == 0);
WEIR_CHECK(metrics_size_first, offsetof(weir_metrics, size) == 0);
WEIR_CHECK(xrequest_size_first, offsetof(weir_request, size) == 0);
/* weir's codes sit in their own band, below every errno. */
WEIR_CHECK(band, WEIR_E_BASE > 4095 && WEIR_E_INCOMPLETE == -(WEIR_E_BASE + 1));
WEIR_CHECK(band_last, WEIR_E_LAST < WEIR_E_UNAVAILABLE && WEIR_E_LAST == -(WEIR_E_BASE + 63));
WEIR_CHECK(version, WEIR_VERSION_HEX == ((WEIR_VERSION_MAJOR << 16) | (WEIR_VERSION_MINOR << 8) | WEIR_VERSION_PATCH));
WEIR_CHECK(close_reasons, WEIR_CLOSE_RESOURCE < WEIR_CLOSE_REASONS);
WEIR_CHECK(metrics_closes, sizeof(((weir_metrics *)0)->closes) == WEIR_CLOSE_REASONS * sizeof(uint64_t));

static void on_request(void *user, weir_exchange *ex) {
    (void)user;
    (void)ex;
}
static void on_log(void *user, int level, const char *msg) {
    (void)user;
    (void)level;
    (void)msg;
}

int weir_header_use(void);
int weir_header_use(void) {
    uint32_t (*f_version)(void) = weir_version;
    const char *(*f_version_string)(void) = weir_version_string;
    const char *(*f_strerror)(int) = weir_strerror;
    const char *(*f_err_name)(int) = weir_err_name;
    void (*f_limits_init)(weir_http1_limits *) = weir_http1_limits_init;
    int (*f_parse)(const char *, size_t, const weir_http1_limits *, weir_http1_request *, weir_header_t *, size_t) =
        weir_http1_parse_request;
    int (*f_status)(int) = weir_http1_status;
    int (*f_chunked_init)(weir_http1_chunked *, const weir_http1_limits *) = weir_http1_chunked_init;
    int (*f_chunked_decode)(weir_http1_chunked *, const char *, size_t, size_t *, char *, size_t *) =
        weir_http1_chunked_decode;
    int (*f_trailers)(const char *, size_t, const weir_http1_limits *, weir_header_t *, size_t) =
        weir_http1_parse_trailers;
    void (*f_config_init)(weir_config *) = weir_config_init;
    int (*f_create)(const weir_config *, weir_engine **) = weir_engine_create;
    int (*f_listen)(weir_engine *) = weir_engine_listen;
    int (*f_addr)(weir_engine *, struct sockaddr_storage *, socklen_t *) = weir_engine_addr;
    int (*f_start)(weir_engine *) = weir_engine_start;
    int (*f_shutdown)(weir_engine *, int64_t) = weir_engine_shutdown;
    void (*f_destroy)(weir_engine *) = weir_engine_destroy;
    int (*f_worker)(weir_engine *, uint32_t, weir_worker **) = weir_engine_worker;
    int (*f_workers)(weir_engine *) = weir_engine_workers;
    int (*f_begin_pause)(weir_engine *) = weir_engine_begin_pause;
    int (*f_pause)(weir_engine *) = weir_engine_pause;
    int (*f_resume)(weir_engine *) = weir_engine_resume;
    int (*f_transplant)(weir_engine *, weir_engine *, uint32_t) = weir_engine_transplant;
    int (*f_switch)(weir_engine *, weir_engine *) = weir_engine_switch;
    int (*f_listen_systemd)(weir_engine *, const char *, weir_systemd_stats *) = weir_engine_listen_systemd;
    int (*f_store_systemd)(weir_engine *, int64_t, weir_systemd_stats *) = weir_engine_store_systemd;
    weir_systemd_stats sd_stats;
    int (*f_poll)(weir_worker *, weir_exchange **, uint32_t, int) = weir_worker_poll;
    const char *(*f_close_name)(uint32_t) = weir_close_reason_name;
    const char *(*f_feature_name)(uint64_t) = weir_uring_feature_name;
    const char *(*f_tier_name)(uint32_t) = weir_uring_tier_name;
    int (*f_metrics)(weir_engine *, weir_metrics *) = weir_engine_metrics;
    const weir_request *(*f_request)(weir_exchange *) = weir_exchange_request;
    int (*f_peer)(weir_exchange *, struct sockaddr_storage *, socklen_t *) = weir_exchange_peer;
    int (*f_respond)(weir_exchange *, int, const weir_header_t *, size_t, const void *, size_t, uint32_t) =
        weir_respond;
    int (*f_defer)(weir_exchange *) = weir_defer;
    int (*f_respond_many)(weir_answer_t *, size_t) = weir_respond_many;
    int (*f_stream_start)(weir_exchange *, int, const weir_header_t *, size_t, uint64_t, uint32_t) =
        weir_stream_start;
    int (*f_stream_write)(weir_exchange *, const void *, size_t) = weir_stream_write;
    int (*f_stream_end)(weir_exchange *, const weir_header_t *, size_t) = weir_stream_end;
    int64_t (*f_stream_room)(weir_exchange *) = weir_stream_room;
    int (*f_respond_file)(weir_exchange *, int, const weir_header_t *, size_t, int, uint64_t, uint64_t, uint32_t) =
        weir_respond_file;
    int (*f_upgrade)(weir_exchange *, const weir_header_t *, size_t) = weir_upgrade;
    int (*f_upgrade_take)(weir_exchange *, int *, void *, size_t, size_t *) = weir_upgrade_take;
    int (*f_upgrade_raw)(weir_exchange *) = weir_upgrade_raw;
    int (*f_interim)(weir_exchange *, int, const weir_header_t *, size_t) = weir_respond_interim; /* 0.4 */
    int (*f_exchange_gone)(weir_exchange *) = weir_exchange_gone;
    int64_t (*f_body_read)(weir_exchange *, void *, size_t) = weir_body_read;
    int (*f_stream_abort)(weir_exchange *) = weir_stream_abort;
    int (*f_listen_fds)(weir_engine *, const int *, size_t) = weir_engine_listen_fds;
    int (*f_offer)(weir_engine *, const char *, const weir_handover_options *, weir_handover **) =
        weir_handover_offer;
    int (*f_take_over)(weir_engine *, const char *, const weir_handover_options *, weir_handover **) =
        weir_handover_take_over;
    int (*f_ho_wait)(weir_handover *, int64_t) = weir_handover_wait;
    int (*f_ho_stats)(const weir_handover *, weir_handover_stats *) = weir_handover_stats_get;
    void (*f_ho_free)(weir_handover *) = weir_handover_free;
    int (*f_worker_wake)(weir_worker *) = weir_worker_wake;
    int (*f_worker_own)(weir_worker *, int) = weir_worker_own;
    weir_handover_options ho_opt;
    weir_handover_stats ho_stats;
    weir_answer_t answer;

    weir_handler_fn handler = on_request;
    weir_log_fn log = on_log;
    weir_str_t s = {"GET", 3};
    weir_header_t h = {{"Host", 4}, {"x", 1}};
    weir_http1_limits limits;
    weir_http1_request req;
    weir_http1_chunked chunked;
    weir_config cfg;
    weir_metrics metrics;
    weir_request xreq;
    weir_engine *engine = 0;
    weir_worker *worker = 0;
    weir_exchange *exchange = 0;
    int n = 0;

    limits.size = (uint32_t)sizeof limits;
    req.size = (uint32_t)sizeof req;
    req.headers = &h;
    chunked.size = (uint32_t)sizeof chunked;
    cfg.size = (uint32_t)sizeof cfg;
    cfg.backend = WEIR_BACKEND_EPOLL + WEIR_BACKEND_URING - WEIR_BACKEND_URING;
    cfg.mode = WEIR_MODE_INLINE + WEIR_MODE_DRIVEN - WEIR_MODE_DRIVEN;
    cfg.on_request = handler;
    cfg.log = log;
    metrics.size = (uint32_t)sizeof metrics;
    metrics.closes[WEIR_CLOSE_PEER] = 0;
    metrics.pause_lingers = metrics.pause_closes = metrics.pause_aborts = 0;
    metrics.pause_defer_clears = metrics.pause_defer_restores = metrics.pause_guards = 0;
    metrics.pause_setsockopt_errors = metrics.pause_sysctl_unreadable = metrics.pause_drain_accepted = 0;
    metrics.pause_reopens = metrics.pause_reopen_errors = 0;
    xreq.size = (uint32_t)sizeof xreq;
    xreq.method = s;
    n += (int)(WEIR_TARGET_ORIGIN + WEIR_TARGET_ABSOLUTE + WEIR_TARGET_AUTHORITY + WEIR_TARGET_ASTERISK);
    n += (int)(WEIR_BODY_NONE + WEIR_BODY_LENGTH + WEIR_BODY_CHUNKED);
    n += (int)(WEIR_REQ_KEEP_ALIVE | WEIR_REQ_EXPECT_CONTINUE | WEIR_REQ_UPGRADE | WEIR_RESPOND_CLOSE | WEIR_RESPOND_ABORT);
    n += WEIR_LOG_ERROR + WEIR_LOG_WARN + WEIR_LOG_INFO + WEIR_CLOSE_SHUTDOWN + WEIR_CLOSE_HANDLER;
    n += (engine == 0) + (worker == 0) + (exchange == 0) + (int)limits.size + (int)req.size + (int)chunked.size +
         (int)cfg.size + (int)metrics.size + (int)xreq.size + (int)xreq.method.len;
    n += (f_version != 0) + (f_version_string != 0) + (f_strerror != 0) + (f_err_name != 0) +
         (f_limits_init != 0) + (f_parse != 0) + (f_status != 0) + (f_chunked_init != 0) +
         (f_chunked_decode != 0) + (f_trailers != 0) + (f_config_init != 0) + (f_create != 0) + (f_listen != 0) +
         (f_addr != 0) + (f_start != 0) + (f_shutdown != 0) + (f_destroy != 0) + (f_worker != 0) +
         (f_workers != 0) + (f_poll != 0) + (f_close_name != 0) + (f_feature_name != 0) + (f_tier_name != 0) + (f_metrics != 0) + (f_request != 0) +
         (f_peer != 0) + (f_respond != 0) + (f_defer != 0) + (f_respond_many != 0) + (f_stream_start != 0) + (f_stream_write != 0) + (f_stream_end != 0) +
         (f_stream_room != 0) + (f_respond_file != 0) + (f_upgrade != 0) + (f_upgrade_take != 0) + (f_upgrade_raw != 0) + (f_interim != 0) + (f_exchange_gone != 0) +
         (WEIR_CLOSE_UPGRADED != 0) + (WEIR_LENGTH_UNKNOWN != 0) + (f_begin_pause != 0) + (f_body_read != 0) + (f_stream_abort != 0) + (WEIR_CLOSE_ABORTED != 0) +
         (WEIR_CLOSE_BODY_UNREAD != 0) + (WEIR_REQ_BODY_STREAM != 0) +
         (f_pause != 0) + (f_resume != 0) + (f_transplant != 0) + (f_switch != 0);
    ho_opt.size = (uint32_t)sizeof ho_opt;
    ho_opt.flags = WEIR_HANDOVER_LISTENERS_ONLY;
    ho_stats.size = (uint32_t)sizeof ho_stats;
    ho_stats.state = WEIR_HANDOVER_WAITING + WEIR_HANDOVER_MOVING + WEIR_HANDOVER_DONE + WEIR_HANDOVER_FAILED;
    n += (f_listen_fds != 0) + (f_offer != 0) + (f_take_over != 0) + (f_ho_wait != 0) + (f_ho_stats != 0) +
         (f_ho_free != 0) + (f_worker_wake != 0) + (f_worker_own != 0) + (int)ho_opt.flags + (int)ho_stats.state + WEIR_HANDOVER_PROTOCOL +
         (WEIR_CLOSE_HANDOVER != 0) + (WEIR_E_HANDOVER_VERSION != 0);
    sd_stats.size = (uint32_t)sizeof sd_stats;
    sd_stats.image_error = 0;
    n += (f_listen_systemd != 0) + (f_store_systemd != 0) + (int)sd_stats.size + sd_stats.image_error;
    /* 0.4: file answers with validators. */
    int (*f_serve_file)(weir_exchange *, int, const weir_file_options *) = weir_serve_file;
    void (*f_file_options_init)(weir_file_options *) = weir_file_options_init;
    const char *(*f_content_type)(const char *, size_t) = weir_content_type;
    weir_file_options fopts;
    fopts.size = (uint32_t)sizeof fopts;
    fopts.flags = WEIR_FILE_NO_RANGES;
    fopts.content_type = "text/plain";
    fopts.headers = &h;
    fopts.num_headers = 1;
    fopts.respond_flags = WEIR_RESPOND_CLOSE;
    n += (f_serve_file != 0) + (f_file_options_init != 0) + (f_content_type != 0) + (int)fopts.size +
         (int)fopts.flags + (int)fopts.num_headers + (int)fopts.respond_flags + (fopts.content_type != 0) +
         (fopts.headers != 0);
    /* 0.4: the adaptive pair (docs/adaptive.md). */
    void (*f_ad_init)(weir_adaptive_config *) = weir_adaptive_config_init;
    const char *(*f_ad_error)(const weir_adaptive_config *) = weir_adaptive_config_error;
    int (*f_ad_create)(weir_engine *, weir_engine *, const weir_adaptive_config *, weir_adaptive **) =
        weir_adaptive_create;
    void (*f_ad_destroy)(weir_adaptive *) = weir_adaptive_destroy;
    int (*f_ad_tick)(weir_adaptive *) = weir_adaptive_tick;
    int (*f_ad_timeout)(weir_adaptive *) = weir_adaptive_timeout_ms;
    int (*f_ad_switch)(weir_adaptive *) = weir_adaptive_switch;
    int (*f_ad_engines)(weir_adaptive *, weir_engine **, weir_engine **) = weir_adaptive_engines;
    int (*f_ad_state)(weir_adaptive *, weir_adaptive_state *) = weir_adaptive_state_get;
    const char *(*f_ad_reason)(uint32_t) = weir_adaptive_reason_name;
    weir_adaptive_config ad_cfg;
    weir_adaptive_state ad_st;
    ad_cfg.size = (uint32_t)sizeof ad_cfg;
    ad_cfg.interval_ms = 1000;
    ad_cfg.up_conns = ad_cfg.up_rps = ad_cfg.down_conns = ad_cfg.down_rps = ad_cfg.max_error_permille = 0;
    ad_cfg.hold = ad_cfg.cooldown_ms = ad_cfg.flap_count = ad_cfg.flap_window_ms = ad_cfg.lockout_ms = 0;
    ad_st.size = (uint32_t)sizeof ad_st;
    ad_st.controller = ad_st.active_backend = ad_st.standby_backend = ad_st.role = ad_st.last_reason = 0;
    ad_st.switches = ad_st.switch_failures = ad_st.controller_switches = ad_st.forced_switches = 0;
    ad_st.decisions = ad_st.streak = ad_st.held_by_cooldown = ad_st.held_by_errors = ad_st.held_by_lockout = 0;
    ad_st.lockouts = ad_st.last_conns_per_worker = ad_st.last_rps = ad_st.last_error_permille = 0;
    n += (f_ad_init != 0) + (f_ad_error != 0) + (f_ad_create != 0) + (f_ad_destroy != 0) + (f_ad_tick != 0) +
         (f_ad_timeout != 0) + (f_ad_switch != 0) + (f_ad_engines != 0) + (f_ad_state != 0) + (f_ad_reason != 0) +
         (int)ad_cfg.interval_ms + (int)ad_st.size + WEIR_ADAPTIVE_NONE + WEIR_ADAPTIVE_STEADY + WEIR_ADAPTIVE_HOLD +
         WEIR_ADAPTIVE_LOCKOUT + WEIR_ADAPTIVE_COOLDOWN + WEIR_ADAPTIVE_ERRORS + WEIR_ADAPTIVE_UP +
         WEIR_ADAPTIVE_DOWN + WEIR_ADAPTIVE_REASON_COUNT;
    /* 0.4: the backends' names (one table; issue 31). */
    const char *(*f_backend_name)(uint32_t) = weir_backend_name;
    int (*f_backend_by_name)(const char *) = weir_backend_by_name;
    n += (f_backend_name != 0) + (f_backend_by_name != 0);
    /* 0.4: no body limit (weir_http1_limits.max_body). */
    n += (WEIR_BODY_UNLIMITED == UINT64_MAX);
    /* 0.4: the PROXY protocol (config fields, close reason, counters). */
    cfg.proxy_protocol = WEIR_PROXY_ON;
    cfg.proxy_timeout_ms = 5000;
    cfg.proxy_trusted = "10.0.0.0/8, ::1";
    cfg.proxy_max_bytes = 4096;
    metrics.proxy_v1 = metrics.proxy_v2 = metrics.proxy_local = metrics.proxy_missing = 0;
    metrics.proxy_malformed = metrics.proxy_untrusted = metrics.proxy_oversized = metrics.proxy_timeouts = 0;
    n += (int)cfg.proxy_protocol + (WEIR_PROXY_OFF == 0) + (WEIR_CLOSE_PROXY != 0) + (int)metrics.proxy_v1 +
         (int)metrics.proxy_v2 + (int)metrics.proxy_local + (int)metrics.proxy_missing + (int)metrics.proxy_malformed +
         (int)metrics.proxy_untrusted + (int)metrics.proxy_oversized + (int)metrics.proxy_timeouts;
    /* 0.4: deadlines that bind (config fields, the off sentinel, close reasons). */
    cfg.request_timeout_ms = WEIR_DEADLINE_OFF;
    cfg.min_body_rate = 500;
    cfg.min_send_rate = 500;
    cfg.rate_window_ms = 10000;
    n += (int)(cfg.request_timeout_ms == 0xFFFFFFFFu) + (int)cfg.min_body_rate + (int)cfg.min_send_rate +
         (int)cfg.rate_window_ms + WEIR_CLOSE_REQUEST_TIMEOUT + WEIR_CLOSE_SLOW_BODY + WEIR_CLOSE_SLOW_READER;
    /* 0.4: the overload manager (config watermarks, close reason, counters). */
    cfg.overload_inflight = cfg.overload_conns = cfg.overload_fds = cfg.overload_mem_mb = WEIR_OVERLOAD_OFF;
    metrics.overload_level = metrics.overload_engaged = metrics.overload_keepalive_off = 0;
    metrics.overload_accept_shrunk = metrics.overload_accept_pauses = metrics.overload_refused = 0;
    n += (int)cfg.overload_inflight + (int)cfg.overload_conns + (int)cfg.overload_fds + (int)cfg.overload_mem_mb +
         (WEIR_CLOSE_OVERLOAD == 24) + (int)metrics.overload_level + (int)metrics.overload_engaged +
         (int)metrics.overload_keepalive_off + (int)metrics.overload_accept_shrunk +
         (int)metrics.overload_accept_pauses + (int)metrics.overload_refused;
    metrics.overload_idle_closed = 0; /* appended at the end (0.4) */
    n += (int)metrics.overload_idle_closed;
    metrics.h2_floods = 0; /* HTTP/2's, appended at the end (0.4) */
    n += (int)metrics.h2_floods;
    metrics.h2_handler_timeouts = 0; /* appended after h2_floods (0.4) */
    n += (int)metrics.h2_handler_timeouts;
    answer.ex = exchange;
    answer.status = 200;
    answer.flags = WEIR_RESPOND_CLOSE;
    answer.result = 0;
    n += answer.status + (int)answer.flags + answer.result;
    return n + EINVAL;
}
