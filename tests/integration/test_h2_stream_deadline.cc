// HTTP/2's handler deadline is each stream's (docs/http2.md,
// Worker::expire_held): a stream the host holds past handler_timeout_ms is
// cut alone, counted in h2_handler_timeouts, and the connection and its
// other streams go on. On every backend, with a real nghttp2 client.
//
// Times are judged against the deadline T itself, from the client's side:
// a stream's 503 may never come sooner than T after the client sent it (the
// server took it later still), so the lower bounds cannot flake; the upper
// bounds are the length of a run of traffic, several T long.
//
//   test_h2_stream_deadline_on_a_busy_connection: a stream held for ever on
//     a connection whose other streams keep being answered (one every
//     T/8) is answered 503 while that traffic goes on, and the connection
//     stays open (no GOAWAY, no close). Negative arm,
//     ..._connection_deadline_loses_it (LoopHooks::h2_connection_deadline:
//     the connection's deadline, as before, which runs only while the
//     connection waits for nothing but the host and starts again with
//     every answer): the held stream is still unanswered when the traffic
//     ends, 4 T later, the loss the rule guards against.
//   test_h2_stream_deadline_counts_from_each_stream: two streams taken T/2
//     apart each get their 503 no sooner than T after their own request (a
//     connection's deadline answers both at the first one's), then a new
//     stream on the same connection is served.
//   test_h2_stream_deadline_resets_a_begun_answer: a streamed answer whose
//     head has left and whose host then falls silent is reset alone
//     (RST_STREAM INTERNAL_ERROR) no sooner than T after it began; one
//     written to every T/3 for 2 T is not cut and arrives whole (the
//     deadline counts from the host's last piece of work).
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/hooks.h"
#include "support/h2_wire.h"
#include "support/net.h"

using namespace testnet;
using weir::loop_hooks;

namespace {

constexpr int kT = 400; // handler_timeout_ms

std::mutex g_mu;
std::vector<weir_exchange *> g_held;
weir_exchange *g_busy = nullptr; // /stream-busy's

// Drives the client for ms by the clock (Client::run's own bound is
// stretched under TSan: a pause must not be), calling watch() as it goes.
void pump(h2wire::Client &c, int ms, const std::function<void()> &watch = [] {}) {
    const int64_t until = now_ms() + ms;
    c.run([&] {
        watch();
        return now_ms() >= until;
    }, ms + 1000);
}

// /hold*: deferred and kept; /stream*: a streamed answer begun and kept;
// anything else answered at once.
void handler(void *, weir_exchange *ex) {
    const std::string path = str(weir_exchange_request(ex)->path);
    if (path.rfind("/hold", 0) == 0 || path.rfind("/stream", 0) == 0) {
        if (path.rfind("/stream", 0) == 0)
            assert_int_equal(weir_stream_start(ex, 200, nullptr, 0, UINT64_MAX, 0), 0);
        else
            weir_defer(ex);
        std::lock_guard<std::mutex> g(g_mu);
        g_held.push_back(ex);
        if (path == "/stream-busy")
            g_busy = ex;
        return;
    }
    answer(ex, 200, "q");
}

size_t held() {
    std::lock_guard<std::mutex> g(g_mu);
    return g_held.size();
}

weir_exchange *held_at(size_t i) {
    std::lock_guard<std::mutex> g(g_mu);
    return g_held.at(i);
}

bool start(Server &s) {
    g_held.clear();
    g_busy = nullptr;
    weir_config cfg = config(1, WEIR_MODE_INLINE, handler, nullptr);
    cfg.handler_timeout_ms = kT;
    return s.start(cfg) != WEIR_E_UNAVAILABLE;
}

// Stamps *at with the time id is first seen closed (a 503 or a reset
// arrived), for judging it against when its request was sent.
void stamp_closed(h2wire::Client &c, int32_t id, int64_t *at) {
    if (!*at && c.got[id].closed)
        *at = now_ms();
}

// One quick request after another (every T/8) for ms; returns how many were
// answered 200. Stops early when stop() says so (checked between requests).
int traffic(h2wire::Client &c, int ms, const std::function<bool()> &stop) {
    int ok = 0;
    const int64_t end = now_ms() + ms;
    while (now_ms() < end && !stop()) {
        int32_t id = c.get("/q");
        assert_true(c.run([&] { return c.got[id].closed; }));
        ok += c.got[id].status == 200;
        pump(c, kT / 8);
    }
    return ok;
}

void busy_connection(bool connection_deadline) {
    loop_hooks().h2_connection_deadline.store(connection_deadline);
    Server s;
    if (!start(s)) {
        loop_hooks().h2_connection_deadline.store(false);
        skip();
    }
    h2wire::Client c(s.port);
    const int64_t sent = now_ms();
    int32_t h = c.get("/hold");
    assert_true(c.run([] { return held() == 1; }));
    int64_t answered_at = 0;
    int ok = traffic(c, 4 * kT, [&] {
        stamp_closed(c, h, &answered_at);
        return false;
    });
    loop_hooks().h2_connection_deadline.store(false);
    assert_true(ok >= 8); // the traffic really ran beside the held stream
    if (connection_deadline) {
        // The loss: 4 T of traffic and the held stream is still waiting.
        assert_false(c.got[h].closed);
        assert_int_equal(s.metrics().h2_handler_timeouts, 0);
        return;
    }
    assert_true(answered_at != 0); // answered while the traffic went on
    assert_int_equal(c.got[h].status, 503);
    assert_true(answered_at - sent >= kT);
    assert_false(c.goaway);
    assert_false(c.eof);
    weir_metrics m = s.metrics();
    assert_int_equal(m.h2_handler_timeouts, 1);
    assert_int_equal(m.closes[WEIR_CLOSE_HANDLER_TIMEOUT], 0);
    assert_true(weir_respond(held_at(0), 200, nullptr, 0, nullptr, 0, 0) < 0); // taken back: stale
}

void test_h2_stream_deadline_on_a_busy_connection(void **) { busy_connection(false); }
void test_h2_stream_deadline_connection_deadline_loses_it(void **) { busy_connection(true); }

void test_h2_stream_deadline_counts_from_each_stream(void **) {
    Server s;
    if (!start(s))
        skip();
    h2wire::Client c(s.port);
    const int64_t sent_a = now_ms();
    int32_t a = c.get("/hold-a");
    assert_true(c.run([] { return held() == 1; }));
    pump(c, kT / 2);
    const int64_t sent_b = now_ms();
    int32_t b = c.get("/hold-b");
    int64_t at_a = 0, at_b = 0;
    assert_true(c.run([&] {
        stamp_closed(c, a, &at_a);
        stamp_closed(c, b, &at_b);
        return at_a && at_b;
    }, 10 * kT));
    assert_int_equal(c.got[a].status, 503);
    assert_int_equal(c.got[b].status, 503);
    assert_true(at_a - sent_a >= kT);
    assert_true(at_b - sent_b >= kT); // its own deadline, not a's
    int32_t q = c.get("/q");          // the connection goes on
    assert_true(c.run([&] { return c.got[q].closed; }));
    assert_int_equal(c.got[q].status, 200);
    assert_false(c.goaway);
    weir_metrics m = s.metrics();
    assert_int_equal(m.h2_handler_timeouts, 2);
    assert_int_equal(m.closes[WEIR_CLOSE_HANDLER_TIMEOUT], 0);
}

void test_h2_stream_deadline_resets_a_begun_answer(void **) {
    Server s;
    if (!start(s))
        skip();
    h2wire::Client c(s.port);
    const int64_t sent = now_ms();
    int32_t silent = c.get("/stream-silent");
    int32_t busy = c.get("/stream-busy");
    assert_true(c.run([] { return held() == 2; }));
    weir_exchange *bx = nullptr;
    {
        std::lock_guard<std::mutex> g(g_mu);
        bx = g_busy;
    }
    assert_non_null(bx);
    // The busy one: a piece every T/3 for 2 T, from this thread (posted).
    int64_t reset_at = 0;
    for (int i = 0; i < 6; i++) {
        assert_int_equal(weir_stream_write(bx, "piece;", 6), 0);
        pump(c, kT / 3, [&] { stamp_closed(c, silent, &reset_at); });
    }
    assert_int_equal(weir_stream_end(bx, nullptr, 0), 0);
    assert_true(c.run([&] {
        stamp_closed(c, silent, &reset_at);
        return c.got[busy].closed && reset_at;
    }, 10 * kT));
    assert_int_equal(c.got[busy].status, 200);
    assert_int_equal(c.got[busy].rst, UINT32_MAX); // never reset
    assert_string_equal(c.got[busy].body.c_str(), "piece;piece;piece;piece;piece;piece;");
    assert_int_equal(c.got[silent].status, 200);  // its head had left
    assert_int_equal(c.got[silent].rst, 2);       // INTERNAL_ERROR, alone
    assert_true(reset_at - sent >= kT);
    assert_false(c.goaway);
    weir_metrics m = s.metrics();
    assert_int_equal(m.h2_handler_timeouts, 1);
    assert_int_equal(m.closes[WEIR_CLOSE_HANDLER_TIMEOUT], 0);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2_stream_deadline_on_a_busy_connection),
        cmocka_unit_test(test_h2_stream_deadline_connection_deadline_loses_it),
        cmocka_unit_test(test_h2_stream_deadline_counts_from_each_stream),
        cmocka_unit_test(test_h2_stream_deadline_resets_a_begun_answer),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
