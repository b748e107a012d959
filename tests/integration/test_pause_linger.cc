// The pause linger (DESIGN.md §5, docs/pause.md) on real sockets, two inline
// workers on 127.0.0.1 with TCP_DEFER_ACCEPT on (the default).
//
//   T1 (positive): eight silent clients, hidden from accept (the premise is
//      checked: nothing accepted at 200 ms, the kernel dropped their bare ACKs
//      or holds them in SYN-RECV); a pause 300 ms after the connects, inside
//      the kernel's one-second timer; the clients speak only after
//      weir_engine_pause returned: all eight are served, the pause lasted at
//      least a second, a later dial is refused.
//   N1 (must lose): T1 with linger_ms = 0: the silent clients are reset.
//   T2 (positive): a silent dial every 15 ms through the pause: none that
//      connected before the last close's final 60 ms is lost, and every one
//      that connected after the clears is accepted within 100 ms (500 under TSan).
//   N2 (must lose): T2 without the clear (LingerHooks::skip_clear): the
//      clients that arrive during the linger are lost.
//   T3 (positive): T2 with worker 1 acting 800 ms late: each deadline is
//      anchored at its own listener's clear, and still nothing is lost.
//   defer_accept = 0 (positive): a pause closes at once and loses nothing:
//      clients waiting in the accept queue are drained and served.
//   wake (positive): weir_engine_pause's thread is woken, not polling: a
//      handful of voluntary context switches and no CPU across a 1.5 s pause.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "integration/pause_common.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace pausetest;

namespace {

void test_pause_linger_t1_silent_clients_survive(void **) {
    hooks_reset();
    SilentResult r = run_silent(config(2, WEIR_MODE_INLINE, ok_handler, nullptr));
    print_silent("T1 positive", r);
    assert_int_equal(r.setup_rc, 0);
    assert_int_equal(r.connected, kSilent);
    // the premise: the clients are hidden from accept(2)
    assert_int_equal(r.accepted_at_200ms, 0);
    assert_true(r.drop_delta >= kSilent || r.syn_recv >= kSilent);
    assert_int_equal(r.pause_rc, 0);
    assert_int_equal(r.lingering, 2);
    assert_int_equal(r.served, kSilent);
    assert_true(r.pause_ms >= 1000);
    assert_int_equal(r.later_dial, -ECONNREFUSED);
    assert_int_equal(r.m.pause_lingers, 2);
    assert_int_equal(r.m.pause_closes, 2);
    assert_int_equal(r.m.pause_defer_clears, 2);
    assert_int_equal(r.m.pause_setsockopt_errors, 0);
    assert_int_equal(r.m.accepted, kSilent);
}

void test_pause_linger_n1_no_linger_resets_silent_clients(void **) {
    hooks_reset();
    weir_config c = config(2, WEIR_MODE_INLINE, ok_handler, nullptr);
    c.linger_ms = 0;
    SilentResult r = run_silent(c);
    print_silent("N1 must lose (linger_ms = 0)", r);
    assert_int_equal(r.setup_rc, 0);
    assert_int_equal(r.accepted_at_200ms, 0);
    assert_int_equal(r.pause_rc, 0);
    assert_true(r.pause_ms < 1000);
    assert_int_equal(r.lost, kSilent); // the loss the linger exists for
    assert_int_equal(r.m.pause_lingers, 0);
    assert_int_equal(r.m.pause_closes, 2);
    assert_int_equal(r.later_dial, -ECONNREFUSED);
}

struct DialStats {
    int total = 0, protected_ = 0, protected_lost = 0, after_clear = 0, slow_after_clear = 0, linger_lost = 0;
    int64_t worst_after_clear = 0, pre_pause_hidden = 0;
};

// A dial that reaches a listener as it closes is reset by the kernel (its
// SO_REUSEPORT socket still takes SYNs until close(2) returns; no
// tcp_migrate_req): no pause can protect it. So a dial is protected when it
// connected more than 60 ms before the last close and not within 60 ms before
// (or 10 ms after) any worker's close. With the closes apart (T3) the first
// close's window matters too: a dial at +1501 racing worker 0's close at
// +1501 was counted once, in one of ~30 runs under ASan.
bool near_a_close(const DialResult &r, int64_t at) {
    for (int i = 0; i < r.workers && i < kMaxWorkers; i++)
        if (at > r.close[i] - 60 && at <= r.close[i] + 10)
            return true;
    return false;
}

// How soon a dial after the clear must be accepted: at once in practice (10 ms
// at worst in the plain build), and far from the ~1 s TCP_DEFER_ACCEPT hid
// dials before it. Under TSan, on a loaded 2-core machine, the worker's pass
// took up to 498 ms: the bound there is 500, still half that second.
constexpr int kPromptMs = kSlowdown > 1 ? 500 : 100;

DialStats judge(const DialResult &r, const char *arm) {
    DialStats s;
    for (const Dial &d : r.dials) {
        s.total++;
        if (d.connected_at < r.last_close - 60 && !near_a_close(r, d.connected_at)) {
            s.protected_++;
            if (!d.ok)
                s.protected_lost++;
        }
        if (d.connected_at > r.last_clear && d.connected_at < r.last_close - 60 && !near_a_close(r, d.connected_at)) {
            s.after_clear++;
            int64_t lat = d.accepted_at ? d.accepted_at - d.connected_at : 99999;
            s.worst_after_clear = std::max(s.worst_after_clear, lat);
            if (lat > kPromptMs)
                s.slow_after_clear++;
        }
        if (d.connected_at > r.pause_begin && d.connected_at < r.first_close && !d.ok)
            s.linger_lost++;
        if (d.connected_at < r.pause_begin && d.accepted_at)
            s.pre_pause_hidden = std::max(s.pre_pause_hidden, d.accepted_at - d.connected_at);
    }
    std::printf("%s: %d dials, pause rc %d over %lld ms, clears at +%lld/+%lld, closes at +%lld/+%lld; "
                "before the close's last 60 ms %d (lost %d); after the clears %d (accepted in <= %d ms: %d, "
                "worst %lld ms); lost during the linger %d; longest pre-pause hiding %lld ms\n",
                arm, s.total, r.pause_rc, (long long)(r.pause_end - r.pause_begin),
                (long long)(r.clear[0] - r.pause_begin), (long long)(r.clear[1] - r.pause_begin),
                (long long)(r.close[0] - r.pause_begin), (long long)(r.close[1] - r.pause_begin), s.protected_,
                s.protected_lost, s.after_clear, kPromptMs, s.after_clear - s.slow_after_clear,
                (long long)s.worst_after_clear,
                s.linger_lost, (long long)s.pre_pause_hidden);
    std::fflush(stdout);
    return s;
}

void test_pause_linger_t2_dials_through_the_pause(void **) {
    hooks_reset();
    DialResult r = run_dials(config(2, WEIR_MODE_INLINE, ok_handler, nullptr));
    assert_int_equal(r.setup_rc, 0);
    DialStats s = judge(r, "T2 positive");
    assert_int_equal(r.pause_rc, 0);
    assert_true(s.protected_ >= 80); // ~300 ms before + ~1.5 s of linger at one dial per 15 ms
    assert_int_equal(s.protected_lost, 0);
    assert_true(s.after_clear >= 40);
    assert_int_equal(s.slow_after_clear, 0);
    assert_true(s.pre_pause_hidden >= 500); // before the clear, TCP_DEFER_ACCEPT did hide them
    assert_int_equal(r.m.pause_closes, 2);
}

void test_pause_linger_n2_no_clear_loses_linger_arrivals(void **) {
    hooks_reset();
    weir::linger_hooks().skip_clear = true;
    DialResult r = run_dials(config(2, WEIR_MODE_INLINE, ok_handler, nullptr));
    weir::linger_hooks().skip_clear = false;
    assert_int_equal(r.setup_rc, 0);
    DialStats s = judge(r, "N2 must lose (no clear)");
    assert_int_equal(r.pause_rc, 0);
    assert_int_equal(r.m.pause_defer_clears, 0);
    // Arrivals in the linger's last second are promoted only after the close.
    assert_true(s.linger_lost >= 10);
}

void test_pause_linger_t3_deadline_anchored_at_each_clear(void **) {
    hooks_reset();
    weir::linger_hooks().react_delay_ms = 800;
    weir::linger_hooks().react_delay_worker = 1;
    DialResult r = run_dials(config(2, WEIR_MODE_INLINE, ok_handler, nullptr));
    weir::linger_hooks().react_delay_ms = 0;
    assert_int_equal(r.setup_rc, 0);
    DialStats s = judge(r, "T3 positive (worker 1 acts 800 ms late)");
    assert_int_equal(r.pause_rc, 0);
    assert_true(r.clear[1] - r.clear[0] >= 700);
    for (int i = 0; i < 2; i++)
        assert_true(r.close[i] - r.clear[i] >= 1500);
    assert_true(r.close[1] - r.pause_begin >= 2300);
    assert_int_equal(s.protected_lost, 0);
    assert_int_equal(s.slow_after_clear, 0);
}

// One worker, defer_accept = 0. An accepted keep-alive client parks the loop
// in a 600 ms handler; meanwhile eight clients connect silently (they sit in
// the accept queue) and the pause is asked for. When the loop comes back the
// listener closes at once — after draining its accept queue, so the eight are
// accepted and served rather than reset.
std::atomic<bool> g_parked{false};
void parking_handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (str(r->path) == "/park") {
        g_parked = true;
        sleep_ms(600);
    }
    answer(ex, 200, "ok");
}

void test_pause_linger_defer_off_closes_at_once_and_drains(void **) {
    hooks_reset();
    weir_config c = config(1, WEIR_MODE_INLINE, parking_handler, nullptr);
    c.defer_accept = 0;
    Server s;
    assert_int_equal(s.start(c), 0);
    Client keep = connect_to(s.port);
    assert_true(send_all(keep, get("/")));
    assert_int_equal(read_response(keep).status, 200);
    g_parked = false;
    assert_true(send_all(keep, get("/park")));
    while (!g_parked)
        sleep_ms(1);
    std::vector<Client> silent;
    for (int i = 0; i < kSilent; i++) {
        int fd = dial(s.port);
        assert_true(fd >= 0);
        silent.emplace_back(fd);
    }
    int64_t p0 = now_ms();
    int rc = weir_engine_pause(s.e);
    int64_t took = now_ms() - p0;
    weir_metrics m = s.metrics();
    int ok = 0;
    for (auto &cl : silent)
        ok += served(cl) ? 1 : 0;
    std::printf("defer_accept=0 positive: pause rc %d after %lld ms, drained %llu, served %d of %d\n", rc,
                (long long)took, (unsigned long long)m.pause_drain_accepted, ok, kSilent);
    assert_int_equal(rc, 0);
    assert_true(took < 1200); // the park's rest, not a 1.5 s linger
    assert_int_equal(m.pause_lingers, 0);
    assert_int_equal(m.pause_closes, 1);
    assert_int_equal(m.pause_drain_accepted, kSilent);
    assert_int_equal(ok, kSilent);
    assert_int_equal(read_response(keep).status, 200); // the parked exchange
    assert_int_equal(dial(s.port), -ECONNREFUSED);
}

long voluntary_switches() {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%ld/status", static_cast<long>(syscall(SYS_gettid)));
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line))
        if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
            return std::stol(line.substr(24));
    return -1;
}

double thread_cpu_ms() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void test_pause_linger_wait_is_woken_not_polled(void **) {
    hooks_reset();
    Server s;
    assert_int_equal(s.start(config(2, WEIR_MODE_INLINE, ok_handler, nullptr)), 0);
    long v0 = voluntary_switches();
    double cpu0 = thread_cpu_ms();
    int64_t t0 = now_ms();
    int rc = weir_engine_pause(s.e);
    int64_t took = now_ms() - t0;
    long v1 = voluntary_switches();
    double cpu1 = thread_cpu_ms();
    std::printf("wake positive: pause rc %d over %lld ms, %ld voluntary context switches, %.2f ms CPU\n", rc,
                (long long)took, v1 - v0, cpu1 - cpu0);
    assert_int_equal(rc, 0);
    assert_true(took >= 1400);
    assert_true(v0 >= 0);
    // two listener closes (and the lingers starting) notify; a 10 ms poll
    // loop would show ~150 switches here
    assert_true(v1 - v0 <= 8);
    assert_true(cpu1 - cpu0 < 20);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pause_linger_t1_silent_clients_survive),
        cmocka_unit_test(test_pause_linger_n1_no_linger_resets_silent_clients),
        cmocka_unit_test(test_pause_linger_t2_dials_through_the_pause),
        cmocka_unit_test(test_pause_linger_n2_no_clear_loses_linger_arrivals),
        cmocka_unit_test(test_pause_linger_t3_deadline_anchored_at_each_clear),
        cmocka_unit_test(test_pause_linger_defer_off_closes_at_once_and_drains),
        cmocka_unit_test(test_pause_linger_wait_is_woken_not_polled),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
