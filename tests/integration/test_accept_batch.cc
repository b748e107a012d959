// The accept-batch probe (DESIGN.md §3) on one loop-only worker (inline, one
// worker). A /slow?ms=600 blocker parks the loop; meanwhile 120 connections
// arrive, each with /slow?ms=10, and then an established keep-alive
// connection sends /fast. A pass flushes its answers only after its doors
// ran, so /fast waits for whatever the pass admitted and served.
//
//   positive arm (accept_batch = 16): /fast leaves within 1.5 batches of the
//     blocker's answer, the whole burst is answered, no two burst answers are
//     more than 500 ms apart;
//   negative arm (accept_batch = 0, drain the backlog: the old behaviour kept
//     as a knob): /fast waits at least two thirds of the burst. This arm shows
//     the probe sees the defect the batch cures.
//
// Time is judged in one request's cost measured in the same run.
#include <poll.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

constexpr int kBurst = 120;
constexpr int kBatch = 16;
constexpr int kSlowMs = 10;
std::atomic<bool> g_blocking{false};

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (str(r->path) == "/slow") {
        long ms = query_int(r, "ms", 0);
        if (ms >= 100)
            g_blocking = true;
        sleep_ms(static_cast<int>(ms));
        answer(ex, 200, "slow");
    } else {
        answer(ex, 200, "fast");
    }
}

struct Probe {
    double cost_ms = 0;        // one /slow?ms=10 request, sleep included
    int64_t fast_after_ms = 0; // /fast's answer after the blocker's
    int answered = 0;
    int64_t max_gap_ms = 0;    // between consecutive burst answers
    int64_t span_ms = 0;       // blocker's answer to the last burst answer
    weir_metrics m{};
};

Probe run_probe(uint32_t accept_batch) {
    Probe p;
    Server s;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.accept_batch = accept_batch;
    assert_int_equal(s.start(c), 0);

    Client keep = connect_to(s.port);
    Client blocker = connect_to(s.port);
    // the unit: a few /slow?ms=10 round trips on the idle loop
    assert_true(send_all(keep, get("/fast")));
    assert_int_equal(read_response(keep).status, 200);
    int64_t t0 = now_ms();
    for (int i = 0; i < 5; i++) {
        assert_true(send_all(keep, get("/slow?ms=10")));
        assert_int_equal(read_response(keep).status, 200);
    }
    p.cost_ms = static_cast<double>(now_ms() - t0) / 5;
    if (p.cost_ms < kSlowMs)
        p.cost_ms = kSlowMs;

    // The blocker must be an accepted connection so its handler parks the
    // loop in the pass's event phase (with TCP_DEFER_ACCEPT, a fresh one
    // would be accepted, and served, inside a door's batch).
    assert_true(send_all(blocker, get("/fast")));
    assert_int_equal(read_response(blocker).status, 200);
    g_blocking = false;
    assert_true(send_all(blocker, get("/slow?ms=600")));
    while (!g_blocking)
        sleep_ms(1);
    std::vector<Client> burst;
    for (int i = 0; i < kBurst; i++) {
        burst.push_back(connect_to(s.port));
        assert_true(burst.back().fd >= 0);
        assert_true(send_all(burst.back(), get("/slow?ms=10")));
    }
    assert_true(send_all(keep, get("/fast")));

    // collect: index kBurst is the blocker, kBurst + 1 is /fast
    std::vector<Client *> all;
    for (auto &b : burst)
        all.push_back(&b);
    all.push_back(&blocker);
    all.push_back(&keep);
    std::vector<int64_t> at(all.size(), -1);
    size_t left = all.size();
    int64_t until = now_ms() + 15000;
    while (left > 0 && now_ms() < until) {
        std::vector<pollfd> fds;
        std::vector<size_t> idx;
        for (size_t i = 0; i < all.size(); i++)
            if (at[i] < 0) {
                fds.push_back({all[i]->fd, POLLIN, 0});
                idx.push_back(i);
            }
        if (::poll(fds.data(), fds.size(), 100) <= 0)
            continue;
        int64_t now = now_ms();
        for (size_t k = 0; k < fds.size(); k++) {
            if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            Client &cl = *all[idx[k]];
            if (!read_some(cl)) {
                at[idx[k]] = INT64_MAX; // closed without an answer
                left--;
                continue;
            }
            Response r = take_response(cl);
            if (r.status == 200) {
                at[idx[k]] = now;
                left--;
            }
        }
    }
    int64_t blocker_at = at[kBurst];
    int64_t fast_at = at[kBurst + 1];
    assert_true(blocker_at > 0 && blocker_at != INT64_MAX);
    assert_true(fast_at > 0 && fast_at != INT64_MAX);
    p.fast_after_ms = fast_at - blocker_at;
    std::vector<int64_t> times;
    for (int i = 0; i < kBurst; i++)
        if (at[i] > 0 && at[i] != INT64_MAX)
            times.push_back(at[i]);
    p.answered = static_cast<int>(times.size());
    std::sort(times.begin(), times.end());
    int64_t prev = blocker_at;
    for (int64_t t : times) {
        p.max_gap_ms = std::max(p.max_gap_ms, t - prev);
        prev = t;
    }
    p.span_ms = times.empty() ? 0 : times.back() - blocker_at;
    p.m = s.metrics();
    return p;
}

void test_accept_batch_positive_arm(void **) {
    Probe p = run_probe(kBatch);
    // the unit: the cost measured before, or the burst's own average if the
    // machine got slower meanwhile (a batch serves one request per burst slot)
    double unit = std::max(p.cost_ms, static_cast<double>(p.span_ms) / kBurst);
    double limit = 1.5 * kBatch * unit;
    print_message("batch=16: unit %.2f ms, /fast after %lld ms (limit %.0f), %d answered, max gap %lld ms, "
                  "owed %llu\n",
                  unit, static_cast<long long>(p.fast_after_ms), limit, p.answered,
                  static_cast<long long>(p.max_gap_ms), static_cast<unsigned long long>(p.m.accept_owed));
    assert_int_equal(p.answered, kBurst);
    assert_true(p.fast_after_ms <= limit);
    assert_true(p.max_gap_ms <= 500);
    assert_true(p.m.accept_owed >= 3); // the owed flag carried the backlog
}

void test_accept_batch_negative_arm_drain_all(void **) {
    Probe p = run_probe(0);
    // the burst: its measured span or its cost in the unit, whichever is less
    double burst_ms = std::min(kBurst * p.cost_ms, static_cast<double>(p.span_ms));
    print_message("batch=0: cost %.2f ms, /fast after %lld ms (must be >= %.0f), %d answered\n", p.cost_ms,
                  static_cast<long long>(p.fast_after_ms), burst_ms * 2 / 3, p.answered);
    assert_int_equal(p.answered, kBurst);
    assert_true(p.fast_after_ms >= burst_ms * 2 / 3);
    assert_int_equal(p.m.accept_owed, 0); // draining never leaves anything owed
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_batch_positive_arm),
        cmocka_unit_test(test_accept_batch_negative_arm_drain_all),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
