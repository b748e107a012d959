// The adaptive pair (weir_adaptive_*, docs/adaptive.md) over two live
// engines on one port (A on the test backend, active; B on the other one
// where io_uring runs, else epoll, paused): tests/integration/switch_common.h.
//   forced switch: weir_adaptive_switch there and back under keep-alive
//     clients, every request answered, the engines swap in
//     weir_adaptive_engines, the counters say so, the ledgers balance.
//   controller: with low thresholds and a 20 ms interval, 24 idle keep-alive
//     connections (up_conns 16) make the epoll role switch up by itself,
//     once; they answer on the new engine; when they leave it switches down,
//     once (on io_uring A begins in the io_uring role: down first, then up).
//   negative arms (what must not switch): the same load without a
//     controller (cfg NULL) never switches on ticks; 15 connections, one
//     below up_conns, never switch with the controller on.
//   misuse: NULL handles, the same engine twice, a bad config: -EINVAL.
#include <string>
#include <vector>

#include "switch_common.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace switchtest;

namespace {

weir_adaptive_state state_of(weir_adaptive *a) {
    weir_adaptive_state st{};
    st.size = sizeof st;
    assert_int_equal(weir_adaptive_state_get(a, &st), 0);
    return st;
}

// Every client sends one request; returns how many `who` answered.
int round_trip(std::vector<Client> &cl, const std::string &path, char who) {
    int n = 0;
    for (auto &c : cl)
        assert_true(send_all(c, get(path)));
    for (auto &c : cl) {
        Response r = read_response(c);
        assert_int_equal(r.status, 200);
        n += r.body[0] == who;
    }
    return n;
}

// Ticks a for up to ms; returns the first nonzero tick (0: none).
int tick_for(weir_adaptive *a, int ms) {
    int64_t until = now_ms() + ms;
    while (now_ms() < until) {
        int rc = weir_adaptive_tick(a);
        if (rc != 0)
            return rc;
        int t = weir_adaptive_timeout_ms(a);
        sleep_ms(t > 0 ? t : 2);
    }
    return 0;
}

weir_adaptive_config low_thresholds() {
    weir_adaptive_config k;
    weir_adaptive_config_init(&k);
    k.interval_ms = 20;
    k.up_conns = 16;
    k.down_conns = 4;
    k.up_rps = 1000000; // the connections decide, not the rate
    k.down_rps = 100000;
    k.hold = 3;
    k.cooldown_ms = 200;
    return k;
}

void test_adaptive_forced_switch_there_and_back(void **) {
    Pair p;
    p.start(Kind::Sync);
    assert_true(p.ready());
    weir_adaptive *a = nullptr;
    assert_int_equal(weir_adaptive_create(p.a.s.e, p.b.s.e, nullptr, &a), 0);
    assert_int_equal(weir_adaptive_timeout_ms(a), -1); // no controller
    assert_int_equal(weir_adaptive_tick(a), 0);
    weir_adaptive_state st = state_of(a);
    assert_int_equal(st.controller, 0);
    assert_int_equal(st.active_backend, test_backend());
    assert_int_equal(st.standby_backend, other_backend());
    std::vector<Client> cl;
    for (int i = 0; i < 12; i++)
        cl.push_back(connect_to(p.a.s.port));
    assert_int_equal(round_trip(cl, "/before", 'A'), 12);

    assert_int_equal(weir_adaptive_switch(a), 0);
    weir_engine *active = nullptr, *standby = nullptr;
    assert_int_equal(weir_adaptive_engines(a, &active, &standby), 0);
    assert_ptr_equal(active, p.b.s.e);
    assert_ptr_equal(standby, p.a.s.e);
    assert_int_equal(weir_engine_pause(p.a.s.e), 0); // A's linger ends
    assert_int_equal(round_trip(cl, "/there", 'B'), 12);

    assert_int_equal(weir_adaptive_switch(a), 0);
    assert_int_equal(weir_engine_pause(p.b.s.e), 0);
    assert_int_equal(round_trip(cl, "/back", 'A'), 12);
    st = state_of(a);
    assert_int_equal(st.switches, 2);
    assert_int_equal(st.forced_switches, 2);
    assert_int_equal(st.switch_failures, 0);
    assert_int_equal(st.active_backend, test_backend());
    for (Server *s : {&p.a.s, &p.b.s}) {
        weir_metrics m = settle(*s);
        assert_int_equal(m.transplant_detached, m.transplant_adopted + m.transplant_refused);
        assert_int_equal(m.transplant_in_flight, 0);
        for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
            if (r != WEIR_CLOSE_PEER)
                assert_int_equal(m.closes[r], 0);
    }
    weir_adaptive_destroy(a);
}

// Up under 24 idle connections (not under 15), down once they leave. The
// pair begins in the role of A's backend: on io_uring it goes down first.
void load_up(weir_adaptive *a, Pair &p, Server &from, char who_after, std::vector<Client> &cl) {
    for (int i = 0; i < 15; i++)
        cl.push_back(connect_to(p.a.s.port));
    round_trip(cl, "/a", 0);
    assert_int_equal(tick_for(a, 400), 0); // one below up_conns: the arm that must not switch
    weir_adaptive_state st = state_of(a);
    assert_int_equal(st.last_reason, WEIR_ADAPTIVE_STEADY);
    assert_int_equal(st.last_conns_per_worker, 15);
    for (int i = 0; i < 9; i++)
        cl.push_back(connect_to(p.a.s.port));
    round_trip(cl, "/b", 0);
    assert_int_equal(tick_for(a, 2000), 1);
    st = state_of(a);
    assert_int_equal(st.last_reason, WEIR_ADAPTIVE_UP);
    assert_int_equal(st.role, WEIR_BACKEND_URING);
    assert_int_equal(weir_engine_pause(from.e), 0);
    assert_int_equal(round_trip(cl, "/c", who_after), 24); // every connection moved
    assert_int_equal(tick_for(a, 400), 0);                 // the load stays: no more switches
}

void load_down(weir_adaptive *a, Server &from, std::vector<Client> &cl) {
    cl.clear();
    assert_int_equal(tick_for(a, 2000), 1);
    weir_adaptive_state st = state_of(a);
    assert_int_equal(st.last_reason, WEIR_ADAPTIVE_DOWN);
    assert_int_equal(st.role, WEIR_BACKEND_EPOLL);
    assert_int_equal(weir_engine_pause(from.e), 0);
}

void test_adaptive_controller_switches_by_load(void **) {
    Pair p;
    p.start(Kind::Sync);
    assert_true(p.ready());
    weir_adaptive_config k = low_thresholds();
    weir_adaptive *a = nullptr;
    assert_int_equal(weir_adaptive_create(p.a.s.e, p.b.s.e, &k, &a), 0);
    assert_true(weir_adaptive_timeout_ms(a) <= 20);
    std::vector<Client> cl;
    if (state_of(a).role == WEIR_BACKEND_EPOLL) {
        load_up(a, p, p.a.s, 'B', cl);
        load_down(a, p.b.s, cl);
    } else {
        // On the io_uring role 24 connections are no reason to move.
        for (int i = 0; i < 24; i++)
            cl.push_back(connect_to(p.a.s.port));
        assert_int_equal(round_trip(cl, "/a", 'A'), 24);
        assert_int_equal(tick_for(a, 400), 0);
        assert_int_equal(state_of(a).last_reason, WEIR_ADAPTIVE_STEADY);
        load_down(a, p.a.s, cl);
        load_up(a, p, p.b.s, 'A', cl);
    }
    weir_adaptive_state st = state_of(a);
    assert_int_equal(st.controller_switches, 2);
    assert_int_equal(st.forced_switches, 0);
    assert_int_equal(st.switches, 2);
    assert_int_equal(st.active_backend, test_backend());
    weir_engine *active = nullptr;
    weir_adaptive_engines(a, &active, nullptr);
    assert_ptr_equal(active, p.a.s.e);
    for (Server *s : {&p.a.s, &p.b.s}) {
        weir_metrics m = settle(*s);
        assert_int_equal(m.transplant_in_flight, 0);
        assert_int_equal(m.transplant_detached, m.transplant_adopted + m.transplant_refused);
    }
    weir_adaptive_destroy(a);
}

// The arm that must not switch: the load that switched above, no controller.
void test_adaptive_without_controller_ticks_never_switch(void **) {
    Pair p;
    p.start(Kind::Sync);
    assert_true(p.ready());
    weir_adaptive *a = nullptr;
    assert_int_equal(weir_adaptive_create(p.a.s.e, p.b.s.e, nullptr, &a), 0);
    std::vector<Client> cl;
    for (int i = 0; i < 24; i++)
        cl.push_back(connect_to(p.a.s.port));
    assert_int_equal(round_trip(cl, "/a", 'A'), 24);
    assert_int_equal(tick_for(a, 300), 0);
    assert_int_equal(state_of(a).switches, 0);
    assert_int_equal(round_trip(cl, "/b", 'A'), 24);
    weir_adaptive_destroy(a);
}

void test_adaptive_misuse(void **) {
    Pair p;
    p.start(Kind::Sync);
    assert_true(p.ready());
    weir_adaptive *a = nullptr;
    weir_adaptive_config k;
    weir_adaptive_config_init(&k);
    assert_int_equal(weir_adaptive_create(nullptr, p.b.s.e, &k, &a), -EINVAL);
    assert_int_equal(weir_adaptive_create(p.a.s.e, nullptr, &k, &a), -EINVAL);
    assert_int_equal(weir_adaptive_create(p.a.s.e, p.a.s.e, &k, &a), -EINVAL);
    assert_int_equal(weir_adaptive_create(p.a.s.e, p.b.s.e, &k, nullptr), -EINVAL);
    k.down_conns = k.up_conns;
    assert_int_equal(weir_adaptive_create(p.a.s.e, p.b.s.e, &k, &a), -EINVAL);
    assert_null(a);
    assert_int_equal(weir_adaptive_tick(nullptr), -EINVAL);
    assert_int_equal(weir_adaptive_switch(nullptr), -EINVAL);
    assert_int_equal(weir_adaptive_timeout_ms(nullptr), -EINVAL);
    assert_int_equal(weir_adaptive_engines(nullptr, nullptr, nullptr), -EINVAL);
    weir_adaptive_state st{};
    assert_int_equal(weir_adaptive_state_get(nullptr, &st), -EINVAL);
    assert_int_equal(weir_adaptive_create(p.a.s.e, p.b.s.e, nullptr, &a), 0);
    st.size = 0; // nobody set it
    assert_int_equal(weir_adaptive_state_get(a, &st), -EINVAL);
    assert_non_null(weir_adaptive_config_error(nullptr));
    weir_adaptive_destroy(a);
    weir_adaptive_destroy(nullptr);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adaptive_forced_switch_there_and_back),
        cmocka_unit_test(test_adaptive_controller_switches_by_load),
        cmocka_unit_test(test_adaptive_without_controller_ticks_never_switch),
        cmocka_unit_test(test_adaptive_misuse),
    };
    return cmocka_run_group_tests_name("adaptive", tests, nullptr, nullptr);
}
