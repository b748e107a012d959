// A foreign thread that posts to a worker (a deferred weir_respond, a
// transplant's source posting an image) pushes its node, then wakes the
// worker. The worker may take the node before that wake — in any pass: it
// drains answers every pass — answer the client, and the engine be shut
// down and destroyed, while the poster has still to run its wake, which
// reads the worker's wake flag and its port. Worker::push_and_wake counts
// the poster from before its push to after its wake, and ~Worker waits for
// the count to drop (found by TSan: test_transplant, test_switch).
// Set-up: one inline worker; /defer is answered by a test thread through
// weir_respond while LoopHooks::post_wake_delay_ms holds every poster 300 ms
// (3 s under TSan) between its push and its wake; a second client's requests
// make the worker run passes, one of which applies the answer.
//   premise (checked): the deferred client has its answer and
//     weir_engine_shutdown has joined the loop while the answering thread is
//     still inside weir_respond: what destroy frees is still in use.
//   positive arm: weir_engine_destroy returns only once the poster's sleep
//     and wake are over (300 ms after the hand-off at the earliest).
//   the rule's mutant (checked by hand, not run here: removing the wait in
//     ~Worker): destroy returns a few ms after the join, this test fails,
//     and under SAN=1 ASan reports the heap-use-after-free in Worker::wake.
#include <atomic>
#include <string>
#include <thread>

#include "loop/hooks.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {


std::atomic<weir_exchange *> g_deferred{nullptr};

void handler(void *, weir_exchange *ex) {
    if (str(weir_exchange_request(ex)->path) == "/defer") {
        weir_defer(ex);
        g_deferred = ex;
        return;
    }
    answer(ex, 200, "now");
}

// The answering thread, process-lifetime (a failed assertion longjmps past
// destructors): answers what it is given, then notes that weir_respond returned.
struct Answerer {
    std::atomic<weir_exchange *> ex{nullptr};
    std::atomic<int> rc{1};
    std::atomic<bool> returned{false};
    static Answerer &get() {
        static Answerer *a = [] {
            auto *p = new Answerer;
            std::thread([p] { p->run(); }).detach();
            return p;
        }();
        return *a;
    }
    void run() {
        for (;;) {
            weir_exchange *x = ex.exchange(nullptr);
            if (!x) {
                sleep_ms(1);
                continue;
            }
            rc = answer(x, 200, "later");
            returned = true;
        }
    }
};

void test_destroy_waits_for_a_poster_inside_its_wake(void **) {
    Answerer &ans = Answerer::get();
    ans.returned = false;
    g_deferred = nullptr;
    auto *s = new Server; // destroyed by hand, timed; leaked if an assertion fails first
    assert_int_equal(s->start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    Client c1 = connect_to(s->port), c2 = connect_to(s->port);
    assert_true(send_all(c1, get("/defer")));
    int64_t until = now_ms() + bound_ms(3000);
    while (!g_deferred.load() && now_ms() < until)
        sleep_ms(1);
    assert_non_null(g_deferred.load());

    const int delay = bound_ms(300);
    weir::loop_hooks().post_wake_delay_ms = delay;
    int64_t t0 = now_ms();
    ans.ex = g_deferred.load();
    // Once pushed, the answer waits for a pass (its poster sleeps before the
    // wake): c2's requests make passes, each of which drains the answers.
    Response r1;
    int passes = 0;
    while (r1.status == 0 && now_ms() < t0 + delay / 2) {
        assert_true(send_all(c2, get("/now")));
        Response r2 = read_response(c2);
        assert_string_equal(r2.body.c_str(), "now");
        passes++;
        r1 = read_response(c1, 5);
    }
    assert_string_equal(r1.body.c_str(), "later");
    assert_int_equal(weir_engine_shutdown(s->e, 0), 0); // joins the loop
    int64_t joined = now_ms() - t0;
    std::printf("answered (after %d passes) and joined %lld ms after the hand-off (the poster sleeps %d ms "
                "after its push); weir_respond returned: %s\n",
                passes, (long long)joined, delay, ans.returned.load() ? "yes" : "no");
    // The premise: all that happened inside the poster's window (its push
    // came after t0, so its sleep ends after t0 + delay).
    assert_true(joined < delay);
    delete s; // weir_engine_destroy
    int64_t destroyed = now_ms() - t0;
    weir::loop_hooks().post_wake_delay_ms = 0;
    std::printf("destroy returned %lld ms after the hand-off\n", (long long)destroyed);
    // The rule: destroy waited for the poster to leave its wake (1 ms: both
    // clock readings are truncated to the millisecond).
    assert_true(destroyed >= delay - 1);
    assert_int_equal(ans.rc.load(), 0);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_destroy_waits_for_a_poster_inside_its_wake),
    };
    return cmocka_run_group_tests_name("poster_destroy", tests, nullptr, nullptr);
}
