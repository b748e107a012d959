// The epoll engine end to end on 127.0.0.1: keep-alive, pipelining, chunked
// uploads in small writes, 100-continue, handler-requested close, metrics.
#include "cmocka_cxx.h"

#include <cstring>
#include <string>

#include "support/net.h"

using namespace testnet;

namespace {

// /hello: "hello"; /echo: the body; /close: answer then close; anything
// else: the target.
void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    std::string path = str(r->path);
    if (path == "/hello")
        answer(ex, 200, "hello");
    else if (path == "/echo")
        answer(ex, 200, str(r->body));
    else if (path == "/close")
        answer(ex, 200, "bye", WEIR_RESPOND_CLOSE);
    else
        answer(ex, 200, str(r->target));
}

struct Fixture {
    Server srv;
};

int setup(void **state) {
    auto *f = new Fixture;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    if (f->srv.start(c) < 0) {
        delete f;
        return -1;
    }
    *state = f;
    return 0;
}

int teardown(void **state) {
    delete static_cast<Fixture *>(*state);
    return 0;
}

void test_engine_keep_alive(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    Client c = connect_to(f->srv.port);
    assert_true(c.fd >= 0);
    for (int i = 0; i < 5; i++) {
        assert_true(send_all(c, get("/hello")));
        Response r = read_response(c);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.c_str(), "hello");
    }
    weir_metrics m = f->srv.metrics();
    assert_int_equal(m.accepted, 1);
    assert_int_equal(m.connections_open, 1);
    assert_true(m.requests >= 5);
}

void test_engine_pipelining_in_order(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    Client c = connect_to(f->srv.port);
    std::string all;
    for (int i = 0; i < 10; i++)
        all += get("/p" + std::to_string(i));
    assert_true(send_all(c, all));
    for (int i = 0; i < 10; i++) {
        Response r = read_response(c);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.c_str(), ("/p" + std::to_string(i)).c_str());
    }
}

void test_engine_chunked_upload_small_writes(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    Client c = connect_to(f->srv.port);
    std::string req = "POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::string body;
    for (int i = 0; i < 20; i++) {
        std::string piece = "piece" + std::to_string(i) + ";";
        body += piece;
        char sz[16];
        snprintf(sz, sizeof sz, "%zx\r\n", piece.size());
        req += sz + piece + "\r\n";
    }
    req += "0\r\n\r\n";
    // a few bytes per write, with pauses so they arrive as separate reads
    for (size_t off = 0; off < req.size(); off += 7) {
        assert_true(send_all(c, req.substr(off, 7)));
        if (off % 70 == 0)
            sleep_ms(1);
    }
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), body.c_str());
}

void test_engine_expect_100_continue(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    Client c = connect_to(f->srv.port);
    assert_true(send_all(c, "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
    Response interim = read_response(c);
    assert_int_equal(interim.status, 100);
    assert_true(send_all(c, "abcde"));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), "abcde");
    assert_true(f->srv.metrics().continues_sent >= 1);
}

void test_engine_handler_close(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    uint64_t before = f->srv.metrics().closes[WEIR_CLOSE_HANDLER];
    Client c = connect_to(f->srv.port);
    assert_true(send_all(c, get("/close")));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_true(wait_closed(c));
    int64_t until = now_ms() + 2000;
    while (f->srv.metrics().closes[WEIR_CLOSE_HANDLER] == before && now_ms() < until)
        sleep_ms(5);
    assert_int_equal(f->srv.metrics().closes[WEIR_CLOSE_HANDLER], before + 1);
}

void test_engine_connection_close_request(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    Client c = connect_to(f->srv.port);
    assert_true(send_all(c, get("/hello", "Connection: close\r\n")));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_true(wait_closed(c));
}

void test_engine_peer_close_counted(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    uint64_t before = f->srv.metrics().closes[WEIR_CLOSE_PEER];
    {
        Client c = connect_to(f->srv.port);
        assert_true(send_all(c, get("/hello")));
        assert_int_equal(read_response(c).status, 200);
    }
    int64_t until = now_ms() + 2000;
    while (f->srv.metrics().closes[WEIR_CLOSE_PEER] == before && now_ms() < until)
        sleep_ms(5);
    weir_metrics m = f->srv.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_PEER], before + 1);
    assert_true(m.bytes_in > 0 && m.bytes_out > 0 && m.loop_passes > 0);
    assert_true(m.responses >= 1);
}

void test_engine_metrics_exact(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    size_t sent = 0, received = 0;
    {
        Client c = connect_to(f->srv.port);
        for (int i = 0; i < 3; i++) {
            std::string req = get("/hello");
            sent += req.size();
            assert_true(send_all(c, req));
            Response r = read_response(c);
            assert_int_equal(r.status, 200);
            received += r.head.size() + r.body.size();
        }
    }
    int64_t until = now_ms() + 2000;
    while (f->srv.metrics().connections_open != 0 && now_ms() < until)
        sleep_ms(2);
    weir_metrics m = f->srv.metrics();
    assert_int_equal(m.workers, 1);
    assert_int_equal(m.accepted, 1);
    assert_true(m.accept_batches >= 1);
    assert_int_equal(m.accept_owed, 0);
    assert_int_equal(m.connections_open, 0);
    assert_int_equal(m.requests, 3);
    assert_int_equal(m.responses, 3);
    assert_int_equal(m.parse_errors, 0);
    assert_int_equal(m.bytes_in, sent);
    assert_int_equal(m.bytes_out, received);
    assert_int_equal(m.closes[WEIR_CLOSE_PEER], 1);
    uint64_t closes = 0;
    for (uint64_t n : m.closes)
        closes += n;
    assert_int_equal(closes, 1);
    // a caller with an older, shorter struct (the first layout, through
    // closes) gets only what it has room for
    weir_metrics small;
    memset(&small, 0xee, sizeof small);
    small.size = offsetof(weir_metrics, pause_lingers);
    assert_int_equal(weir_engine_metrics(f->srv.e, &small), 0);
    assert_int_equal(small.accepted, 1);
    assert_int_equal(small.closes[WEIR_CLOSE_PEER], 1);
    assert_true(small.pause_lingers == 0xeeeeeeeeeeeeeeeeULL);
}

void test_engine_close_reason_names(void **) {
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_PEER), "peer");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_MAX_CONNECTIONS), "max_connections");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_RESOURCE), "resource");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_SILENT), "silent");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_TRANSPLANT_REFUSED), "transplant_refused");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_BODY_TIMEOUT), "body_timeout");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_HANDLER_TIMEOUT), "handler_timeout");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_UPGRADED), "upgraded");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_REASONS), "unknown");
    assert_string_equal(weir_close_reason_name(1000), "unknown");
}

// An idle engine sleeps: with nothing open and no timer the wait has no
// bound, so the loop makes no passes (io_uring's gathering wait once ended
// every wait after 50 us without a bound of its own: ~10,000 passes a second).
void test_idle_engine_sleeps(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    {
        Client c = connect_to(s.port);
        assert_true(send_all(c, get("/")));
        assert_int_equal(read_response(c).status, 200);
    }
    int64_t until = now_ms() + 3000;
    while (s.metrics().connections_open != 0 && now_ms() < until)
        sleep_ms(2);
    sleep_ms(50);
    uint64_t p0 = s.metrics().loop_passes;
    sleep_ms(500);
    uint64_t passes = s.metrics().loop_passes - p0;
    print_message("%s: %llu passes in 500 ms idle\n", test_backend_name(), static_cast<unsigned long long>(passes));
    assert_true(passes <= 2);
}

void test_engine_api_errors(void **) {
    weir_config c = config(1, WEIR_MODE_INLINE, nullptr, nullptr);
    weir_engine *e = nullptr;
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL); // inline without a handler
    assert_int_equal(weir_engine_create(nullptr, &e), -EINVAL);
    c.on_request = handler;
    c.host = "localhost"; // not numeric
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    c.host = "127.0.0.1";
    c.backend = 3; // no such backend
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    c.backend = test_backend();
    assert_int_equal(weir_engine_create(&c, &e), 0);
    // The engine says what it runs on, and on io_uring how (docs/uring.md).
    weir_metrics m{};
    m.size = sizeof m;
    assert_int_equal(weir_engine_metrics(e, &m), 0);
    assert_int_equal(m.backend, c.backend);
    if (c.backend == WEIR_BACKEND_URING) {
        assert_int_equal(m.uring_tier, WEIR_URING_TIER_DEFER); // inline mode on a kernel with DEFER_TASKRUN
        assert_true(m.uring_used & WEIR_URING_F_MULTISHOT_ACCEPT);
        assert_true((m.uring_used & ~m.uring_probed) == 0); // nothing used that the probe did not find
        assert_string_equal(weir_uring_tier_name(m.uring_tier), "defer");
    } else {
        assert_int_equal(m.uring_tier, 0);
        assert_int_equal(m.uring_used, 0);
    }
    assert_string_equal(weir_uring_feature_name(WEIR_URING_F_DEFER_TASKRUN), "defer_taskrun");
    assert_string_equal(weir_uring_feature_name(3), "unknown");
    assert_int_equal(weir_engine_start(e), WEIR_E_STATE); // not listening
    sockaddr_storage ss;
    socklen_t len = sizeof ss;
    assert_int_equal(weir_engine_addr(e, &ss, &len), WEIR_E_STATE);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(e, 0, &w), WEIR_E_STATE); // inline mode
    assert_int_equal(weir_engine_workers(e), 1);
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_listen(e), WEIR_E_STATE);
    assert_int_equal(weir_engine_shutdown(e, 0), 0);
    assert_int_equal(weir_engine_shutdown(e, 0), 0);
    weir_engine_destroy(e);
    weir_engine_destroy(nullptr);
    assert_int_equal(weir_respond(nullptr, 200, nullptr, 0, nullptr, 0, 0), -EINVAL);
    assert_int_equal(weir_defer(nullptr), -EINVAL);
    assert_null(weir_exchange_request(nullptr));
    assert_int_equal(weir_worker_poll(nullptr, nullptr, 0, 0), -EINVAL);
    assert_int_equal(weir_engine_metrics(nullptr, nullptr), -EINVAL);
}

void test_engine_workers_share_port(void **) {
    Server s;
    weir_config c = config(3, WEIR_MODE_INLINE, handler, nullptr);
    assert_int_equal(s.start(c), 0);
    assert_int_equal(weir_engine_workers(s.e), 3);
    for (int i = 0; i < 12; i++) {
        Client k = connect_to(s.port);
        assert_true(send_all(k, get("/hello")));
        assert_int_equal(read_response(k).status, 200);
    }
    weir_metrics m = s.metrics();
    assert_int_equal(m.workers, 3);
    assert_int_equal(m.accepted, 12);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_engine_keep_alive, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_pipelining_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_chunked_upload_small_writes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_expect_100_continue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_handler_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_connection_close_request, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_peer_close_counted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_engine_metrics_exact, setup, teardown),
        cmocka_unit_test(test_engine_close_reason_names),
        cmocka_unit_test(test_engine_api_errors),
        cmocka_unit_test(test_idle_engine_sleeps),
        cmocka_unit_test(test_engine_workers_share_port),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
