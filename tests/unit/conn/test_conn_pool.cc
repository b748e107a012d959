// What an idle connection state keeps in the pool (lib/conn/conn_pool.cc):
// its out-of-order answer buffers, at most Conn::State::kKeptAnswerBytes in
// all, however many slots a busy period filled.
//   the rule: 8 pipelined requests answered in reverse with 60 KiB bodies
//     buffer 7 answers of 64 KiB each; once the connection is idle its
//     state keeps at most 64 KiB of them (before the budget, 448 KiB: the
//     old per-slot 64 KiB cap kept every one).
//   the budget counts buffers kept earlier: later busy periods that buffer
//     in other slots, or in fewer slots than a buffer kept before, still
//     leave at most 64 KiB kept (the last case fails if reset scans only
//     the slots the period used: 128 KiB).
#include "cmocka_cxx.h"

#include <string>
#include <vector>

#include "conn/conn.h"
#include "conn/conn_state.h"
#include "conn_check.h"

using weir::Conn;
using weir::ConnPool;
using weir::ConnSettings;
using weir::Exchange;

using namespace conn_check;

namespace {

constexpr size_t kBudget = Conn::State::kKeptAnswerBytes;

// order.size() pipelined GETs, answered in the order given (request index,
// body bytes), drained; the connection is idle after it.
void busy_period(Conn &c, const std::vector<std::pair<int, size_t>> &order) {
    std::string req;
    for (size_t i = 0; i < order.size(); i++)
        req += "GET /" + std::to_string(i) + " HTTP/1.1\r\nHost: x\r\n\r\n";
    feed(c, req);
    std::vector<Exchange *> xs;
    while (Exchange *x = c.take_request())
        xs.push_back(x);
    assert_int_equal(xs.size(), order.size());
    size_t total = 0;
    for (auto [i, body] : order) {
        assert_int_equal(answer(c, xs[static_cast<size_t>(i)], std::string(body, 'b')), 0);
        total += body;
    }
    std::string out = drain(c);
    assert_true(out.size() > total);
    assert_false(c.holds_buffers()); // idle: the state went back to the pool
}

// n pipelined GETs answered last-first, each with a body of `body` bytes.
void busy_period(Conn &c, int n, size_t body) {
    std::vector<std::pair<int, size_t>> order;
    for (int i = n - 1; i >= 0; i--)
        order.push_back({i, body});
    busy_period(c, order);
}

void test_idle_state_keeps_at_most_the_budget(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    busy_period(c, 8, 60 * 1024);
    assert_int_equal(pool.cached(), 1);
    print_message("kept after 7 buffered answers of 60 KiB: %zu bytes\n", pool.kept_answer_bytes());
    assert_true(pool.kept_answer_bytes() > 0); // a buffer is kept for reuse
    assert_true(pool.kept_answer_bytes() <= kBudget);
}

void test_budget_counts_buffers_kept_before(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    busy_period(c, 3, 60 * 1024); // slots 1 and 2 buffered
    assert_true(pool.kept_answer_bytes() <= kBudget);
    busy_period(c, 2, 20 * 1024); // slot 1 again, smaller
    assert_true(pool.kept_answer_bytes() <= kBudget);
    busy_period(c, 6, 30 * 1024); // slots 1-5
    assert_true(pool.kept_answer_bytes() <= kBudget);
}

// A buffer kept in a slot the next busy period does not reach (slot 3,
// then a period of 3 requests) still counts: the scan covers every slot
// that kept one.
void test_budget_reaches_slots_past_the_used_ones(void **) {
    ConnSettings s = settings();
    ConnPool pool(s);
    Conn c(s, pool, 1);
    busy_period(c, {{3, 60 * 1024}, {0, 10}, {1, 10}, {2, 10}}); // only slot 3 buffers
    assert_true(pool.kept_answer_bytes() > 0);
    busy_period(c, {{2, 60 * 1024}, {1, 60 * 1024}, {0, 10}}); // slots 1 and 2 buffer
    print_message("kept: %zu bytes\n", pool.kept_answer_bytes());
    assert_true(pool.kept_answer_bytes() <= kBudget);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idle_state_keeps_at_most_the_budget),
        cmocka_unit_test(test_budget_counts_buffers_kept_before),
        cmocka_unit_test(test_budget_reaches_slots_past_the_used_ones),
    };
    return cmocka_run_group_tests_name("conn_pool", tests, nullptr, nullptr);
}
