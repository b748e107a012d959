// Deferred answers from foreign threads (pipelined order kept whatever order
// they come in), answers to dead connections, graceful shutdown with requests
// in flight, and the handler that neither answers nor defers.
#include <sys/socket.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

#include "support/net.h"

using namespace testnet;

namespace {

std::mutex g_mu;
std::vector<weir_exchange *> g_parked; // deferred exchanges, in arrival order
std::atomic<int> g_logs{0};

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    std::string path = str(r->path);
    if (path == "/defer") {
        assert_int_equal(weir_defer(ex), 0);
        assert_int_equal(weir_defer(ex), -EINVAL); // once
        std::lock_guard<std::mutex> lk(g_mu);
        g_parked.push_back(ex);
    } else if (path == "/silent") {
        // neither answers nor defers: weir answers 500 and logs once
    } else {
        answer(ex, 200, str(r->target));
    }
}

void log_fn(void *, int, const char *) { g_logs++; }

size_t parked() {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_parked.size();
}

bool wait_parked(size_t n, int ms = 3000) {
    int64_t until = now_ms() + ms;
    while (parked() < n && now_ms() < until)
        sleep_ms(1);
    return parked() >= n;
}

int reset_state(void **) {
    std::lock_guard<std::mutex> lk(g_mu);
    g_parked.clear();
    g_logs = 0;
    return 0;
}

weir_config base() {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.log = log_fn;
    return c;
}

void test_deferred_reverse_threads_in_order(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    Client c = connect_to(s.port);
    std::string all;
    for (int i = 0; i < 6; i++)
        all += get("/defer?i=" + std::to_string(i));
    assert_true(send_all(c, all));
    assert_true(wait_parked(6));
    // answer the last first, each from its own thread, 10 ms apart
    for (int i = 5; i >= 0; i--) {
        weir_exchange *ex = g_parked[i];
        std::string q = "answer " + std::to_string(i);
        std::thread t([ex, q] { assert_int_equal(answer(ex, 200, q), 0); });
        t.join();
        if (i == 5)
            assert_true(stays_silent(c, 50)); // the first request is not answered yet
        sleep_ms(10);
    }
    for (int i = 0; i < 6; i++) {
        Response r = read_response(c);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.c_str(), ("answer " + std::to_string(i)).c_str());
    }
}

void test_deferred_bad_answer_refused_at_once(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer")));
    assert_true(wait_parked(1));
    weir_exchange *ex = g_parked[0];
    std::thread t([ex] {
        weir_header_t h = {{"Content-Length", 14}, {"1", 1}};
        assert_int_equal(weir_respond(ex, 200, &h, 1, nullptr, 0, 0), -EINVAL);
        assert_int_equal(weir_respond(ex, 99, nullptr, 0, nullptr, 0, 0), -EINVAL);
        // The connection's own rules hold across threads too: no CR/LF smuggled in.
        weir_header_t crlf = {{"X-A", 3}, {"a\r\nX-Evil: 1", 14}};
        assert_int_equal(weir_respond(ex, 200, &crlf, 1, nullptr, 0, 0), -EINVAL);
        weir_header_t badname = {{"X A", 3}, {"v", 1}};
        assert_int_equal(weir_respond(ex, 200, &badname, 1, nullptr, 0, 0), -EINVAL);
        weir_header_t ok = {{"X-A", 3}, {"b", 1}};
        assert_int_equal(weir_respond(ex, 201, &ok, 1, "k", 1, 0), 0);
    });
    t.join();
    Response r = read_response(c);
    assert_int_equal(r.status, 201);
    assert_string_equal(r.header("X-A").c_str(), "b");
}

void test_deferred_gone_after_reset(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer")));
    assert_true(wait_parked(1));
    linger lg = {1, 0}; // close with a reset
    setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    c.close();
    int64_t until = now_ms() + 3000;
    while (s.metrics().connections_open != 0 && now_ms() < until)
        sleep_ms(2);
    assert_int_equal(s.metrics().connections_open, 0);
    int rc = 0;
    weir_exchange *ex = g_parked[0];
    std::thread t([&] { rc = answer(ex, 200, "late"); });
    t.join();
    assert_int_equal(rc, WEIR_E_GONE);
}

void test_deferred_shutdown_grace_answer_arrives(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    Client idle = connect_to(s.port);
    assert_true(send_all(idle, get("/x")));
    assert_int_equal(read_response(idle).status, 200);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer")));
    assert_true(wait_parked(1));
    int rc = -1;
    std::thread stopper([&] { rc = s.shutdown(5'000'000'000LL); });
    // the idle connection closes at once; the in-flight one waits for its answer
    assert_true(wait_closed(idle, 2000));
    sleep_ms(200);
    assert_int_equal(answer(g_parked[0], 200, "during grace"), 0);
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), "during grace");
    assert_true(wait_closed(c, 2000));
    stopper.join();
    assert_int_equal(rc, 0);
    weir_metrics m = s.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_SHUTDOWN], 2);
    assert_int_equal(m.connections_open, 0);
    // new connections are refused once the listener is closed
    Client late = connect_to(s.port);
    assert_true(late.fd < 0 || wait_closed(late, 1000));
}

void test_deferred_shutdown_grace_runs_out(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer")));
    assert_true(wait_parked(1));
    int64_t t0 = now_ms();
    assert_int_equal(s.shutdown(200'000'000LL), -ETIMEDOUT);
    assert_true(now_ms() - t0 >= 150);
    assert_true(wait_closed(c, 2000));
    assert_int_equal(answer(g_parked[0], 200, "too late"), WEIR_E_GONE);
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_SHUTDOWN], 1);
}

// A shutdown without a bound, shortened from another thread: the second call
// returns at once, the first returns as if its grace ran out, and what it
// waited for is closed. The arm without the second call is the first test's
// wait: an exchange nobody answers holds a grace of -1 for ever.
void test_deferred_unbounded_shutdown_shortened(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer")));
    assert_true(wait_parked(1));
    std::atomic<int> rc{1};
    std::thread stopper([&] { rc = s.shutdown(-1); });
    sleep_ms(150);
    assert_int_equal(rc.load(), 1); // still waiting: nobody answers
    int64_t t0 = now_ms();
    assert_int_equal(weir_engine_shutdown(s.e, 0), 0);
    stopper.join();
    assert_true(now_ms() - t0 < 2000);
    assert_int_equal(rc.load(), -ETIMEDOUT);
    assert_true(wait_closed(c, 2000));
    assert_int_equal(answer(g_parked[0], 200, "too late"), WEIR_E_GONE);
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_SHUTDOWN], 1);
    assert_int_equal(weir_engine_shutdown(s.e, -1), 0); // after it: harmless, nothing extended
}

void test_deferred_handler_without_answer(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    for (int i = 0; i < 2; i++) {
        Client c = connect_to(s.port);
        assert_true(send_all(c, get("/silent")));
        assert_int_equal(read_response(c).status, 500);
        assert_true(wait_closed(c));
    }
    assert_int_equal(g_logs.load(), 1); // once per engine per kind
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_deferred_reverse_threads_in_order, reset_state),
        cmocka_unit_test_setup(test_deferred_bad_answer_refused_at_once, reset_state),
        cmocka_unit_test_setup(test_deferred_gone_after_reset, reset_state),
        cmocka_unit_test_setup(test_deferred_shutdown_grace_answer_arrives, reset_state),
        cmocka_unit_test_setup(test_deferred_shutdown_grace_runs_out, reset_state),
        cmocka_unit_test_setup(test_deferred_unbounded_shutdown_shortened, reset_state),
        cmocka_unit_test_setup(test_deferred_handler_without_answer, reset_state),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
