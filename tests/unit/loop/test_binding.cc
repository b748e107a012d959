// Unit tests of the binding deadlines' clocks (lib/loop/binding.h): what is
// charged to the client and what is not, the request clock's restart at the
// next request, the windows' judgement, the tick.
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/binding.h"

using namespace weir;

namespace {

BindLimits limits(uint32_t request_ms, uint32_t body_rate, uint32_t send_rate, uint32_t window_ms) {
    BindLimits l;
    l.request_ms = request_ms;
    l.body_rate = body_rate;
    l.send_rate = send_rate;
    l.window_ms = window_ms;
    return l;
}

// The request clock runs in Head and Body only, across both, and restarts
// when the next request is being read. Without the restart (the mutant) a
// keep-alive connection's second request would inherit the first's time.
void test_request_clock(void **) {
    BindLimits l = limits(1000, 0, 0, 10000);
    Binding b;
    b.reset(1, 0);
    b.observe(ConnWait::Head, 1, 0);
    b.observe(ConnWait::Handler, 1, 400);   // 400 ms of head
    b.observe(ConnWait::Body, 1, 5000);     // the host's 4.6 s: not charged
    b.observe(ConnWait::Body, 1, 5500);     // 500 ms of body
    assert_int_equal(b.request_ms, 900);
    assert_true(b.judge(l) == BindCut::None);
    b.observe(ConnWait::Body, 1, 5600);
    assert_true(b.judge(l) == BindCut::Request);
    // The request arrived whole: the next one starts from zero.
    b.observe(ConnWait::Output, 2, 5700);
    assert_int_equal(b.request_ms, 0);
    b.observe(ConnWait::Head, 2, 9000); // output's time is not the request's
    assert_int_equal(b.request_ms, 0);
    b.observe(ConnWait::Head, 2, 9999);
    assert_true(b.judge(l) == BindCut::None);
}

// The body window: judged once a window's worth is charged, met windows
// start the next one, a slow one is cut. Time in Handler (a streamed body
// the host is not reading) is not charged, so no rate is judged on it.
void test_body_window(void **) {
    BindLimits l = limits(0, 1000, 0, 1000); // 1000 B/s over 1 s
    Binding b;
    b.reset(1, 0);
    b.observe(ConnWait::Body, 1, 0);
    b.in += 1500;
    b.observe(ConnWait::Body, 1, 1000);
    assert_true(b.judge(l) == BindCut::None); // 1500 B in 1 s: met, next window
    assert_int_equal(b.body_ms, 0);
    b.in += 10;
    b.observe(ConnWait::Handler, 1, 1100);  // 100 ms charged
    b.observe(ConnWait::Body, 1, 60000);    // a minute of the host's: not charged
    assert_int_equal(b.body_ms, 100);
    assert_true(b.judge(l) == BindCut::None); // not a window yet
    b.observe(ConnWait::Body, 1, 61000);
    assert_true(b.judge(l) == BindCut::SlowBody); // 10 B in 1.1 s
}

// The send window charges only Output (queued and unsent).
void test_send_window(void **) {
    BindLimits l = limits(0, 0, 500, 1000);
    Binding b;
    b.reset(1, 0);
    b.observe(ConnWait::Output, 1, 0);
    b.out += 100;
    b.observe(ConnWait::Handler, 1, 900);  // 900 ms charged
    b.observe(ConnWait::Output, 1, 30000); // the host producing: not charged
    b.out += 500;
    b.observe(ConnWait::Output, 1, 30200);
    assert_int_equal(b.send_ms, 1100);
    assert_true(b.judge(l) == BindCut::None); // 600 B in 1.1 s: met
    b.observe(ConnWait::Output, 1, 31300);
    assert_true(b.judge(l) == BindCut::SlowReader); // nothing in 1.1 s
}

void test_limits(void **) {
    assert_int_equal(limits(0, 0, 0, 10000).tick_ms(), 0);
    assert_false(limits(0, 0, 0, 10000).any());
    assert_int_equal(limits(300000, 500, 500, 10000).tick_ms(), 1250);
    assert_int_equal(limits(400, 0, 0, 10000).tick_ms(), 50);
    assert_int_equal(limits(0, 0, 1, 16).tick_ms(), 2);
    BindLimits l = limits(1000, 0, 0, 10000);
    assert_true(l.charges(ConnWait::Head));
    assert_true(l.charges(ConnWait::Body));
    assert_false(l.charges(ConnWait::Output));
    assert_false(l.charges(ConnWait::Handler));
    assert_false(l.charges(ConnWait::Idle));
    assert_false(l.charges(ConnWait::FirstByte));
    assert_true(limits(0, 0, 1, 1000).charges(ConnWait::Output));
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_clock),
        cmocka_unit_test(test_body_window),
        cmocka_unit_test(test_send_window),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
