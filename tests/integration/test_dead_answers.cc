// An answer to an exchange whose connection has died gives the
// connection's state (the exchange ring x lives in) back to the worker's
// pool; a pool already holding its cap (256 states) frees it. The worker must
// not read x after that answer. It did: drain_answers, apply and the owning
// thread's respond read x->handle after Conn::respond to retire the ticket,
// a read of freed memory that killed a Go test binary with a SIGSEGV in
// weirgo_cycle (celeris's TestWSRSTMidUpgradeTorture on io_uring: 32
// clients resetting mid-request, async handlers answering them).
//
// How the read is made to fault in the plain build: max_pipeline is large
// enough that each state's exchange ring is one allocation above malloc's
// mmap threshold, pinned with mallopt (glibc otherwise raises the threshold
// after the first such free), so the freed ring is unmapped and the read
// faults; under SAN=1 AddressSanitizer reports the use after free. More than
// 256 connections die holding an exchange each, on one worker, and are then
// answered: the first 256 states are kept, the rest freed one by one.
//
// Arms: a foreign thread answering (the drop drain_answers applies), and the
// driving thread of a driven worker answering after its poll (the owning
// thread's respond). Without the rule (x->handle read after the answer,
// as before the fix) each arm dies of SIGSEGV here, and of ASan's report
// under SAN=1. Every answer is WEIR_E_GONE, and every close is counted.
#include <malloc.h>
#include <sys/socket.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

constexpr int kConns = 280;        // > the pool's cap of 256 kept states
constexpr uint32_t kPipeline = 2048; // the exchange ring: well past 128 KiB

std::mutex g_mu;
std::vector<weir_exchange *> g_parked;

void defer_all(void *, weir_exchange *ex) {
    assert_int_equal(weir_defer(ex), 0);
    std::lock_guard<std::mutex> lk(g_mu);
    g_parked.push_back(ex);
}

int setup(void **) {
    // Fixed: every ring is mapped on its own and unmapped when freed.
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    std::lock_guard<std::mutex> lk(g_mu);
    g_parked.clear();
    return 0;
}

size_t parked_count() {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_parked.size();
}

weir_config cfg(uint32_t mode, weir_handler_fn fn) {
    weir_config c = config(1, mode, fn, nullptr);
    c.max_pipeline = kPipeline;
    return c;
}

std::vector<Client> connect_and_ask(uint16_t port) {
    std::vector<Client> cs;
    for (int i = 0; i < kConns; i++) {
        cs.push_back(connect_to(port));
        assert_true(cs.back().fd >= 0);
        assert_true(send_all(cs.back(), get("/")));
    }
    return cs;
}

// Resets every client (SO_LINGER 0) and waits until the worker has counted
// every close: each connection is then a zombie holding its exchange.
void reset_all(Server &s, std::vector<Client> &cs) {
    for (Client &c : cs) {
        linger l{1, 0};
        setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        c.close();
    }
    int64_t until = now_ms() + bound_ms(5000);
    uint64_t closed = 0;
    while (now_ms() < until) {
        weir_metrics m = s.metrics();
        closed = 0;
        for (uint64_t n : m.closes)
            closed += n;
        if (closed >= kConns && m.connections_open == 0)
            break;
        sleep_ms(5);
    }
    assert_int_equal(closed, kConns);
    sleep_ms(100); // io_uring: the cancelled recvs' completions give the lends back
}

// A foreign thread answers every exchange of a dead connection.
void test_foreign_answers_to_dead_connections(void **) {
    Server s;
    assert_int_equal(s.start(cfg(WEIR_MODE_INLINE, defer_all)), 0);
    std::vector<Client> cs = connect_and_ask(s.port);
    int64_t until = now_ms() + bound_ms(5000);
    while (parked_count() < kConns && now_ms() < until)
        sleep_ms(2);
    assert_int_equal(parked_count(), kConns);
    reset_all(s, cs);
    std::vector<weir_exchange *> exs;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        exs = g_parked;
    }
    for (weir_exchange *ex : exs)
        assert_int_equal(answer(ex, 200, "late"), WEIR_E_GONE);
    // The drops are applied by the worker: it must come through them, and
    // a new connection is still served.
    until = now_ms() + bound_ms(5000);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/")));
    while (parked_count() < kConns + 1 && now_ms() < until)
        sleep_ms(2);
    assert_int_equal(parked_count(), kConns + 1);
    {
        std::lock_guard<std::mutex> lk(g_mu);
        assert_int_equal(answer(g_parked.back(), 200, "ok"), 0);
    }
    assert_int_equal(read_response(c, bound_ms(5000)).status, 200);
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_PEER] + s.metrics().closes[WEIR_CLOSE_IO_ERROR], kConns);
}

// The driving thread answers, after the poll that saw the connections die.
void test_driving_thread_answers_to_dead_connections(void **) {
    Server s;
    assert_int_equal(s.start(cfg(WEIR_MODE_DRIVEN, nullptr)), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    std::vector<Client> cs = connect_and_ask(s.port);
    std::vector<weir_exchange *> exs;
    weir_exchange *batch[64];
    int64_t until = now_ms() + bound_ms(5000);
    while (exs.size() < kConns && now_ms() < until) {
        int n = weir_worker_poll(w, batch, 64, 10);
        assert_true(n >= 0);
        exs.insert(exs.end(), batch, batch + n);
    }
    assert_int_equal(exs.size(), kConns);
    for (Client &c : cs) {
        linger l{1, 0};
        setsockopt(c.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        c.close();
    }
    // This thread runs the loop: the closes are counted by its polls.
    uint64_t closed = 0;
    until = now_ms() + bound_ms(5000);
    while (closed < kConns && now_ms() < until) {
        assert_int_equal(weir_worker_poll(w, batch, 64, 10), 0);
        weir_metrics m = s.metrics();
        closed = m.closes[WEIR_CLOSE_PEER] + m.closes[WEIR_CLOSE_IO_ERROR];
    }
    assert_int_equal(closed, kConns);
    for (int i = 0; i < 10; i++) // io_uring: the cancelled recvs' completions
        assert_int_equal(weir_worker_poll(w, batch, 64, 10), 0);
    for (weir_exchange *ex : exs) // still this thread's: answered at once
        assert_int_equal(answer(ex, 200, "late"), WEIR_E_GONE);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/")));
    int n = 0;
    until = now_ms() + bound_ms(5000);
    while (n == 0 && now_ms() < until)
        n = weir_worker_poll(w, batch, 64, 10);
    assert_int_equal(n, 1);
    assert_int_equal(answer(batch[0], 200, "ok"), 0);
    assert_int_equal(weir_worker_poll(w, batch, 64, 10), 0);
    assert_int_equal(read_response(c, bound_ms(5000)).status, 200);
}

} // namespace

int main() {
    const CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_foreign_answers_to_dead_connections, setup),
        cmocka_unit_test_setup(test_driving_thread_answers_to_dead_connections, setup),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
