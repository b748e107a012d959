// HTTP/2 through the engine (docs/http2.md): a real nghttp2 client over a
// socket, on every backend. Each case fails if its rule is broken:
//   test_h2_request_view: a stream is an exchange whose view says HTTP/2
//     (WEIR_REQ_HTTP2, version 2.0, method/path/query/host from the
//     pseudo-headers, regular fields only), answered through weir_respond.
//   test_h2_reset_stream_is_gone: a stream the peer resets is gone to the
//     host (weir_exchange_gone) while its sibling on the same connection is
//     not (the sibling is the negative arm: no reset, not gone), and the
//     sibling's answer still arrives.
//   test_h2_handler_timeout_each_stream: past handler_timeout_ms every held
//     stream gets its own 503 (HTTP/1 can answer only the first and closes)
//     and the connection goes on: no GOAWAY, no WEIR_CLOSE_HANDLER_TIMEOUT,
//     each counted in h2_handler_timeouts (the deadline is each stream's:
//     test_h2_stream_deadline.cc).
//   test_h2_http1_only_refuses_preface: protocols = WEIR_PROTO_HTTP1, the
//     negative arm of detection: the same client gets no HTTP/2 answer.
//   test_h2_{transplant,switch,handover}_drains_by_goaway: every way a
//     connection moves (transplant, the adaptive switch, a hot upgrade's
//     hand-over) drains HTTP/2 by GOAWAY: the held stream is still answered
//     where it began, then the connection closes (WEIR_CLOSE_GOAWAY) and
//     a new client is served by the engine that took over.
//   test_h2_preface_while_held_moves: a client whose connection reaches the
//     old engine during a hot upgrade's hand-over (its listener still
//     accepts) and sends only the preface is moved by image, undecided,
//     and its first request is answered by the successor. Negative arm
//     (Session::Hooks::drain_held_preface: the session turns HTTP/2 on the
//     old side and is drained): GOAWAY with no stream, then EOF before the
//     request, the loss Go's client reports as "client conn could not be
//     established" (tests/scripts/h2_handover.sh).
//   test_h2_error_close_{lingers,resets_without_the_linger}: a protocol
//     error with 256 KiB of the client's frames still unread: the client
//     reads weir's GOAWAY and then EOF, never a reset; the arm without the
//     lingering close (LingerHooks::skip_close_linger) shows the reset.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/linger.h"
#include "proto/session.h"
#include "support/h2_wire.h"
#include "support/handover_ptr.h"
#include "support/net.h"

using namespace testnet;

namespace {

std::mutex g_mu;
std::vector<weir_exchange *> g_held;
std::string g_view;

void answer_view(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    std::string v = std::to_string((r->flags & WEIR_REQ_HTTP2) != 0) + " " + std::to_string(r->version_minor) + " " +
                    str(r->method) + " " + str(r->path) + " " + str(r->query) + " " + str(r->host);
    for (uint32_t i = 0; i < r->num_headers; i++)
        v += " " + str(r->headers[i].name) + "=" + str(r->headers[i].value);
    answer(ex, 200, v);
}

void hold(void *, weir_exchange *ex) {
    std::lock_guard<std::mutex> g(g_mu);
    g_held.push_back(ex);
    weir_defer(ex);
}

size_t held() {
    std::lock_guard<std::mutex> g(g_mu);
    return g_held.size();
}

// A copy of the held handles, taken under the lock the handler pushes them under.
std::vector<weir_exchange *> held_list() {
    std::lock_guard<std::mutex> g(g_mu);
    return g_held;
}

void test_h2_request_view(void **) {
    Server s;
    weir_config cfg = config(1, WEIR_MODE_INLINE, answer_view, nullptr);
    if (s.start(cfg) == WEIR_E_UNAVAILABLE)
        skip();
    h2wire::Client c(s.port);
    int32_t id = c.get("/p?q=1");
    assert_true(c.run([&] { return c.got[id].closed; }));
    assert_int_equal(c.got[id].status, 200);
    assert_string_equal(c.got[id].body.c_str(), "1 0 GET /p q=1 example x-a=b");
    weir_metrics m = s.metrics();
    assert_int_equal(m.requests, 1);
    assert_int_equal(m.h2_sessions, 1);
    assert_int_equal(m.h2_streams, 1);
    assert_int_equal(m.h2_upgrades, 0);
}

void test_h2_reset_stream_is_gone(void **) {
    g_held.clear();
    Server s;
    weir_config cfg = config(1, WEIR_MODE_INLINE, hold, nullptr);
    if (s.start(cfg) == WEIR_E_UNAVAILABLE)
        skip();
    h2wire::Client c(s.port);
    int32_t a = c.get("/a"), b = c.get("/b");
    assert_true(c.run([] { return held() == 2; }));
    std::vector<weir_exchange *> h = held_list();
    weir_exchange *xa = h[0], *xb = h[1];
    assert_int_equal(weir_exchange_gone(xa), 0);
    c.reset(a);
    assert_true(c.run([&] { return weir_exchange_gone(xa) != 0; }, 2000));
    assert_int_equal(weir_exchange_gone(xb), 0); // its sibling: not reset, not gone
    int rc = weir_respond(xa, 200, nullptr, 0, "late", 4, 0);
    assert_true(rc == 0 || rc == WEIR_E_GONE);
    assert_int_equal(weir_respond(xb, 200, nullptr, 0, "bee", 3, 0), 0);
    assert_true(c.run([&] { return c.got[b].closed; }));
    assert_int_equal(c.got[b].status, 200);
    assert_string_equal(c.got[b].body.c_str(), "bee");
    assert_int_equal(c.got[a].status, 0); // nothing reached the reset stream
    weir_metrics m = s.metrics();
    assert_int_equal(m.h2_streams, 2);
    assert_int_equal(m.h2_resets_by_peer, 1);
}

void test_h2_handler_timeout_each_stream(void **) {
    g_held.clear();
    Server s;
    weir_config cfg = config(1, WEIR_MODE_INLINE, hold, nullptr);
    cfg.handler_timeout_ms = 200;
    if (s.start(cfg) == WEIR_E_UNAVAILABLE)
        skip();
    h2wire::Client c(s.port);
    int32_t ids[3] = {c.get("/1"), c.get("/2"), c.get("/3")};
    assert_true(c.run([&] {
        for (int32_t id : ids)
            if (!c.got[id].closed)
                return false;
        return true;
    }));
    for (int32_t id : ids)
        assert_int_equal(c.got[id].status, 503);
    assert_false(c.goaway);
    assert_int_equal(s.metrics().h2_handler_timeouts, 3);
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_HANDLER_TIMEOUT], 0);
    for (weir_exchange *x : held_list()) // the engine answered them: the handles are spent
        assert_true(weir_respond(x, 200, nullptr, 0, nullptr, 0, 0) < 0);
}

void test_h2_http1_only_refuses_preface(void **) {
    Server s;
    weir_config cfg = config(1, WEIR_MODE_INLINE, answer_view, nullptr);
    cfg.protocols = WEIR_PROTO_HTTP1;
    if (s.start(cfg) == WEIR_E_UNAVAILABLE)
        skip();
    h2wire::Client c(s.port);
    int32_t id = c.get("/p");
    c.run([&] { return c.got[id].closed || c.eof; }, 2000);
    assert_int_equal(c.got[id].status, 0);
    assert_int_equal(s.metrics().requests, 0);
    assert_int_equal(s.metrics().h2_sessions, 0);
}

// A transplant moves HTTP/2 by draining (docs/http2.md): the client is told
// GOAWAY, the stream it has open is still answered on the old engine, then
// the connection closes (WEIR_CLOSE_GOAWAY) and a new one is served by the
// target. The negative arm is the request itself: nothing is lost, the held
// stream's answer arrives after the GOAWAY.
void test_h2_transplant_drains_by_goaway(void **) {
    g_held.clear();
    Server a, b;
    weir_config cfg = config(1, WEIR_MODE_INLINE, hold, nullptr);
    if (a.start(cfg) == WEIR_E_UNAVAILABLE || b.start(config(1, WEIR_MODE_INLINE, answer_view, nullptr)) ==
                                                   WEIR_E_UNAVAILABLE)
        skip();
    h2wire::Client c(a.port);
    int32_t id = c.get("/held");
    assert_true(c.run([] { return held() == 1; }));
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    assert_true(c.run([&] { return c.goaway; }));
    assert_int_equal(c.goaway_code, 0); // NO_ERROR: a graceful drain
    assert_int_equal(weir_respond(held_list()[0], 200, nullptr, 0, "kept", 4, 0), 0);
    assert_true(c.run([&] { return c.got[id].closed && c.eof; }));
    assert_int_equal(c.got[id].status, 200);
    assert_string_equal(c.got[id].body.c_str(), "kept");
    assert_int_equal(a.wait_closes(WEIR_CLOSE_GOAWAY, 1), 1);
    h2wire::Client d(b.port);
    int32_t id2 = d.get("/new");
    assert_true(d.run([&] { return d.got[id2].closed; }));
    assert_int_equal(d.got[id2].status, 200);
}

// A graceful shutdown: GOAWAY NO_ERROR, the held stream answered within the
// grace, then closed as the shutdown's.
void test_h2_shutdown_goaway(void **) {
    g_held.clear();
    Server s;
    weir_config cfg = config(1, WEIR_MODE_INLINE, hold, nullptr);
    if (s.start(cfg) == WEIR_E_UNAVAILABLE)
        skip();
    h2wire::Client c(s.port);
    int32_t id = c.get("/held");
    assert_true(c.run([] { return held() == 1; }));
    std::thread stop([&] { weir_engine_shutdown(s.e, 5000000000LL); });
    assert_true(c.run([&] { return c.goaway; }));
    assert_int_equal(c.goaway_code, 0);
    assert_int_equal(weir_respond(held_list()[0], 200, nullptr, 0, "bye", 3, 0), 0);
    assert_true(c.run([&] { return c.got[id].closed && c.eof; }));
    stop.join();
    assert_int_equal(c.got[id].status, 200);
    assert_string_equal(c.got[id].body.c_str(), "bye");
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_SHUTDOWN], 1);
}

// One HTTP/2 client with a stream held on `from`, moved by `move`: GOAWAY
// NO_ERROR at once, the held stream answered after it, then EOF; the close
// counted as WEIR_CLOSE_GOAWAY on `from`; `to_port` serves a new client.
template <class Move, class Settle>
void drains_by_goaway(Server &from, uint16_t to_port, Move move, Settle settle) {
    h2wire::Client c(from.port);
    int32_t id = c.get("/held");
    assert_true(c.run([] { return held() == 1; }));
    move();
    assert_true(c.run([&] { return c.goaway; }));
    assert_int_equal(c.goaway_code, 0);
    assert_int_equal(weir_respond(held_list()[0], 200, nullptr, 0, "kept", 4, 0), 0);
    assert_true(c.run([&] { return c.got[id].closed && c.eof; }));
    assert_int_equal(c.got[id].status, 200);
    assert_string_equal(c.got[id].body.c_str(), "kept");
    assert_int_equal(from.wait_closes(WEIR_CLOSE_GOAWAY, 1), 1);
    settle();
    h2wire::Client d(to_port);
    int32_t id2 = d.get("/new");
    assert_true(d.run([&] { return d.got[id2].closed; }));
    assert_int_equal(d.got[id2].status, 200);
    assert_true(d.got[id2].body.rfind("1 0 GET /new", 0) == 0); // answered by the engine that took over
}

// The adaptive switch (weir_engine_switch): B, paused on A's port, takes
// over; A's HTTP/2 connection drains.
void test_h2_switch_drains_by_goaway(void **) {
    g_held.clear();
    Server a, b;
    if (a.start(config(1, WEIR_MODE_INLINE, hold, nullptr)) == WEIR_E_UNAVAILABLE)
        skip();
    weir_config cb = config(1, WEIR_MODE_INLINE, answer_view, nullptr);
    cb.port = a.port;
    assert_int_equal(b.start(cb), 0);
    assert_int_equal(weir_engine_pause(b.e), 0); // the standby
    drains_by_goaway(a, a.port, [&] { assert_int_equal(weir_engine_switch(a.e, b.e), 0); }, [] {});
    assert_int_equal(weir_engine_pause(a.e), 0);
}

// A hot upgrade's hand-over between two engines of one process: A offers
// on path, B (answer_view) is created to take over and started.
void begin_handover(Server &a, Server &b, const std::string &path, HandoverPtr &ha, HandoverPtr &hb) {
    weir_handover_options o{};
    o.size = sizeof o;
    o.wait_ms = 5000;
    weir_handover *h = nullptr;
    assert_int_equal(weir_handover_offer(a.e, path.c_str(), &o, &h), 0);
    ha.reset(h);
    assert_int_equal(create(config(1, WEIR_MODE_INLINE, answer_view, nullptr), &b.e), 0);
    h = nullptr;
    assert_int_equal(weir_handover_take_over(b.e, path.c_str(), &o, &h), 0);
    hb.reset(h);
    assert_int_equal(engine_port(b.e, &b.port), 0);
    assert_int_equal(weir_engine_start(b.e), 0);
}

// Both sides done: only then does the successor accept.
void end_handover(HandoverPtr &ha, HandoverPtr &hb) {
    assert_int_equal(weir_handover_wait(ha.get(), 5000000000LL), 0);
    assert_int_equal(weir_handover_wait(hb.get(), 5000000000LL), 0);
}

// A hot upgrade's hand-over (weir_handover_offer / take_over, here two
// engines of one process): the HTTP/2 connection is not handed over as an
// image; it drains on A, and the hand-over completes once it has closed.
void test_h2_handover_drains_by_goaway(void **) {
    g_held.clear();
    Server a, b;
    if (a.start(config(1, WEIR_MODE_INLINE, hold, nullptr)) == WEIR_E_UNAVAILABLE)
        skip();
    std::string path = "/tmp/weir-test-h2-handover-" + std::to_string(::getpid()) + ".sock";
    HandoverPtr ha, hb;
    drains_by_goaway(a, a.port, [&] { begin_handover(a, b, path, ha, hb); }, [&] { end_handover(ha, hb); });
}

struct HeldPreface {
    int status = 0;
    std::string body;
    bool goaway = false, eof = false;
};

// A keeps the hand-over waiting with a held stream on c1 (its listener
// accepts until both sides are done); c2 connects then, sends its preface
// and SETTINGS, and asks once the server's SETTINGS came, unless a GOAWAY
// came with them (the server's first write holds both).
HeldPreface preface_while_held(bool rule) {
    weir::Session::hooks().drain_held_preface = !rule;
    g_held.clear();
    Server a, b;
    if (a.start(config(1, WEIR_MODE_INLINE, hold, nullptr)) == WEIR_E_UNAVAILABLE) {
        weir::Session::hooks().drain_held_preface = false;
        skip();
    }
    std::string path = "/tmp/weir-test-h2-preface-" + std::to_string(::getpid()) + ".sock";
    HandoverPtr ha, hb;
    h2wire::Client c1(a.port);
    int32_t id1 = c1.get("/held");
    assert_true(c1.run([] { return held() == 1; }));
    begin_handover(a, b, path, ha, hb);
    assert_true(c1.run([&] { return c1.goaway; })); // A is draining: the hand-over is under way
    h2wire::Client c2(a.port);
    assert_true(c2.run([&] { return c2.settings || c2.eof; }));
    HeldPreface r;
    if (c2.goaway) {
        // Drained where it arrived (the arm): a client asks nothing of a
        // connection that said GOAWAY; it closes after the PING round trip.
        assert_true(c2.run([&] { return c2.eof; }));
    } else {
        int32_t id2 = c2.get("/moved");
        assert_true(c2.run([&] { return c2.got[id2].closed || c2.eof; }));
        r.status = c2.got[id2].status;
        r.body = c2.got[id2].body;
    }
    r.goaway = c2.goaway;
    r.eof = c2.eof;
    assert_int_equal(weir_respond(held_list()[0], 200, nullptr, 0, "kept", 4, 0), 0);
    assert_true(c1.run([&] { return c1.got[id1].closed && c1.eof; }));
    end_handover(ha, hb);
    weir::Session::hooks().drain_held_preface = false;
    return r;
}

void test_h2_preface_while_held_moves(void **) {
    HeldPreface r = preface_while_held(true);
    assert_int_equal(r.status, 200);
    assert_true(r.body.rfind("1 0 GET /moved", 0) == 0); // answered by the successor
    assert_false(r.goaway);
    // The negative arm: drained where it arrived, its request never answered.
    HeldPreface off = preface_while_held(false);
    assert_true(off.goaway);
    assert_true(off.eof);
    assert_int_equal(off.status, 0);
}

// The client's preface and SETTINGS, a DATA frame on stream 0 (a connection
// error, RFC 9113 §6.1), then 256 KiB of PINGs the session will never read.
Seen error_close(bool linger) {
    weir::linger_hooks().skip_close_linger = !linger;
    Server s;
    if (s.start(config(1, WEIR_MODE_INLINE, answer_view, nullptr)) == WEIR_E_UNAVAILABLE) {
        weir::linger_hooks().skip_close_linger = false;
        skip();
    }
    Client c = connect_to(s.port);
    std::string out("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
    out += std::string("\x00\x00\x00\x04\x00\x00\x00\x00\x00", 9); // SETTINGS
    out += std::string("\x00\x00\x00\x00\x00\x00\x00\x00\x00", 9); // DATA on stream 0
    std::string ping("\x00\x00\x08\x06\x00\x00\x00\x00\x00" "12345678", 17);
    while (out.size() < 256 * 1024)
        out += ping;
    ::send(c.fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT); // what the socket takes; the rest is moot
    Seen seen = read_slowly(c.fd, bound_ms(5000));
    assert_int_equal(s.wait_closes(WEIR_CLOSE_H2_PROTOCOL, 1), 1);
    weir::linger_hooks().skip_close_linger = false;
    return seen;
}

void test_h2_error_close_lingers(void **) {
    Seen seen = error_close(true);
    assert_int_equal(seen.end, 0); // EOF, not ECONNRESET
    // weir's SETTINGS, then a GOAWAY frame (type 7) with PROTOCOL_ERROR (1).
    size_t at = seen.data.find(std::string("\x07\x00\x00\x00\x00\x00", 6));
    assert_true(at != std::string::npos && at >= 3);
    assert_true(seen.data.size() >= at + 6 + 8);
    assert_int_equal(static_cast<unsigned char>(seen.data[at + 6 + 7]), 1);
}

// The arm that must lose: closed at once with the frames unread, the
// kernel resets the connection.
void test_h2_error_close_resets_without_the_linger(void **) {
    Seen seen = error_close(false);
    assert_int_equal(seen.end, ECONNRESET);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h2_request_view),
        cmocka_unit_test(test_h2_reset_stream_is_gone),
        cmocka_unit_test(test_h2_handler_timeout_each_stream),
        cmocka_unit_test(test_h2_http1_only_refuses_preface),
        cmocka_unit_test(test_h2_transplant_drains_by_goaway),
        cmocka_unit_test(test_h2_shutdown_goaway),
        cmocka_unit_test(test_h2_switch_drains_by_goaway),
        cmocka_unit_test(test_h2_handover_drains_by_goaway),
        cmocka_unit_test(test_h2_preface_while_held_moves),
        cmocka_unit_test(test_h2_error_close_lingers),
        cmocka_unit_test(test_h2_error_close_resets_without_the_linger),
    };
    return cmocka_run_group_tests_name("h2", tests, nullptr, nullptr);
}
