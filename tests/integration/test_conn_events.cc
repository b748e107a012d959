// cfg.on_conn (docs/api.md §5.11): every accepted connection is told once
// open and once closed, with the reason its close is counted under, on the
// worker's thread, with the client's address. Inline and driven alike.
//
// One connection for each way a connection ends: the client closes (PEER),
// it asks for the close (NOT_KEEP_ALIVE), its keep-alive wait runs out
// (IDLE_TIMEOUT), it sends garbage (BAD_REQUEST, answered 400), it is still
// open at the shutdown (SHUTDOWN), and one over max_connections (answered
// 503, never given a slot: MAX_CONNECTIONS). The ledger then holds exactly
// one OPEN and one CLOSE per client, OPEN first, with the client's own port
// as peer, and its closes by reason equal weir_metrics.closes.
//   positive arms: test_events_{inline,driven}, test_events_over_limit.
//   moves: test_events_transplant_tells_no_move (A opens, B closes, by one id).
//   null arm: test_events_off (on_conn NULL, conn_user set): nothing called.
//   negative arm: test_ledger_catches_a_missing_close runs the same clients
//   with LoopHooks::skip_close_event (close_conn tells no CLOSE: the mutant
//   of the rule) and shows the ledger check fails: the check would catch a
//   close path that forgets its event.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/hooks.h"
#include "support/conn_ledger.h"
#include "support/net.h"

using namespace testnet;
using namespace connledger;

namespace {

Ledger *g_ledger; // the inline handler names its thread the loop's

void handler(void *, weir_exchange *ex) {
    {
        std::lock_guard<std::mutex> g(g_ledger->mu);
        g_ledger->loop_thread = std::this_thread::get_id();
    }
    answer(ex, 200, "ok");
}

// The clients, each ending one way; their local ports by the reason expected.
std::map<uint16_t, uint32_t> run_clients(Server &s, std::vector<Client> &kept) {
    std::map<uint16_t, uint32_t> want;
    { // the client closes after its answer
        Client c = connect_to(s.port);
        want[local_port(c)] = WEIR_CLOSE_PEER;
        assert_true(send_all(c, get("/a")));
        assert_int_equal(read_response(c).status, 200);
        c.close();
        assert_int_equal(s.wait_closes(WEIR_CLOSE_PEER, 1), 1);
    }
    { // asks for the close
        Client c = connect_to(s.port);
        want[local_port(c)] = WEIR_CLOSE_NOT_KEEP_ALIVE;
        assert_true(send_all(c, get("/b", "Connection: close\r\n")));
        assert_int_equal(read_response(c).status, 200);
        assert_true(wait_closed(c));
    }
    { // its keep-alive wait runs out (idle_timeout_ms)
        Client c = connect_to(s.port);
        want[local_port(c)] = WEIR_CLOSE_IDLE_TIMEOUT;
        assert_true(send_all(c, get("/c")));
        assert_int_equal(read_response(c).status, 200);
        assert_true(wait_closed(c));
    }
    { // garbage: 400
        Client c = connect_to(s.port);
        want[local_port(c)] = WEIR_CLOSE_BAD_REQUEST;
        assert_true(send_all(c, "NOT HTTP AT ALL\r\n\r\n"));
        assert_int_equal(read_response(c).status, 400);
        assert_true(wait_closed(c));
    }
    for (int i = 0; i < 3; i++) { // open at the shutdown
        Client c = connect_to(s.port);
        want[local_port(c)] = WEIR_CLOSE_SHUTDOWN;
        assert_true(send_all(c, get("/d")));
        assert_int_equal(read_response(c).status, 200);
        kept.push_back(std::move(c));
    }
    return want;
}

weir_config events_config(uint32_t mode, Ledger *l) {
    weir_config c = config(1, mode, mode == WEIR_MODE_INLINE ? handler : nullptr, nullptr);
    c.idle_timeout_ms = 150;
    c.on_conn = on_conn;
    c.conn_user = l;
    return c;
}

// Runs the clients on an inline or driven engine, shuts it down, and
// returns the ledger's verdict.
std::string run(uint32_t mode, Ledger &l) {
    g_ledger = &l;
    Server s;
    weir_config c = events_config(mode, &l);
    assert_int_equal(s.start(c), 0);
    std::thread driver;
    if (mode == WEIR_MODE_DRIVEN) {
        weir_worker *w = nullptr;
        assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
        driver = std::thread([w, &l] {
            {
                std::lock_guard<std::mutex> g(l.mu);
                l.loop_thread = std::this_thread::get_id();
            }
            weir_exchange *out[16];
            for (;;) {
                int n = weir_worker_poll(w, out, 16, 50);
                if (n < 0)
                    break;
                for (int i = 0; i < n; i++)
                    answer(out[i], 200, "ok");
            }
        });
    }
    std::vector<Client> kept;
    std::map<uint16_t, uint32_t> want = run_clients(s, kept);
    assert_int_equal(s.shutdown(2000000000LL), 0);
    if (driver.joinable())
        driver.join();
    return check(l, want, s.metrics());
}

void test_events_inline(void **) {
    Ledger l;
    std::string v = run(WEIR_MODE_INLINE, l);
    assert_string_equal(v.c_str(), "");
}

void test_events_driven(void **) {
    Ledger l;
    std::string v = run(WEIR_MODE_DRIVEN, l);
    assert_string_equal(v.c_str(), "");
}

// The arm that must lose: close_conn's CLOSE skipped (the mutant), the
// same check finds connections that opened and never closed.
void test_ledger_catches_a_missing_close(void **) {
    weir::loop_hooks().skip_close_event.store(true);
    Ledger l;
    std::string v = run(WEIR_MODE_INLINE, l);
    weir::loop_hooks().skip_close_event.store(false);
    assert_true(v.find("0 closes") != std::string::npos);
}

// Over max_connections: accepted, answered 503, closed without a slot; the
// host still sees it open and close (MAX_CONNECTIONS), with its address.
void test_events_over_limit(void **) {
    Ledger l;
    g_ledger = &l;
    Server s;
    weir_config c = events_config(WEIR_MODE_INLINE, &l);
    c.max_connections = 1;
    assert_int_equal(s.start(c), 0);
    std::map<uint16_t, uint32_t> want;
    Client held = connect_to(s.port);
    want[local_port(held)] = WEIR_CLOSE_SHUTDOWN;
    assert_true(send_all(held, get("/held")));
    assert_int_equal(read_response(held).status, 200); // admitted: the limit is reached
    Client over = connect_to(s.port);
    want[local_port(over)] = WEIR_CLOSE_MAX_CONNECTIONS;
    assert_true(send_all(over, get("/over")));
    assert_int_equal(read_response(over).status, 503);
    assert_true(wait_closed(over));
    assert_int_equal(s.shutdown(2000000000LL), 0);
    std::string v = check(l, want, s.metrics());
    assert_string_equal(v.c_str(), "");
}

void plain_handler(void *, weir_exchange *ex) { answer(ex, 200, "ok"); }

// A transplant moves connections without a close: A tells each OPEN and no
// CLOSE, B no OPEN and the CLOSE (with A's id and the same client), so one
// ledger over both engines balances.
void test_events_transplant_tells_no_move(void **) {
    Ledger la, lb;
    Server a, b;
    weir_config ca = config(1, WEIR_MODE_INLINE, plain_handler, nullptr);
    ca.on_conn = on_conn;
    ca.conn_user = &la;
    weir_config cb = ca;
    cb.conn_user = &lb;
    assert_int_equal(a.start(ca), 0);
    assert_int_equal(b.start(cb), 0);
    constexpr int kClients = 5;
    std::vector<Client> cl;
    for (int i = 0; i < kClients; i++) {
        cl.push_back(connect_to(a.port));
        assert_true(send_all(cl[i], get("/one")));
        assert_int_equal(read_response(cl[i]).status, 200);
    }
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    for (int i = 0; i < kClients; i++) { // served wherever they are
        assert_true(send_all(cl[i], get("/two")));
        assert_int_equal(read_response(cl[i]).status, 200);
    }
    int64_t until = now_ms() + bound_ms(5000);
    while (a.metrics().connections_open > 0 && now_ms() < until)
        sleep_ms(5);
    assert_int_equal(a.metrics().connections_open, 0);
    assert_int_equal(b.shutdown(2000000000LL), 0);
    assert_int_equal(a.shutdown(2000000000LL), 0);
    std::lock_guard<std::mutex> ga(la.mu), gb(lb.mu);
    assert_int_equal(la.by_id.size(), kClients);
    assert_int_equal(lb.by_id.size(), kClients);
    for (auto &[id, e] : la.by_id) {
        assert_int_equal(e.opens, 1);
        assert_int_equal(e.closes, 0); // moved: not closed where it left
        auto it = lb.by_id.find(id);
        assert_true(it != lb.by_id.end());
        assert_int_equal(it->second.opens, 0); // nor opened where it landed
        assert_int_equal(it->second.closes, 1);
        assert_int_equal(it->second.reason, WEIR_CLOSE_SHUTDOWN);
        assert_int_equal(it->second.close_port, e.open_port);
    }
}

// on_conn NULL: conn_user is never passed anywhere, nothing is told.
void test_events_off(void **) {
    Ledger l;
    g_ledger = &l;
    Server s;
    weir_config c = events_config(WEIR_MODE_INLINE, &l);
    c.on_conn = nullptr;
    assert_int_equal(s.start(c), 0);
    std::vector<Client> kept;
    run_clients(s, kept);
    assert_int_equal(s.shutdown(2000000000LL), 0);
    std::lock_guard<std::mutex> g(l.mu);
    assert_int_equal(l.calls, 0);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_inline),
        cmocka_unit_test(test_events_driven),
        cmocka_unit_test(test_events_over_limit),
        cmocka_unit_test(test_events_off),
        cmocka_unit_test(test_events_transplant_tells_no_move),
        cmocka_unit_test(test_ledger_catches_a_missing_close),
    };
    return cmocka_run_group_tests_name("conn_events", tests, nullptr, nullptr);
}
