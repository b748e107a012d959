// lib/h2 unit tests, lifecycle: what wait() says at each stage, the
// graceful drain (GOAWAY 2^31-1 and a PING, then on its ACK the final
// GOAWAY with the last stream processed; the open streams finish), close
// reasons, timeouts, hold() as a drain, and the peer's EOF.
#include "cmocka_cxx.h"

#include <string>

#include "h2_peer.h"

using namespace h2_peer;
using weir::ConnPool;
using weir::ConnSettings;
using weir::ConnWait;
using weir::Exchange;
using weir::H2Session;
using weir::H2Settings;

namespace {

struct Fixture {
    ConnSettings cs;
    H2Settings hs;
    ConnPool pool;
    H2Session s;
    Peer peer;
    Fixture() : cs(settings()), pool(cs), s(cs, hs, pool, 1) {}
};

int w(const H2Session &s) { return static_cast<int>(s.wait()); }

void test_wait_stages(void **) {
    Fixture f;
    assert_int_equal(w(f.s), (int)ConnWait::FirstByte);
    // Half the client preface: Head.
    std::string pre = "PRI * HTTP/2.0\r\n";
    assert_int_equal(Peer::feed(f.s, pre), pre.size());
    assert_int_equal(w(f.s), (int)ConnWait::Head);
    Fixture g;
    g.peer.pump(g.s); // preface and SETTINGS both ways
    assert_int_equal(w(g.s), (int)ConnWait::Idle);
    // A header block cut in the middle: Head.
    int32_t id = g.peer.request("GET", "/", {{"x-pad", std::string(3000, 'p')}});
    std::string bytes;
    const uint8_t *p;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(g.peer.ng, &p)) > 0)
        bytes.append(reinterpret_cast<const char *>(p), n);
    Peer::feed(g.s, bytes.substr(0, 20));
    assert_int_equal(w(g.s), (int)ConnWait::Head);
    Peer::feed(g.s, bytes.substr(20));
    assert_int_equal(w(g.s), (int)ConnWait::Handler);
    Exchange *x = g.s.take_request();
    assert_int_equal(g.s.respond(x, 200, nullptr, 0, "ok", 2, 0), 0);
    assert_int_equal(w(g.s), (int)ConnWait::Output);
    g.peer.from_server(g.s);
    assert_int_equal(g.peer.got[id].status, 200);
    assert_int_equal(w(g.s), (int)ConnWait::Idle);
    // A buffered body arriving that no one reads yet: Body.
    g.peer.request("POST", "/b", {}, nullptr, true);
    g.peer.to_server(g.s);
    assert_int_equal(w(g.s), (int)ConnWait::Body);
    assert_int_equal(g.s.reading(), 1);
}

void test_graceful_drain(void **) {
    Fixture f;
    int32_t a = f.peer.get("/a");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    f.s.close(WEIR_CLOSE_SHUTDOWN);
    assert_true(f.s.wants_close());
    // A request the client sent before it saw the first GOAWAY.
    int32_t b = f.peer.get("/b");
    f.peer.to_server(f.s);
    // The first GOAWAY (2^31-1) and the PING leave; the client ACKs.
    f.peer.from_server(f.s);
    assert_int_equal(f.peer.goaways, 1);
    assert_int_equal(f.peer.goaway_last, 0x7fffffff);
    assert_int_equal(f.peer.pings_seen, 1);
    assert_int_not_equal(w(f.s), (int)ConnWait::Done);
    f.peer.pump(f.s); // the ACK comes back: the final GOAWAY, b served
    assert_int_equal(f.peer.goaways, 2);
    assert_int_equal(f.peer.goaway_last, b);
    Exchange *xb = f.s.take_request();
    assert_non_null(xb);
    assert_int_equal(xb->req.flags & WEIR_REQ_KEEP_ALIVE, 0);
    assert_int_not_equal(w(f.s), (int)ConnWait::Done); // two streams still open
    assert_int_equal(f.s.respond(x, 200, nullptr, 0, "a", 1, 0), 0);
    assert_int_equal(f.s.respond(xb, 200, nullptr, 0, "b", 1, 0), 0);
    f.peer.pump(f.s);
    assert_string_equal(f.peer.got[a].body.c_str(), "a");
    assert_string_equal(f.peer.got[b].body.c_str(), "b");
    assert_int_equal(w(f.s), (int)ConnWait::Done);
    assert_int_equal(f.s.close_reason(), WEIR_CLOSE_SHUTDOWN);
    assert_int_equal(f.peer.goaway_code, NGHTTP2_NO_ERROR);
}

// close(reason) other than a drain: the final GOAWAY at once, with the
// last stream processed; open streams finish (graceful), unless waiting
// would gain nothing (a write timeout: Done once the output is out).
void test_close_reasons(void **) {
    {
        Fixture f;
        int32_t a = f.peer.get("/a");
        f.peer.pump(f.s);
        Exchange *x = f.s.take_request();
        f.s.close(WEIR_CLOSE_IDLE_TIMEOUT);
        f.peer.from_server(f.s);
        assert_int_equal(f.peer.goaways, 1);
        assert_int_equal(f.peer.goaway_last, a);
        assert_int_not_equal(w(f.s), (int)ConnWait::Done);
        assert_int_equal(f.s.respond(x, 200, nullptr, 0, "a", 1, 0), 0);
        f.peer.pump(f.s);
        assert_string_equal(f.peer.got[a].body.c_str(), "a");
        assert_int_equal(w(f.s), (int)ConnWait::Done);
        assert_int_equal(f.s.close_reason(), WEIR_CLOSE_IDLE_TIMEOUT);
    }
    {
        Fixture f;
        f.peer.get("/a");
        f.peer.pump(f.s);
        Exchange *x = f.s.take_request();
        f.s.close(WEIR_CLOSE_WRITE_TIMEOUT);
        f.peer.from_server(f.s);
        assert_int_equal(w(f.s), (int)ConnWait::Done);
        assert_int_equal(f.s.outstanding(), 1);
        f.s.on_closed();
        assert_int_equal(f.s.respond(x, 200, nullptr, 0, nullptr, 0, 0), WEIR_E_GONE);
    }
}

// hold(): an HTTP/2 connection moves by draining (the client reconnects).
void test_hold_drains(void **) {
    Fixture f;
    f.peer.pump(f.s);
    assert_false(f.s.detachable());
    weir::ConnImage img;
    assert_false(f.s.detach(img));
    f.s.hold();
    f.peer.pump(f.s);
    // The client saw the first; it stops reading a session with no stream
    // after a GOAWAY, so the final one is counted on our side.
    assert_int_equal(f.peer.goaways, 1);
    assert_int_equal(f.s.h2_counters().goaways_sent, 2);
    assert_int_equal(w(f.s), (int)ConnWait::Done);
    assert_int_equal(f.s.close_reason(), WEIR_CLOSE_GOAWAY);
}

// An idle session holds no read buffer (a read that found nothing gives it
// back), and the next read takes the same one back from the thread's cache
// rather than from malloc.
void test_idle_gives_buffer_back(void **) {
    Fixture f;
    f.peer.pump(f.s);
    iovec a = f.s.read_space();
    assert_true(a.iov_len > 0);
    assert_true(f.s.holds_buffers());
    f.s.on_read(0);
    assert_false(f.s.holds_buffers());
    iovec b = f.s.read_space();
    assert_ptr_equal(a.iov_base, b.iov_base);
    f.s.on_read(0);
}

// A failed allocation inside an nghttp2 callback (a field's copy) never
// unwinds through nghttp2's C frames: the connection closes as
// WEIR_CLOSE_RESOURCE, and a second answer to an earlier exchange is GONE.
void test_out_of_memory_closes(void **) {
    Fixture f;
    f.peer.get("/a");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    H2Session::hooks().field_throws = true;
    f.peer.get("/b");
    f.peer.to_server(f.s);
    H2Session::hooks().field_throws = false;
    assert_int_equal(f.s.close_reason(), WEIR_CLOSE_RESOURCE);
    assert_int_equal(w(f.s), (int)ConnWait::Done);
    assert_int_equal(f.s.respond(x, 200, nullptr, 0, nullptr, 0, 0), WEIR_E_GONE);
    assert_int_equal(f.s.outstanding(), 0);
}

// An aborted session hands out nothing more: requests not yet taken are
// dropped (no one could answer them).
void test_abort_drops_untaken(void **) {
    Fixture f;
    f.peer.get("/a");
    f.peer.get("/b");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    assert_true(f.s.has_request());
    f.s.abort_now(WEIR_CLOSE_HANDLER_TIMEOUT);
    assert_false(f.s.has_request());
    assert_null(f.s.take_request());
    assert_int_equal(f.s.outstanding(), 1);
    assert_int_equal(f.s.respond(x, 200, nullptr, 0, nullptr, 0, 0), WEIR_E_GONE);
    assert_int_equal(f.s.close_reason(), WEIR_CLOSE_HANDLER_TIMEOUT);
}

// A connection that has sent nothing has no PING to answer: the drain's
// final GOAWAY goes at once, and it is Done once written.
void test_drain_before_any_byte(void **) {
    Fixture f;
    f.s.close(WEIR_CLOSE_SHUTDOWN);
    assert_int_equal(w(f.s), (int)ConnWait::Output);
    iovec iov[4];
    size_t k = f.s.output_iov(iov, 4);
    size_t n = 0;
    for (size_t i = 0; i < k; i++)
        n += iov[i].iov_len;
    f.s.on_written(n);
    assert_int_equal(w(f.s), (int)ConnWait::Done);
    assert_int_equal(f.s.close_reason(), WEIR_CLOSE_SHUTDOWN);
}

void test_expire_input(void **) {
    { // never a byte: closed without a word
        Fixture f;
        f.s.expire_input(WEIR_CLOSE_HEADER_TIMEOUT);
        assert_int_equal(f.s.close_reason(), WEIR_CLOSE_SILENT);
        assert_int_equal(w(f.s), (int)ConnWait::Done);
    }
    { // a header block cut short: GOAWAY, then Done
        Fixture f;
        f.peer.pump(f.s);
        Peer::feed(f.s, frame(NGHTTP2_HEADERS, 0, 1, std::string("\x82", 1)));
        assert_int_equal(w(f.s), (int)ConnWait::Head);
        f.s.expire_input(WEIR_CLOSE_HEADER_TIMEOUT);
        f.peer.from_server(f.s);
        assert_true(f.peer.goaway);
        assert_int_equal(w(f.s), (int)ConnWait::Done);
        assert_int_equal(f.s.close_reason(), WEIR_CLOSE_HEADER_TIMEOUT);
        assert_int_equal(f.s.read_space().iov_len, 0);
    }
}

void test_eof_answers_what_came(void **) {
    Fixture f;
    int32_t a = f.peer.get("/a");
    f.peer.pump(f.s);
    Exchange *x = f.s.take_request();
    f.s.on_eof();
    assert_int_not_equal(w(f.s), (int)ConnWait::Done);
    assert_int_equal(f.s.respond(x, 200, nullptr, 0, "a", 1, 0), 0);
    f.peer.from_server(f.s);
    assert_string_equal(f.peer.got[a].body.c_str(), "a");
    assert_int_equal(w(f.s), (int)ConnWait::Done);
    assert_int_equal(f.s.close_reason(), WEIR_CLOSE_PEER);
}

void test_bad_preface_protocol_close(void **) {
    Fixture f;
    Peer::feed(f.s, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_true(f.s.wants_close());
    assert_int_equal(f.s.close_reason(), WEIR_CLOSE_H2_PROTOCOL);
    f.peer.from_server(f.s);
    assert_int_equal(w(f.s), (int)ConnWait::Done);
}

// A connection error nghttp2 finds (DATA on stream 0): GOAWAY with its
// code, WEIR_CLOSE_H2_PROTOCOL.
void test_protocol_error_goaway(void **) {
    Fixture f;
    f.peer.pump(f.s);
    f.peer.raw = frame(NGHTTP2_DATA, 0, 0, "xx");
    f.peer.pump(f.s);
    assert_true(f.peer.goaway);
    assert_int_equal(f.peer.goaway_code, NGHTTP2_PROTOCOL_ERROR);
    assert_int_equal(f.s.close_reason(), WEIR_CLOSE_H2_PROTOCOL);
    assert_int_equal(w(f.s), (int)ConnWait::Done);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_stages),         cmocka_unit_test(test_graceful_drain),
        cmocka_unit_test(test_hold_drains),         cmocka_unit_test(test_expire_input),
        cmocka_unit_test(test_drain_before_any_byte), cmocka_unit_test(test_idle_gives_buffer_back),
        cmocka_unit_test(test_out_of_memory_closes), cmocka_unit_test(test_close_reasons),
        cmocka_unit_test(test_abort_drops_untaken),
        cmocka_unit_test(test_eof_answers_what_came), cmocka_unit_test(test_bad_preface_protocol_close),
        cmocka_unit_test(test_protocol_error_goaway),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
