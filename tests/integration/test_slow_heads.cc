// Slowloris: clients that open a head and then drip it, a byte at a time,
// so the head never completes. The header deadline answers each 408 and
// closes it (WEIR_CLOSE_HEADER_TIMEOUT), lingering so the 408 arrives
// before any reset. Such a client keeps writing; the linger reads and
// discards, and only the close that ends the linger stops its writes. That
// close must follow once the client's kernel has acknowledged the 408 and
// the FIN, not at the linger's 5 s bound: a trickling client otherwise
// holds its socket (in the reaper) 5 s past the deadline, and a client
// that judges the defence by its writes failing (celeris's
// TestSlowlorisSyntheticConcurrent: 64 clients, ReadHeaderTimeout + 2 s)
// sees the ones that lingered as never cut.
//
// The rule's test: kClients clients drip a byte every kDripMs; every one
// reads its 408, and every one's writes fail, within the deadline T plus a
// margin of 4 T; each close is counted as a header timeout. The unit is T,
// the deadline of this run; the margin covers a loaded 2-core machine (the
// worker's pass, the reaper's wake) and is far below the 5 s bound, which
// is what the arm without the rule shows.
//
// The arm that must lose (LingerHooks::linger_to_bound: the trickler's
// linger runs to the bound, as before): the writes of those that lingered
// keep succeeding past T + 4 T, while their 408 had long arrived.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/linger.h"
#include "support/net.h"

using namespace testnet;

namespace {

constexpr int kClients = 32;
constexpr int kDeadlineMs = 250; // T
constexpr int kDripMs = 1;

// The background client's requests hold the worker kBusyMs each, so drips
// pile up between its passes (as under celeris's 200 churning clients): a
// head the deadline cuts then has bytes waiting, and its close lingers.
constexpr int kBusyMs = 3;

void handler(void *, weir_exchange *ex) {
    if (str(weir_exchange_request(ex)->path) == "/busy")
        sleep_ms(kBusyMs);
    answer(ex, 200, "ok");
}

// Keeps the worker busy until stop.
struct Busy {
    std::atomic<bool> stop{false};
    std::atomic<int> served{0};
    std::thread t;
    explicit Busy(uint16_t port)
        : t([this, port] {
              Client c = connect_to(port);
              while (!stop.load()) {
                  if (!send_all(c, get("/busy")) || read_response(c, bound_ms(5000)).status != 200)
                      return;
                  served++;
              }
          }) {}
    ~Busy() {
        stop = true;
        t.join();
    }
};

struct Drip {
    Client c;
    int64_t got_408 = -1;   // ms after the head began
    int64_t write_fail = -1;
};

// Drips into every client until each one's writes fail or the time is up;
// returns how long the whole ran.
void drip_all(std::vector<Drip> &ds, int64_t t0, int64_t until) {
    int left = static_cast<int>(ds.size());
    while (left > 0 && now_ms() < until) {
        for (Drip &d : ds) {
            if (d.write_fail >= 0)
                continue;
            if (d.got_408 < 0) {
                read_some(d.c);
                if (d.c.buf.compare(0, 12, "HTTP/1.1 408") == 0)
                    d.got_408 = now_ms() - t0;
            }
            if (::send(d.c.fd, "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN) {
                d.write_fail = now_ms() - t0;
                left--;
            }
        }
        sleep_ms(kDripMs);
    }
}

struct Outcome {
    int got_408 = 0, cut = 0;
    int64_t worst_408 = 0, worst_cut = 0;
    uint64_t lingered = 0; // closes that lingered (the rule's case)
};

weir_config cfg() {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.header_timeout_ms = kDeadlineMs;
    return c;
}

// One run on a fresh engine: kClients trickling heads beside the busy client.
Outcome run_once() {
    Server s;
    assert_int_equal(s.start(cfg()), 0);
    Busy busy(s.port), busy2(s.port); // two: the worker is never idle between them
    std::vector<Drip> ds(kClients);
    for (Drip &d : ds) {
        d.c = connect_to(s.port);
        assert_true(d.c.fd >= 0);
        ::fcntl(d.c.fd, F_SETFL, ::fcntl(d.c.fd, F_GETFL) | O_NONBLOCK);
    }
    int64_t t0 = now_ms();
    for (Drip &d : ds)
        assert_true(send_all(d.c, "GET / HTTP/1.1\r\nHost: t\r\nX-Drip: "));
    drip_all(ds, t0, t0 + kDeadlineMs * 5 + 500);
    assert_true(busy.served.load() > 0 && busy2.served.load() > 0);
    Outcome o;
    for (Drip &d : ds) {
        if (d.got_408 >= 0 && d.got_408 <= kDeadlineMs * 5) {
            o.got_408++;
            o.worst_408 = std::max(o.worst_408, d.got_408);
        }
        if (d.write_fail >= 0 && d.write_fail <= kDeadlineMs * 5) {
            o.cut++;
            o.worst_cut = std::max(o.worst_cut, d.write_fail);
        }
    }
    assert_int_equal(s.wait_closes(WEIR_CLOSE_HEADER_TIMEOUT, kClients), kClients);
    weir_metrics m = s.metrics();
    o.lingered = m.close_lingers;
    print_message("%s: %d of %d read their 408 (worst %lld ms), %d of %d cut (worst %lld ms), T = %d ms; "
                  "%llu lingered, %llu linger cuts\n",
                  test_backend_name(), o.got_408, kClients, static_cast<long long>(o.worst_408), o.cut, kClients,
                  static_cast<long long>(o.worst_cut), kDeadlineMs, static_cast<unsigned long long>(m.close_lingers),
                  static_cast<unsigned long long>(m.close_linger_cuts));
    return o;
}

// A run in which some close lingered: one where the worker happened to read
// every drip before the deadline closes at once and shows nothing (the
// busy clients make that rare); it is run again, at most twice.
Outcome run() {
    Outcome o;
    for (int i = 0; i < 3; i++) {
        o = run_once();
        if (o.lingered > 0)
            break;
    }
    assert_true(o.lingered > 0);
    return o;
}

void test_trickling_heads_are_cut_after_their_408(void **) {
    Outcome o = run();
    assert_int_equal(o.got_408, kClients);
    assert_int_equal(o.cut, kClients);
}

// The arm that must lose: lingering to the bound, the trickling clients
// whose close lingered write on long after their 408.
void test_arm_linger_to_bound_leaves_them_writing(void **) {
    weir::linger_hooks().linger_to_bound.store(true);
    Outcome o = run();
    weir::linger_hooks().linger_to_bound.store(false);
    assert_int_equal(o.got_408, kClients);
    assert_true(o.cut <= kClients - static_cast<int>(o.lingered));
}

} // namespace

int main() {
    signal(SIGPIPE, SIG_IGN);
    const CMUnitTest tests[] = {
        cmocka_unit_test(test_trickling_heads_are_cut_after_their_408),
        cmocka_unit_test(test_arm_linger_to_bound_leaves_them_writing),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
