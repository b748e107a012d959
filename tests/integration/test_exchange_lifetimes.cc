// The lifetimes weir.h states for an exchange the host holds: the handler
// deadline (handler_timeout_ms) answers 503 and frees the connection, a
// zombie's too; destroy with exchanges outstanding turns their handles
// stale instead of leaving them to point into freed memory.
//
// Arms: with handler_timeout_ms 0 (the default) the client waits with no
// answer, and a dead connection's exchange stays pinned until the host
// answers it (WEIR_E_GONE, not WEIR_E_STALE).
#include <sys/socket.h>

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

constexpr int kDeadlineMs = 150;

std::mutex g_mu;
std::vector<weir_exchange *> g_parked;

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (str(r->path) == "/defer") {
        assert_int_equal(weir_defer(ex), 0);
        std::lock_guard<std::mutex> lk(g_mu);
        g_parked.push_back(ex);
        return;
    }
    answer(ex, 200, "ok");
}

int reset_state(void **) {
    std::lock_guard<std::mutex> lk(g_mu);
    g_parked.clear();
    return 0;
}

weir_exchange *parked(size_t i) {
    int64_t until = now_ms() + 3000;
    for (;;) {
        {
            std::lock_guard<std::mutex> lk(g_mu);
            if (g_parked.size() > i)
                return g_parked[i];
        }
        if (now_ms() > until)
            return nullptr;
        sleep_ms(1);
    }
}

weir_config inline_cfg(uint32_t deadline_ms) {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.handler_timeout_ms = deadline_ms;
    return c;
}

// The rule: the host never answers; 503 arrives no sooner than the
// deadline, the connection closes, and the handle is stale.
void test_deadline_answers_503(void **) {
    Server s;
    assert_int_equal(s.start(inline_cfg(kDeadlineMs)), 0);
    Client c = connect_to(s.port);
    int64_t t0 = now_ms();
    assert_true(send_all(c, get("/defer")));
    weir_exchange *ex = parked(0);
    assert_non_null(ex);
    Response r = read_response(c, bound_ms(5000));
    int64_t took = now_ms() - t0;
    assert_int_equal(r.status, 503);
    assert_true(took >= kDeadlineMs - 1); // never early (ms clocks on both sides)
    assert_true(wait_closed(c));
    assert_int_equal(s.wait_closes(WEIR_CLOSE_HANDLER_TIMEOUT, 1), 1);
    assert_int_equal(answer(ex, 200, "late"), WEIR_E_STALE);
    assert_null(weir_exchange_request(ex));
}

// The arm: no deadline, no answer — the client waits for as long as the host.
void test_no_deadline_waits(void **) {
    Server s;
    assert_int_equal(s.start(inline_cfg(0)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer")));
    weir_exchange *ex = parked(0);
    assert_non_null(ex);
    assert_true(stays_silent(c, 4 * kDeadlineMs));
    assert_int_equal(answer(ex, 200, "at last"), 0);
    assert_string_equal(read_response(c).body.c_str(), "at last");
}

// Pipelined: the first is answered, the second never is. The deadline
// counts from the last answer, so the 503 is the second's and the first's
// answer is not lost.
void test_deadline_pipelined(void **) {
    Server s;
    assert_int_equal(s.start(inline_cfg(kDeadlineMs)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer") + get("/defer")));
    weir_exchange *a = parked(0), *b = parked(1);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(answer(a, 200, "first"), 0);
    assert_string_equal(read_response(c).body.c_str(), "first");
    assert_int_equal(read_response(c, bound_ms(5000)).status, 503);
    assert_true(wait_closed(c));
    assert_int_equal(answer(b, 200, "late"), WEIR_E_STALE);
}

// A connection that died while the host held its exchange: the deadline
// frees the zombie (a late answer is stale); without one it stays pinned
// until the host answers (WEIR_E_GONE).
void zombie(uint32_t deadline_ms, int want) {
    Server s;
    assert_int_equal(s.start(inline_cfg(deadline_ms)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/defer")));
    weir_exchange *ex = parked(0);
    assert_non_null(ex);
    linger lg = {1, 0}; // a reset
    setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    c.close();
    int64_t until = now_ms() + 3000;
    while (s.metrics().connections_open != 0 && now_ms() < until)
        sleep_ms(2);
    assert_int_equal(s.metrics().connections_open, 0);
    sleep_ms(3 * kDeadlineMs);
    assert_int_equal(answer(ex, 200, "late"), want);
}

void test_deadline_frees_zombie(void **) { zombie(kDeadlineMs, WEIR_E_STALE); }
void test_no_deadline_zombie_pinned(void **) { zombie(0, WEIR_E_GONE); }

// Driven: the host polls and never answers; the deadline still runs, in
// the host's own polls.
void test_deadline_driven(void **) {
    weir_config cfg = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
    cfg.handler_timeout_ms = kDeadlineMs;
    Server s;
    assert_int_equal(s.start(cfg), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/x")));
    weir_exchange *out[4], *ex = nullptr;
    std::atomic<bool> done{false};
    Response r;
    std::thread reader([&] {
        r = read_response(c, bound_ms(5000));
        done = true;
    });
    while (!done) {
        int n = weir_worker_poll(w, out, 4, 5);
        assert_true(n >= 0);
        if (n > 0)
            ex = out[0];
    }
    reader.join();
    assert_int_equal(r.status, 503);
    assert_non_null(ex);
    assert_int_equal(answer(ex, 200, "late"), WEIR_E_STALE);
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_HANDLER_TIMEOUT], 1);
}

// Destroy with a handle outstanding: it turns stale, on any thread, even
// while another thread is calling with it (ASan/TSan see no freed memory),
// and an engine created after it never answers to it.
void test_destroy_with_outstanding(void **) {
    auto *s = new Server;
    assert_int_equal(s->start(inline_cfg(0)), 0);
    Client c = connect_to(s->port);
    assert_true(send_all(c, get("/defer")));
    weir_exchange *ex = parked(0);
    assert_non_null(ex);
    std::atomic<bool> stop{false};
    std::atomic<int> last{0};
    std::thread caller([&] {
        while (!stop) { // -EINVAL leaves it as it was, until the table goes
            last = weir_respond(ex, 99, nullptr, 0, nullptr, 0, 0);
            weir_exchange_request(ex);
        }
    });
    sleep_ms(20);
    delete s; // weir_engine_destroy
    sleep_ms(20);
    stop = true;
    caller.join();
    assert_int_equal(last.load(), WEIR_E_STALE);
    assert_int_equal(answer(ex, 200, "after destroy"), WEIR_E_STALE);
    assert_null(weir_exchange_request(ex));
    assert_int_equal(weir_defer(ex), WEIR_E_STALE);

    reset_state(nullptr);
    Server next;
    assert_int_equal(next.start(inline_cfg(0)), 0);
    Client c2 = connect_to(next.port);
    assert_true(send_all(c2, get("/defer")));
    weir_exchange *ex2 = parked(0);
    assert_non_null(ex2);
    assert_true(ex2 != ex);
    assert_int_equal(answer(ex, 200, "old"), WEIR_E_STALE);
    assert_int_equal(answer(ex2, 200, "new"), 0);
    assert_string_equal(read_response(c2).body.c_str(), "new");
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_deadline_answers_503, reset_state),
        cmocka_unit_test_setup(test_no_deadline_waits, reset_state),
        cmocka_unit_test_setup(test_deadline_pipelined, reset_state),
        cmocka_unit_test_setup(test_deadline_frees_zombie, reset_state),
        cmocka_unit_test_setup(test_no_deadline_zombie_pinned, reset_state),
        cmocka_unit_test_setup(test_deadline_driven, reset_state),
        cmocka_unit_test_setup(test_destroy_with_outstanding, reset_state),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
