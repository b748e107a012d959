// A close the connection did not ask for in a request — the engine's shutdown
// (Conn::close(WEIR_CLOSE_SHUTDOWN)), or the peer's FIN after pipelined
// requests (on_eof) — lets every request already parsed be answered, in
// order, before the close: their handlers ran (a deferred one may still be
// answering on another thread), so dropping their answers would lose work
// the client cannot tell was done. Only the last answer says
// Connection: close. Found by the shutdown storm (test_storms.cc), where
// weir_metrics.requests ran ahead of responses: the first answer after the
// close carried Connection: close and dropped the rest, and their deferred
// answers met WEIR_E_GONE.
#include "cmocka_cxx.h"

#include <cstring>
#include <string>

#include "conn/conn.h"
#include "conn_check.h"

using weir::Conn;
using weir::ConnPool;
using weir::ConnSettings;
using weir::Exchange;

using namespace conn_check;

namespace {

const char kThree[] = "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n";

// The three answers, the last (only) with Connection: close.
void check_all_answered(Conn &c, const std::string &out, uint32_t reason) {
    size_t a = out.find("one11"), b = out.find("twooo"), d = out.find("three");
    assert_true(a != std::string::npos && b != std::string::npos && d != std::string::npos);
    assert_true(a < b && b < d);
    size_t close = out.find("Connection: close\r\n");
    assert_true(close != std::string::npos && close > b && close < d); // the last answer's head
    assert_true(out.find("Connection: close\r\n", close + 1) == std::string::npos);
    assert_true(c.wants_close());
    assert_int_equal(c.close_reason(), reason);
    assert_int_equal(c.counters().requests, 3);
    assert_int_equal(c.counters().responses, 3);
}

void test_conn_close_answers_what_was_parsed_in_order(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, kThree);
    Exchange *a = c.take_request(), *b = c.take_request(), *d = c.take_request();
    assert_non_null(d);
    c.close(WEIR_CLOSE_SHUTDOWN);
    assert_false(c.wants_close()); // three answers owed
    assert_int_equal(answer(c, a, "one11"), 0);
    assert_int_equal(answer(c, b, "twooo"), 0);
    assert_int_equal(answer(c, d, "three"), 0);
    check_all_answered(c, drain(c), WEIR_CLOSE_SHUTDOWN);
}

void test_conn_close_answers_out_of_order_too(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, kThree);
    Exchange *a = c.take_request(), *b = c.take_request(), *d = c.take_request();
    assert_non_null(d);
    assert_int_equal(answer(c, d, "three"), 0); // kept, before the close came
    c.close(WEIR_CLOSE_SHUTDOWN);
    assert_int_equal(answer(c, b, "twooo"), 0); // kept, after it
    assert_int_equal(c.output_pending(), 0);
    assert_int_equal(answer(c, a, "one11"), 0);
    std::string out = drain(c);
    // All three, in order; the close follows the last. Its head may predate
    // the close (it was kept before it), so only "at most one" is asked here.
    size_t x = out.find("one11"), y = out.find("twooo"), z = out.find("three");
    assert_true(x != std::string::npos && x < y && y < z && z != std::string::npos);
    size_t close = out.find("Connection: close\r\n");
    assert_true(close == std::string::npos || (close > y && close < z));
    assert_true(c.wants_close());
    assert_int_equal(c.counters().responses, 3);
}

void test_conn_peer_fin_after_pipelined_requests(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, kThree);
    Exchange *a = c.take_request(), *b = c.take_request(), *d = c.take_request();
    assert_non_null(d);
    c.on_eof(); // the client half-closed after sending all three
    assert_int_equal(answer(c, a, "one11"), 0);
    assert_int_equal(answer(c, b, "twooo"), 0);
    assert_int_equal(answer(c, d, "three"), 0);
    check_all_answered(c, drain(c), WEIR_CLOSE_PEER);
}

// The request's own close still ends it there: what came after
// Connection: close was never the client's to expect.
void test_conn_request_close_still_drops_what_follows(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, "GET /1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n");
    Exchange *a = c.take_request();
    assert_non_null(a);
    assert_null(c.take_request());
    assert_int_equal(answer(c, a, "one11"), 0);
    assert_non_null(strstr(drain(c).c_str(), "Connection: close\r\n"));
    assert_true(c.wants_close());
    assert_int_equal(c.close_reason(), WEIR_CLOSE_NOT_KEEP_ALIVE);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_close_answers_what_was_parsed_in_order),
        cmocka_unit_test(test_conn_close_answers_out_of_order_too),
        cmocka_unit_test(test_conn_peer_fin_after_pipelined_requests),
        cmocka_unit_test(test_conn_request_close_still_drops_what_follows),
    };
    return cmocka_run_group_tests_name("conn_close", tests, nullptr, nullptr);
}
