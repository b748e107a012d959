// Every parser limit and error answered on a real socket with its status, then
// a close counted as bad_request; the answers to earlier pipelined requests
// still arrive first.
#include "cmocka_cxx.h"

#include <string>

#include "support/net.h"

using namespace testnet;

namespace {

void handler(void *, weir_exchange *ex) { answer(ex, 200, "ok"); }

struct Fixture {
    Server srv;
};

int setup(void **state) {
    auto *f = new Fixture;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    weir_http1_limits lim; // copied by weir_engine_create
    weir_http1_limits_init(&lim);
    lim.max_request_line = 100;
    lim.max_header_bytes = 300;
    lim.max_headers = 5;
    lim.max_body = 100;
    c.limits = &lim;
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

// Sends bytes, expects one answer with status, then a close.
void expect_status_then_close(Fixture *f, const std::string &bytes, int status) {
    uint64_t before = f->srv.metrics().closes[WEIR_CLOSE_BAD_REQUEST];
    Client c = connect_to(f->srv.port);
    assert_true(c.fd >= 0);
    assert_true(send_all(c, bytes));
    Response r = read_response(c);
    if (r.status != status)
        fail_msg("sent %.60s...: status %d, want %d", bytes.c_str(), r.status, status);
    assert_true(wait_closed(c));
    int64_t until = now_ms() + 2000;
    while (f->srv.metrics().closes[WEIR_CLOSE_BAD_REQUEST] == before && now_ms() < until)
        sleep_ms(2);
    assert_int_equal(f->srv.metrics().closes[WEIR_CLOSE_BAD_REQUEST], before + 1);
}

void test_limits_request_line_414(void **state) {
    expect_status_then_close(static_cast<Fixture *>(*state), get("/" + std::string(200, 'a')), 414);
}

void test_limits_header_bytes_431(void **state) {
    expect_status_then_close(static_cast<Fixture *>(*state), get("/", "X-Big: " + std::string(400, 'b') + "\r\n"),
                             431);
}

void test_limits_header_count_431(void **state) {
    std::string extra;
    for (int i = 0; i < 8; i++)
        extra += "X-" + std::to_string(i) + ": v\r\n";
    expect_status_then_close(static_cast<Fixture *>(*state), get("/", extra), 431);
}

void test_limits_body_413(void **state) {
    expect_status_then_close(static_cast<Fixture *>(*state),
                             "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n" + std::string(1000, 'x'), 413);
}

void test_limits_chunked_body_413(void **state) {
    std::string req = "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    for (int i = 0; i < 5; i++)
        req += "32\r\n" + std::string(50, 'y') + "\r\n";
    req += "0\r\n\r\n";
    expect_status_then_close(static_cast<Fixture *>(*state), req, 413);
}

void test_limits_unknown_coding_501(void **state) {
    expect_status_then_close(static_cast<Fixture *>(*state),
                             "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: frob, chunked\r\n\r\n", 501);
}

void test_limits_version_505(void **state) {
    expect_status_then_close(static_cast<Fixture *>(*state), "GET / HTTP/2.0\r\nHost: t\r\n\r\n", 505);
}

void test_limits_bad_requests_400(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    expect_status_then_close(f, "GET / HTTP/1.1\r\n\r\n", 400);                      // no Host
    expect_status_then_close(f, "GET / HTTP/1.1\r\nHost: t\r\nBad Name: v\r\n\r\n", 400); // space in a name
    expect_status_then_close(f, "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: x\r\n\r\n", 400);
    expect_status_then_close(f, "GET / HTTP/1.1\r\nHost: t\r\nHost: u\r\n\r\n", 400);
}

void test_limits_error_after_pipelined_answers(void **state) {
    auto *f = static_cast<Fixture *>(*state);
    Client c = connect_to(f->srv.port);
    assert_true(send_all(c, get("/a") + get("/b") + "GET / HTTP/1.1\r\n\r\n"));
    assert_int_equal(read_response(c).status, 200);
    assert_int_equal(read_response(c).status, 200);
    assert_int_equal(read_response(c).status, 400);
    assert_true(wait_closed(c));
    assert_true(f->srv.metrics().parse_errors >= 1);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_limits_request_line_414, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_header_bytes_431, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_header_count_431, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_body_413, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_chunked_body_413, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_unknown_coding_501, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_version_505, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_bad_requests_400, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits_error_after_pipelined_answers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
