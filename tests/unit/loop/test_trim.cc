// Memory that follows the load: the trim's policy (lib/loop/trim.h) and the
// pool's side of it (ConnPool::trim, its byte counts).
//   hysteresis: a load that swings between busy and idle within the
//     remembered windows keeps its states (the arm without the windows'
//     memory, keep computed from the last window alone, would trim them at
//     the first idle window: checked below as what end_window must not say);
//   a burst is given back after kWindows quiet windows, down to nothing
//     (what the quiet windows held at once, 0 here): the arm that keeps
//     kSlack idle states whatever the history (the policy before this rule)
//     is what the asserts on 0 and on the quiet load's 3 reject;
//   a quiet load (peaks never past kSlack) keeps what its peaks used and no
//     slack on top, as a gentle arrival's pool holds;
//   quiet() holds only once every remembered window was quiet;
//   the pool: 40 connections speak at once and go idle; trim(8) frees 32
//     states, their bytes are counted (cached_bytes falls by what trim
//     returns, take_freed reports them) and the peak restarts.
#include <memory>
#include <string>
#include <vector>

#include "conn/conn.h"
#include "loop/trim.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "unit/conn/conn_check.h"

using namespace weir;
using namespace conn_check;

namespace {

void test_policy_swinging_load_keeps_states(void **) {
    TrimPolicy p;
    // busy (100 at once), idle, busy, idle ...: the peak is remembered
    for (int i = 0; i < 10; i++) {
        size_t busy = p.end_window(100, 0);
        assert_int_equal(busy, 100 + TrimPolicy::kSlack);
        size_t idle = p.end_window(0, 0);
        // the rule: still 100 kept; a policy of the last window alone would say kSlack
        assert_int_equal(idle, 100 + TrimPolicy::kSlack);
        assert_false(p.quiet());
    }
}

void test_policy_burst_given_back_after_windows(void **) {
    TrimPolicy p;
    assert_int_equal(p.end_window(2000, 0), 2000 + TrimPolicy::kSlack);
    for (uint32_t i = 1; i < TrimPolicy::kWindows; i++) {
        assert_int_equal(p.end_window(0, 0), 2000 + TrimPolicy::kSlack);
        assert_false(p.quiet());
    }
    // the rule: a slack of idle states past what the load used is kept only
    // while the remembered windows hold a load
    assert_int_equal(p.end_window(0, 0), 0);
    assert_true(p.quiet());
    // what is held now needs no idle state kept for it
    assert_int_equal(p.end_window(50, 40), 10 + TrimPolicy::kSlack);
    assert_true(p.quiet() == false);
}

void test_policy_quiet_load_keeps_what_it_used(void **) {
    TrimPolicy p;
    // a gentle load: 3 at once at most, 1 held now
    assert_int_equal(p.end_window(3, 1), 2);
    assert_true(p.quiet());
    assert_int_equal(p.end_window(1, 0), 3);
    // one past the slack is a load: the slack comes back on top
    assert_int_equal(p.end_window(TrimPolicy::kSlack + 1, 0), 2 * TrimPolicy::kSlack + 1);
    assert_false(p.quiet());
}

void test_pool_trim_counts_bytes(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    std::vector<std::unique_ptr<Conn>> cs;
    for (uint64_t i = 0; i < 40; i++)
        cs.push_back(std::make_unique<Conn>(s, pool, i + 1));
    for (auto &c : cs)
        feed(*c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); // each takes a state
    assert_int_equal(pool.in_use(), 40);
    assert_int_equal(pool.take_peak(), 40);
    for (auto &c : cs) {
        Exchange *x = c->take_request();
        assert_non_null(x);
        assert_int_equal(answer(*c, x, "ok"), 0);
        drain(*c);
        assert_false(c->holds_buffers());
    }
    assert_int_equal(pool.in_use(), 0);
    assert_int_equal(pool.cached(), 40);
    assert_int_equal(pool.take_peak(), 40); // the window's peak, then it restarts from 0 held
    assert_int_equal(pool.peak(), 0);
    size_t before = pool.cached_bytes();
    assert_true(before >= 40 * s.read_buffer_size);
    pool.take_freed();
    size_t back = pool.trim(8);
    assert_int_equal(pool.cached(), 8);
    assert_true(back >= 32 * s.read_buffer_size);
    assert_int_equal(pool.cached_bytes(), before - back);
    assert_true(pool.take_freed() >= back - 32 * 4096); // the segments' share may be freed over kKeep
    assert_int_equal(pool.trim(8), 0); // nothing past keep: nothing freed
    assert_int_equal(pool.trim(0) > 0, 1);
    assert_int_equal(pool.cached_bytes(), 0);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_swinging_load_keeps_states),
        cmocka_unit_test(test_policy_burst_given_back_after_windows),
        cmocka_unit_test(test_policy_quiet_load_keeps_what_it_used),
        cmocka_unit_test(test_pool_trim_counts_bytes),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
