// The pause's control surface (DESIGN.md §5, docs/pause.md): resume, shutdown
// and the return codes, on real sockets, two workers on 127.0.0.1.
//
//   T5 (positive): a resume during the linger keeps the same listener fds
//      (same SO_COOKIE), puts TCP_DEFER_ACCEPT back (a fresh silent client is
//      hidden again), and weir_engine_pause, waiting in another thread,
//      returns at once with -ECANCELED; the old deadline no longer applies.
//   T6 (positive): a shutdown during the linger releases weir_engine_pause at
//      once with WEIR_E_SHUTDOWN.
//   reopen (positive): a resume after the close opens new listeners on the
//      same port, with the option on; a dial is served.
//   codes: WEIR_E_STATE before listen, WEIR_E_SHUTDOWN after shutdown,
//      repeated begins keep the first deadline, pause on closed listeners
//      returns 0 at once, resume with no pause is a no-op.
//   driven: the worker acts when its host polls; the pause completes.
//   failures: an unreadable sysctl is counted every time, logged once.
#include <pthread.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "integration/pause_common.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace pausetest;
using weir::ListenerState;

namespace {

struct PauseThread {
    std::thread t;
    std::atomic<int> rc{1};
    std::atomic<int64_t> done_at{0};
    void start(weir_engine *e) {
        t = std::thread([this, e] {
            rc = weir_engine_pause(e);
            done_at = now_ms();
        });
    }
    void join() { t.join(); }
};

void test_pause_control_t5_resume_during_linger(void **) {
    hooks_reset();
    Server s;
    assert_int_equal(s.start(config(2, WEIR_MODE_INLINE, ok_handler, nullptr)), 0);
    weir::Engine *en = internal(s.e);
    int fds[2];
    uint64_t cookies[2];
    for (uint32_t i = 0; i < 2; i++) {
        fds[i] = en->worker(i)->listen_fd();
        cookies[i] = socket_cookie(fds[i]);
        assert_true(cookies[i] != 0);
        assert_true(weir::defer_accept_get(fds[i]) > 0);
    }
    int64_t p0 = now_ms();
    PauseThread pt;
    pt.start(s.e);
    assert_true(wait_state(s.e, ListenerState::Lingering, 1000));
    for (uint32_t i = 0; i < 2; i++)
        assert_int_equal(weir::defer_accept_get(fds[i]), 0); // cleared
    int64_t r0 = now_ms();
    assert_int_equal(weir_engine_resume(s.e), 0);
    pt.join();
    int64_t released = pt.done_at - r0;
    assert_true(wait_state(s.e, ListenerState::Active, 1000));
    bool same = true, restored = true;
    for (uint32_t i = 0; i < 2; i++) {
        int fd = en->worker(i)->listen_fd();
        same = same && fd == fds[i] && socket_cookie(fd) == cookies[i];
        restored = restored && weir::defer_accept_get(fd) > 0;
    }
    // a fresh silent client is hidden again
    uint64_t acc0 = s.metrics().accepted;
    int fd = dial(s.port);
    assert_true(fd >= 0);
    Client fresh(fd);
    sleep_ms(200);
    uint64_t acc1 = s.metrics().accepted;
    // past the old deadline the listeners are still there
    sleep_ms(static_cast<int>(std::max<int64_t>(0, p0 + 1800 - now_ms())));
    bool still_active = wait_state(s.e, ListenerState::Active, 0);
    bool fresh_ok = served(fresh);
    int later = dial(s.port);
    Client later_c(later);
    bool later_ok = later >= 0 && served(later_c);
    weir_metrics m = s.metrics();
    std::printf("T5 positive: pause rc %d, released %lld ms after the resume; same fds/cookies %d, option back %d; "
                "fresh client accepted within 200 ms: %llu; after the old deadline active %d, served %d/%d; "
                "aborts %llu restores %llu closes %llu\n",
                pt.rc.load(), (long long)released, same, restored, (unsigned long long)(acc1 - acc0), still_active,
                fresh_ok, later_ok, (unsigned long long)m.pause_aborts, (unsigned long long)m.pause_defer_restores,
                (unsigned long long)m.pause_closes);
    assert_int_equal(pt.rc, -ECANCELED);
    assert_true(released < 100);
    assert_true(same);
    assert_true(restored);
    assert_int_equal(acc1 - acc0, 0);
    assert_true(still_active);
    assert_true(fresh_ok);
    assert_true(later_ok);
    assert_int_equal(m.pause_aborts, 2);
    assert_int_equal(m.pause_defer_restores, 2);
    assert_int_equal(m.pause_closes, 0);
}

void test_pause_control_t6_shutdown_releases_the_wait(void **) {
    hooks_reset();
    Server s;
    assert_int_equal(s.start(config(2, WEIR_MODE_INLINE, ok_handler, nullptr)), 0);
    PauseThread pt;
    pt.start(s.e);
    assert_true(wait_state(s.e, ListenerState::Lingering, 1000));
    int64_t s0 = now_ms();
    assert_int_equal(s.shutdown(0), 0);
    pt.join();
    int64_t released = pt.done_at - s0;
    std::printf("T6 positive: pause rc %d, released %lld ms after the shutdown began\n", pt.rc.load(),
                (long long)released);
    assert_int_equal(pt.rc, WEIR_E_SHUTDOWN);
    assert_true(released < 300); // the linger had ~1.4 s left
    assert_int_equal(weir_engine_begin_pause(s.e), WEIR_E_SHUTDOWN);
    assert_int_equal(weir_engine_pause(s.e), WEIR_E_SHUTDOWN);
    assert_int_equal(weir_engine_resume(s.e), WEIR_E_SHUTDOWN);
}

void test_pause_control_resume_reopens_closed_listeners(void **) {
    hooks_reset();
    weir_config c = config(2, WEIR_MODE_INLINE, ok_handler, nullptr);
    c.linger_ms = 100;
    Server s;
    assert_int_equal(s.start(c), 0);
    weir::Engine *en = internal(s.e);
    uint64_t cookies[2];
    for (uint32_t i = 0; i < 2; i++)
        cookies[i] = socket_cookie(en->worker(i)->listen_fd());
    assert_int_equal(weir_engine_pause(s.e), 0);
    assert_int_equal(dial(s.port), -ECONNREFUSED);
    assert_int_equal(weir_engine_pause(s.e), 0); // already closed: at once
    assert_int_equal(weir_engine_resume(s.e), 0);
    assert_true(wait_state(s.e, ListenerState::Active, 1000));
    for (uint32_t i = 0; i < 2; i++) {
        int fd = en->worker(i)->listen_fd();
        assert_true(fd >= 0);
        assert_true(socket_cookie(fd) != cookies[i]); // a new socket
        assert_true(weir::defer_accept_get(fd) > 0);
    }
    int fd = dial(s.port);
    assert_true(fd >= 0);
    Client cl(fd);
    assert_true(served(cl));
    weir_metrics m = s.metrics();
    assert_int_equal(m.pause_reopens, 2);
    assert_int_equal(m.pause_reopen_errors, 0);
    assert_int_equal(m.pause_closes, 2);
}

void test_pause_control_codes_and_repeats(void **) {
    hooks_reset();
    weir_config c = config(2, WEIR_MODE_INLINE, ok_handler, nullptr);
    c.linger_ms = 600;
    weir_engine *e = nullptr;
    assert_int_equal(create(c, &e), 0);
    assert_int_equal(weir_engine_begin_pause(e), WEIR_E_STATE);
    assert_int_equal(weir_engine_pause(e), WEIR_E_STATE);
    assert_int_equal(weir_engine_resume(e), WEIR_E_STATE);
    weir_engine_destroy(e);

    Server s;
    assert_int_equal(s.start(c), 0);
    assert_int_equal(weir_engine_resume(s.e), 0); // nothing to resume
    assert_true(wait_state(s.e, ListenerState::Active, 0));
    int64_t t0 = now_ms();
    assert_int_equal(weir_engine_begin_pause(s.e), 0);
    sleep_ms(400);
    assert_int_equal(weir_engine_begin_pause(s.e), 0); // keeps the first deadline
    assert_int_equal(weir_engine_pause(s.e), 0);
    int64_t took = now_ms() - t0;
    std::printf("codes: repeated begins, closed after %lld ms (600 ms linger; a reset deadline would be >= 1000)\n",
                (long long)took);
    assert_true(took >= 600);
    assert_true(took < 850);
    weir_metrics m = s.metrics();
    assert_int_equal(m.pause_lingers, 2);
    assert_int_equal(m.pause_closes, 2);
}

// Driven mode: two host threads poll with a 100 ms bound; the pause reaches
// each worker through its next poll, and a silent client survives it.
void test_pause_control_driven_mode(void **) {
    hooks_reset();
    weir_config c = config(2, WEIR_MODE_DRIVEN, nullptr, nullptr);
    Server s;
    assert_int_equal(s.start(c), 0);
    std::atomic<bool> stop{false};
    std::vector<std::thread> hosts;
    for (uint32_t i = 0; i < 2; i++) {
        weir_worker *w = nullptr;
        assert_int_equal(weir_engine_worker(s.e, i, &w), 0);
        hosts.emplace_back([w, &stop] {
            weir_exchange *xs[16];
            while (!stop) {
                int n = weir_worker_poll(w, xs, 16, 100);
                if (n < 0)
                    break;
                for (int k = 0; k < n; k++)
                    answer(xs[k], 200, "ok");
            }
        });
    }
    int fd = dial(s.port);
    assert_true(fd >= 0);
    Client early(fd);
    sleep_ms(200);
    int64_t t0 = now_ms();
    int rc = weir_engine_pause(s.e);
    int64_t took = now_ms() - t0;
    bool ok = served(early);
    int refused = dial(s.port);
    weir_metrics m = s.metrics();
    s.shutdown(1000000000);
    stop = true;
    for (auto &t : hosts)
        t.join();
    std::printf("driven: pause rc %d after %lld ms, early client served %d, later dial %d\n", rc, (long long)took, ok,
                refused);
    assert_int_equal(rc, 0);
    assert_true(took >= 1500);
    assert_true(ok);
    assert_int_equal(refused, -ECONNREFUSED);
    assert_int_equal(m.pause_lingers, 2);
    assert_int_equal(m.pause_closes, 2);
}

std::atomic<int> g_logs{0};
std::atomic<int> g_sysctl_logs{0};
void count_log(void *, int, const char *msg) {
    g_logs++;
    if (std::strstr(msg, "tcp_synack_retries"))
        g_sysctl_logs++;
}

void test_pause_control_failures_counted_every_time_logged_once(void **) {
    hooks_reset();
    weir::linger_hooks().sysctl_path = "/nonexistent/tcp_synack_retries";
    weir_config c = config(2, WEIR_MODE_INLINE, ok_handler, nullptr);
    c.linger_ms = 50;
    c.log = count_log;
    g_logs = 0;
    g_sysctl_logs = 0;
    Server s;
    assert_int_equal(s.start(c), 0);
    assert_int_equal(weir_engine_pause(s.e), 0);
    assert_int_equal(weir_engine_resume(s.e), 0);
    assert_true(wait_state(s.e, ListenerState::Active, 1000));
    assert_int_equal(weir_engine_pause(s.e), 0);
    weir::linger_hooks().sysctl_path = nullptr;
    weir_metrics m = s.metrics();
    assert_int_equal(m.pause_sysctl_unreadable, 4); // every listener, every pause
    assert_int_equal(m.pause_guards, 0);            // never applied on a guess
    assert_int_equal(m.pause_lingers, 4);           // the linger still ran
    assert_int_equal(g_sysctl_logs, 1);             // once per engine
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pause_control_t5_resume_during_linger),
        cmocka_unit_test(test_pause_control_t6_shutdown_releases_the_wait),
        cmocka_unit_test(test_pause_control_resume_reopens_closed_listeners),
        cmocka_unit_test(test_pause_control_codes_and_repeats),
        cmocka_unit_test(test_pause_control_driven_mode),
        cmocka_unit_test(test_pause_control_failures_counted_every_time_logged_once),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
