// Unit tests of weir-demo's adaptive controller (examples/c/demo_controller.h,
// docs/controller.md): the policy driven with synthetic samples at exact
// times, the sample computed from two weir_metrics, and the flags that turn
// it on (examples/c/demo_args.h). Each boundary is tested on both sides, so
// a mutant of a rule (> for >=, && for ||, hold - 1, a cooldown or lock-out
// off by one, a lock-out that never ends) fails an assertion.
#include <cstring>
#include <initializer_list>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

#include "../../../examples/c/demo_args.h" // includes demo_controller.h

namespace {

constexpr uint64_t T0 = 1000000; // a monotonic clock well past 0

// Small numbers so each threshold is easy to stand on.
ctl_config small_config() {
    ctl_config k;
    ctl_config_defaults(&k);
    k.up_conns = 100;
    k.down_conns = 20;
    k.up_rps = 1000;
    k.down_rps = 200;
    k.max_error_permille = 50;
    k.hold = 3;
    k.cooldown_ms = 5000;
    k.flap_count = 3;
    k.flap_window_ms = 60000;
    k.lockout_ms = 300000;
    return k;
}

ctl_decision feed(ctl &c, uint64_t t, uint64_t conns, uint64_t rps, uint64_t err = 0) {
    ctl_sample s;
    s.now_ms = t;
    s.conns_per_worker = conns;
    s.rps = rps;
    s.error_permille = err;
    return ctl_decide(&c, &s);
}

// Feeds want-to-switch samples 1 s apart from t until one switches; returns
// its time (or 0 after 1000 samples).
uint64_t switch_time(ctl &c, uint64_t t, uint64_t conns, uint64_t rps) {
    for (int i = 0; i < 1000; i++, t += 1000)
        if (feed(c, t, conns, rps) == CTL_SWITCH)
            return t;
    return 0;
}

void test_demo_controller_up_at_threshold_after_hold(void **) {
    ctl_config k = small_config();
    ctl c;
    ctl_init(&c, &k, 0); // on epoll
    assert_int_equal(c.last, CTL_NONE);
    assert_int_equal(feed(c, T0, 99, 999), CTL_STAY); // just below both: steady
    assert_int_equal(c.last, CTL_STEADY);
    assert_int_equal(feed(c, T0 + 1000, 100, 0), CTL_STAY); // at up_conns: 1 of 3
    assert_int_equal(c.last, CTL_HOLD);
    assert_int_equal(feed(c, T0 + 2000, 100, 0), CTL_STAY); // 2 of 3
    assert_int_equal(c.last, CTL_HOLD);
    assert_int_equal(feed(c, T0 + 3000, 99, 0), CTL_STAY); // the streak breaks
    assert_int_equal(c.last, CTL_STEADY);
    assert_int_equal(c.streak, 0);
    assert_int_equal(feed(c, T0 + 4000, 100, 0), CTL_STAY);
    assert_int_equal(feed(c, T0 + 5000, 100, 0), CTL_STAY);
    assert_int_equal(feed(c, T0 + 6000, 100, 0), CTL_SWITCH); // 3 in a row
    assert_int_equal(c.last, CTL_UP);
    assert_int_equal(c.decisions, 7);
    assert_int_equal(c.switches, 0); // counted when it happens
    ctl_switched(&c, T0 + 6000, 1);
    assert_int_equal(c.switches, 1);
    assert_true(c.on_uring);
    assert_int_equal(c.streak, 0);

    // The rate alone is enough (either condition): at up_rps, no connections.
    ctl_init(&c, &k, 0);
    assert_int_equal(feed(c, T0, 0, 1000), CTL_STAY);
    assert_int_equal(feed(c, T0 + 1000, 0, 1000), CTL_STAY);
    assert_int_equal(feed(c, T0 + 2000, 0, 1000), CTL_SWITCH);
    assert_int_equal(c.last, CTL_UP);

    // hold = 1: the first sample at the threshold switches.
    k.hold = 1;
    ctl_init(&c, &k, 0);
    assert_int_equal(feed(c, T0, 100, 0), CTL_SWITCH);
}

void test_demo_controller_hysteresis(void **) {
    ctl_config k = small_config();
    ctl c;
    // Between the thresholds neither role moves.
    ctl_init(&c, &k, 0);
    assert_int_equal(switch_time(c, T0, 50, 500), 0);
    assert_int_equal(c.last, CTL_STEADY);
    ctl_init(&c, &k, 1);
    assert_int_equal(switch_time(c, T0, 50, 500), 0);
    assert_int_equal(c.last, CTL_STEADY);
    // Down needs both below: connections below but the rate not, or the
    // other way round, or exactly at a down threshold, stays.
    assert_int_equal(switch_time(c, T0, 19, 200), 0);
    assert_int_equal(switch_time(c, T0, 20, 199), 0);
    assert_int_equal(switch_time(c, T0, 19, 999), 0);
    // On io_uring the up condition is no reason to move.
    assert_int_equal(switch_time(c, T0, 500, 5000), 0);
    // Both below: down, after hold samples.
    assert_int_equal(feed(c, T0, 19, 199), CTL_STAY);
    assert_int_equal(c.last, CTL_HOLD);
    assert_int_equal(feed(c, T0 + 1000, 19, 199), CTL_STAY);
    assert_int_equal(feed(c, T0 + 2000, 19, 199), CTL_SWITCH);
    assert_int_equal(c.last, CTL_DOWN);
}

void test_demo_controller_held_by_errors(void **) {
    ctl_config k = small_config();
    ctl c;
    ctl_init(&c, &k, 0);
    assert_int_equal(feed(c, T0, 100, 0, 51), CTL_STAY); // hold 1 of 3
    assert_int_equal(feed(c, T0 + 1000, 100, 0, 51), CTL_STAY);
    assert_int_equal(feed(c, T0 + 2000, 100, 0, 51), CTL_STAY); // would switch: errors above the limit
    assert_int_equal(c.last, CTL_ERRORS);
    assert_int_equal(feed(c, T0 + 3000, 100, 0, 1000), CTL_STAY);
    assert_int_equal(c.held_by_errors, 2);
    // At the limit it is not above it; the streak went on counting, so the
    // first sample the errors allow switches.
    assert_int_equal(feed(c, T0 + 4000, 100, 0, 50), CTL_SWITCH);
    assert_int_equal(c.last, CTL_UP);
    assert_int_equal(c.held_by_errors, 2);
    // Errors alone never ask for a switch (nor count as held by them).
    ctl_init(&c, &k, 0);
    for (uint64_t t = T0; t < T0 + 10000; t += 1000) {
        assert_int_equal(feed(c, t, 50, 500, 1000), CTL_STAY);
        assert_int_equal(c.last, CTL_STEADY);
    }
    assert_int_equal(c.held_by_errors, 0);
}

void test_demo_controller_cooldown(void **) {
    ctl_config k = small_config();
    k.hold = 1;
    ctl c;
    ctl_init(&c, &k, 0);
    assert_int_equal(feed(c, T0, 100, 0), CTL_SWITCH);
    ctl_switched(&c, T0, 1);
    // The load drops at once: down is asked for, the cooldown holds it.
    assert_int_equal(feed(c, T0 + 1000, 0, 0), CTL_STAY);
    assert_int_equal(c.last, CTL_COOLDOWN);
    assert_int_equal(feed(c, T0 + 4999, 0, 0), CTL_STAY);
    assert_int_equal(c.last, CTL_COOLDOWN);
    assert_int_equal(c.held_by_cooldown, 2);
    assert_int_equal(feed(c, T0 + 5000, 0, 0), CTL_SWITCH); // cooldown_ms after the switch
    assert_int_equal(c.last, CTL_DOWN);

    // An operator's switch (SIGWINCH) swaps the roles and starts the cooldown too.
    ctl_init(&c, &k, 0);
    ctl_switched(&c, T0, 0);
    assert_int_equal(c.external_switches, 1);
    assert_int_equal(c.switches, 0);
    assert_true(c.on_uring);
    assert_int_equal(feed(c, T0 + 4999, 0, 0), CTL_STAY);
    assert_int_equal(c.last, CTL_COOLDOWN);
    assert_int_equal(feed(c, T0 + 5000, 0, 0), CTL_SWITCH);
    assert_int_equal(c.last, CTL_DOWN);
}

void test_demo_controller_flap_lockout_and_its_end(void **) {
    ctl_config k = small_config();
    k.hold = 1;
    k.cooldown_ms = 100;
    k.flap_count = 3;
    k.flap_window_ms = 10000;
    k.lockout_ms = 30000;
    ctl c;
    ctl_init(&c, &k, 0);
    // Two switches within the window: no lock-out yet.
    ctl_switched(&c, T0, 1);
    ctl_switched(&c, T0 + 1000, 1);
    assert_int_equal(c.lockouts, 0);
    assert_int_equal(feed(c, T0 + 1100, 100, 0), CTL_SWITCH); // on epoll again, cooldown over
    // The third within 10 s locks switching out for 30 s.
    ctl_switched(&c, T0 + 1100, 1);
    assert_int_equal(c.lockouts, 1);
    assert_int_equal(feed(c, T0 + 1150, 0, 0), CTL_STAY); // inside the cooldown and the lock-out:
    assert_int_equal(c.last, CTL_LOCKOUT);                  // the lock-out is named (and counted)
    assert_int_equal(feed(c, T0 + 1200, 0, 0), CTL_STAY); // past the cooldown, inside the lock-out
    assert_int_equal(c.last, CTL_LOCKOUT);
    assert_int_equal(feed(c, T0 + 31099, 0, 0), CTL_STAY);
    assert_int_equal(c.last, CTL_LOCKOUT);
    assert_int_equal(c.held_by_lockout, 3);
    assert_int_equal(c.held_by_cooldown, 0);
    assert_int_equal(feed(c, T0 + 31100, 0, 0), CTL_SWITCH); // the lock-out ends
    assert_int_equal(c.last, CTL_DOWN);
    // The lock-out forgot the switches that caused it: two more do not lock.
    ctl_switched(&c, T0 + 31100, 1);
    ctl_switched(&c, T0 + 31200, 1);
    assert_int_equal(c.lockouts, 1);
    ctl_switched(&c, T0 + 31300, 1); // the third since: locks again
    assert_int_equal(c.lockouts, 2);

    // A lock-out shorter than the window: at its end the window starts
    // afresh, or the switches before it would lock again at the first one.
    k.lockout_ms = 5000;
    ctl_init(&c, &k, 0);
    ctl_switched(&c, T0, 1);
    ctl_switched(&c, T0 + 100, 1);
    ctl_switched(&c, T0 + 200, 1);
    assert_int_equal(c.lockouts, 1);
    assert_int_equal(feed(c, T0 + 5199, 0, 0), CTL_STAY);
    assert_int_equal(c.last, CTL_LOCKOUT);
    assert_int_equal(feed(c, T0 + 5200, 0, 0), CTL_SWITCH);
    ctl_switched(&c, T0 + 5200, 1);
    assert_int_equal(c.lockouts, 1);
    assert_int_equal(feed(c, T0 + 5300, 100, 0), CTL_SWITCH); // not locked
    k.lockout_ms = 30000;

    // Three switches spread over exactly the window are no flap.
    ctl_init(&c, &k, 0);
    ctl_switched(&c, T0, 1);
    ctl_switched(&c, T0 + 5000, 1);
    ctl_switched(&c, T0 + 10000, 1);
    assert_int_equal(c.lockouts, 0);
    ctl_switched(&c, T0 + 10001, 1); // the last three: 5000 .. 10001
    assert_int_equal(c.lockouts, 1);

    // flap_count 0: no lock-out, however fast.
    k.flap_count = 0;
    ctl_init(&c, &k, 0);
    for (uint64_t i = 0; i < 20; i++)
        ctl_switched(&c, T0 + i, 1);
    assert_int_equal(c.lockouts, 0);
    assert_int_equal(feed(c, T0 + 1000, 100, 0), CTL_SWITCH);
}

void test_demo_controller_sample_from_metrics(void **) {
    weir_metrics a, b;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.workers = 2;
    a.requests = 1000;
    a.parse_errors = 10;
    for (uint32_t i = 0; i < WEIR_CLOSE_REASONS; i++)
        a.closes[i] = 100;
    b = a;
    b.connections_open = 9; // 4 per worker (whole connections)
    b.requests += 500;
    b.parse_errors += 3;
    b.closes[WEIR_CLOSE_IO_ERROR] += 1;
    b.closes[WEIR_CLOSE_RESOURCE] += 1;
    b.closes[WEIR_CLOSE_OUTPUT_LIMIT] += 1;
    b.closes[WEIR_CLOSE_WRITE_TIMEOUT] += 1;
    // not errors: the close after each parse error, peers leaving, timeouts, Connection: close
    b.closes[WEIR_CLOSE_BAD_REQUEST] += 3;
    b.closes[WEIR_CLOSE_PEER] += 50;
    b.closes[WEIR_CLOSE_HEADER_TIMEOUT] += 2;
    b.closes[WEIR_CLOSE_IDLE_TIMEOUT] += 2;
    b.closes[WEIR_CLOSE_NOT_KEEP_ALIVE] += 40;
    ctl_sample s = ctl_sample_from(&a, &b, 250, T0);
    assert_int_equal(s.now_ms, T0);
    assert_int_equal(s.conns_per_worker, 4);
    assert_int_equal(s.rps, 2000);              // 500 in 250 ms
    assert_int_equal(s.error_permille, 13);     // 7 errors in 503: 13.9
    // Garbage only: no complete request, every attempt an error.
    b = a;
    b.parse_errors += 5;
    b.closes[WEIR_CLOSE_BAD_REQUEST] += 5;
    s = ctl_sample_from(&a, &b, 1000, T0);
    assert_int_equal(s.rps, 0);
    assert_int_equal(s.error_permille, 1000);
    // I/O errors with no request at all: 1000.
    b = a;
    b.closes[WEIR_CLOSE_IO_ERROR] += 2;
    assert_int_equal(ctl_sample_from(&a, &b, 1000, T0).error_permille, 1000);
    // More I/O errors than requests: at most 1000; nothing at all: 0.
    b = a;
    b.requests += 1;
    b.closes[WEIR_CLOSE_IO_ERROR] += 9;
    assert_int_equal(ctl_sample_from(&a, &b, 1000, T0).error_permille, 1000);
    assert_int_equal(ctl_sample_from(&a, &a, 1000, T0).error_permille, 0);
    assert_int_equal(ctl_sample_from(&a, &a, 0, T0).rps, 0); // no interval: no rate
}

void test_demo_controller_config_and_names(void **) {
    ctl_config k;
    ctl_config_defaults(&k);
    assert_null(ctl_config_check(&k));
    assert_int_equal(k.up_conns, 256);
    assert_int_equal(k.down_conns, 64);
    assert_int_equal(k.hold, 3);
    ctl_config bad = k;
    bad.down_conns = bad.up_conns; // no hysteresis
    assert_non_null(ctl_config_check(&bad));
    bad = k;
    bad.down_rps = bad.up_rps;
    assert_non_null(ctl_config_check(&bad));
    bad = k;
    bad.hold = 0;
    assert_non_null(ctl_config_check(&bad));
    bad = k;
    bad.flap_count = CTL_FLAP_MAX + 1;
    assert_non_null(ctl_config_check(&bad));
    assert_string_equal(ctl_reason_name(CTL_UP), "up");
    assert_string_equal(ctl_reason_name(CTL_DOWN), "down");
    assert_string_equal(ctl_reason_name(CTL_COOLDOWN), "cooldown");
    assert_string_equal(ctl_reason_name(CTL_LOCKOUT), "lockout");
    assert_string_equal(ctl_reason_name(CTL_ERRORS), "errors");
}

int parse(demo_opts *o, std::initializer_list<const char *> args) {
    char *argv[16] = {const_cast<char *>("weir-demo")};
    int argc = 1;
    for (const char *a : args)
        argv[argc++] = const_cast<char *>(a);
    return demo_parse_args(o, argc, argv);
}

void test_demo_controller_flags(void **) {
    demo_opts o;
    assert_int_equal(parse(&o, {"--adaptive"}), 0);
    assert_false(o.controller); // off by default
    assert_int_equal(o.controller_interval_ms, 1000);
    assert_int_equal(o.controller_cfg.up_conns, 256);
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller-interval-ms", "200",
                                "--controller", "up_conns=9,down_conns=3,down_rps=7,lockout_ms=0"}),
                     0);
    assert_true(o.controller);
    assert_int_equal(o.controller_interval_ms, 200);
    assert_int_equal(o.controller_cfg.up_conns, 9);
    assert_int_equal(o.controller_cfg.down_conns, 3);
    assert_int_equal(o.controller_cfg.down_rps, 7);
    assert_int_equal(o.controller_cfg.lockout_ms, 0);
    assert_int_equal(o.controller_cfg.up_rps, 20000); // the rest keep their defaults
    // The errors (each prints the usage on stderr).
    assert_int_equal(parse(&o, {"--adaptive-controller"}), -1);                  // without --adaptive
    assert_int_equal(parse(&o, {"--adaptive", "--controller", "hold=2"}), -1); // tuning a controller that is off
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller", "up_conns=9"}),
                     -1); // down_conns 64 is not below 9
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller", "bogus=1"}), -1);
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller", "hold="}), -1);
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller", "hold=1x"}), -1);
    assert_int_equal(parse(&o, {"--adaptive", "--adaptive-controller", "--controller-interval-ms", "5"}), -1);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_demo_controller_up_at_threshold_after_hold),
        cmocka_unit_test(test_demo_controller_hysteresis),
        cmocka_unit_test(test_demo_controller_held_by_errors),
        cmocka_unit_test(test_demo_controller_cooldown),
        cmocka_unit_test(test_demo_controller_flap_lockout_and_its_end),
        cmocka_unit_test(test_demo_controller_sample_from_metrics),
        cmocka_unit_test(test_demo_controller_config_and_names),
        cmocka_unit_test(test_demo_controller_flags),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
