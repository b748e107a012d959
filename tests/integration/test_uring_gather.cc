// io_uring's gathering wait (docs/uring.md, "What a pass does") gathers only
// after a busy pass. On epoll, or a kernel without IORING_FEAT_MIN_TIMEOUT,
// every case is a counted skip.
//
//   a lone keep-alive client (one request in flight at a time) never makes a
//     pass busy: no wait gathers, each waits for its first completion. The
//     arm (every wait gathering as before the
//     rule: WEIR_URING_GATHER=always, the port's measurement knob) makes
//     every one of its requests wait out the gather window; the
//     time per request of both arms is printed, not asserted (a benchmark's
//     business: docs/uring.md has the measured figures).
//   64 connections whose requests land together (the first parks the loop
//     for a moment, so the other 63 are all there at its next enter) make
//     the pass busy, and the wait after it gathers. Without the gather at all
//     (the rule's opposite mutant) this count stays 0.
#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include "loop/engine.h"
#include "uring/uring_port.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;
using weir::uring_hooks;

namespace {

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (long ms = query_int(r, "block", 0); ms > 0)
        sleep_ms(static_cast<int>(ms)); // parks the loop while the others' requests land
    answer(ex, 200, "ok");
}

// Skips unless the engine runs on io_uring with the gathering wait.
void need_gather(const Server &s) {
    weir_metrics m = s.metrics();
    if (m.backend != WEIR_BACKEND_URING) {
        print_message("the gathering wait: nothing to test on %s\n", test_backend_name());
        skip();
    }
    if (!(m.uring_used & WEIR_URING_F_MIN_TIMEOUT)) {
        print_message("the gathering wait: this kernel has no IORING_FEAT_MIN_TIMEOUT\n");
        skip();
    }
}

struct Counts {
    uint64_t gathers, plain;
    static Counts now() {
        return {uring_hooks().gathers.load(), uring_hooks().plain_waits.load()};
    }
};

// Runs n sequential requests on one connection; returns µs per request.
double lone_client(uint16_t port, int n) {
    Client c = connect_to(port);
    int64_t t0 = now_ms();
    for (int i = 0; i < n; i++) {
        if (!send_all(c, get("/")))
            return -1;
        Response r = read_response(c);
        if (r.status != 200)
            return -1;
    }
    return 1000.0 * static_cast<double>(now_ms() - t0) / n;
}

void test_lone_client_never_gathers(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    need_gather(s);
    constexpr int kRequests = 1000;
    Counts c0 = Counts::now();
    double us = lone_client(s.port, kRequests);
    Counts c1 = Counts::now();

    // The arm: an engine whose every wait gathers (the knob is read at setup).
    setenv("WEIR_URING_GATHER", "always", 1);
    Server always;
    int rc = always.start(config(1, WEIR_MODE_INLINE, handler, nullptr));
    unsetenv("WEIR_URING_GATHER");
    assert_int_equal(rc, 0);
    Counts c1b = Counts::now();
    double us_always = lone_client(always.port, kRequests);
    Counts c2 = Counts::now();
    print_message("lone client, %d requests: %llu waits gathered, %llu plain (%.1f us a request); every wait "
                  "gathering: %llu gathered (%.1f us a request)\n",
                  kRequests, static_cast<unsigned long long>(c1.gathers - c0.gathers),
                  static_cast<unsigned long long>(c1.plain - c0.plain), us,
                  static_cast<unsigned long long>(c2.gathers - c1b.gathers), us_always);
    assert_true(us > 0 && us_always > 0);
    assert_int_equal(c1.gathers - c0.gathers, 0);
    assert_true(c1.plain - c0.plain >= kRequests);
    assert_true(c2.gathers - c1b.gathers >= kRequests); // the arm: the window is paid on every request
}

void test_busy_pass_gathers(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    need_gather(s);
    constexpr int kConns = 64, kRounds = 20;
    std::vector<Client> cs;
    for (int i = 0; i < kConns; i++)
        cs.push_back(connect_to(s.port));
    // One round first, so every connection's multishot recv is armed.
    for (Client &c : cs)
        assert_true(send_all(c, get("/")));
    for (Client &c : cs)
        assert_int_equal(read_response(c).status, 200);
    Counts c0 = Counts::now();
    for (int r = 0; r < kRounds; r++) {
        assert_true(send_all(cs[0], get("/?block=5")));
        sleep_ms(1); // its recv is reaped and the loop parks in the handler
        for (int i = 1; i < kConns; i++)
            assert_true(send_all(cs[i], get("/")));
        for (Client &c : cs)
            assert_int_equal(read_response(c).status, 200);
    }
    Counts c1 = Counts::now();
    print_message("%d rounds of %d requests landing together: %llu waits gathered, %llu plain\n", kRounds, kConns,
                  static_cast<unsigned long long>(c1.gathers - c0.gathers),
                  static_cast<unsigned long long>(c1.plain - c0.plain));
    assert_true(c1.gathers - c0.gathers >= kRounds / 2);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lone_client_never_gathers),
        cmocka_unit_test(test_busy_pass_gathers),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
