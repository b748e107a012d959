// cfg.report_gone and weir_exchange_gone (driven mode): an exchange the host
// holds comes back in a poll batch when its connection dies before the
// answer left (or its client's FIN arrives), and weir_exchange_gone says 1
// for it (0 while the client is there). Arms: the client closes while a
// plain answer is out; while a streamed answer is open; a forced shutdown
// closes the connection.
//
// The rule's negative arm: with report_gone 0 the dying exchange never
// comes back (the host would work on for nobody), though the query still
// tells, if the host thinks to ask.
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

// Polls until something comes back or ms pass; returns how many.
int poll_for(weir_worker *w, weir_exchange **out, uint32_t max, int ms) {
    int64_t until = now_ms() + ms;
    while (now_ms() < until) {
        int n = weir_worker_poll(w, out, max, 10);
        if (n != 0)
            return n;
    }
    return 0;
}

struct Driven {
    Server s;
    weir_worker *w = nullptr;
    explicit Driven(uint32_t report) {
        weir_config c = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
        c.report_gone = report;
        assert_int_equal(s.start(c), 0);
        assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    }
    // One request in; returns its exchange, not answered.
    weir_exchange *take(Client &c, const char *path) {
        assert_true(send_all(c, get(path)));
        weir_exchange *out[4];
        assert_int_equal(poll_for(w, out, 4, 3000), 1);
        return out[0];
    }
};

void test_gone_comes_back_when_the_client_leaves(void **) {
    Driven d(1);
    Client c = connect_to(d.s.port);
    weir_exchange *ex = d.take(c, "/slow");
    assert_int_equal(weir_exchange_gone(ex), 0);
    // Nothing comes back while the client waits.
    weir_exchange *out[4];
    assert_int_equal(poll_for(d.w, out, 4, 100), 0);
    c.close();
    assert_int_equal(poll_for(d.w, out, 4, 3000), 1);
    assert_ptr_equal(out[0], ex); // the same handle, once
    assert_int_equal(weir_exchange_gone(ex), 2); // a report, not a request
    assert_int_equal(poll_for(d.w, out, 4, 100), 0);
    // After a FIN alone the answer is still sent (a client may only have
    // half-closed); it releases the exchange.
    assert_int_equal(answer(ex, 200, "late"), 0);
    assert_int_equal(weir_exchange_gone(ex), WEIR_E_STALE);
    assert_int_equal(weir_exchange_gone(nullptr), -EINVAL);
}

void test_gone_comes_back_for_an_open_stream(void **) {
    Driven d(1);
    Client c = connect_to(d.s.port);
    weir_exchange *ex = d.take(c, "/events");
    assert_int_equal(weir_stream_start(ex, 200, nullptr, 0, WEIR_LENGTH_UNKNOWN, 0), 0);
    assert_int_equal(weir_stream_write(ex, "data: 1\n\n", 9), 0);
    weir_exchange *out[4];
    (void)poll_for(d.w, out, 4, 50); // the head and the piece leave
    assert_int_equal(weir_exchange_gone(ex), 0);
    c.close();
    int n = poll_for(d.w, out, 4, 3000);
    assert_true(n >= 1);
    bool back = false;
    for (int i = 0; i < n; i++)
        back = back || out[i] == ex;
    assert_true(back);
    assert_int_equal(weir_exchange_gone(ex), 2);
    int rc = weir_stream_end(ex, nullptr, 0);
    assert_true(rc == WEIR_E_GONE || rc == WEIR_E_STALE);
}

void test_gone_comes_back_at_a_forced_shutdown(void **) {
    Driven d(1);
    Client c = connect_to(d.s.port);
    weir_exchange *ex = d.take(c, "/slow");
    int rc = weir_engine_shutdown(d.s.e, 0); // grace 0: what is open closes
    assert_true(rc == 0 || rc == -ETIMEDOUT);
    weir_exchange *out[4];
    int n = weir_worker_poll(d.w, out, 4, 1000);
    assert_int_equal(n, 1);
    assert_ptr_equal(out[0], ex);
    assert_int_equal(weir_exchange_gone(ex), 2);
    assert_int_equal(answer(ex, 200, "late"), WEIR_E_GONE);
    assert_int_equal(weir_worker_poll(d.w, out, 4, 1000), WEIR_E_SHUTDOWN);
}

// A request with its client's FIN right behind it (a half-close): the host
// sees it once as a request (weir_exchange_gone 0, or 1 when the FIN was
// read before a poll handed it out) and at most once more, as a report (2,
// only if it was handed out before the FIN), so a host that takes every 2
// for a report and every other exchange for a request never serves one
// twice nor loses one; the answer still reaches the half-closed client.
void test_half_close_request_once(void **) {
    Driven d(1);
    Client c = connect_to(d.s.port);
    assert_true(send_all(c, get("/early")));
    ::shutdown(c.fd, SHUT_WR);
    weir_exchange *out[4];
    assert_int_equal(poll_for(d.w, out, 4, 3000), 1);
    weir_exchange *ex = out[0];
    assert_string_equal(str(weir_exchange_request(ex)->path).c_str(), "/early");
    int first = weir_exchange_gone(ex);
    assert_true(first == 0 || first == 1);
    int n = poll_for(d.w, out, 4, 300);
    if (first == 0) { // handed out before the FIN: reported once
        assert_int_equal(n, 1);
        assert_ptr_equal(out[0], ex);
        assert_int_equal(weir_exchange_gone(ex), 2);
    } else {
        assert_int_equal(n, 0);
    }
    assert_int_equal(poll_for(d.w, out, 4, 100), 0);
    assert_int_equal(answer(ex, 200, "still"), 0);
    std::atomic<bool> done{false};
    std::thread pump([&] {
        while (!done)
            weir_worker_poll(d.w, out, 4, 5);
    });
    std::string body = read_response(c).body;
    done = true;
    pump.join();
    assert_string_equal(body.c_str(), "still");
}

// The negative arm: without report_gone nothing comes back.
void test_without_report_nothing_comes_back(void **) {
    Driven d(0);
    Client c = connect_to(d.s.port);
    weir_exchange *ex = d.take(c, "/slow");
    c.close();
    weir_exchange *out[4];
    assert_int_equal(poll_for(d.w, out, 4, 300), 0);
    assert_int_equal(weir_exchange_gone(ex), 1); // the query tells all the same
    assert_int_equal(answer(ex, 200, "late"), 0);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gone_comes_back_when_the_client_leaves),
        cmocka_unit_test(test_gone_comes_back_for_an_open_stream),
        cmocka_unit_test(test_gone_comes_back_at_a_forced_shutdown),
        cmocka_unit_test(test_half_close_request_once),
        cmocka_unit_test(test_without_report_nothing_comes_back),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
