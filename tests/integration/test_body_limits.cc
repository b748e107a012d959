// max_body holds for every body, buffered or streamed (weir_http1_limits,
// cfg.stream_body_bytes; lib/conn/conn_input.cc, conn_body.cc,
// lib/loop/worker_body.cc). Three shapes, each buffered (stream_body_bytes 0)
// and streamed (stream_body_bytes 1: every body streams), max_body 64 KiB:
//   - a declared Content-Length past it, the body sent: 413 and a lingering
//     close (the client reads the 413 and then EOF, never a reset); the
//     handler never sees the request;
//   - the same with Expect: 100-continue, the body held back: 413 is the
//     first thing the client reads (never a 100 Continue);
//   - chunked, first chunk ffffffffffffffff: 413 at that size line. Streamed,
//     the request was handed out at its head: weir_body_read says
//     WEIR_E_BODY_TOO_LARGE, weir answered the 413 itself, the handle is
//     stale (weir_respond: WEIR_E_STALE); chunks adding up past it are cut
//     at the chunk that crosses: the host reads the max_body bytes before
//     it, then the error.
// Streamed in driven mode too (the host reads on its polling thread).
// Bodies of exactly max_body pass in both modes. Each refusal counts one
// parse error and one WEIR_CLOSE_BAD_REQUEST.
// The negative arm (the rule off, as every streamed body was before 0.4):
// max_body = WEIR_BODY_UNLIMITED with streaming on. The same declared length
// with Expect draws a 100 Continue and reaches the handler; the same chunked
// body is read by the host past 64 KiB. The assertions of the positive arms
// fail on it.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

constexpr uint64_t kMax = 64 * 1024;

std::mutex g_mu;
std::set<weir_exchange *> g_reading; // streamed bodies being read (handed back)
std::atomic<int> g_seen{0};          // requests the handler was given (new ones)
std::atomic<uint64_t> g_read_bytes{0};
std::atomic<int64_t> g_error{0};     // the read error a body ended with
std::atomic<int> g_respond_after{0}; // what weir_respond said after it

int reset(void **) {
    std::lock_guard<std::mutex> lk(g_mu);
    g_reading.clear();
    g_seen = 0;
    g_read_bytes = 0;
    g_error = 0;
    g_respond_after = 1;
    return 0;
}

// Reads a streamed body to its end (answers 200 "<bytes>") or its error.
void pump(weir_exchange *ex) {
    static thread_local char buf[16384];
    for (;;) {
        int64_t n = weir_body_read(ex, buf, sizeof buf);
        if (n > 0) {
            g_read_bytes += static_cast<uint64_t>(n);
            continue;
        }
        if (n == -EAGAIN) {
            std::lock_guard<std::mutex> lk(g_mu);
            g_reading.insert(ex);
            return;
        }
        {
            std::lock_guard<std::mutex> lk(g_mu);
            g_reading.erase(ex);
        }
        if (n == 0) {
            answer(ex, 200, std::to_string(g_read_bytes.load()));
            return;
        }
        g_error = n;
        // A host written for the other body errors answers: for this one
        // weir answered already, and the handle is stale.
        g_respond_after = answer(ex, 500, "host's answer");
        return;
    }
}

void handler(void *, weir_exchange *ex) {
    bool back;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        back = g_reading.count(ex) > 0;
    }
    if (back) {
        pump(ex); // handed back
        return;
    }
    g_seen++;
    const weir_request *r = weir_exchange_request(ex);
    if (r->flags & WEIR_REQ_BODY_STREAM) {
        pump(ex);
        return;
    }
    answer(ex, 200, std::to_string(r->body.len));
}

const weir_http1_limits *limits(uint64_t max_body) {
    static weir_http1_limits l;
    weir_http1_limits_init(&l);
    l.max_body = max_body;
    return &l; // copied by weir_engine_create
}

int start(Server &s, bool streamed, uint64_t max_body = kMax) {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.stream_body_bytes = streamed ? 1 : 0;
    c.limits = limits(max_body);
    return s.start(c);
}

std::string post(uint64_t len, const std::string &extra = "") {
    return "POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(len) + "\r\n" + extra + "\r\n";
}

const char kChunkedHead[] = "POST /up HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";

// After a response: the connection ends with EOF (0) or an errno (ECONNRESET...).
int ending(Client &c) {
    char b[4096];
    int64_t until = now_ms() + bound_ms(5000);
    while (now_ms() < until) {
        pollfd p{c.fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0)
            continue;
        ssize_t n = ::recv(c.fd, b, sizeof b, 0);
        if (n == 0)
            return 0;
        if (n < 0)
            return errno == EINTR ? ending(c) : errno;
    }
    return ETIMEDOUT;
}

void refused(Server &s, Response r, Client &c) {
    assert_int_equal(r.status, 413);
    assert_string_equal(r.header("Connection").c_str(), "close");
    assert_int_equal(ending(c), 0); // a lingering close: EOF, not a reset
    assert_int_equal(s.wait_closes(WEIR_CLOSE_BAD_REQUEST, 1), 1);
    assert_int_equal(s.metrics().parse_errors, 1);
}

// Shape 1: a declared length past max_body, its body on its way.
void declared(bool streamed) {
    Server s;
    assert_int_equal(start(s, streamed), 0);
    Client c = connect_to(s.port);
    std::string bytes = post(kMax + 1) + std::string(kMax + 1, 'b');
    std::thread sender([&] { send_all(c, bytes); });
    Response r = read_response(c);
    sender.join();
    refused(s, r, c);
    assert_int_equal(g_seen.load(), 0); // never handed out
}
void test_declared_buffered(void **) { declared(false); }
void test_declared_streamed(void **) { declared(true); }

// Shape 2: the same with Expect: 100-continue; the body is never sent.
void expect_continue(bool streamed) {
    Server s;
    assert_int_equal(start(s, streamed), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, post(99999999999ull, "Expect: 100-continue\r\n")));
    Response r = read_response(c); // the first answer: a 100 would come first
    refused(s, r, c);
    assert_int_equal(g_seen.load(), 0);
    assert_int_equal(s.metrics().continues_sent, 0);
}
void test_expect_buffered(void **) { expect_continue(false); }
void test_expect_streamed(void **) { expect_continue(true); }

// Shape 3: chunked, the first chunk's size past every limit.
void huge_chunk(bool streamed) {
    Server s;
    assert_int_equal(start(s, streamed), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, std::string(kChunkedHead) + "ffffffffffffffff\r\n" + std::string(1000, 'x')));
    Response r = read_response(c);
    refused(s, r, c);
    if (streamed) {
        // Handed out at its head; the read met the size line.
        assert_int_equal(g_seen.load(), 1);
        assert_int_equal(g_error.load(), WEIR_E_BODY_TOO_LARGE);
        assert_int_equal(g_respond_after.load(), WEIR_E_STALE); // weir answered for it
        assert_int_equal(g_read_bytes.load(), 0);
    } else {
        assert_int_equal(g_seen.load(), 0);
    }
}
void test_huge_chunk_buffered(void **) { huge_chunk(false); }
void test_huge_chunk_streamed(void **) { huge_chunk(true); }

// Shape 3, driven: the host reads on its polling thread; the read that meets
// the size line says WEIR_E_BODY_TOO_LARGE, and the 413 leaves while the host
// goes on polling (its answer, after, is refused as stale).
void test_huge_chunk_driven(void **) {
    weir_config c0 = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
    c0.stream_body_bytes = 1;
    c0.limits = limits(kMax);
    Server s;
    assert_int_equal(s.start(c0), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, std::string(kChunkedHead) + "ffffffffffffffff\r\n" + std::string(1000, 'x')));
    weir_exchange *out[8], *ex = nullptr;
    int64_t until = now_ms() + bound_ms(5000);
    while (!ex && now_ms() < until)
        if (weir_worker_poll(w, out, 8, 10) > 0)
            ex = out[0];
    assert_non_null(ex);
    char buf[4096];
    int64_t n = weir_body_read(ex, buf, sizeof buf);
    until = now_ms() + bound_ms(5000);
    while (n == -EAGAIN && now_ms() < until) { // the size line not here yet: handed back when it is
        if (weir_worker_poll(w, out, 8, 10) > 0)
            n = weir_body_read(ex, buf, sizeof buf);
    }
    assert_int_equal(n, WEIR_E_BODY_TOO_LARGE);
    assert_int_equal(weir_respond(ex, 500, nullptr, 0, nullptr, 0, 0), WEIR_E_STALE);
    until = now_ms() + bound_ms(3000);
    while (c.buf.find("\r\n\r\n") == std::string::npos && now_ms() < until) {
        weir_worker_poll(w, out, 8, 5);
        read_some(c);
    }
    Response r = take_response(c);
    assert_int_equal(r.status, 413);
    assert_string_equal(r.header("Connection").c_str(), "close");
    until = now_ms() + bound_ms(3000); // counted at the close: the loop runs while the host polls
    while (s.metrics().closes[WEIR_CLOSE_BAD_REQUEST] == 0 && now_ms() < until)
        weir_worker_poll(w, out, 8, 5);
    weir_metrics m = s.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_BAD_REQUEST], 1);
    assert_int_equal(m.parse_errors, 1);
}

// Shape 3 again: 8 KiB chunks, sent as the client goes, cross at the ninth.
std::string chunks(size_t n, size_t size) {
    std::string out;
    char sz[32];
    std::snprintf(sz, sizeof sz, "%zx\r\n", size);
    for (size_t i = 0; i < n; i++)
        out += sz + std::string(size, 'c') + "\r\n";
    return out;
}
void crossing(bool streamed) {
    Server s;
    assert_int_equal(start(s, streamed), 0);
    Client c = connect_to(s.port);
    std::string bytes = std::string(kChunkedHead) + chunks(16, 8192) + "0\r\n\r\n";
    std::thread sender([&] {
        for (size_t off = 0; off < bytes.size(); off += 4096) {
            if (!send_all(c, bytes.substr(off, 4096)))
                return;
            sleep_ms(1);
        }
    });
    Response r = read_response(c);
    sender.join();
    print_message("streamed %d: the host read %llu bytes\n", streamed, static_cast<unsigned long long>(g_read_bytes.load()));
    refused(s, r, c);
    if (streamed) {
        assert_int_equal(g_error.load(), WEIR_E_BODY_TOO_LARGE);
        assert_int_equal(g_read_bytes.load(), kMax); // the data before the crossing chunk, no byte past it
        assert_int_equal(g_respond_after.load(), WEIR_E_STALE);
    }
}
void test_crossing_buffered(void **) { crossing(false); }
void test_crossing_streamed(void **) { crossing(true); }

// Exactly max_body passes, declared or chunked, in both modes.
void at_the_limit(bool streamed) {
    Server s;
    assert_int_equal(start(s, streamed), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, post(kMax) + std::string(kMax, 'a')));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    g_read_bytes = 0;
    assert_true(send_all(c, std::string(kChunkedHead) + chunks(8, 8192) + "0\r\n\r\n"));
    r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), std::to_string(kMax).c_str());
    assert_int_equal(s.metrics().parse_errors, 0);
}
void test_at_the_limit_buffered(void **) { at_the_limit(false); }
void test_at_the_limit_streamed(void **) { at_the_limit(true); }

// The negative arm: WEIR_BODY_UNLIMITED, streaming on (the rule off, as
// every streamed body was before). The same requests go through: a 100
// Continue for the huge declared length, the handler sees it; the chunked
// body is read past 64 KiB.
void test_arm_unlimited(void **) {
    Server s;
    assert_int_equal(start(s, true, WEIR_BODY_UNLIMITED), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, post(99999999999ull, "Expect: 100-continue\r\n")));
    Response r = read_response(c);
    assert_int_equal(r.status, 100); // the positive arm's 413 is not what comes
    assert_int_equal(g_seen.load(), 1);
    c.close();
    Client c2 = connect_to(s.port);
    assert_true(send_all(c2, std::string(kChunkedHead) + chunks(16, 8192) + "0\r\n\r\n"));
    r = read_response(c2);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), std::to_string(16 * 8192).c_str());
    assert_int_equal(s.metrics().parse_errors, 0);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_declared_buffered, reset),
        cmocka_unit_test_setup(test_declared_streamed, reset),
        cmocka_unit_test_setup(test_expect_buffered, reset),
        cmocka_unit_test_setup(test_expect_streamed, reset),
        cmocka_unit_test_setup(test_huge_chunk_buffered, reset),
        cmocka_unit_test_setup(test_huge_chunk_streamed, reset),
        cmocka_unit_test_setup(test_huge_chunk_driven, reset),
        cmocka_unit_test_setup(test_crossing_buffered, reset),
        cmocka_unit_test_setup(test_crossing_streamed, reset),
        cmocka_unit_test_setup(test_at_the_limit_buffered, reset),
        cmocka_unit_test_setup(test_at_the_limit_streamed, reset),
        cmocka_unit_test_setup(test_arm_unlimited, reset),
    };
    return cmocka_run_group_tests_name("body_limits", tests, nullptr, nullptr);
}
