/* The ABI contract at the boundary, from plain C against libweir.so: every
 * public function meets NULL and invalid arguments with a negative errno (or,
 * for destroy/init, a documented no-op), never a crash; the error naming
 * functions never return NULL; sized structs with a bad size are refused;
 * the library's version matches the header's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <weir.h>

#define STR2(x) #x
#define STR(x) STR2(x)

static void on_request(void *user, weir_exchange *ex) {
    (void)user;
    weir_respond(ex, 200, NULL, 0, "ok", 2, 0);
}

static void test_version_matches_header(void **state) {
    (void)state;
    char want[32];
    assert_int_equal(weir_version(), WEIR_VERSION_HEX);
    snprintf(want, sizeof want, "%d.%d.%d", WEIR_VERSION_MAJOR, WEIR_VERSION_MINOR, WEIR_VERSION_PATCH);
    assert_non_null(weir_version_string());
    assert_string_equal(weir_version_string(), want);
    assert_string_equal(weir_version_string(), STR(WEIR_VERSION_MAJOR) "." STR(WEIR_VERSION_MINOR) "." STR(
                                                   WEIR_VERSION_PATCH));
}

struct code {
    int rc;
    const char *name;
    int status;
};
#define C(e, s) {e, #e, s}
static const struct code kCodes[] = {
    C(WEIR_E_INCOMPLETE, 0),
    C(WEIR_E_BAD_METHOD, 400),
    C(WEIR_E_BAD_TARGET, 400),
    C(WEIR_E_BAD_VERSION, 400),
    C(WEIR_E_VERSION_UNSUPPORTED, 505),
    C(WEIR_E_BAD_REQUEST_LINE, 400),
    C(WEIR_E_REQUEST_LINE_TOO_LONG, 414),
    C(WEIR_E_BAD_LINE_ENDING, 400),
    C(WEIR_E_BAD_HEADER_NAME, 400),
    C(WEIR_E_WS_BEFORE_COLON, 400),
    C(WEIR_E_BAD_HEADER_VALUE, 400),
    C(WEIR_E_OBS_FOLD, 400),
    C(WEIR_E_HEADERS_TOO_LARGE, 431),
    C(WEIR_E_TOO_MANY_HEADERS, 431),
    C(WEIR_E_MISSING_HOST, 400),
    C(WEIR_E_DUPLICATE_HOST, 400),
    C(WEIR_E_BAD_HOST, 400),
    C(WEIR_E_BAD_CONTENT_LENGTH, 400),
    C(WEIR_E_CL_AND_TE, 400),
    C(WEIR_E_BAD_TRANSFER_ENCODING, 400),
    C(WEIR_E_UNKNOWN_TRANSFER_CODING, 501),
    C(WEIR_E_BODY_TOO_LARGE, 413),
    C(WEIR_E_EXPECTATION_FAILED, 417),
    C(WEIR_E_BAD_CHUNK, 400),
    C(WEIR_E_CHUNK_EXT_TOO_LONG, 400),
    C(WEIR_E_TRAILERS_TOO_LARGE, 431),
    C(WEIR_E_STATE, 0),
    C(WEIR_E_GONE, 0),
    C(WEIR_E_SHUTDOWN, 0),
    C(WEIR_E_UNAVAILABLE, 0),
};
#undef C
#define NCODES (sizeof kCodes / sizeof kCodes[0])

static void test_errors_every_weir_code_is_named(void **state) {
    (void)state;
    for (size_t i = 0; i < NCODES; i++) {
        const char *name = weir_err_name(kCodes[i].rc);
        const char *text = weir_strerror(kCodes[i].rc);
        assert_non_null(name);
        assert_non_null(text);
        assert_string_equal(name, kCodes[i].name);
        assert_string_not_equal(text, "unknown error");
        assert_true(kCodes[i].rc < -WEIR_E_BASE && kCodes[i].rc >= WEIR_E_LAST);
        for (size_t j = 0; j < i; j++)
            assert_int_not_equal(kCodes[i].rc, kCodes[j].rc);
    }
}

static void test_errors_never_null(void **state) {
    (void)state;
    /* errno band, weir band, both edges, positive values, and the extremes. */
    for (int rc = -(WEIR_E_BASE + 200); rc <= 5000; rc++) {
        const char *name = weir_err_name(rc);
        const char *text = weir_strerror(rc);
        assert_non_null(name);
        assert_non_null(text);
        assert_true(name[0] != '\0');
        assert_true(text[0] != '\0');
    }
    const int extremes[] = {INT32_MIN, INT32_MIN + 1, -4096, -4095, INT32_MAX, WEIR_E_LAST - 1, WEIR_E_LAST};
    for (size_t i = 0; i < sizeof extremes / sizeof extremes[0]; i++) {
        assert_non_null(weir_err_name(extremes[i]));
        assert_non_null(weir_strerror(extremes[i]));
    }
    assert_string_equal(weir_err_name(INT32_MIN), "UNKNOWN");
    assert_string_equal(weir_strerror(INT32_MIN), "unknown error");
    assert_string_equal(weir_err_name(-(WEIR_E_BASE + 62)), "UNKNOWN");
}

static void test_errors_errno_names(void **state) {
    (void)state;
    assert_string_equal(weir_err_name(-EINVAL), "EINVAL");
    assert_string_equal(weir_err_name(-ENOMEM), "ENOMEM");
    assert_string_equal(weir_err_name(-EADDRINUSE), "EADDRINUSE");
    assert_string_equal(weir_err_name(-ETIMEDOUT), "ETIMEDOUT");
    assert_string_equal(weir_strerror(-EINVAL), strerror(EINVAL));
    assert_string_not_equal(weir_strerror(0), "unknown error");
}

static void test_http1_status_table(void **state) {
    (void)state;
    for (size_t i = 0; i < NCODES; i++)
        assert_int_equal(weir_http1_status(kCodes[i].rc), kCodes[i].status);
    const int none[] = {0, 1, 200, -EINVAL, -ENOMEM, WEIR_E_LAST, INT32_MIN, INT32_MAX, -WEIR_E_BASE};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        assert_int_equal(weir_http1_status(none[i]), 0);
}

static void test_close_reason_name_never_null(void **state) {
    (void)state;
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_PEER), "peer");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_BAD_REQUEST), "bad_request");
    for (uint32_t r = 0; r <= WEIR_CLOSE_BODY_TIMEOUT; r++) {
        assert_non_null(weir_close_reason_name(r));
        assert_string_not_equal(weir_close_reason_name(r), "unknown");
    }
    const uint32_t past[] = {WEIR_CLOSE_REASONS, WEIR_CLOSE_REASONS + 1, 1000, UINT32_MAX};
    for (size_t i = 0; i < sizeof past / sizeof past[0]; i++)
        assert_string_equal(weir_close_reason_name(past[i]), "unknown");
}

static void test_init_functions_fill_size_and_take_null(void **state) {
    (void)state;
    weir_http1_limits limits;
    weir_config cfg;
    memset(&limits, 0xa5, sizeof limits);
    memset(&cfg, 0xa5, sizeof cfg);
    weir_http1_limits_init(&limits);
    weir_config_init(&cfg);
    assert_int_equal(limits.size, sizeof limits);
    assert_int_equal(limits.max_request_line, 8192);
    assert_int_equal(limits.max_header_bytes, 16384);
    assert_int_equal(limits.max_headers, 100);
    assert_int_equal(limits.max_body, 1048576);
    assert_int_equal(limits.reserved_, 0);
    assert_int_equal(cfg.size, sizeof cfg);
    assert_int_equal(cfg.backend, WEIR_BACKEND_EPOLL);
    assert_int_equal(cfg.mode, WEIR_MODE_INLINE);
    assert_int_equal(cfg.accept_batch, 16);
    assert_int_equal(cfg.defer_accept, 1);
    assert_int_equal(cfg.linger_ms, 1500);
    assert_null(cfg.limits); /* NULL: the parser's defaults */
    assert_int_equal(cfg.backlog, 1024);
    assert_int_equal(cfg.max_connections, 10000);
    assert_int_equal(cfg.max_pipeline, 64);
    assert_int_equal(cfg.read_buffer_size, 16384);
    assert_int_equal(cfg.max_output_bytes, 4194304);
    assert_int_equal(cfg.tcp_nodelay, 1);
    assert_int_equal(cfg.header_timeout_ms, 10000);
    assert_int_equal(cfg.idle_timeout_ms, 60000);
    assert_int_equal(cfg.write_timeout_ms, 30000);
    assert_int_equal(cfg.body_timeout_ms, 10000);
    assert_non_null(cfg.host);
    assert_string_equal(cfg.host, "127.0.0.1");
    assert_null(cfg.on_request);
    assert_null(cfg.log);
    weir_http1_limits_init(NULL);
    weir_config_init(NULL);
}

static void test_parser_null_and_bad_size(void **state) {
    (void)state;
    static const char get[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    weir_http1_request req;
    weir_header_t hs[8];
    weir_http1_limits limits;
    memset(&req, 0, sizeof req);
    req.size = sizeof req;
    weir_http1_limits_init(&limits);

    assert_int_equal(weir_http1_parse_request(get, sizeof get - 1, NULL, NULL, hs, 8), -EINVAL);
    assert_int_equal(weir_http1_parse_request(get, sizeof get - 1, NULL, &req, NULL, 8), -EINVAL);
    assert_int_equal(weir_http1_parse_request(NULL, 5, NULL, &req, hs, 8), -EINVAL);
    req.size = 0;
    assert_int_equal(weir_http1_parse_request(get, sizeof get - 1, NULL, &req, hs, 8), -EINVAL);
    req.size = 3;
    assert_int_equal(weir_http1_parse_request(get, sizeof get - 1, NULL, &req, hs, 8), -EINVAL);
    req.size = sizeof req;
    limits.size = 0;
    assert_int_equal(weir_http1_parse_request(get, sizeof get - 1, &limits, &req, hs, 8), -EINVAL);
    /* The same call with every argument right parses (so the refusals above
     * are about the argument, not the input). */
    weir_http1_limits_init(&limits);
    assert_int_equal(weir_http1_parse_request(get, sizeof get - 1, &limits, &req, hs, 8), (int)(sizeof get - 1));
    assert_int_equal(weir_http1_parse_request(get, sizeof get - 1, NULL, &req, hs, 8), (int)(sizeof get - 1));
    /* NULL buffer with no bytes is only "incomplete". */
    assert_int_equal(weir_http1_parse_request(NULL, 0, NULL, &req, hs, 8), WEIR_E_INCOMPLETE);
}

static void test_chunked_null_and_bad_size(void **state) {
    (void)state;
    static const char body[] = "3\r\nabc\r\n0\r\n\r\n";
    weir_http1_chunked d;
    weir_http1_limits limits;
    char out[32];
    size_t used = 0, out_len = 0;

    assert_int_equal(weir_http1_chunked_init(NULL, NULL), -EINVAL);
    weir_http1_limits_init(&limits);
    limits.size = 0;
    d.size = sizeof d;
    assert_int_equal(weir_http1_chunked_init(&d, &limits), -EINVAL);

    assert_int_equal(weir_http1_chunked_init(&d, NULL), 0);
    assert_int_equal(weir_http1_chunked_decode(NULL, body, sizeof body - 1, &used, out, &out_len), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, body, sizeof body - 1, NULL, out, &out_len), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, body, sizeof body - 1, &used, out, NULL), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, NULL, 4, &used, out, &out_len), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, body, sizeof body - 1, &used, NULL, &out_len), -EINVAL);
    assert_int_equal(weir_http1_chunked_decode(&d, body, sizeof body - 1, &used, out, &out_len), 0);
    assert_int_equal(used, sizeof body - 1);
    assert_int_equal(out_len, 3);
    assert_memory_equal(out, "abc", 3);

    weir_header_t hs[4];
    assert_int_equal(weir_http1_parse_trailers("\r\n", 2, NULL, NULL, 4), -EINVAL);
    assert_int_equal(weir_http1_parse_trailers(NULL, 2, NULL, hs, 4), -EINVAL);
    assert_int_equal(weir_http1_parse_trailers("\r\n", 2, &limits, hs, 4), -EINVAL); /* limits.size == 0 */
    assert_int_equal(weir_http1_parse_trailers("\r\n", 2, NULL, hs, 4), 0);
    assert_int_equal(weir_http1_parse_trailers("X: y\r\n\r\n", 8, NULL, hs, 4), 1);
}

static void test_engine_null_handles(void **state) {
    (void)state;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    weir_worker *w = NULL;
    weir_exchange *exs[4];
    weir_metrics m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;

    weir_engine_destroy(NULL);
    assert_int_equal(weir_engine_listen(NULL), -EINVAL);
    assert_int_equal(weir_engine_start(NULL), -EINVAL);
    assert_int_equal(weir_engine_addr(NULL, &ss, &len), -EINVAL);
    assert_int_equal(weir_engine_shutdown(NULL, 0), -EINVAL);
    assert_int_equal(weir_engine_worker(NULL, 0, &w), -EINVAL);
    assert_int_equal(weir_engine_workers(NULL), -EINVAL);
    assert_int_equal(weir_engine_metrics(NULL, &m), -EINVAL);
    assert_int_equal(weir_engine_begin_pause(NULL), -EINVAL);
    assert_int_equal(weir_engine_pause(NULL), -EINVAL);
    assert_int_equal(weir_engine_resume(NULL), -EINVAL);
    assert_int_equal(weir_worker_poll(NULL, exs, 4, 0), -EINVAL);
    assert_null(weir_exchange_request(NULL));
    assert_int_equal(weir_exchange_peer(NULL, &ss, &len), -EINVAL);
    assert_int_equal(weir_respond(NULL, 200, NULL, 0, NULL, 0, 0), -EINVAL);
    assert_int_equal(weir_defer(NULL), -EINVAL);
    assert_int_equal(weir_stream_start(NULL, 200, NULL, 0, WEIR_LENGTH_UNKNOWN, 0), -EINVAL);
    assert_int_equal(weir_stream_write(NULL, "x", 1), -EINVAL);
    assert_int_equal(weir_stream_end(NULL, NULL, 0), -EINVAL);
    assert_int_equal(weir_stream_room(NULL), -EINVAL);
    assert_int_equal(weir_stream_abort(NULL), -EINVAL);
    assert_int_equal(weir_respond_file(NULL, 200, NULL, 0, 0, 0, 0, 0), -EINVAL);
    assert_int_equal(weir_upgrade(NULL, NULL, 0), -EINVAL);
    assert_int_equal(weir_respond_interim(NULL, 103, NULL, 0), -EINVAL); /* 0.4 */
    int ufd;
    size_t ulen;
    assert_int_equal(weir_upgrade_take(NULL, &ufd, NULL, 0, &ulen), -EINVAL);
    char bb[4];
    assert_int_equal(weir_body_read(NULL, bb, sizeof bb), -EINVAL);
    /* 0.4 */
    assert_int_equal(weir_serve_file(NULL, 0, NULL), -EINVAL);
    weir_file_options_init(NULL);
    assert_string_equal(weir_content_type(NULL, 0), "application/octet-stream");

    weir_answer_t answers[2];
    memset(answers, 0, sizeof answers);
    answers[0].status = 200;
    answers[0].result = 12345;
    answers[1].status = 200;
    answers[1].result = 12345;
    assert_int_equal(weir_respond_many(NULL, 1), -EINVAL);
    assert_int_equal(weir_respond_many(NULL, 0), 0);
    assert_int_equal(weir_respond_many(answers, 2), 0); /* none succeeded: each ex is NULL */
    assert_int_equal(answers[0].result, -EINVAL);
    assert_int_equal(answers[1].result, -EINVAL);
}

static void test_engine_create_refuses_bad_config(void **state) {
    (void)state;
    weir_config cfg;
    weir_engine *e = NULL;

    weir_config_init(&cfg);
    cfg.on_request = on_request;
    assert_int_equal(weir_engine_create(NULL, &e), -EINVAL);
    assert_int_equal(weir_engine_create(&cfg, NULL), -EINVAL);

#define REFUSED(field, value)                                                                                      \
    do {                                                                                                           \
        weir_config_init(&cfg);                                                                                    \
        cfg.on_request = on_request;                                                                               \
        cfg.field = value;                                                                                         \
        e = NULL;                                                                                                  \
        assert_int_equal(weir_engine_create(&cfg, &e), -EINVAL);                                                   \
        assert_null(e);                                                                                            \
    } while (0)
    REFUSED(size, 0);
    REFUSED(size, 3);
    REFUSED(on_request, NULL);
    REFUSED(host, "not-an-address");
    REFUSED(host, "localhost");
    REFUSED(host, "256.0.0.1");
    REFUSED(backend, 99);
    REFUSED(mode, 99);
    REFUSED(port, 65536);
    {
        /* A limits struct of a bad size is refused, never replaced by the
         * defaults (tests/capi/test_sizes.c has the whole size rule). */
        static weir_http1_limits bad;
        weir_http1_limits_init(&bad);
        bad.size = 3;
        REFUSED(limits, &bad);
        bad.size = 0;
        REFUSED(limits, &bad);
    }
#undef REFUSED

    /* The good config is accepted, so each refusal above was the one field. */
    weir_config_init(&cfg);
    cfg.on_request = on_request;
    cfg.workers = 1;
    assert_int_equal(weir_engine_create(&cfg, &e), 0);
    assert_non_null(e);
    weir_engine_destroy(e);
    /* Driven mode needs no handler. */
    weir_config_init(&cfg);
    cfg.mode = WEIR_MODE_DRIVEN;
    cfg.workers = 1;
    e = NULL;
    assert_int_equal(weir_engine_create(&cfg, &e), 0);
    weir_engine_destroy(e);
}

static weir_engine *make_engine(uint32_t mode) {
    weir_config cfg;
    weir_engine *e = NULL;
    weir_config_init(&cfg);
    cfg.mode = mode;
    cfg.workers = 2;
    if (mode == WEIR_MODE_INLINE)
        cfg.on_request = on_request;
    assert_int_equal(weir_engine_create(&cfg, &e), 0);
    return e;
}

static void test_engine_bad_arguments_on_live_handle(void **state) {
    (void)state;
    weir_engine *e = make_engine(WEIR_MODE_DRIVEN);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    weir_worker *w = NULL;
    weir_metrics m;

    assert_int_equal(weir_engine_workers(e), 2);
    assert_int_equal(weir_engine_worker(e, 0, NULL), -EINVAL);
    assert_int_equal(weir_engine_worker(e, 2, &w), -EINVAL);
    assert_int_equal(weir_engine_worker(e, UINT32_MAX, &w), -EINVAL);
    assert_null(w);
    assert_int_equal(weir_engine_worker(e, 1, &w), 0);
    assert_non_null(w);
    assert_int_equal(weir_worker_poll(w, NULL, 4, 0), -EINVAL);
    assert_int_equal(weir_engine_metrics(e, NULL), -EINVAL);
    memset(&m, 0, sizeof m);
    m.size = 0;
    assert_int_equal(weir_engine_metrics(e, &m), -EINVAL);
    m.size = 3; /* not even the size field */
    assert_int_equal(weir_engine_metrics(e, &m), -EINVAL);
    weir_engine_destroy(e);

    e = make_engine(WEIR_MODE_INLINE);
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_addr(e, NULL, &len), -EINVAL);
    assert_int_equal(weir_engine_addr(e, &ss, NULL), -EINVAL);
    memset(&ss, 0, sizeof ss);
    assert_int_equal(weir_engine_addr(e, &ss, &len), 0);
    assert_int_equal(ss.ss_family, AF_INET);
    assert_int_equal(len, sizeof(struct sockaddr_in));
    assert_int_not_equal(((struct sockaddr_in *)&ss)->sin_port, 0); /* port 0 was resolved */
    assert_int_equal(weir_engine_start(e), 0);
    assert_int_equal(weir_engine_shutdown(e, 0), 0);
    assert_int_equal(weir_engine_shutdown(e, 0), 0); /* repeated calls are harmless */
    assert_int_equal(weir_engine_start(e), WEIR_E_STATE);
    weir_engine_destroy(e);
}

static void test_engine_metrics_leave_fields_past_size(void **state) {
    (void)state;
    weir_engine *e = make_engine(WEIR_MODE_DRIVEN);
    weir_metrics m;
    /* Shorter than the first layout (which ended after closes): refused,
     * nothing written. */
    const unsigned char *p = (const unsigned char *)&m;
    memset(&m, 0xa5, sizeof m);
    m.size = offsetof(weir_metrics, accept_batches);
    assert_int_equal(weir_engine_metrics(e, &m), -EINVAL);
    for (size_t i = sizeof m.size; i < sizeof m; i++)
        assert_int_equal(p[i], 0xa5);
    /* A caller from before the pause fields (the first layout): they are
     * left alone. */
    memset(&m, 0xa5, sizeof m);
    m.size = offsetof(weir_metrics, pause_lingers);
    assert_int_equal(weir_engine_metrics(e, &m), 0);
    assert_int_equal(m.size, offsetof(weir_metrics, pause_lingers));
    assert_int_equal(m.workers, 2);
    assert_int_equal(m.accepted, 0);
    assert_int_equal(m.closes[WEIR_CLOSE_REASONS - 1], 0);
    for (size_t i = offsetof(weir_metrics, pause_lingers); i < sizeof m; i++)
        assert_int_equal(p[i], 0xa5);
    /* A whole struct is filled. */
    memset(&m, 0xa5, sizeof m);
    m.size = sizeof m;
    assert_int_equal(weir_engine_metrics(e, &m), 0);
    assert_int_equal(m.connections_open, 0);
    assert_int_equal(m.closes[WEIR_CLOSE_REASONS - 1], 0);
    assert_int_equal(m.pause_lingers, 0);
    assert_int_equal(m.pause_reopen_errors, 0);
    weir_engine_destroy(e);
}

struct poller {
    weir_worker *w;
    int rc;
};

static void *poll_until_shutdown(void *arg) {
    struct poller *p = arg;
    weir_exchange *exs[8];
    int rc;
    /* Bounded: 20 s of 10 ms polls. */
    for (int i = 0; i < 2000; i++) {
        rc = weir_worker_poll(p->w, exs, 8, 10);
        if (rc < 0)
            break;
    }
    p->rc = rc;
    return NULL;
}

static void test_engine_state_errors(void **state) {
    (void)state;
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    weir_worker *w = NULL;
    weir_exchange *exs[4];

    weir_engine *e = make_engine(WEIR_MODE_INLINE);
    assert_int_equal(weir_engine_start(e), WEIR_E_STATE);       /* not listening */
    assert_int_equal(weir_engine_begin_pause(e), WEIR_E_STATE); /* no listener to pause */
    assert_int_equal(weir_engine_pause(e), WEIR_E_STATE);
    assert_int_equal(weir_engine_resume(e), WEIR_E_STATE);
    assert_int_equal(weir_engine_addr(e, &ss, &len), WEIR_E_STATE);
    assert_int_equal(weir_engine_worker(e, 0, &w), WEIR_E_STATE); /* not driven */
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_listen(e), WEIR_E_STATE);
    assert_int_equal(weir_engine_start(e), 0);
    assert_int_equal(weir_engine_start(e), WEIR_E_STATE);
    assert_int_equal(weir_engine_shutdown(e, 1000000000), 0);
    assert_int_equal(weir_engine_begin_pause(e), WEIR_E_SHUTDOWN);
    assert_int_equal(weir_engine_pause(e), WEIR_E_SHUTDOWN);
    assert_int_equal(weir_engine_resume(e), WEIR_E_SHUTDOWN);
    weir_engine_destroy(e);

    e = make_engine(WEIR_MODE_DRIVEN);
    assert_int_equal(weir_engine_worker(e, 0, &w), 0);
    assert_int_equal(weir_worker_poll(w, exs, 4, 0), WEIR_E_STATE); /* not listening */
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_start(e), WEIR_E_STATE);         /* driven mode */
    assert_true(weir_worker_poll(w, exs, 4, 0) >= 0);
    /* Driven shutdown is carried out by the hosts' polls: each worker needs
     * its host polling until the worker reports WEIR_E_SHUTDOWN. */
    struct poller hosts[2];
    pthread_t threads[2];
    for (uint32_t i = 0; i < 2; i++) {
        hosts[i].rc = 0;
        assert_int_equal(weir_engine_worker(e, i, &hosts[i].w), 0);
        assert_int_equal(pthread_create(&threads[i], NULL, poll_until_shutdown, &hosts[i]), 0);
    }
    assert_int_equal(weir_engine_shutdown(e, 2000000000), 0);
    for (uint32_t i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(hosts[i].rc, WEIR_E_SHUTDOWN);
    }
    assert_int_equal(weir_worker_poll(w, exs, 4, 0), WEIR_E_SHUTDOWN); /* and stays so */
    weir_engine_destroy(e);
}

static void test_engine_destroy_without_listen_or_shutdown(void **state) {
    (void)state;
    weir_engine_destroy(make_engine(WEIR_MODE_INLINE));
    weir_engine_destroy(make_engine(WEIR_MODE_DRIVEN));
    weir_engine *e = make_engine(WEIR_MODE_INLINE);
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_start(e), 0);
    weir_engine_destroy(e); /* shuts down (grace 0) by itself */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_matches_header),
        cmocka_unit_test(test_errors_every_weir_code_is_named),
        cmocka_unit_test(test_errors_never_null),
        cmocka_unit_test(test_errors_errno_names),
        cmocka_unit_test(test_http1_status_table),
        cmocka_unit_test(test_close_reason_name_never_null),
        cmocka_unit_test(test_init_functions_fill_size_and_take_null),
        cmocka_unit_test(test_parser_null_and_bad_size),
        cmocka_unit_test(test_chunked_null_and_bad_size),
        cmocka_unit_test(test_engine_null_handles),
        cmocka_unit_test(test_engine_create_refuses_bad_config),
        cmocka_unit_test(test_engine_bad_arguments_on_live_handle),
        cmocka_unit_test(test_engine_metrics_leave_fields_past_size),
        cmocka_unit_test(test_engine_state_errors),
        cmocka_unit_test(test_engine_destroy_without_listen_or_shutdown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
