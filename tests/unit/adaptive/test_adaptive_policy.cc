// Unit tests of the adaptive controller's policy (lib/adaptive/policy.h,
// docs/adaptive.md): the policy driven with synthetic samples at exact
// times, and the sample computed from two weir_metrics. Each boundary is
// tested on both sides, so a mutant of a rule (> for >=, && for ||, hold - 1,
// a cooldown or lock-out off by one, a lock-out that never ends) fails an
// assertion. (Moved from weir-demo's copy, tests/unit/demo, with the policy.)
#include <cstring>
#include <optional>

#include "adaptive/policy.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace weir::adaptive;

namespace {

constexpr uint64_t T0 = 1000000; // a monotonic clock well past 0

// Small numbers so each threshold is easy to stand on.
weir_adaptive_config small_config() {
    weir_adaptive_config k;
    config_defaults(&k);
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

bool feed(std::optional<Policy> &c, uint64_t t, uint64_t conns, uint64_t rps, uint64_t err = 0) {
    Sample s;
    s.now_ms = t;
    s.conns_per_worker = conns;
    s.rps = rps;
    s.error_permille = err;
    return c->decide(s);
}

// Feeds want-to-switch samples 1 s apart from t until one switches; returns
// its time (or 0 after 1000 samples).
uint64_t switch_time(std::optional<Policy> &c, uint64_t t, uint64_t conns, uint64_t rps) {
    for (int i = 0; i < 1000; i++, t += 1000)
        if (feed(c, t, conns, rps) == true)
            return t;
    return 0;
}

void test_adaptive_policy_up_at_threshold_after_hold(void **) {
    weir_adaptive_config k = small_config();
    std::optional<Policy> c;
    c.emplace(k, 0); // on epoll
    assert_int_equal(c->last(), WEIR_ADAPTIVE_NONE);
    assert_int_equal(feed(c, T0, 99, 999), false); // just below both: steady
    assert_int_equal(c->last(), WEIR_ADAPTIVE_STEADY);
    assert_int_equal(feed(c, T0 + 1000, 100, 0), false); // at up_conns: 1 of 3
    assert_int_equal(c->last(), WEIR_ADAPTIVE_HOLD);
    assert_int_equal(feed(c, T0 + 2000, 100, 0), false); // 2 of 3
    assert_int_equal(c->last(), WEIR_ADAPTIVE_HOLD);
    assert_int_equal(feed(c, T0 + 3000, 99, 0), false); // the streak breaks
    assert_int_equal(c->last(), WEIR_ADAPTIVE_STEADY);
    assert_int_equal(c->streak, 0);
    assert_int_equal(feed(c, T0 + 4000, 100, 0), false);
    assert_int_equal(feed(c, T0 + 5000, 100, 0), false);
    assert_int_equal(feed(c, T0 + 6000, 100, 0), true); // 3 in a row
    assert_int_equal(c->last(), WEIR_ADAPTIVE_UP);
    assert_int_equal(c->decisions, 7);
    assert_int_equal(c->switches, 0); // counted when it happens
    c->switched(T0 + 6000, 1);
    assert_int_equal(c->switches, 1);
    assert_true(c->on_uring());
    assert_int_equal(c->streak, 0);

    // The rate alone is enough (either condition): at up_rps, no connections.
    c.emplace(k, 0);
    assert_int_equal(feed(c, T0, 0, 1000), false);
    assert_int_equal(feed(c, T0 + 1000, 0, 1000), false);
    assert_int_equal(feed(c, T0 + 2000, 0, 1000), true);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_UP);

    // hold = 1: the first sample at the threshold switches.
    k.hold = 1;
    c.emplace(k, 0);
    assert_int_equal(feed(c, T0, 100, 0), true);
}

void test_adaptive_policy_hysteresis(void **) {
    weir_adaptive_config k = small_config();
    std::optional<Policy> c;
    // Between the thresholds neither role moves.
    c.emplace(k, 0);
    assert_int_equal(switch_time(c, T0, 50, 500), 0);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_STEADY);
    c.emplace(k, 1);
    assert_int_equal(switch_time(c, T0, 50, 500), 0);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_STEADY);
    // Down needs both below: connections below but the rate not, or the
    // other way round, or exactly at a down threshold, stays.
    assert_int_equal(switch_time(c, T0, 19, 200), 0);
    assert_int_equal(switch_time(c, T0, 20, 199), 0);
    assert_int_equal(switch_time(c, T0, 19, 999), 0);
    // On io_uring the up condition is no reason to move.
    assert_int_equal(switch_time(c, T0, 500, 5000), 0);
    // Both below: down, after hold samples.
    assert_int_equal(feed(c, T0, 19, 199), false);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_HOLD);
    assert_int_equal(feed(c, T0 + 1000, 19, 199), false);
    assert_int_equal(feed(c, T0 + 2000, 19, 199), true);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_DOWN);
}

void test_adaptive_policy_held_by_errors(void **) {
    weir_adaptive_config k = small_config();
    std::optional<Policy> c;
    c.emplace(k, 0);
    assert_int_equal(feed(c, T0, 100, 0, 51), false); // hold 1 of 3
    assert_int_equal(feed(c, T0 + 1000, 100, 0, 51), false);
    assert_int_equal(feed(c, T0 + 2000, 100, 0, 51), false); // would switch: errors above the limit
    assert_int_equal(c->last(), WEIR_ADAPTIVE_ERRORS);
    assert_int_equal(feed(c, T0 + 3000, 100, 0, 1000), false);
    assert_int_equal(c->held_by_errors, 2);
    // At the limit it is not above it; the streak went on counting, so the
    // first sample the errors allow switches.
    assert_int_equal(feed(c, T0 + 4000, 100, 0, 50), true);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_UP);
    assert_int_equal(c->held_by_errors, 2);
    // Errors alone never ask for a switch (nor count as held by them).
    c.emplace(k, 0);
    for (uint64_t t = T0; t < T0 + 10000; t += 1000) {
        assert_int_equal(feed(c, t, 50, 500, 1000), false);
        assert_int_equal(c->last(), WEIR_ADAPTIVE_STEADY);
    }
    assert_int_equal(c->held_by_errors, 0);
}

void test_adaptive_policy_cooldown(void **) {
    weir_adaptive_config k = small_config();
    k.hold = 1;
    std::optional<Policy> c;
    c.emplace(k, 0);
    assert_int_equal(feed(c, T0, 100, 0), true);
    c->switched(T0, 1);
    // The load drops at once: down is asked for, the cooldown holds it.
    assert_int_equal(feed(c, T0 + 1000, 0, 0), false);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_COOLDOWN);
    assert_int_equal(feed(c, T0 + 4999, 0, 0), false);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_COOLDOWN);
    assert_int_equal(c->held_by_cooldown, 2);
    assert_int_equal(feed(c, T0 + 5000, 0, 0), true); // cooldown_ms after the switch
    assert_int_equal(c->last(), WEIR_ADAPTIVE_DOWN);

    // An operator's switch (SIGWINCH) swaps the roles and starts the cooldown too.
    c.emplace(k, 0);
    c->switched(T0, 0);
    assert_int_equal(c->external_switches, 1);
    assert_int_equal(c->switches, 0);
    assert_true(c->on_uring());
    assert_int_equal(feed(c, T0 + 4999, 0, 0), false);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_COOLDOWN);
    assert_int_equal(feed(c, T0 + 5000, 0, 0), true);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_DOWN);
}

void test_adaptive_policy_flap_lockout_and_its_end(void **) {
    weir_adaptive_config k = small_config();
    k.hold = 1;
    k.cooldown_ms = 100;
    k.flap_count = 3;
    k.flap_window_ms = 10000;
    k.lockout_ms = 30000;
    std::optional<Policy> c;
    c.emplace(k, 0);
    // Two switches within the window: no lock-out yet.
    c->switched(T0, 1);
    c->switched(T0 + 1000, 1);
    assert_int_equal(c->lockouts, 0);
    assert_int_equal(feed(c, T0 + 1100, 100, 0), true); // on epoll again, cooldown over
    // The third within 10 s locks switching out for 30 s.
    c->switched(T0 + 1100, 1);
    assert_int_equal(c->lockouts, 1);
    assert_int_equal(feed(c, T0 + 1150, 0, 0), false); // inside the cooldown and the lock-out:
    assert_int_equal(c->last(), WEIR_ADAPTIVE_LOCKOUT);                  // the lock-out is named (and counted)
    assert_int_equal(feed(c, T0 + 1200, 0, 0), false); // past the cooldown, inside the lock-out
    assert_int_equal(c->last(), WEIR_ADAPTIVE_LOCKOUT);
    assert_int_equal(feed(c, T0 + 31099, 0, 0), false);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_LOCKOUT);
    assert_int_equal(c->held_by_lockout, 3);
    assert_int_equal(c->held_by_cooldown, 0);
    assert_int_equal(feed(c, T0 + 31100, 0, 0), true); // the lock-out ends
    assert_int_equal(c->last(), WEIR_ADAPTIVE_DOWN);
    // The lock-out forgot the switches that caused it: two more do not lock.
    c->switched(T0 + 31100, 1);
    c->switched(T0 + 31200, 1);
    assert_int_equal(c->lockouts, 1);
    c->switched(T0 + 31300, 1); // the third since: locks again
    assert_int_equal(c->lockouts, 2);

    // A lock-out shorter than the window: at its end the window starts
    // afresh, or the switches before it would lock again at the first one.
    k.lockout_ms = 5000;
    c.emplace(k, 0);
    c->switched(T0, 1);
    c->switched(T0 + 100, 1);
    c->switched(T0 + 200, 1);
    assert_int_equal(c->lockouts, 1);
    assert_int_equal(feed(c, T0 + 5199, 0, 0), false);
    assert_int_equal(c->last(), WEIR_ADAPTIVE_LOCKOUT);
    assert_int_equal(feed(c, T0 + 5200, 0, 0), true);
    c->switched(T0 + 5200, 1);
    assert_int_equal(c->lockouts, 1);
    assert_int_equal(feed(c, T0 + 5300, 100, 0), true); // not locked
    k.lockout_ms = 30000;

    // Three switches spread over exactly the window are no flap.
    c.emplace(k, 0);
    c->switched(T0, 1);
    c->switched(T0 + 5000, 1);
    c->switched(T0 + 10000, 1);
    assert_int_equal(c->lockouts, 0);
    c->switched(T0 + 10001, 1); // the last three: 5000 .. 10001
    assert_int_equal(c->lockouts, 1);

    // flap_count 0: no lock-out, however fast.
    k.flap_count = 0;
    c.emplace(k, 0);
    for (uint64_t i = 0; i < 20; i++)
        c->switched(T0 + i, 1);
    assert_int_equal(c->lockouts, 0);
    assert_int_equal(feed(c, T0 + 1000, 100, 0), true);
}

void test_adaptive_policy_sample_from_metrics(void **) {
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
    Sample s = sample_from(a, b, 250, T0);
    assert_int_equal(s.now_ms, T0);
    assert_int_equal(s.conns_per_worker, 4);
    assert_int_equal(s.rps, 2000);              // 500 in 250 ms
    assert_int_equal(s.error_permille, 13);     // 7 errors in 503: 13.9
    // Garbage only: no complete request, every attempt an error.
    b = a;
    b.parse_errors += 5;
    b.closes[WEIR_CLOSE_BAD_REQUEST] += 5;
    s = sample_from(a, b, 1000, T0);
    assert_int_equal(s.rps, 0);
    assert_int_equal(s.error_permille, 1000);
    // I/O errors with no request at all: 1000.
    b = a;
    b.closes[WEIR_CLOSE_IO_ERROR] += 2;
    assert_int_equal(sample_from(a, b, 1000, T0).error_permille, 1000);
    // More I/O errors than requests: at most 1000; nothing at all: 0.
    b = a;
    b.requests += 1;
    b.closes[WEIR_CLOSE_IO_ERROR] += 9;
    assert_int_equal(sample_from(a, b, 1000, T0).error_permille, 1000);
    assert_int_equal(sample_from(a, a, 1000, T0).error_permille, 0);
    assert_int_equal(sample_from(a, a, 0, T0).rps, 0); // no interval: no rate
}

void test_adaptive_policy_config_and_names(void **) {
    weir_adaptive_config k;
    config_defaults(&k);
    assert_null(config_error(&k));
    assert_int_equal(k.up_conns, 64);
    assert_int_equal(k.down_conns, 16);
    assert_int_equal(k.hold, 3);
    weir_adaptive_config bad = k;
    bad.down_conns = bad.up_conns; // no hysteresis
    assert_non_null(config_error(&bad));
    bad = k;
    bad.down_rps = bad.up_rps;
    assert_non_null(config_error(&bad));
    bad = k;
    bad.hold = 0;
    assert_non_null(config_error(&bad));
    bad = k;
    bad.flap_count = kFlapMax + 1;
    assert_non_null(config_error(&bad));
    bad = k;
    bad.interval_ms = 9;
    assert_non_null(config_error(&bad));
    bad.interval_ms = 60001;
    assert_non_null(config_error(&bad));
    bad.interval_ms = 10;
    assert_null(config_error(&bad));
    bad.size = 0; // a struct nobody initialised
    assert_non_null(config_error(&bad));
    assert_string_equal(reason_name(WEIR_ADAPTIVE_NONE), "none");
    assert_string_equal(reason_name(WEIR_ADAPTIVE_REASON_COUNT), "unknown");
    assert_string_equal(reason_name(WEIR_ADAPTIVE_UP), "up");
    assert_string_equal(reason_name(WEIR_ADAPTIVE_DOWN), "down");
    assert_string_equal(reason_name(WEIR_ADAPTIVE_COOLDOWN), "cooldown");
    assert_string_equal(reason_name(WEIR_ADAPTIVE_LOCKOUT), "lockout");
    assert_string_equal(reason_name(WEIR_ADAPTIVE_ERRORS), "errors");
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adaptive_policy_up_at_threshold_after_hold),
        cmocka_unit_test(test_adaptive_policy_hysteresis),
        cmocka_unit_test(test_adaptive_policy_held_by_errors),
        cmocka_unit_test(test_adaptive_policy_cooldown),
        cmocka_unit_test(test_adaptive_policy_flap_lockout_and_its_end),
        cmocka_unit_test(test_adaptive_policy_sample_from_metrics),
        cmocka_unit_test(test_adaptive_policy_config_and_names),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
