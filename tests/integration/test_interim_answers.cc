// Interim answers (weir_respond_interim, 0.4) and WEIR_RESPOND_ABORT, in
// driven mode on the test backend: a 103 with its Link fields leaves before
// the final answer; pipelined answers keep their order (an interim answer
// given before its exchange's turn waits for it); one posted from another
// thread is not overtaken by a final answer the owning thread gives at once;
// an answer begun or given refuses it; an HTTP/1.0 client gets none. ABORT
// sends nothing for its exchange and closes after the answers before it.
#include <sys/socket.h>

#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

struct Driven {
    Server srv;
    weir_worker *w = nullptr;
    int start(uint32_t stream_body_bytes = 0) {
        weir_config c = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
        c.stream_body_bytes = stream_body_bytes;
        int rc = srv.start(c);
        return rc < 0 ? rc : weir_engine_worker(srv.e, 0, &w);
    }
};

std::vector<weir_exchange *> poll_for(weir_worker *w, size_t want) {
    std::vector<weir_exchange *> got;
    weir_exchange *out[16];
    for (int64_t until = now_ms() + 3000; got.size() < want && now_ms() < until;) {
        int n = weir_worker_poll(w, out, 16, 20);
        if (n < 0)
            break;
        got.insert(got.end(), out, out + n);
    }
    return got;
}

// Polls (so that the answers given leave) and reads until c.buf holds
// needle, or 3 s. Returns whether it did.
bool pump_until(weir_worker *w, Client &c, const std::string &needle) {
    weir_exchange *out[4];
    for (int64_t until = now_ms() + 3000; now_ms() < until;) {
        weir_worker_poll(w, out, 4, 10);
        read_some(c);
        if (c.buf.find(needle) != std::string::npos)
            return true;
    }
    return false;
}

const weir_header_t kLink[] = {{{"Link", 4}, {"</a.css>; rel=preload", 21}}};

// A 103 and a second 1xx, then the answer: in that order on the wire, the
// Link field in the 103; the exchange was the host's throughout.
void test_interim_before_answer(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/hints")));
    auto got = poll_for(d.w, 1);
    assert_int_equal(got.size(), 1);
    assert_int_equal(weir_respond_interim(got[0], 103, kLink, 1), 0);
    assert_int_equal(weir_respond_interim(got[0], 102, nullptr, 0), 0);
    assert_non_null(weir_exchange_request(got[0])); // still the host's
    assert_int_equal(answer(got[0], 200, "final"), 0);
    assert_true(pump_until(d.w, c, "final"));
    size_t h = c.buf.find("HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n");
    size_t p = c.buf.find("HTTP/1.1 102 Processing\r\n\r\n");
    size_t f = c.buf.find("HTTP/1.1 200 OK\r\n");
    assert_int_equal(h, 0);
    assert_true(p != std::string::npos && p > h);
    assert_true(f != std::string::npos && f > p);
}

// Pipelined /a /b /c: /b's 103 is given before /a is answered (it waits for
// its turn, and leaves when /a's answer does, before /b's own), /c's 103 and
// answer before /b's answer (they wait behind it).
void test_interim_pipelined_order(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/a") + get("/b") + get("/c")));
    auto got = poll_for(d.w, 3);
    assert_int_equal(got.size(), 3);
    const weir_header_t lb[] = {{{"Link", 4}, {"</b>", 4}}};
    const weir_header_t lc[] = {{{"Link", 4}, {"</c>", 4}}};
    assert_int_equal(weir_respond_interim(got[1], 103, lb, 1), 0);
    weir_exchange *none[4];
    weir_worker_poll(d.w, none, 4, 20);
    assert_true(stays_silent(c, 100)); // not /b's turn: nothing may leave
    assert_int_equal(answer(got[0], 200, "body-a"), 0);
    assert_true(pump_until(d.w, c, "</b>")); // its turn came with /a's answer
    assert_int_equal(weir_respond_interim(got[2], 103, lc, 1), 0);
    assert_int_equal(answer(got[2], 200, "body-c"), 0);
    assert_int_equal(answer(got[1], 200, "body-b"), 0);
    assert_true(pump_until(d.w, c, "body-c"));
    size_t a = c.buf.find("body-a"), hb = c.buf.find("</b>"), b = c.buf.find("body-b"), hc = c.buf.find("</c>"),
           cc = c.buf.find("body-c");
    print_message("order: a %zu, 103 b %zu, b %zu, 103 c %zu, c %zu\n", a, hb, b, hc, cc);
    assert_true(a < hb && hb < b && b < hc && hc < cc);
}

// A 103 posted from another thread, then the answer given at once on the
// owning thread (Go's async handlers do this: the answer crosses with the
// worker's cycle). The answer must not overtake the posted 103: it is
// posted behind it. The arm that must lose: without Worker::nothing_posted
// the answer is applied at once and the 103 follows it (a protocol error).
void test_interim_posted_not_overtaken(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/x")));
    auto got = poll_for(d.w, 1);
    assert_int_equal(got.size(), 1);
    std::thread other([&] { assert_int_equal(weir_respond_interim(got[0], 103, kLink, 1), 0); });
    other.join();
    assert_int_equal(answer(got[0], 200, "after"), 0);
    assert_true(pump_until(d.w, c, "after"));
    size_t h = c.buf.find("HTTP/1.1 103 Early Hints");
    size_t f = c.buf.find("HTTP/1.1 200 OK");
    print_message("posted 103 at %zu, answer at %zu\n", h, f);
    assert_int_equal(h, 0);
    assert_true(f != std::string::npos && f > h);
}

// Refusals: a bad status or field, the final answer begun (a stream) or
// given (stale), a NULL handle; HTTP/1.0 gets nothing (0 all the same).
void test_interim_refusals(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    assert_int_equal(weir_respond_interim(nullptr, 103, nullptr, 0), -EINVAL);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/s") + get("/t")));
    auto got = poll_for(d.w, 2);
    assert_int_equal(got.size(), 2);
    const weir_header_t bad[] = {{{"Content-Length", 14}, {"1", 1}}};
    assert_int_equal(weir_respond_interim(got[0], 101, nullptr, 0), -EINVAL);
    assert_int_equal(weir_respond_interim(got[0], 99, nullptr, 0), -EINVAL);
    assert_int_equal(weir_respond_interim(got[0], 200, nullptr, 0), -EINVAL);
    assert_int_equal(weir_respond_interim(got[0], 103, bad, 1), -EINVAL);
    assert_int_equal(weir_stream_start(got[0], 200, nullptr, 0, WEIR_LENGTH_UNKNOWN, 0), 0);
    assert_int_equal(weir_respond_interim(got[0], 103, kLink, 1), -EINVAL); // began: too late
    assert_int_equal(weir_stream_write(got[0], "x", 1), 0);
    assert_int_equal(weir_stream_end(got[0], nullptr, 0), 0);
    assert_int_equal(answer(got[1], 200, "t"), 0);
    assert_int_equal(weir_respond_interim(got[1], 103, kLink, 1), WEIR_E_STALE); // answered
    assert_true(pump_until(d.w, c, "\r\n\r\nt"));
    assert_true(c.buf.find(" 103 ") == std::string::npos);

    Client old = connect_to(d.srv.port);
    assert_true(send_all(old, "GET /old HTTP/1.0\r\nHost: t\r\n\r\n"));
    got = poll_for(d.w, 1);
    assert_int_equal(got.size(), 1);
    assert_int_equal(weir_respond_interim(got[0], 103, kLink, 1), 0);
    assert_int_equal(answer(got[0], 200, "old"), 0);
    assert_true(pump_until(d.w, old, "old"));
    assert_int_equal(old.buf.find("HTTP/1.1 200 OK"), 0); // no 103 before it
}

// WEIR_RESPOND_ABORT: no bytes for the exchange. On its turn the connection
// closes at once; before it, the answers before it leave first.
void test_abort_sends_nothing(void **) {
    Driven d;
    assert_int_equal(d.start(), 0);
    Client c = connect_to(d.srv.port);
    assert_true(send_all(c, get("/p")));
    auto got = poll_for(d.w, 1);
    assert_int_equal(got.size(), 1);
    assert_int_equal(answer(got[0], 500, "", WEIR_RESPOND_ABORT | 0x4u), -EINVAL); // unknown flag
    assert_int_equal(answer(got[0], 500, "never", WEIR_RESPOND_ABORT), 0);
    weir_exchange *none[4];
    weir_worker_poll(d.w, none, 4, 20);
    assert_true(wait_closed(c, 2000));
    assert_true(c.buf.empty());

    Client p = connect_to(d.srv.port);
    assert_true(send_all(p, get("/1") + get("/2") + get("/3")));
    got = poll_for(d.w, 3);
    assert_int_equal(got.size(), 3);
    assert_int_equal(answer(got[1], 500, "never", WEIR_RESPOND_ABORT), 0);
    assert_int_equal(answer(got[2], 200, "dropped"), 0); // queued behind the abort: dropped at its close
    assert_int_equal(answer(got[0], 200, "first"), 0);
    for (int64_t until = now_ms() + 2000; now_ms() < until;) {
        weir_worker_poll(d.w, none, 4, 10);
        if (!read_some(p))
            break;
    }
    assert_true(wait_closed(p, 2000));
    assert_true(p.buf.find("first") != std::string::npos);
    assert_true(p.buf.find("never") == std::string::npos && p.buf.find("dropped") == std::string::npos);
    assert_true(d.srv.wait_closes(WEIR_CLOSE_ABORTED, 2, 2000) >= 2);
}

size_t count(const std::string &s, const std::string &what) {
    size_t n = 0;
    for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1))
        n++;
    return n;
}

// A 100 for a request whose body streams and expects 100-continue is that
// body's 100 Continue, once: given before the first read, weir's read sends
// no other; given after a read sent weir's, it sends nothing. The control is
// ContinuesSent (weir's own): 0 in the first arm, 1 in the second.
void test_interim_100_is_the_continue(void **) {
    for (int read_first = 0; read_first < 2; read_first++) {
        Driven d;
        assert_int_equal(d.start(1), 0);
        Client c = connect_to(d.srv.port);
        assert_true(send_all(c, "POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
        auto got = poll_for(d.w, 1);
        assert_int_equal(got.size(), 1);
        char buf[16];
        if (read_first)
            assert_int_equal(weir_body_read(got[0], buf, sizeof buf), -EAGAIN); // weir's 100 leaves
        assert_int_equal(weir_respond_interim(got[0], 100, nullptr, 0), 0);
        if (!read_first)
            assert_int_equal(weir_body_read(got[0], buf, sizeof buf), -EAGAIN); // no second one
        assert_true(pump_until(d.w, c, "100 Continue\r\n\r\n"));
        assert_true(send_all(c, "hello"));
        int64_t n = 0;
        for (int64_t until = now_ms() + 3000; n <= 0 && now_ms() < until;) {
            weir_exchange *out[4];
            weir_worker_poll(d.w, out, 4, 10); // the hand-back when the bytes come
            n = weir_body_read(got[0], buf, sizeof buf);
        }
        assert_int_equal(n, 5);
        assert_int_equal(answer(got[0], 200, "done"), 0);
        assert_true(pump_until(d.w, c, "done"));
        print_message("read first %d: %zu 100s on the wire, ContinuesSent %llu\n", read_first,
                      count(c.buf, "HTTP/1.1 100 Continue"), (unsigned long long)d.srv.metrics().continues_sent);
        assert_int_equal(count(c.buf, "HTTP/1.1 100 Continue"), 1);
        assert_int_equal(d.srv.metrics().continues_sent, read_first ? 1 : 0);
    }
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interim_before_answer),
        cmocka_unit_test(test_interim_pipelined_order),
        cmocka_unit_test(test_interim_posted_not_overtaken),
        cmocka_unit_test(test_interim_refusals),
        cmocka_unit_test(test_abort_sends_nothing),
        cmocka_unit_test(test_interim_100_is_the_continue),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
