// io_uring's buffer trim (UringPort::trim_buffers) must never drop the pages
// of a buffer the kernel has just filled: the request in it would read back
// as zeros and get a 400 it did not earn (a CI run of the Go binding's
// adaptive switch test saw one in 47,000). The rule: on the COOP and basic
// tiers, where a recv's task work runs at any return to user mode of the
// worker's thread, the buffers are trimmed only while no recv is armed; the
// DEFER tier runs task work only inside io_uring_enter, so it trims under
// load. On epoll every case is a counted skip.
//
// Each arm runs 8 keep-alive clients that keep up to 8 requests each in
// flight, topped up every 200 us, against a 2 ms trim window with a 2 ms
// sleep inside the trim's check-to-madvise window
// (UringHooks::trim_window_us), so requests land while a trim is deciding:
//   coop tier, the rule on: no request reads back wrong;
//   defer tier, the rule on: the buffers are trimmed under that load (the
//     trim counted bytes) and still no request reads back wrong;
//   coop tier, the rule off (UringHooks::trim_any_tier, the arm that must
//     lose): requests read back as zeros, answered 400 — the loss the rule
//     prevents, shown so that the first arm could fail.
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "uring/uring_port.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;
using weir::uring_hooks;

namespace {

constexpr int kClients = 8;

void handler(void *, weir_exchange *ex) { answer(ex, 200, "ok"); }

struct Outcome {
    int ok = 0, bad = 0;
    uint64_t returned = 0;
    uint32_t tier = 0;
};

// tier: "coop" or "" (the engine's own choice: defer in inline mode).
Outcome run(const char *tier, bool rule_off, int ms) {
    if (*tier)
        setenv("WEIR_URING_TIER", tier, 1);
    else
        unsetenv("WEIR_URING_TIER");
    uring_hooks().trim_any_tier.store(rule_off);
    uring_hooks().trim_window_us.store(2000);
    Server s;
    weir_config cfg = config(1, WEIR_MODE_INLINE, handler, nullptr);
    cfg.trim_interval_ms = 2;
    int rc = s.start(cfg);
    unsetenv("WEIR_URING_TIER");
    assert_int_equal(rc, 0);
    Outcome o;
    weir_metrics m = s.metrics();
    o.tier = m.uring_tier;
    if (m.backend != WEIR_BACKEND_URING) {
        uring_hooks().trim_window_us.store(0);
        uring_hooks().trim_any_tier.store(false);
        print_message("the buffer trim: nothing to test on %s\n", test_backend_name());
        skip();
    }
    // Requests keep landing whatever the server is doing: each client keeps
    // up to 8 in flight, topped up every 200 us, so some arrive during every
    // trim's window (a client that waited for its answers would be silent
    // then: the answers leave at the next wait, after the trim).
    std::vector<Client> cl;
    std::vector<int> out(kClients, 0);
    for (int i = 0; i < kClients; i++)
        cl.push_back(connect_to(s.port));
    const std::string req = get("/");
    auto take = [&](int i) {
        for (;;) {
            Response r = take_response(cl[i]);
            if (r.status == 0)
                return;
            out[i]--;
            (r.status == 200 && r.body == "ok" ? o.ok : o.bad)++;
        }
    };
    int64_t end = now_ms() + ms;
    while (now_ms() < end) {
        for (int i = 0; i < kClients; i++)
            if (out[i] < 8 && send_all(cl[i], req))
                out[i]++;
        usleep(200);
        for (int i = 0; i < kClients; i++) {
            bool open = read_some(cl[i]);
            take(i);
            if (!open) { // a 400 closes: what it still owed is lost too
                o.bad += out[i];
                out[i] = 0;
                cl[i] = connect_to(s.port);
            }
        }
    }
    for (int i = 0; i < kClients; i++) {
        int64_t until = now_ms() + bound_ms(2000);
        while (out[i] > 0 && now_ms() < until) {
            bool open = read_some(cl[i]);
            take(i);
            if (!open)
                break;
            usleep(500);
        }
        o.bad += out[i];
    }
    o.returned = s.metrics().mem_returned_bytes;
    uring_hooks().trim_window_us.store(0);
    uring_hooks().trim_any_tier.store(false);
    assert_int_equal(s.shutdown(0), 0);
    return o;
}

void test_coop_rule_on_loses_nothing(void **) {
    Outcome o = run("coop", false, 800);
    print_message("coop, the rule on: %d answered, %d wrong, %llu bytes trimmed\n", o.ok, o.bad,
                  static_cast<unsigned long long>(o.returned));
    assert_int_equal(o.tier, WEIR_URING_TIER_COOP);
    assert_int_equal(o.bad, 0);
    assert_true(o.ok > 100);
}

void test_defer_trims_under_load_and_loses_nothing(void **) {
    Outcome o = run("", false, 800);
    print_message("defer, the rule on: %d answered, %d wrong, %llu bytes trimmed\n", o.ok, o.bad,
                  static_cast<unsigned long long>(o.returned));
    if (o.tier != WEIR_URING_TIER_DEFER) {
        print_message("this kernel has no DEFER_TASKRUN: its exemption has nothing to test\n");
        skip();
    }
    assert_int_equal(o.bad, 0);
    assert_true(o.ok > 100);
    assert_true(o.returned > 0); // it did trim while recvs were armed
}

void test_coop_rule_off_loses_requests(void **) {
    Outcome o = run("coop", true, 800);
    print_message("coop, the rule off (the arm that must lose): %d answered, %d wrong\n", o.ok, o.bad);
    assert_int_equal(o.tier, WEIR_URING_TIER_COOP);
    assert_true(o.bad > 0);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coop_rule_on_loses_nothing),
        cmocka_unit_test(test_defer_trims_under_load_and_loses_nothing),
        cmocka_unit_test(test_coop_rule_off_loses_requests),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
