// Unit tests of the loop's pure pieces: the timer lists, the MPSC queue, the
// door bookkeeping of the accept batch, metrics summing.
#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/doors.h"
#include "loop/metrics.h"
#include "loop/mpsc.h"
#include "loop/timers.h"

using namespace weir;

namespace {

void test_timers_fifo_per_kind(void **) {
    Timers t;
    t.set_duration(TimerKind::Idle, 100);
    t.set_duration(TimerKind::Head, 30);
    TimerNode a, b, c;
    t.arm(a, TimerKind::Idle, 0);  // 100
    t.arm(b, TimerKind::Idle, 10); // 110
    t.arm(c, TimerKind::Head, 20); // 50
    assert_int_equal(t.size(), 3);
    assert_int_equal(t.next_deadline(), 50);
    TimerKind k;
    assert_null(t.pop_expired(49, &k));
    assert_ptr_equal(t.pop_expired(50, &k), &c);
    assert_int_equal(static_cast<int>(k), static_cast<int>(TimerKind::Head));
    assert_false(t.armed(c));
    // re-arming moves a timer to the tail with a fresh deadline
    t.arm(a, TimerKind::Idle, 20); // 120
    assert_int_equal(t.next_deadline(), 110);
    assert_ptr_equal(t.pop_expired(200, &k), &b);
    assert_ptr_equal(t.pop_expired(200, &k), &a);
    assert_null(t.pop_expired(200, &k));
    assert_int_equal(t.next_deadline(), INT64_MAX);
    assert_int_equal(t.size(), 0);
}

void test_timers_disarm_and_disabled_kind(void **) {
    Timers t;
    t.set_duration(TimerKind::Output, 10);
    TimerNode a, b, c;
    t.arm(a, TimerKind::Output, 0);
    t.arm(b, TimerKind::Output, 1);
    t.arm(c, TimerKind::Output, 2);
    t.disarm(b); // middle
    t.disarm(b); // twice is harmless
    TimerKind k;
    assert_ptr_equal(t.pop_expired(100, &k), &a);
    assert_ptr_equal(t.pop_expired(100, &k), &c);
    TimerNode d;
    t.arm(d, TimerKind::Idle, 0); // duration 0: disabled, never fires
    assert_false(t.armed(d));
    assert_int_equal(t.next_deadline(), INT64_MAX);
}

// Held's deadlines are counted from when the host took an exchange, so a
// re-arm can fall before the list's newest: arm_at keeps the list sorted
// (the arm that appended at the tail would fire d after e, and pop_expired
// at 60 would find the head, e at 90, not due, and miss d).
void test_timers_arm_at_sorted(void **) {
    Timers t;
    t.set_duration(TimerKind::Held, 100);
    TimerNode a, b, c, d, e;
    t.arm(a, TimerKind::Held, 0);       // 100
    t.arm_at(b, TimerKind::Held, 50);   // before the head
    t.arm_at(c, TimerKind::Held, 150);  // after the tail
    t.arm_at(d, TimerKind::Held, 120);  // between
    t.arm_at(e, TimerKind::Held, 100);  // equal to a: after it
    assert_int_equal(t.size(), 5);
    assert_int_equal(t.next_deadline(), 50);
    TimerKind k;
    TimerNode *want[] = {&b, &a, &e, &d, &c};
    for (TimerNode *w : want) {
        assert_null(t.pop_expired(w->deadline_ms - 1, &k));
        assert_ptr_equal(t.pop_expired(w->deadline_ms, &k), w);
        assert_int_equal(static_cast<int>(k), static_cast<int>(TimerKind::Held));
    }
    assert_int_equal(t.size(), 0);
    t.arm_at(a, TimerKind::Held, 10);
    t.arm_at(a, TimerKind::Held, 5); // a re-arm moves it
    assert_int_equal(t.size(), 1);
    assert_int_equal(t.next_deadline(), 5);
    t.set_duration(TimerKind::Held, 0); // disabled: never armed
    t.arm_at(b, TimerKind::Held, 1);
    assert_false(t.armed(b));
}

struct Item : MpscNode {
    int producer = 0;
    int seq = 0;
};

void test_mpsc_many_producers_fifo_each(void **) {
    MpscQueue q;
    constexpr int kProducers = 4, kEach = 20000;
    std::vector<Item> items(kProducers * kEach);
    std::vector<std::thread> ts;
    for (int p = 0; p < kProducers; p++)
        ts.emplace_back([&, p] {
            for (int i = 0; i < kEach; i++) {
                Item &it = items[p * kEach + i];
                it.producer = p;
                it.seq = i;
                q.push(&it);
            }
        });
    int next[kProducers] = {};
    int got = 0;
    while (got < kProducers * kEach) {
        for (MpscNode *n = q.take_all(); n; n = n->next) {
            auto *it = static_cast<Item *>(n);
            assert_int_equal(it->seq, next[it->producer]);
            next[it->producer]++;
            got++;
        }
    }
    for (auto &t : ts)
        t.join();
    assert_true(q.empty());
    assert_null(q.take_all());
}

// A fake door holding `backlog` connections; `error_at` makes that attempt fail.
struct FakeDoor {
    int backlog = 0;
    int attempts = 0;
    int error_at = -1;
    Take error = Take::Resource;
    Take operator()() {
        int a = attempts++;
        if (a == error_at)
            return error;
        if (backlog == 0)
            return Take::Empty;
        backlog--;
        return Take::Took;
    }
};

void test_doors_batch_leaves_owed(void **) {
    Door d;
    FakeDoor f{40};
    assert_false(run_batch(d, 16, 0, 50, f).ran); // nothing recorded: no batch
    d.ready = true;
    BatchResult r = run_batch(d, 16, 0, 50, f);
    assert_true(r.ran);
    assert_false(r.was_owed);
    assert_int_equal(r.taken, 16);
    assert_true(d.owed); // the batch stopped the drain
    assert_false(d.ready);
    r = run_batch(d, 16, 0, 50, f); // no new event: runs because owed
    assert_true(r.ran && r.was_owed);
    assert_int_equal(r.taken, 16);
    r = run_batch(d, 16, 0, 50, f);
    assert_int_equal(r.taken, 8);
    assert_false(d.owed); // the door ran dry: nothing owed
    assert_false(run_batch(d, 16, 0, 50, f).ran);
}

void test_doors_drain_all_never_owed(void **) {
    Door d;
    d.ready = true;
    FakeDoor f{100};
    BatchResult r = run_batch(d, 0, 0, 50, f);
    assert_int_equal(r.taken, 100);
    assert_false(d.owed);
}

void test_doors_exact_batch_then_empty(void **) {
    // a batch that stops at its size is owed even if the door happens to be
    // dry: the next pass pays one EAGAIN to learn it
    Door d;
    d.ready = true;
    FakeDoor f{16};
    run_batch(d, 16, 0, 50, f);
    assert_true(d.owed);
    BatchResult r = run_batch(d, 16, 0, 50, f);
    assert_int_equal(r.taken, 0);
    assert_false(d.owed);
}

void test_doors_resource_error_not_owed_retried_later(void **) {
    Door d;
    d.ready = true;
    FakeDoor f{40};
    f.error_at = 3;
    BatchResult r = run_batch(d, 16, 1000, 50, f);
    assert_int_equal(r.taken, 3);
    assert_int_equal(r.resource_errors, 1);
    assert_false(d.owed); // would make every wait 0: a spin
    assert_true(d.resource_wait);
    assert_int_equal(d.retry_at_ms, 1050);
    assert_false(door_due(d, 1049));
    assert_false(run_batch(d, 16, 1049, 50, f).ran);
    assert_true(door_due(d, 1050));
    r = run_batch(d, 16, 1050, 50, f);
    assert_true(r.ran);
    assert_int_equal(r.taken, 16);
    assert_false(d.resource_wait);
}

void test_doors_other_errors_bounded_by_batch(void **) {
    Door d;
    d.ready = true;
    int calls = 0;
    BatchResult r = run_batch(d, 8, 0, 50, [&] {
        calls++;
        return Take::Other; // ECONNABORTED forever
    });
    assert_int_equal(calls, 8);
    assert_int_equal(r.other_errors, 8);
    assert_true(d.owed);
    door_clear(d);
    assert_false(d.owed || d.ready || d.resource_wait);
}

void test_metrics_sum_respects_size(void **) {
    WorkerMetrics a, b;
    a.add(M_ACCEPTED, 3);
    b.add(M_ACCEPTED, 4);
    b.close(WEIR_CLOSE_SHUTDOWN);
    a.add(M_LOOP_PASSES, 10);
    const WorkerMetrics *ws[] = {&a, &b};
    weir_metrics m;
    memset(&m, 0xab, sizeof m);
    m.size = sizeof m;
    metrics_sum(ws, 2, &m);
    assert_int_equal(m.workers, 2);
    assert_int_equal(m.accepted, 7);
    assert_int_equal(m.loop_passes, 10);
    assert_int_equal(m.closes[WEIR_CLOSE_SHUTDOWN], 1);
    weir_metrics small;
    memset(&small, 0xab, sizeof small);
    small.size = offsetof(weir_metrics, accept_batches);
    metrics_sum(ws, 2, &small);
    assert_int_equal(small.accepted, 7);
    assert_true(small.accept_batches == 0xababababababababULL); // past size: untouched
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timers_fifo_per_kind),
        cmocka_unit_test(test_timers_disarm_and_disabled_kind),
        cmocka_unit_test(test_timers_arm_at_sorted),
        cmocka_unit_test(test_mpsc_many_producers_fifo_each),
        cmocka_unit_test(test_doors_batch_leaves_owed),
        cmocka_unit_test(test_doors_drain_all_never_owed),
        cmocka_unit_test(test_doors_exact_batch_then_empty),
        cmocka_unit_test(test_doors_resource_error_not_owed_retried_later),
        cmocka_unit_test(test_doors_other_errors_bounded_by_batch),
        cmocka_unit_test(test_metrics_sum_respects_size),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
