/* The three ways to run handlers, from plain C through libweir.so, over real
 * sockets on 127.0.0.1: inline (answer on the loop thread; weir_respond's
 * argument checks leave the exchange answerable), deferred (weir_defer, then
 * weir_respond from another thread; pipelined answers still leave in request
 * order) and driven (a host thread polls and answers with weir_respond_many;
 * shutdown ends its polls with WEIR_E_SHUTDOWN). */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <weir.h>

#define S(lit) {lit, sizeof(lit) - 1}

static int str_is(weir_str_t s, const char *want) {
    return s.len == strlen(want) && (s.len == 0 || !memcmp(s.ptr, want, s.len));
}

/* Connects to e's address with a 10 s receive bound. */
static int client(weir_engine *e) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    assert_int_equal(weir_engine_addr(e, &ss, &len), 0);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    struct timeval tv = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    assert_int_equal(connect(fd, (struct sockaddr *)&ss, len), 0);
    return fd;
}

/* Sends req, reads until the server closes (bounded by the receive timeout). */
static size_t exchange(weir_engine *e, const char *req, char *out, size_t cap) {
    int fd = client(e);
    size_t n = strlen(req), got = 0;
    assert_int_equal(send(fd, req, n, MSG_NOSIGNAL), (ssize_t)n);
    for (;;) {
        ssize_t r = recv(fd, out + got, cap - 1 - got, 0);
        assert_true(r >= 0); /* a timeout here is a failure, not a hang */
        if (r == 0)
            break;
        got += (size_t)r;
        assert_true(got < cap - 1);
    }
    out[got] = '\0';
    close(fd);
    return got;
}

static weir_engine *start_inline(weir_handler_fn fn, void *user) {
    weir_config cfg;
    weir_engine *e = NULL;
    weir_config_init(&cfg);
    cfg.workers = 1;
    cfg.on_request = fn;
    cfg.user = user;
    assert_int_equal(weir_engine_create(&cfg, &e), 0);
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_start(e), 0);
    return e;
}

/* ---- inline */

struct inline_seen {
    pthread_mutex_t mu;
    int calls, view_ok, peer_ok;
    int bad[8];
};

static void inline_handler(void *user, weir_exchange *ex) {
    struct inline_seen *seen = user;
    const weir_request *r = weir_exchange_request(ex);
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    int peer = weir_exchange_peer(ex, &ss, &len);
    static const weir_header_t cl[] = {{S("Content-Length"), S("1")}};
    static const weir_header_t conn[] = {{S("Connection"), S("close")}};
    static const weir_header_t te[] = {{S("Transfer-Encoding"), S("chunked")}};
    static const weir_header_t date[] = {{S("Date"), S("today")}};
    static const weir_header_t mine[] = {{S("X-Mode"), S("inline")}};

    pthread_mutex_lock(&seen->mu);
    seen->calls++;
    seen->view_ok = r && str_is(r->method, "GET") && str_is(r->path, "/p") && str_is(r->query, "a=1") &&
                    str_is(r->host, "h") && r->version_minor == 1 && r->num_headers == 3 &&
                    str_is(r->headers[1].name, "X-A") && str_is(r->headers[1].value, "b") && r->body.len == 0;
    seen->peer_ok = peer == 0 && ss.ss_family == AF_INET &&
                    ((struct sockaddr_in *)&ss)->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
    /* Each refusal must leave the exchange answerable. */
    seen->bad[0] = weir_respond(ex, 99, NULL, 0, NULL, 0, 0);
    seen->bad[1] = weir_respond(ex, 100, NULL, 0, NULL, 0, 0);
    seen->bad[2] = weir_respond(ex, 1000, NULL, 0, NULL, 0, 0);
    seen->bad[3] = weir_respond(ex, 200, cl, 1, "x", 1, 0);
    seen->bad[4] = weir_respond(ex, 200, conn, 1, NULL, 0, 0);
    seen->bad[5] = weir_respond(ex, 200, te, 1, NULL, 0, 0);
    seen->bad[6] = weir_respond(ex, 200, date, 1, NULL, 0, 0);
    seen->bad[7] = weir_respond(ex, 200, NULL, 1, NULL, 0, 0); /* NULL headers with a count */
    pthread_mutex_unlock(&seen->mu);
    weir_respond(ex, 200, mine, 1, "inline", 6, 0);
}

static void test_modes_inline_answers_on_the_loop_thread(void **state) {
    (void)state;
    struct inline_seen seen;
    memset(&seen, 0, sizeof seen);
    pthread_mutex_init(&seen.mu, NULL);
    weir_engine *e = start_inline(inline_handler, &seen);
    char out[4096];
    exchange(e, "GET /p?a=1 HTTP/1.1\r\nHost: h\r\nX-A: b\r\nConnection: close\r\n\r\n", out, sizeof out);
    assert_int_equal(weir_engine_shutdown(e, 1000000000), 0);
    weir_engine_destroy(e);

    assert_true(strncmp(out, "HTTP/1.1 200", 12) == 0);
    assert_non_null(strstr(out, "\r\nX-Mode: inline\r\n"));
    assert_non_null(strstr(out, "\r\n\r\ninline"));
    assert_int_equal(seen.calls, 1);
    assert_true(seen.view_ok);
    assert_true(seen.peer_ok);
    for (int i = 0; i < 8; i++)
        assert_int_equal(seen.bad[i], -EINVAL);
    pthread_mutex_destroy(&seen.mu);
}

/* ---- deferred */

struct deferred {
    pthread_t thread;
    weir_exchange *ex;
    int defer_rc, defer_again_rc, respond_rc, started;
};

static void *answer_later(void *arg) {
    struct deferred *d = arg;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL); /* let the later request's inline answer be ready first */
    d->respond_rc = weir_respond(d->ex, 200, NULL, 0, "slow", 4, 0);
    return NULL;
}

static void deferring_handler(void *user, weir_exchange *ex) {
    struct deferred *d = user;
    const weir_request *r = weir_exchange_request(ex);
    if (str_is(r->path, "/slow")) {
        d->ex = ex;
        d->defer_rc = weir_defer(ex);
        d->defer_again_rc = weir_defer(ex);
        d->started = pthread_create(&d->thread, NULL, answer_later, d) == 0;
        return;
    }
    weir_respond(ex, 200, NULL, 0, "fast", 4, 0);
}

static void test_modes_deferred_answer_keeps_request_order(void **state) {
    (void)state;
    struct deferred d;
    memset(&d, 0, sizeof d);
    weir_engine *e = start_inline(deferring_handler, &d);
    char out[4096];
    /* Pipelined: /slow is deferred and answered 50 ms later from another
     * thread; /fast is answered at once, but must leave second. */
    exchange(e,
             "GET /slow HTTP/1.1\r\nHost: h\r\n\r\n"
             "GET /fast HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
             out, sizeof out);
    assert_true(d.started);
    assert_int_equal(pthread_join(d.thread, NULL), 0);
    assert_int_equal(weir_engine_shutdown(e, 1000000000), 0);
    weir_engine_destroy(e);

    assert_int_equal(d.defer_rc, 0);
    assert_int_equal(d.defer_again_rc, -EINVAL);
    assert_int_equal(d.respond_rc, 0);
    const char *slow = strstr(out, "\r\n\r\nslow");
    const char *fast = strstr(out, "\r\n\r\nfast");
    assert_non_null(slow);
    assert_non_null(fast);
    assert_true(slow < fast);
}

/* ---- driven */

struct host {
    weir_worker *w;
    int final_rc, answered, defer_rc, batch_rc;
};

static void *drive(void *arg) {
    struct host *h = arg;
    weir_exchange *exs[16];
    weir_answer_t answers[16];
    static const weir_header_t mine[] = {{S("X-Mode"), S("driven")}};
    h->defer_rc = 1;
    for (int i = 0; i < 4000; i++) { /* bounded: 40 s of 10 ms polls */
        int n = weir_worker_poll(h->w, exs, 16, 10);
        if (n < 0) {
            h->final_rc = n;
            return NULL;
        }
        for (int k = 0; k < n; k++) {
            if (h->defer_rc == 1)
                h->defer_rc = weir_defer(exs[k]); /* inline mode only */
            memset(&answers[k], 0, sizeof answers[k]);
            answers[k].ex = exs[k];
            answers[k].status = 200;
            answers[k].headers = mine;
            answers[k].num_headers = 1;
            answers[k].body = "driven";
            answers[k].body_len = 6;
        }
        if (n > 0) {
            h->batch_rc = weir_respond_many(answers, (size_t)n);
            h->answered += n;
        }
    }
    h->final_rc = 1; /* never saw WEIR_E_SHUTDOWN */
    return NULL;
}

static void test_modes_driven_host_polls_and_answers(void **state) {
    (void)state;
    weir_config cfg;
    weir_engine *e = NULL;
    struct host h;
    pthread_t t;
    memset(&h, 0, sizeof h);
    weir_config_init(&cfg);
    cfg.workers = 1;
    cfg.mode = WEIR_MODE_DRIVEN;
    assert_int_equal(weir_engine_create(&cfg, &e), 0);
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_worker(e, 0, &h.w), 0);
    assert_int_equal(pthread_create(&t, NULL, drive, &h), 0);

    char out[4096];
    exchange(e, "GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", out, sizeof out);
    assert_int_equal(weir_engine_shutdown(e, 2000000000), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    weir_engine_destroy(e);

    assert_true(strncmp(out, "HTTP/1.1 200", 12) == 0);
    assert_non_null(strstr(out, "\r\nX-Mode: driven\r\n"));
    assert_non_null(strstr(out, "\r\n\r\ndriven"));
    assert_int_equal(h.answered, 1);
    assert_int_equal(h.batch_rc, 1);
    assert_int_equal(h.defer_rc, -EINVAL);
    assert_int_equal(h.final_rc, WEIR_E_SHUTDOWN);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_modes_inline_answers_on_the_loop_thread),
        cmocka_unit_test(test_modes_deferred_answer_keeps_request_order),
        cmocka_unit_test(test_modes_driven_host_polls_and_answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
