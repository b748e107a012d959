// The protocol seam's timer calls (lib/loop/session.h) on HTTP/1's Conn: the
// wait each state maps to, and what passing each deadline does — the
// contract the loop relies on once the handling left worker_settle.cc and
// worker_binding.cc (docs/DESIGN.md §2b). Each case fails if the session
// answers a deadline with the wrong reason, or closes where it must answer
// 408 (or the other way round).
#include "cmocka_cxx.h"

#include <string>

#include "../conn/conn_check.h"
#include "conn/conn.h"
#include "loop/session.h"

using namespace weir;
using namespace conn_check;

namespace {

void test_wait_maps_to_kind(void **) {
    assert_int_equal((int)session_timer(ConnWait::FirstByte), (int)TimerKind::Head);
    assert_int_equal((int)session_timer(ConnWait::Head), (int)TimerKind::Head);
    assert_int_equal((int)session_timer(ConnWait::Body), (int)TimerKind::Body);
    assert_int_equal((int)session_timer(ConnWait::Idle), (int)TimerKind::Idle);
    assert_int_equal((int)session_timer(ConnWait::Output), (int)TimerKind::Output);
    assert_int_equal((int)session_timer(ConnWait::Handler), (int)TimerKind::Handler);
    assert_int_equal((int)session_timer(ConnWait::Proxy), (int)TimerKind::Proxy);
    assert_int_equal((int)session_timer(ConnWait::Done), (int)TimerKind::None);
}

// Part of a head, then its deadline: a 408 to settle (written, then closed
// with the header timeout's reason), not a close at once.
void test_head_deadline_answers_408(void **) {
    ConnSettings st = settings();
    ConnPool pool(st);
    Session c_s(st, pool, 1, false);
    Conn &c = c_s.h1();
    feed(c, "GET / HTTP/1.1\r\nHo");
    assert_int_equal((int)session_timer(c.wait()), (int)TimerKind::Head);
    assert_int_equal(session_expire(c_s, TimerKind::Head), 0);
    std::string out = drain(c);
    assert_true(out.rfind("HTTP/1.1 408 ", 0) == 0);
    assert_true(c.wants_close());
    assert_int_equal(c.close_reason(), WEIR_CLOSE_HEADER_TIMEOUT);
}

// A connection that never sent a byte: closed in silence (WEIR_CLOSE_SILENT:
// it never asked, so it is no header timeout of a request).
void test_first_byte_deadline_is_silent(void **) {
    ConnSettings st = settings();
    ConnPool pool(st);
    Session c_s(st, pool, 1, false);
    Conn &c = c_s.h1();
    assert_int_equal(session_expire(c_s, session_timer(c.wait())), 0);
    assert_string_equal(drain(c).c_str(), "");
    assert_true(c.wants_close());
    assert_int_equal(c.close_reason(), WEIR_CLOSE_SILENT);
}

// A body that stopped coming: 408 with the body timeout's reason.
void test_body_deadline_answers_408(void **) {
    ConnSettings st = settings();
    ConnPool pool(st);
    Session c_s(st, pool, 1, false);
    Conn &c = c_s.h1();
    feed(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab");
    assert_int_equal((int)session_timer(c.wait()), (int)TimerKind::Body);
    assert_int_equal(session_expire(c_s, TimerKind::Body), 0);
    assert_true(drain(c).rfind("HTTP/1.1 408 ", 0) == 0);
    assert_int_equal(c.close_reason(), WEIR_CLOSE_BODY_TIMEOUT);
}

// Idle keep-alive and a reader that takes nothing: the loop closes at once,
// with the reason the session returns (and the session agrees).
void test_idle_and_output_close_now(void **) {
    ConnSettings st = settings();
    ConnPool pool(st);
    Session idle_s(st, pool, 1, false);
    Conn &idle = idle_s.h1();
    feed(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(answer(idle, idle.take_request(), "hello"), 0);
    drain(idle);
    assert_int_equal((int)session_timer(idle.wait()), (int)TimerKind::Idle);
    assert_int_equal(session_expire(idle_s, TimerKind::Idle), WEIR_CLOSE_IDLE_TIMEOUT);
    assert_int_equal(idle.close_reason(), WEIR_CLOSE_IDLE_TIMEOUT);

    Session slow_s(st, pool, 2, false);
    Conn &slow = slow_s.h1();
    feed(slow, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(answer(slow, slow.take_request(), "hello"), 0);
    assert_int_equal((int)session_timer(slow.wait()), (int)TimerKind::Output);
    assert_int_equal(session_expire(slow_s, TimerKind::Output), WEIR_CLOSE_WRITE_TIMEOUT);
    assert_int_equal(slow.close_reason(), WEIR_CLOSE_WRITE_TIMEOUT);
}

// The deadlines that bind: a request or body cut is a 408 to settle, a slow
// reader a close now; None does nothing.
void test_binding_cuts(void **) {
    ConnSettings st = settings();
    ConnPool pool(st);
    Session req_s(st, pool, 1, false);
    Conn &req = req_s.h1();
    feed(req, "GET / HTTP/1.1\r\nHo");
    assert_int_equal(session_cut(req_s, BindCut::None), 0);
    assert_false(req.wants_close());
    assert_int_equal(session_cut(req_s, BindCut::Request), 0);
    assert_true(drain(req).rfind("HTTP/1.1 408 ", 0) == 0);
    assert_int_equal(req.close_reason(), WEIR_CLOSE_REQUEST_TIMEOUT);

    Session body_s(st, pool, 2, false);
    Conn &body = body_s.h1();
    feed(body, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nab");
    assert_true(session_reading(body_s) > 0);
    assert_int_equal(session_cut(body_s, BindCut::SlowBody), 0);
    assert_true(drain(body).rfind("HTTP/1.1 408 ", 0) == 0);
    assert_int_equal(body.close_reason(), WEIR_CLOSE_SLOW_BODY);

    Session reader_s(st, pool, 3, false);
    Conn &reader = reader_s.h1();
    feed(reader, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(answer(reader, reader.take_request(), "hello"), 0);
    assert_int_equal(session_cut(reader_s, BindCut::SlowReader), WEIR_CLOSE_SLOW_READER);
    assert_int_equal(reader.close_reason(), WEIR_CLOSE_SLOW_READER);
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_wait_maps_to_kind),
        cmocka_unit_test(test_head_deadline_answers_408),
        cmocka_unit_test(test_first_byte_deadline_is_silent),
        cmocka_unit_test(test_body_deadline_answers_408),
        cmocka_unit_test(test_idle_and_output_close_now),
        cmocka_unit_test(test_binding_cuts),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
