// Unit tests of the connection state machine (lib/conn): bytes in, actions out.
#include "cmocka_cxx.h"

#include <cstring>
#include <string>
#include <vector>

#include "conn/conn.h"
#include "conn_check.h"

using weir::Conn;
using weir::ConnPool;
using weir::ConnSettings;
using weir::ConnWait;
using weir::Exchange;

using namespace conn_check;

namespace {

const char kOk5[] = "HTTP/1.1 200 OK\r\nDate: D\r\nContent-Length: 5\r\n\r\n";

void test_conn_simple_get(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 7);
    assert_int_equal(c.wait(), (int)ConnWait::FirstByte);
    feed(c, "GET /a?b=1 HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n");
    Exchange *x = c.take_request();
    assert_non_null(x);
    assert_null(c.take_request());
    assert_string_equal(sv(x->req.method).c_str(), "GET");
    assert_string_equal(sv(x->req.path).c_str(), "/a");
    assert_string_equal(sv(x->req.query).c_str(), "b=1");
    assert_int_equal(x->req.num_headers, 2);
    assert_int_equal(x->req.connection_id, 7);
    assert_int_equal(c.wait(), (int)ConnWait::Handler);
    assert_int_equal(c.outstanding(), 1);
    assert_int_equal(answer(c, x, "hello"), 0);
    assert_int_equal(c.outstanding(), 0);
    assert_int_equal(c.wait(), (int)ConnWait::Output);
    assert_string_equal(drain(c).c_str(), (std::string(kOk5) + "hello").c_str());
    assert_false(c.wants_close());
    assert_int_equal(c.wait(), (int)ConnWait::Idle);
    // Idle keep-alive connections give their buffers back.
    assert_false(c.holds_buffers());
    assert_int_equal(pool.cached(), 1);
    assert_int_equal(c.counters().requests, 1);
    assert_int_equal(c.counters().responses, 1);
}

void test_conn_pipeline_answers_in_order(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    std::string req = "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n"
                      "GET /3 HTTP/1.1\r\nHost: x\r\n\r\n";
    feed(c, req);
    Exchange *a = c.take_request(), *b = c.take_request(), *d = c.take_request();
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(d);
    assert_string_equal(sv(d->req.path).c_str(), "/3");
    // Answer in reverse: nothing may leave before /1 is answered.
    assert_int_equal(answer(c, d, "three"), 0);
    assert_int_equal(answer(c, b, "twooo"), 0);
    assert_int_equal(c.output_pending(), 0);
    assert_int_equal(answer(c, a, "one11"), 0);
    std::string want = std::string(kOk5) + "one11" + kOk5 + "twooo" + kOk5 + "three";
    assert_string_equal(drain(c).c_str(), want.c_str());
    assert_false(c.holds_buffers());
}

void test_conn_http10_closes_unless_keep_alive(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    {
        Conn c(s, pool, 1);
        feed(c, "GET / HTTP/1.0\r\n\r\nGET /never HTTP/1.0\r\n\r\n");
        Exchange *x = c.take_request();
        assert_non_null(x);
        assert_null(c.take_request()); // nothing is parsed after a closing request
        assert_int_equal(answer(c, x, "hello"), 0);
        std::string out = drain(c);
        assert_non_null(strstr(out.c_str(), "Connection: close\r\n"));
        assert_true(c.wants_close());
        assert_int_equal(c.close_reason(), WEIR_CLOSE_NOT_KEEP_ALIVE);
        assert_int_equal(c.wait(), (int)ConnWait::Done);
    }
    {
        Conn c(s, pool, 2);
        feed(c, "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        Exchange *x = c.take_request();
        assert_int_equal(answer(c, x, "hello"), 0);
        std::string out = drain(c);
        assert_non_null(strstr(out.c_str(), "Connection: keep-alive\r\n"));
        assert_false(c.wants_close());
    }
    {
        Conn c(s, pool, 3);
        feed(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        Exchange *x = c.take_request();
        assert_int_equal(answer(c, x, "hello"), 0);
        assert_non_null(strstr(drain(c).c_str(), "Connection: close\r\n"));
        assert_true(c.wants_close());
    }
}

void test_conn_bad_request_after_good_ones(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\nGET /bad HTTP/1.1\r\nHost: x\r\nBad Name: v\r\n\r\n");
    Exchange *x = c.take_request();
    assert_non_null(x);
    assert_null(c.take_request());
    // The error answer waits for the earlier answer.
    assert_int_equal(c.output_pending(), 0);
    assert_false(c.wants_close());
    assert_int_equal(answer(c, x, "hello"), 0);
    std::string out = drain(c);
    assert_int_equal(out.find(kOk5), 0);
    assert_true(out.find("HTTP/1.1 400 Bad Request\r\n") != std::string::npos);
    assert_true(out.find("Connection: close") != std::string::npos);
    assert_true(c.wants_close());
    assert_int_equal(c.close_reason(), WEIR_CLOSE_BAD_REQUEST);
    assert_int_equal(c.counters().parse_errors, 1);
}

struct StatusCase {
    const char *req;
    const char *status;
};

void test_conn_limit_statuses(void **) {
    ConnSettings s = settings();
    s.limits.max_request_line = 64;
    s.limits.max_header_bytes = 128;
    s.limits.max_headers = 4;
    s.limits.max_body = 10;
    std::string longline = "GET /" + std::string(100, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n";
    std::string bigheader = "GET / HTTP/1.1\r\nHost: x\r\nX: " + std::string(200, 'b') + "\r\n\r\n";
    std::string many = "GET / HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n";
    const StatusCase cases[] = {
        {longline.c_str(), "HTTP/1.1 414 "},
        {bigheader.c_str(), "HTTP/1.1 431 "},
        {many.c_str(), "HTTP/1.1 431 "},
        {"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n", "HTTP/1.1 413 "},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "HTTP/1.1 501 "},
        {"GET / HTTP/2.0\r\nHost: x\r\n\r\n", "HTTP/1.1 505 "},
        {"GET / HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "HTTP/1.1 400 "},
        {"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n0123456789a\r\n0\r\n\r\n",
         "HTTP/1.1 400 "},
        {"GET / HTTP/1.1\r\nHost: x\r\nExpect: magic\r\n\r\n", "HTTP/1.1 417 "},
    };
    for (const StatusCase &k : cases) {
        ConnPool pool(s);
        Conn c(s, pool, 1);
        feed(c, k.req);
        assert_null(c.take_request());
        std::string out = drain(c);
        if (out.find(k.status) != 0)
            fail_msg("request %.60s...: got %.40s, want %s", k.req, out.c_str(), k.status);
        assert_true(c.wants_close());
        assert_int_equal(c.close_reason(), WEIR_CLOSE_BAD_REQUEST);
    }
}

void test_conn_content_length_body_split(void **) {
    ConnSettings s = settings();
    std::string req = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world";
    for (size_t piece = 1; piece <= req.size(); ++piece) {
        ConnPool pool(s);
        Conn c(s, pool, 1);
        feed(c, req, piece);
        Exchange *x = c.take_request();
        assert_non_null(x);
        assert_string_equal(sv(x->req.body).c_str(), "hello world");
        assert_string_equal(sv(x->req.method).c_str(), "POST");
        assert_int_equal(answer(c, x, "hello"), 0);
    }
}

void test_conn_chunked_body_with_trailers(void **) {
    ConnSettings s = settings();
    std::string req = "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                      "5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nX-Sum: 42\r\n\r\n"
                      "GET /next HTTP/1.1\r\nHost: x\r\n\r\n";
    for (size_t piece = 1; piece <= req.size(); piece += (piece < 8 ? 1 : 7)) {
        ConnPool pool(s);
        Conn c(s, pool, 1);
        feed(c, req, piece);
        Exchange *x = c.take_request();
        assert_non_null(x);
        assert_string_equal(sv(x->req.body).c_str(), "hello world");
        assert_int_equal(x->req.num_trailers, 1);
        assert_string_equal(sv(x->req.trailers[0].name).c_str(), "X-Sum");
        assert_string_equal(sv(x->req.trailers[0].value).c_str(), "42");
        Exchange *y = c.take_request();
        assert_non_null(y);
        assert_string_equal(sv(y->req.path).c_str(), "/next");
        // The first request's views survive the second's parse.
        assert_string_equal(sv(x->req.body).c_str(), "hello world");
        assert_int_equal(answer(c, x, "hello"), 0);
        assert_int_equal(answer(c, y, "hello"), 0);
    }
}

void test_conn_expect_continue(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    {
        Conn c(s, pool, 1);
        feed(c, "PUT /f HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
        assert_null(c.take_request());
        assert_string_equal(drain(c).c_str(), "HTTP/1.1 100 Continue\r\n\r\n");
        assert_int_equal(c.counters().continues_sent, 1);
        assert_int_equal(c.wait(), (int)ConnWait::Body); // the head is complete: the body timer, not the header deadline
        feed(c, "hello");
        Exchange *x = c.take_request();
        assert_non_null(x);
        assert_string_equal(sv(x->req.body).c_str(), "hello");
        assert_int_equal(answer(c, x, "hello"), 0);
        assert_int_equal(drain(c).find(kOk5), 0);
    }
    {
        // The body came with the head: no interim answer is owed.
        Conn c(s, pool, 2);
        feed(c, "PUT /f HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello");
        Exchange *x = c.take_request();
        assert_non_null(x);
        assert_int_equal(c.output_pending(), 0);
        assert_int_equal(c.counters().continues_sent, 0);
        assert_int_equal(answer(c, x, "hello"), 0);
    }
    {
        // Behind an unanswered request, the 100 waits for that answer.
        Conn c(s, pool, 3);
        feed(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
                "PUT /f HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n");
        Exchange *x = c.take_request();
        assert_non_null(x);
        assert_int_equal(c.output_pending(), 0);
        assert_int_equal(answer(c, x, "hello"), 0);
        std::string out = drain(c);
        assert_string_equal(out.c_str(), (std::string(kOk5) + "hello" + "HTTP/1.1 100 Continue\r\n\r\n").c_str());
    }
}

void test_conn_head_204_304_framing(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, "HEAD / HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    Exchange *h = c.take_request(), *a = c.take_request(), *b = c.take_request();
    assert_int_equal(answer(c, h, "hello"), 0);
    assert_int_equal(c.respond(a, 204, nullptr, 0, nullptr, 0, 0), 0);
    assert_int_equal(c.respond(b, 304, nullptr, 0, "ignored", 7, 0), 0);
    std::string want = std::string(kOk5) + "HTTP/1.1 204 No Content\r\nDate: D\r\n\r\n" +
                       "HTTP/1.1 304 Not Modified\r\nDate: D\r\n\r\n";
    assert_string_equal(drain(c).c_str(), want.c_str());
}

void test_conn_respond_refuses_bad_answers(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    Exchange *x = c.take_request();
    weir_header_t cl = {{"Content-Length", 14}, {"3", 1}};
    weir_header_t crlf = {{"X-A", 3}, {"a\r\nb", 4}};
    weir_header_t badname = {{"X A", 3}, {"v", 1}};
    assert_int_equal(c.respond(x, 200, &cl, 1, nullptr, 0, 0), -EINVAL);
    assert_int_equal(c.respond(x, 200, &crlf, 1, nullptr, 0, 0), -EINVAL);
    assert_int_equal(c.respond(x, 200, &badname, 1, nullptr, 0, 0), -EINVAL);
    assert_int_equal(c.respond(x, 101, nullptr, 0, nullptr, 0, 0), -EINVAL);
    assert_int_equal(c.respond(nullptr, 200, nullptr, 0, nullptr, 0, 0), -EINVAL);
    // Still answerable after refusals; answered twice is refused.
    weir_header_t ok = {{"Content-Type", 12}, {"text/plain", 10}};
    assert_int_equal(c.respond(x, 200, &ok, 1, "hello", 5, 0), 0);
    assert_int_equal(c.respond(x, 200, nullptr, 0, nullptr, 0, 0), -EINVAL);
    std::string out = drain(c);
    assert_true(out.find("Content-Type: text/plain\r\n") != std::string::npos);
}

void test_conn_output_limit_closes(void **) {
    ConnSettings s = settings();
    s.max_output_bytes = 1000;
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    Exchange *x = c.take_request();
    std::string big(2000, 'z');
    assert_int_equal(answer(c, x, big), 0);
    assert_true(c.wants_close());
    assert_int_equal(c.close_reason(), WEIR_CLOSE_OUTPUT_LIMIT);
    assert_int_equal(c.output_pending(), 0);
    assert_int_equal(c.wait(), (int)ConnWait::Done);
}

void test_conn_zombie_exchange_answer_is_gone(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    Exchange *a = c.take_request(), *b = c.take_request();
    c.on_closed();
    assert_int_equal(c.outstanding(), 2);
    // Views stay readable until answered.
    assert_string_equal(sv(b->req.path).c_str(), "/b");
    assert_int_equal(answer(c, b, "x"), WEIR_E_GONE);
    assert_int_equal(c.outstanding(), 1);
    assert_int_equal(answer(c, a, "x"), WEIR_E_GONE);
    assert_int_equal(c.outstanding(), 0);
    assert_false(c.holds_buffers());
}

void test_conn_pipeline_bound_backpressure(void **) {
    ConnSettings s = settings(16384, 2);
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n");
    Exchange *a = c.take_request(), *b = c.take_request();
    assert_non_null(b);
    assert_null(c.take_request());
    assert_int_equal(c.read_space().iov_len, 0);
    assert_int_equal(answer(c, a, "hello"), 0);
    Exchange *d = c.take_request();
    assert_non_null(d);
    assert_string_equal(sv(d->req.path).c_str(), "/3");
    assert_int_equal(answer(c, b, "hello"), 0);
    assert_int_equal(answer(c, d, "hello"), 0);
    std::string out = drain(c);
    assert_int_equal(out.size(), 3 * (strlen(kOk5) + 5));
}

void test_conn_eof_rules(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    {
        // A partial request is dropped: no answer, close as peer.
        Conn c(s, pool, 1);
        feed(c, "GET / HTTP/1.1\r\nHo");
        assert_int_equal(c.wait(), (int)ConnWait::Head);
        c.on_eof();
        assert_true(c.wants_close());
        assert_int_equal(c.close_reason(), WEIR_CLOSE_PEER);
        assert_int_equal(c.output_pending(), 0);
    }
    {
        // A complete request is still answered, then the connection closes.
        Conn c(s, pool, 2);
        feed(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        Exchange *x = c.take_request();
        c.on_eof();
        assert_false(c.wants_close());
        assert_int_equal(answer(c, x, "hello"), 0);
        assert_true(drain(c).find("Connection: close") != std::string::npos);
        assert_true(c.wants_close());
    }
}

void test_conn_handler_close_drops_later(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    feed(c, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
    Exchange *a = c.take_request(), *b = c.take_request();
    assert_int_equal(answer(c, a, "hello", WEIR_RESPOND_CLOSE), 0);
    assert_int_equal(answer(c, b, "hello"), WEIR_E_GONE);
    assert_true(c.wants_close());
    assert_int_equal(c.close_reason(), WEIR_CLOSE_HANDLER);
    assert_int_equal(drain(c).size(), strlen(kOk5) + 5 + strlen("Connection: close\r\n"));
}

void test_conn_large_body_grows_buffer(void **) {
    ConnSettings s = settings(1024);
    s.limits.max_body = 200000;
    std::string body(150000, 'q');
    body[0] = 'A';
    body.back() = 'Z';
    std::string req = "GET /x HTTP/1.1\r\nHost: x\r\n\r\nPOST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 150000\r\n\r\n" +
                      body;
    ConnPool pool(s);
    Conn c(s, pool, 1);
    size_t fed = feed(c, req, 700);
    // The first request pins the buffer until it is answered.
    Exchange *x = c.take_request();
    assert_non_null(x);
    assert_true(fed < req.size());
    assert_int_equal(answer(c, x, "hello"), 0);
    drain(c);
    fed += feed(c, req.substr(fed), 700);
    assert_int_equal(fed, req.size());
    Exchange *y = c.take_request();
    assert_non_null(y);
    assert_int_equal(y->req.body.len, body.size());
    assert_true(memcmp(y->req.body.ptr, body.data(), body.size()) == 0);
    assert_string_equal(sv(y->req.path).c_str(), "/big");
    assert_int_equal(y->req.num_headers, 2);
    assert_string_equal(sv(y->req.headers[1].value).c_str(), "150000");
    assert_int_equal(answer(c, y, "hello"), 0);
    drain(c);
    assert_false(c.holds_buffers());
}

// Whatever the split, the same bytes in give the same bytes out.
std::string run_schedule(const std::string &stream, const std::vector<size_t> &cuts) {
    ConnSettings s = settings(512, 4);
    ConnPool pool(s);
    Conn c(s, pool, 1);
    std::string out;
    size_t off = 0;
    size_t ci = 0;
    int guard = 0;
    while (off < stream.size() && guard++ < 100000) {
        size_t piece = ci < cuts.size() ? cuts[ci++] : stream.size();
        size_t got = feed(c, stream.substr(off, piece), SIZE_MAX);
        off += got;
        while (Exchange *x = c.take_request()) {
            std::string body = sv(x->req.method) + " " + sv(x->req.target) + " " + std::to_string(x->req.body.len);
            c.respond(x, 200, nullptr, 0, body.data(), body.size(), 0);
        }
        out += drain(c);
        if (c.wants_close())
            break;
    }
    return out;
}

void test_conn_split_invariance(void **) {
    std::string stream =
        "GET /1 HTTP/1.1\r\nHost: a\r\n\r\n"
        "POST /2 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"
        "PUT /3 HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n"
        "3\r\nxyz\r\n0\r\nT: 1\r\n\r\n"
        "GET /4 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
        "GET /5 HTTP/1.1\r\nHost: a\r\nBad : x\r\n\r\n"
        "GET /never HTTP/1.1\r\nHost: a\r\n\r\n";
    std::string whole = run_schedule(stream, {});
    assert_true(whole.find("HTTP/1.1 400") != std::string::npos);
    for (size_t cut = 1; cut < stream.size(); ++cut) {
        std::string got = run_schedule(stream, {cut});
        // A 100 Continue appears only when the body was not already there.
        size_t p;
        while ((p = got.find("HTTP/1.1 100 Continue\r\n\r\n")) != std::string::npos)
            got.erase(p, 25);
        if (got != whole)
            fail_msg("split at %zu differs", cut);
    }
    std::vector<size_t> ones(stream.size(), 1);
    std::string bytewise = run_schedule(stream, ones);
    size_t p;
    while ((p = bytewise.find("HTTP/1.1 100 Continue\r\n\r\n")) != std::string::npos)
        bytewise.erase(p, 25);
    assert_string_equal(bytewise.c_str(), whole.c_str());
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conn_simple_get),
        cmocka_unit_test(test_conn_pipeline_answers_in_order),
        cmocka_unit_test(test_conn_http10_closes_unless_keep_alive),
        cmocka_unit_test(test_conn_bad_request_after_good_ones),
        cmocka_unit_test(test_conn_limit_statuses),
        cmocka_unit_test(test_conn_content_length_body_split),
        cmocka_unit_test(test_conn_chunked_body_with_trailers),
        cmocka_unit_test(test_conn_expect_continue),
        cmocka_unit_test(test_conn_head_204_304_framing),
        cmocka_unit_test(test_conn_respond_refuses_bad_answers),
        cmocka_unit_test(test_conn_output_limit_closes),
        cmocka_unit_test(test_conn_zombie_exchange_answer_is_gone),
        cmocka_unit_test(test_conn_pipeline_bound_backpressure),
        cmocka_unit_test(test_conn_eof_rules),
        cmocka_unit_test(test_conn_handler_close_drops_later),
        cmocka_unit_test(test_conn_large_body_grows_buffer),
        cmocka_unit_test(test_conn_split_invariance),
    };
    return cmocka_run_group_tests_name("conn", tests, nullptr, nullptr);
}
