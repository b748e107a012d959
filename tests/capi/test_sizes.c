/* The size rule of weir.h's ABI paragraph, from plain C through libweir.so:
 * every caller-sized struct (weir_config, weir_http1_limits,
 * weir_http1_request, weir_http1_chunked, weir_metrics) is accepted at its
 * first size and at sizeof, refused (-EINVAL) at 0, one byte short of the
 * first size and one byte past sizeof; weir never reads or writes a byte past
 * the size it was given (each struct sits in front of a poisoned tail);
 * fields past a short size are left alone (weir_metrics: its first layout
 * ends at closes). A limits struct of size 0 is refused, where 0.1 silently
 * replaced every limit the host had set (the arm showing the old loss). A
 * config with nothing but size set is a working config (zero = default), and
 * weir_request.size says how much weir filled. The rule for fields past a
 * short input size (they take their defaults) is tested on a grown struct in
 * tests/unit/loop/test_config.cc, since no 0.2 input struct is shorter than
 * its sizeof yet. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <weir.h>

#define END_OF(T, f) (offsetof(T, f) + sizeof(((T *)0)->f))
/* The first sizes, frozen with the 0.2 layouts (on LP64: the numbers are the
 * ABI a binding mirrors). Appending a field must not move them. */
#define FIRST_CONFIG END_OF(weir_config, log_user)
#define FIRST_LIMITS END_OF(weir_http1_limits, max_body)
#define FIRST_REQUEST END_OF(weir_http1_request, headers)
#define FIRST_CHUNKED END_OF(weir_http1_chunked, reserved_)
#define FIRST_METRICS END_OF(weir_metrics, closes)
/* 0.4 */
#define FIRST_FILE_OPTIONS END_OF(weir_file_options, reserved_)
#define FIRST_ADAPTIVE_CONFIG END_OF(weir_adaptive_config, lockout_ms)
#define FIRST_ADAPTIVE_STATE END_OF(weir_adaptive_state, last_error_permille)
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(FIRST_CONFIG == 120, "weir_config's first size moved");
_Static_assert(FIRST_LIMITS == 40, "weir_http1_limits' first size moved");
_Static_assert(FIRST_REQUEST == 120, "weir_http1_request's first size moved");
_Static_assert(FIRST_CHUNKED == 80, "weir_http1_chunked's first size moved");
_Static_assert(FIRST_METRICS == 384, "weir_metrics' first size moved");
_Static_assert(FIRST_FILE_OPTIONS == 40, "weir_file_options' first size moved");
_Static_assert(FIRST_ADAPTIVE_CONFIG == 88, "weir_adaptive_config's first size moved");
_Static_assert(FIRST_ADAPTIVE_STATE == 128, "weir_adaptive_state's first size moved");
#endif

enum { TAIL = 64, POISON = 0xa5 };

/* A struct followed by bytes weir must never touch. */
#define PADDED(T)                                                                                                  \
    struct {                                                                                                       \
        T s;                                                                                                       \
        unsigned char tail[TAIL];                                                                                  \
    }

static void assert_poisoned(const void *base, size_t from, size_t to) {
    const unsigned char *p = base;
    for (size_t i = from; i < to; i++)
        if (p[i] != POISON)
            fail_msg("byte %zu (of %zu..%zu) was touched", i, from, to);
}

static const char kGet[] = "GET /x HTTP/1.1\r\nHost: h\r\n\r\n";

static void test_sizes_limits(void **state) {
    (void)state;
    weir_http1_request req;
    weir_header_t hs[4];
    memset(&req, 0, sizeof req);
    req.size = sizeof req;
    PADDED(weir_http1_limits) l;
    const int whole = (int)(sizeof kGet - 1);
    const uint32_t sizes[] = {0, FIRST_LIMITS - 1, FIRST_LIMITS, sizeof l.s, sizeof l.s + 1};
    const int want[] = {-EINVAL, -EINVAL, whole, whole, -EINVAL};
    for (size_t i = 0; i < 5; i++) {
        memset(&l, POISON, sizeof l);
        weir_http1_limits_init(&l.s);
        assert_int_equal(l.s.size, sizeof l.s);
        l.s.size = sizes[i];
        assert_int_equal(weir_http1_parse_request(kGet, sizeof kGet - 1, &l.s, &req, hs, 4), want[i]);
        assert_int_equal(weir_http1_parse_trailers("\r\n", 2, &l.s, hs, 4), want[i] < 0 ? -EINVAL : 0);
        weir_http1_chunked d;
        d.size = sizeof d;
        assert_int_equal(weir_http1_chunked_init(&d, &l.s), want[i] < 0 ? -EINVAL : 0);
    }
    /* Limits at the first size are read: a 10-byte request line is too long. */
    weir_http1_limits_init(&l.s);
    l.s.size = FIRST_LIMITS;
    l.s.max_request_line = 10;
    assert_int_equal(weir_http1_parse_request(kGet, sizeof kGet - 1, &l.s, &req, hs, 4),
                     WEIR_E_REQUEST_LINE_TOO_LONG);
    /* A zero that would refuse every request is the default; max_body 0 is "no body". */
    weir_http1_limits_init(&l.s);
    l.s.max_request_line = 0;
    l.s.max_header_bytes = 0;
    l.s.max_headers = 0;
    assert_int_equal(weir_http1_parse_request(kGet, sizeof kGet - 1, &l.s, &req, hs, 4), whole);
    l.s.max_body = 0;
    static const char post[] = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\n";
    assert_int_equal(weir_http1_parse_request(post, sizeof post - 1, &l.s, &req, hs, 4), WEIR_E_BODY_TOO_LARGE);
}

static void test_sizes_parser_request(void **state) {
    (void)state;
    weir_header_t hs[4];
    PADDED(weir_http1_request) r;
    const int whole = (int)(sizeof kGet - 1);
    const uint32_t sizes[] = {0, FIRST_REQUEST - 1, FIRST_REQUEST, sizeof r.s, sizeof r.s + 1};
    const int want[] = {-EINVAL, -EINVAL, whole, whole, -EINVAL};
    for (size_t i = 0; i < 5; i++) {
        memset(&r, POISON, sizeof r);
        r.s.size = sizes[i];
        assert_int_equal(weir_http1_parse_request(kGet, sizeof kGet - 1, NULL, &r.s, hs, 4), want[i]);
        assert_int_equal(r.s.size, sizes[i]); /* the caller's size stays */
        if (want[i] > 0) {
            assert_int_equal(r.s.path.len, 2);
            assert_int_equal(r.s.num_headers, 1);
            assert_poisoned(&r, sizes[i], sizeof r);
        } else {
            assert_poisoned(&r, sizeof r.s.size, sizeof r); /* nothing written */
        }
    }
}

static void test_sizes_chunked(void **state) {
    (void)state;
    static const char body[] = "3\r\nabc\r\n0\r\n\r\n";
    PADDED(weir_http1_chunked) d;
    const uint32_t sizes[] = {0, FIRST_CHUNKED - 1, FIRST_CHUNKED, sizeof d.s, sizeof d.s + 1};
    for (size_t i = 0; i < 5; i++) {
        const int ok = sizes[i] >= FIRST_CHUNKED && sizes[i] <= sizeof d.s;
        memset(&d, POISON, sizeof d);
        d.s.size = sizes[i];
        assert_int_equal(weir_http1_chunked_init(&d.s, NULL), ok ? 0 : -EINVAL);
        assert_int_equal(d.s.size, sizes[i]);
        char out[16];
        size_t used = 0, out_len = 0;
        assert_int_equal(weir_http1_chunked_decode(&d.s, body, sizeof body - 1, &used, out, &out_len),
                         ok ? 0 : -EINVAL);
        if (ok) {
            assert_int_equal(out_len, 3);
            assert_int_equal(d.s.body_len, 3);
            assert_int_equal(d.s.raw_len, sizeof body - 1);
            assert_poisoned(&d, sizes[i], sizeof d);
        } else {
            assert_poisoned(&d, sizeof d.s.size, sizeof d);
        }
    }
}

static void on_request(void *user, weir_exchange *ex) {
    (void)user;
    /* The body is weir_request.size: how much of the struct weir filled. */
    char b[32];
    int n = snprintf(b, sizeof b, "%u", weir_exchange_request(ex)->size);
    weir_respond(ex, 200, NULL, 0, b, (size_t)n, WEIR_RESPOND_CLOSE);
}

/* One request to e; returns the whole answer (status line to close). */
static void ask(weir_engine *e, const char *req, char *out, size_t cap) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    assert_int_equal(weir_engine_addr(e, &ss, &len), 0);
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_int_equal(connect(fd, (struct sockaddr *)&ss, len), 0);
    assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    size_t got = 0;
    for (ssize_t r; (r = recv(fd, out + got, cap - 1 - got, 0)) > 0;)
        got += (size_t)r;
    out[got] = '\0';
    close(fd);
}

static void test_sizes_config(void **state) {
    (void)state;
    PADDED(weir_config) c;
    weir_engine *e = NULL;
    const uint32_t sizes[] = {0, FIRST_CONFIG - 1, FIRST_CONFIG, sizeof c.s, sizeof c.s + 1};
    for (size_t i = 0; i < 5; i++) {
        const int ok = sizes[i] >= FIRST_CONFIG && sizes[i] <= sizeof c.s;
        memset(&c, POISON, sizeof c);
        weir_config_init(&c.s);
        c.s.size = sizes[i];
        c.s.mode = WEIR_MODE_DRIVEN;
        c.s.workers = 1;
        e = NULL;
        assert_int_equal(weir_engine_create(&c.s, &e), ok ? 0 : -EINVAL);
        assert_true(ok ? e != NULL : e == NULL);
        weir_engine_destroy(e);
    }

    /* Nothing but size set: every zero is the default or its own documented
     * meaning, and the engine serves (host NULL = 127.0.0.1, backend 0 =
     * epoll, mode 0 = inline, workers 0 = CPUs, read_buffer_size 0 = 16384,
     * max_pipeline/max_connections/backlog/max_output_bytes 0 = defaults). */
    memset(&c.s, 0, sizeof c.s);
    c.s.size = sizeof c.s;
    c.s.on_request = on_request;
    assert_int_equal(weir_engine_create(&c.s, &e), 0);
    weir_metrics m;
    memset(&m, 0, sizeof m);
    m.size = sizeof m;
    assert_int_equal(weir_engine_metrics(e, &m), 0);
    assert_int_equal(m.backend, WEIR_BACKEND_EPOLL);
    assert_true(m.workers >= 1);
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_start(e), 0);
    char out[1024];
    ask(e, "GET / HTTP/1.1\r\nHost: h\r\n\r\n", out, sizeof out);
    char want[64];
    snprintf(want, sizeof want, "\r\n\r\n%zu", sizeof(weir_request));
    assert_non_null(strstr(out, "HTTP/1.1 200 "));
    assert_non_null(strstr(out, want)); /* weir_request.size == sizeof */
    weir_engine_destroy(e);
}

static void test_sizes_config_limits(void **state) {
    (void)state;
    weir_config c;
    weir_engine *e = NULL;
    weir_http1_limits lim;
    char out[1024];
    static const char post[] = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789";

    /* The host's limits are used (max_body 4 < 10: 413)... */
    weir_config_init(&c);
    c.on_request = on_request;
    c.workers = 1;
    weir_http1_limits_init(&lim);
    lim.max_body = 4;
    c.limits = &lim;
    assert_int_equal(weir_engine_create(&c, &e), 0);
    lim.max_body = 1 << 20; /* ...as copied by create: a later change is not seen */
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_start(e), 0);
    ask(e, post, out, sizeof out);
    assert_non_null(strstr(out, "HTTP/1.1 413 "));
    weir_engine_destroy(e);

    /* ...and a limits struct of size 0 is refused. In 0.1 (limits embedded,
     * size 0 replaced by the defaults) this create returned 0 and the POST
     * above was served with a 1 MiB max_body: every limit the host had set
     * was lost without a word. */
    weir_http1_limits_init(&lim);
    lim.max_body = 4;
    lim.size = 0;
    e = NULL;
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    assert_null(e);
    /* Outside the rule either way. */
    lim.size = FIRST_LIMITS - 1;
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    lim.size = sizeof lim + 1;
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    assert_null(e);
}

static void test_sizes_metrics(void **state) {
    (void)state;
    weir_config c;
    weir_engine *e = NULL;
    weir_config_init(&c);
    c.mode = WEIR_MODE_DRIVEN;
    c.workers = 2;
    assert_int_equal(weir_engine_create(&c, &e), 0);
    PADDED(weir_metrics) m;
    const uint32_t sizes[] = {0, FIRST_METRICS - 1, FIRST_METRICS, sizeof m.s, sizeof m.s + 1};
    for (size_t i = 0; i < 5; i++) {
        const int ok = sizes[i] >= FIRST_METRICS && sizes[i] <= sizeof m.s;
        memset(&m, POISON, sizeof m);
        m.s.size = sizes[i];
        assert_int_equal(weir_engine_metrics(e, &m.s), ok ? 0 : -EINVAL);
        assert_int_equal(m.s.size, sizes[i]);
        if (ok) {
            assert_int_equal(m.s.workers, 2);
            assert_int_equal(m.s.closes[WEIR_CLOSE_REASONS - 1], 0);
            assert_poisoned(&m, sizes[i], sizeof m); /* past the size: left alone */
        } else {
            assert_poisoned(&m, sizeof m.s.size, sizeof m);
        }
    }
    weir_engine_destroy(e);
}

/* 0.4: weir_file_options_init writes sizeof and every default, nothing past
 * it. (The sizes weir_serve_file accepts are checked with a live exchange in
 * tests/integration/test_serve_file.cc.) */
static void test_sizes_file_options(void **state) {
    (void)state;
    PADDED(weir_file_options) o;
    memset(&o, POISON, sizeof o);
    weir_file_options_init(&o.s);
    assert_int_equal(o.s.size, sizeof o.s);
    assert_int_equal(o.s.flags, 0);
    assert_null(o.s.content_type);
    assert_null(o.s.headers);
    assert_int_equal(o.s.num_headers, 0);
    assert_int_equal(o.s.respond_flags, 0);
    assert_poisoned(&o, sizeof o.s, sizeof o);
    weir_file_options_init(NULL);
}

/* 0.4: weir_adaptive_config_init writes sizeof and every default, nothing
 * past it; weir_adaptive_config_error takes the first size (fields past it
 * keep their defaults) and refuses 0 and one past the struct. */
static void test_sizes_adaptive_config(void **state) {
    (void)state;
    PADDED(weir_adaptive_config) c;
    memset(&c, POISON, sizeof c);
    weir_adaptive_config_init(&c.s);
    assert_int_equal(c.s.size, sizeof c.s);
    assert_int_equal(c.s.interval_ms, 1000);
    assert_int_equal(c.s.up_conns, 64);
    assert_int_equal(c.s.lockout_ms, 300000);
    assert_poisoned(&c, sizeof c.s, sizeof c);
    assert_null(weir_adaptive_config_error(&c.s));
    c.s.size = FIRST_ADAPTIVE_CONFIG;
    assert_null(weir_adaptive_config_error(&c.s));
    c.s.size = 0;
    assert_non_null(weir_adaptive_config_error(&c.s));
    c.s.size = sizeof c.s + 1;
    assert_non_null(weir_adaptive_config_error(&c.s));
    weir_adaptive_config_init(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes_adaptive_config),
        cmocka_unit_test(test_sizes_file_options),
        cmocka_unit_test(test_sizes_limits),        cmocka_unit_test(test_sizes_parser_request),
        cmocka_unit_test(test_sizes_chunked),       cmocka_unit_test(test_sizes_config),
        cmocka_unit_test(test_sizes_config_limits), cmocka_unit_test(test_sizes_metrics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
