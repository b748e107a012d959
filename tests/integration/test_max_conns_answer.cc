// At the connection limit a client is answered (issue 32): a connection
// accepted over max_connections (1 worker, max_connections 2, both held by
// keep-alive clients) gets "503 Service Unavailable" with Retry-After: 1,
// Connection: close and Content-Length: 0, then EOF — never a reset, even
// when its request (and a body behind it) was already sent: the close lingers
// (Worker::answer_over_limit, lib/loop/worker_doors.cc). It is counted as
// WEIR_CLOSE_MAX_CONNECTIONS; the held connections keep being served, and once
// one leaves a new client is served normally.
// The negative arm: LoopHooks::skip_limit_answer (the close as it was before
// issue 32) — the same client then reads no answer at all (EOF or reset).
// Runs on both backends (WEIR_TEST_BACKEND).
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <string>

#include "loop/hooks.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

void handler(void *, weir_exchange *ex) { answer(ex, 200, "ok"); }

// Everything the peer sends until its close; *reset says whether the close
// was a reset (ECONNRESET) rather than an EOF. false: no close in time.
bool read_to_close(Client &c, int timeout_ms, bool *reset) {
    *reset = false;
    int64_t deadline = now_ms() + timeout_ms;
    while (now_ms() < deadline) {
        pollfd p{c.fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0)
            continue;
        char tmp[4096];
        ssize_t n = ::recv(c.fd, tmp, sizeof tmp, 0);
        if (n > 0) {
            c.buf.append(tmp, static_cast<size_t>(n));
            continue;
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        *reset = n < 0 && errno == ECONNRESET;
        return true;
    }
    return false;
}

struct Held {
    Server s;
    Client a, b;
    void start() {
        weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
        c.max_connections = 2;
        c.idle_timeout_ms = 20000;
        assert_int_equal(s.start(c), 0);
        a = connect_to(s.port);
        b = connect_to(s.port);
        for (Client *k : {&a, &b}) {
            assert_true(send_all(*k, get("/")));
            assert_int_equal(read_response(*k).status, 200);
        }
        assert_int_equal(s.metrics().connections_open, 2);
    }
};

// A request with a body behind it: the server reads none of it, so a close
// without the linger leaves unread input, and the kernel's reset would purge
// the 503 from the client's side.
std::string request_with_body(size_t body) {
    return "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body) + "\r\n\r\n" +
           std::string(body, 'b');
}

void test_over_the_limit_is_answered(void **) {
    Held h;
    h.start();
    weir::loop_hooks().skip_limit_answer = false;
    uint64_t before = h.s.metrics().closes[WEIR_CLOSE_MAX_CONNECTIONS];
    const std::string reqs[] = {get("/"), request_with_body(100 * 1024)};
    int n = 0;
    for (int round = 0; round < 3; round++)
        for (const std::string &req : reqs) {
            Client over = connect_to(h.s.port);
            assert_true(over.fd >= 0);
            assert_true(send_all(over, req));
            bool reset = true;
            assert_true(read_to_close(over, bound_ms(5000), &reset));
            if (reset || over.buf.rfind("HTTP/1.1 503 Service Unavailable\r\n", 0) != 0)
                print_message("round %d (%zu bytes sent): reset %d, read [%s]\n", round, req.size(), reset,
                              over.buf.c_str());
            assert_false(reset);
            Response r = take_response(over);
            assert_int_equal(r.status, 503);
            assert_string_equal(r.header("Retry-After").c_str(), "1");
            assert_string_equal(r.header("Connection").c_str(), "close");
            assert_string_equal(r.header("Content-Length").c_str(), "0");
            assert_true(over.buf.empty()); // the one answer, nothing after it
            n++;
        }
    assert_int_equal(h.s.wait_closes(WEIR_CLOSE_MAX_CONNECTIONS, before + n), before + n);
    assert_int_equal(h.s.metrics().connections_open, 2);
    // The held ones are still served.
    assert_true(send_all(h.a, get("/again")));
    assert_int_equal(read_response(h.a).status, 200);
    // One leaves: the limit has room again, and a new client is served.
    h.b.close();
    for (int64_t until = now_ms() + bound_ms(3000); h.s.metrics().connections_open > 1 && now_ms() < until;)
        sleep_ms(5);
    assert_int_equal(h.s.metrics().connections_open, 1);
    Client later = connect_to(h.s.port);
    assert_true(send_all(later, get("/later")));
    assert_int_equal(read_response(later).status, 200);
}

// The negative arm: without the answer (skip_limit_answer), the client that
// sent its request reads nothing before the close.
void test_over_the_limit_unanswered_without_it(void **) {
    Held h;
    h.start();
    weir::loop_hooks().skip_limit_answer = true;
    for (int i = 0; i < 2; i++) {
        Client over = connect_to(h.s.port);
        send_all(over, i == 0 ? get("/") : request_with_body(100 * 1024)); // may fail: reset mid-body
        bool reset = false;
        bool closed = read_to_close(over, bound_ms(5000), &reset);
        print_message("without the answer: closed %d, reset %d, %zu bytes read\n", closed, reset, over.buf.size());
        assert_true(closed);
        assert_true(over.buf.empty()); // no answer
    }
    weir::loop_hooks().skip_limit_answer = false;
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_over_the_limit_is_answered),
        cmocka_unit_test(test_over_the_limit_unanswered_without_it),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
