// Connections that have sent nothing, or only part of a head (DESIGN.md §7):
//   - they hold no buffer while silent or idle between requests (a read that
//     finds nothing gives the buffers back), with the arm that shows the probe
//     does count the buffers of connections that sent part of a head;
//   - the wait for a first byte uses header_timeout_ms, not the idle timeout,
//     and ends in a silent close counted as WEIR_CLOSE_SILENT;
//   - a head that started and missed its deadline (counted from the
//     connection's start, not re-armed by more bytes) is answered 408, then
//     closed without a reset, counted as WEIR_CLOSE_HEADER_TIMEOUT.
#include <string>
#include <vector>

#include "loop/engine.h"
#include "support/net.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace testnet;

namespace {

void handler(void *, weir_exchange *ex) { answer(ex, 200, "ok"); }

void test_silent_first_byte_waits_header_timeout(void **) {
    Server s;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.defer_accept = 0; // accepted at once, so the server's own deadline is what closes it
    c.header_timeout_ms = 300;
    c.idle_timeout_ms = 60000;
    assert_int_equal(s.start(c), 0);
    int64_t t0 = now_ms();
    Client cl = connect_to(s.port);
    assert_true(wait_closed(cl, 5000)); // long before the idle timeout
    int64_t took = now_ms() - t0;
    print_message("silent connection closed after %lld ms (header timeout 300)\n", static_cast<long long>(took));
    assert_true(took >= 250);
    assert_true(cl.buf.empty()); // nothing was asked, nothing is answered
    assert_int_equal(s.wait_closes(WEIR_CLOSE_SILENT, 1), 1);
    weir_metrics m = s.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_IDLE_TIMEOUT], 0);
    assert_int_equal(m.closes[WEIR_CLOSE_HEADER_TIMEOUT], 0);
}

void test_silent_slow_head_gets_408(void **) {
    Server s;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.defer_accept = 0;
    c.header_timeout_ms = 400;
    assert_int_equal(s.start(c), 0);
    Client cl = connect_to(s.port);
    int64_t t0 = now_ms();
    // A byte every 50 ms: the whole head would take 3 s, so a deadline
    // re-armed by each read would never fire within the trickle.
    const std::string head = "GET / HTTP/1.1\r\nHost: t\r\nX-Slow: " + std::string(60, 'a') + "\r\n\r\n";
    size_t sent = 0;
    bool cut = false;
    while (sent < head.size()) {
        if (!send_all(cl, head.substr(sent, 1)))
            break;
        sent++;
        if (!stays_silent(cl, 50)) {
            cut = true;
            break;
        }
    }
    assert_true(cut);
    Response r = read_response(cl, 3000);
    int64_t took = now_ms() - t0;
    print_message("408 after %lld ms and %zu of %zu bytes (header timeout 400)\n", static_cast<long long>(took),
                  sent, head.size());
    assert_int_equal(r.status, 408);
    assert_string_equal(r.header("Connection").c_str(), "close");
    assert_true(sent < head.size());
    assert_true(took < 2000);
    // Closed with a FIN, not a reset: the trickle's last bytes were drained.
    assert_true(wait_closed(cl, 3000));
    assert_int_equal(s.wait_closes(WEIR_CLOSE_HEADER_TIMEOUT, 1), 1);
    weir_metrics m = s.metrics();
    assert_int_equal(m.responses, 1);
    assert_int_equal(m.parse_errors, 0);
    assert_int_equal(m.closes[WEIR_CLOSE_SILENT], 0);
}

// Driven mode: this thread owns the worker, so its pool can be read between polls.
struct Driven {
    Server s;
    weir::Worker *w = nullptr;
    void start() {
        weir_config c = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
        c.defer_accept = 0;
        assert_int_equal(s.start(c), 0);
        w = reinterpret_cast<weir::Engine *>(s.e)->worker(0);
    }
    // Polls until pred() or 5 s, answering every request.
    template <class P> bool poll_until(P pred) {
        int64_t until = now_ms() + 5000;
        weir_exchange *xs[64];
        while (!pred() && now_ms() < until) {
            int n = weir_worker_poll(reinterpret_cast<weir_worker *>(w), xs, 64, 10);
            for (int i = 0; i < n; i++)
                answer(xs[i], 200, "ok");
        }
        return pred();
    }
    // A few passes more (reads that find nothing, writes that complete).
    void polls(int n) {
        int64_t stop = now_ms() + 10 * n;
        poll_until([&] { return now_ms() >= stop; });
    }
};

void test_silent_and_idle_connections_hold_no_buffers(void **) {
    constexpr int kConns = 40;
    Driven d;
    d.start();
    std::vector<Client> cs;
    for (int i = 0; i < kConns; i++)
        cs.push_back(connect_to(d.s.port));
    assert_true(d.poll_until([&] { return d.s.metrics().connections_open == kConns; }));
    d.polls(5); // a few more passes: reads that find nothing
    print_message("%d silent connections: %zu buffers held\n", kConns, d.w->states_in_use());
    assert_int_equal(d.w->states_in_use(), 0);

    // The probe's arm: part of a head pins a connection's buffers.
    const std::string part = "GET / HTTP/1.1\r\nHo";
    uint64_t in0 = d.s.metrics().bytes_in;
    for (Client &c : cs)
        assert_true(send_all(c, part));
    assert_true(d.poll_until([&] { return d.s.metrics().bytes_in >= in0 + part.size() * kConns; }));
    assert_int_equal(d.w->states_in_use(), kConns);

    // Served and idle between requests: the buffers go back again.
    for (Client &c : cs)
        assert_true(send_all(c, "st: t\r\n\r\n"));
    assert_true(d.poll_until([&] { return d.s.metrics().responses >= kConns; }));
    for (Client &c : cs)
        assert_int_equal(read_response(c).status, 200);
    d.polls(5);
    print_message("%d idle keep-alive connections: %zu buffers held\n", kConns, d.w->states_in_use());
    assert_int_equal(d.w->states_in_use(), 0);
    assert_int_equal(d.s.metrics().connections_open, kConns);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silent_first_byte_waits_header_timeout),
        cmocka_unit_test(test_silent_slow_head_gets_408),
        cmocka_unit_test(test_silent_and_idle_connections_hold_no_buffers),
    };
    return cmocka_run_group_tests_name("silent_conns", tests, nullptr, nullptr);
}
