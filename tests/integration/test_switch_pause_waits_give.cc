// weir_engine_pause(from) after a switch returns only once from's workers
// are done with the taker (worker_give.cc, Engine::every_listener_closed):
// a host may destroy the taker's engine as soon as the pause returns, and a
// worker still inside the hand-off's calls into it (receive_listener, its
// wake) would then touch freed memory. TSan found it in test_switch_churn
// (a pause that returned on the listener's Closed, published before the
// hand-off, while the giving worker was inside the taker's wake()).
//
// LingerHooks::give_done_delay_ms holds the giving worker D ms after its
// hand-off (after the Given event), before it counts the give done, so the
// window is wide enough to see from outside:
//   test_pause_waits_for_the_give: the pause returns no sooner than D after
//     the Given event (a lower bound: it cannot flake), and the clients the
//     taker now serves are answered by it.
//   test_pause_that_ignores_gives_returns_inside_it: the arm that must lose
//     (LingerHooks::pause_ignores_gives, the pause as before): it returns
//     while the giver is still in the window, well before D has passed, or
//     even before the hand-off's Given (seen under TSan).
#include <atomic>
#include <chrono>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/linger.h"
#include "switch_common.h"

using namespace switchtest;

namespace {

constexpr int kDelayMs = 500; // inside the pause's bound (the linger, 1000 ms, plus 1 s)
std::atomic<int64_t> g_given_ms{0};

void on_event(uint32_t, weir::LingerEvent ev) {
    if (ev == weir::LingerEvent::Given && g_given_ms.load() == 0)
        g_given_ms.store(now_ms());
}

// The time from the Given event to the pause's return, in ms; INT64_MIN
// when the pause returned before the event (before the hand-off was over).
int64_t pause_after_give(bool ignore_gives) {
    g_given_ms = 0;
    weir::linger_hooks().on_event = on_event;
    weir::linger_hooks().give_done_delay_ms = kDelayMs;
    weir::linger_hooks().pause_ignores_gives = ignore_gives;
    Pair p;
    p.start(Kind::Sync, 1000);
    if (!p.ready()) {
        weir::linger_hooks().reset();
        skip();
    }
    assert_int_equal(weir_engine_switch(p.a.s.e, p.b.s.e), 0);
    int rc = weir_engine_pause(p.a.s.e);
    int64_t back = now_ms();
    assert_int_equal(rc, 0);
    int64_t given = g_given_ms.load();
    // The taker serves the port.
    Client c = connect_to(p.a.s.port);
    assert_true(send_all(c, get("/after")));
    Response r = read_response(c);
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), "B /after");
    if (ignore_gives) {
        // Before ~Pair destroys the taker: the pause as it is now waits for
        // the giver to leave it (and so orders that against the destroy).
        weir::linger_hooks().pause_ignores_gives = false;
        assert_int_equal(weir_engine_pause(p.a.s.e), 0);
    }
    assert_true(g_given_ms.load() != 0); // the listener was given (not closed)
    weir::linger_hooks().reset();
    return given ? back - given : INT64_MIN;
}

void test_pause_waits_for_the_give(void **) { assert_true(pause_after_give(false) >= kDelayMs); }

void test_pause_that_ignores_gives_returns_inside_it(void **) { assert_true(pause_after_give(true) < kDelayMs); }

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pause_waits_for_the_give),
        cmocka_unit_test(test_pause_that_ignores_gives_returns_inside_it),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
