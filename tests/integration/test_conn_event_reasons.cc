// cfg.on_conn's CLOSE reasons on the paths test_conn_events.cc does not
// take (issue 30): each connection told once open and once closed, with the
// reason weir_metrics.closes counts it under, on both backends.
//   overload:  idle keep-alive clients swept at level 1: OVERLOAD.
//   upgrade:   a 101 hands the socket to the host: UPGRADED, told once.
//   PROXY:     OPEN carries the socket's peer, CLOSE the header's source
//              (paired by conn_id); a malformed header: PROXY, 400.
//   handover:  listeners-only, what A holds closes at its boundary:
//              HANDOVER, told by A; B tells nothing of them.
//   HTTP/2:    a frame the protocol forbids: H2_PROTOCOL.
// Each case checks the ledger (tests/support/conn_ledger.h) against the
// clients' ports and the metrics. Their negative arm is
// test_conn_events.cc's test_ledger_catches_a_missing_close (a close path
// that forgets its event fails the same check); the mutants tried are named
// in the cases.
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/conn_ledger.h"
#include "support/handover_ptr.h"
#include "support/net.h"

using namespace testnet;
using namespace connledger;

namespace {

std::atomic<int> g_upgrade_fd{-1};

void handler(void *, weir_exchange *ex) {
    int fd = -1;
    char buf[256];
    size_t len = 0;
    if (weir_upgrade_take(ex, &fd, buf, sizeof buf, &len) == 0) { // the upgraded socket, handed back
        g_upgrade_fd = fd;
        return;
    }
    const weir_request *r = weir_exchange_request(ex);
    if (str(r->path) == "/ws") {
        weir_header_t up = {{"Upgrade", 7}, {"echo", 4}};
        assert_int_equal(weir_upgrade(ex, &up, 1), 0);
        return;
    }
    answer(ex, 200, "ok");
}

weir_config events_config(Ledger *l) {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.on_conn = on_conn;
    c.conn_user = l;
    c.idle_timeout_ms = 30000;
    c.defer_accept = 0;
    return c;
}

void expect_ledger(Ledger &l, const std::map<uint16_t, uint32_t> &want, const weir_metrics &m) {
    std::string v = check(l, want, m);
    if (!v.empty())
        print_message("ledger: %s (%s)\n", v.c_str(), test_backend_name());
    assert_string_equal(v.c_str(), "");
}

// overload_conns 10: seven keep-alive clients served once sit idle; the
// eighth connection (80 %) raises level 1, which closes the seven
// (OVERLOAD); with one connection left the level falls back, so the eighth
// is served keep-alive and closes at the shutdown (SHUTDOWN).
// Mutant tried: overload_idle_close's close_conn given WEIR_CLOSE_PEER:
// the reasons disagree.
void overload_closes_are_told(void **) {
    Ledger l;
    Server s;
    weir_config c = events_config(&l);
    c.overload_conns = 10;
    assert_int_equal(s.start(c), 0);
    std::map<uint16_t, uint32_t> want;
    std::vector<Client> idle;
    for (int i = 0; i < 7; i++) {
        idle.push_back(connect_to(s.port));
        want[local_port(idle.back())] = WEIR_CLOSE_OVERLOAD;
        assert_true(send_all(idle.back(), get("/a")));
        assert_int_equal(read_response(idle.back()).status, 200);
    }
    Client eighth = connect_to(s.port);
    want[local_port(eighth)] = WEIR_CLOSE_SHUTDOWN;
    for (Client &k : idle)
        assert_true(wait_closed(k));
    assert_int_equal(s.wait_closes(WEIR_CLOSE_OVERLOAD, 7), 7);
    assert_true(send_all(eighth, get("/b")));
    assert_int_equal(read_response(eighth).status, 200);
    assert_int_equal(s.shutdown(2000000000LL), 0);
    expect_ledger(l, want, s.metrics());
}

// The 101 gives the socket to the host: weir's part of the connection ends
// there, told once as UPGRADED (not again when the host closes the fd).
void upgrade_is_told_once(void **) {
    Ledger l;
    Server s;
    g_upgrade_fd = -1;
    assert_int_equal(s.start(events_config(&l)), 0);
    std::map<uint16_t, uint32_t> want;
    Client c = connect_to(s.port);
    want[local_port(c)] = WEIR_CLOSE_UPGRADED;
    assert_true(send_all(c, "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n"));
    assert_int_equal(read_response(c).status, 101);
    int64_t until = now_ms() + bound_ms(5000);
    while (g_upgrade_fd.load() < 0 && now_ms() < until)
        sleep_ms(1);
    assert_true(g_upgrade_fd.load() >= 0);
    ::close(g_upgrade_fd.exchange(-1)); // the host ends it
    assert_true(wait_closed(c));
    assert_int_equal(s.shutdown(2000000000LL), 0);
    expect_ledger(l, want, s.metrics());
}

// PROXY v1: the OPEN names the socket's peer (the balancer), the CLOSE the
// header's source; a malformed header is answered 400 and closed as PROXY,
// its CLOSE still naming the socket's peer (no header was read).
void proxy_close_names_the_source(void **) {
    Ledger l;
    Server s;
    weir_config c = events_config(&l);
    c.proxy_protocol = WEIR_PROXY_ON;
    assert_int_equal(s.start(c), 0);
    Client good = connect_to(s.port);
    uint16_t good_port = local_port(good);
    assert_true(send_all(good, "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n" + get("/p")));
    assert_int_equal(read_response(good).status, 200);
    good.close();
    assert_int_equal(s.wait_closes(WEIR_CLOSE_PEER, 1), 1);
    Client bad = connect_to(s.port);
    uint16_t bad_port = local_port(bad);
    assert_true(send_all(bad, "PROXY TCP4 192.0.2.1 198.51.100.2 56324 65536\r\n" + get("/q")));
    assert_int_equal(read_response(bad).status, 400);
    assert_true(wait_closed(bad));
    assert_int_equal(s.shutdown(2000000000LL), 0);
    weir_metrics m = s.metrics();
    std::lock_guard<std::mutex> g(l.mu);
    assert_int_equal(l.by_id.size(), 2);
    int seen = 0;
    for (auto &[id, e] : l.by_id) {
        assert_int_equal(e.opens, 1);
        assert_int_equal(e.closes, 1);
        assert_int_equal(e.open_ip, INADDR_LOOPBACK);
        if (e.open_port == good_port) {
            assert_int_equal(e.reason, WEIR_CLOSE_PEER);
            assert_int_equal(e.close_ip, 0xc0000201u); // 192.0.2.1
            assert_int_equal(e.close_port, 56324);
            seen |= 1;
        } else {
            assert_int_equal(e.open_port, bad_port);
            assert_int_equal(e.reason, WEIR_CLOSE_PROXY);
            assert_int_equal(e.close_ip, INADDR_LOOPBACK);
            assert_int_equal(e.close_port, bad_port);
            seen |= 2;
        }
    }
    assert_int_equal(seen, 3);
    assert_int_equal(m.closes[WEIR_CLOSE_PEER], 1);
    assert_int_equal(m.closes[WEIR_CLOSE_PROXY], 1);
}

// A listeners-only handover: A's keep-alive clients are not moved, each
// closes at its boundary as HANDOVER, told by A; B, which took the
// listeners, tells nothing of them, and tells its own client as usual.
// Mutant tried: Worker::detach's listeners-only branch closing with
// WEIR_CLOSE_SHUTDOWN: the reasons disagree.
void listeners_only_handover_is_told(void **) {
    Ledger la, lb;
    Server a, b;
    assert_int_equal(a.start(events_config(&la)), 0);
    std::map<uint16_t, uint32_t> want_a, want_b;
    std::vector<Client> cl;
    for (int i = 0; i < 4; i++) {
        cl.push_back(connect_to(a.port));
        want_a[local_port(cl.back())] = WEIR_CLOSE_HANDOVER;
        assert_true(send_all(cl.back(), get("/a")));
        assert_int_equal(read_response(cl.back()).status, 200);
    }
    std::string path = "/tmp/weir-test-evreasons-" + std::to_string(::getpid()) + ".sock";
    weir_handover_options o{};
    o.size = sizeof o;
    o.flags = WEIR_HANDOVER_LISTENERS_ONLY;
    o.wait_ms = 5000;
    weir_handover *h = nullptr;
    assert_int_equal(weir_handover_offer(a.e, path.c_str(), &o, &h), 0);
    HandoverPtr ha(h);
    weir_config cb = events_config(&lb);
    assert_int_equal(create(cb, &b.e), 0);
    weir_handover_options ob{};
    ob.size = sizeof ob;
    ob.wait_ms = 5000;
    h = nullptr;
    assert_int_equal(weir_handover_take_over(b.e, path.c_str(), &ob, &h), 0);
    HandoverPtr hb(h);
    assert_int_equal(engine_port(b.e, &b.port), 0);
    assert_int_equal(weir_engine_start(b.e), 0);
    assert_int_equal(weir_handover_wait(ha.get(), 5000000000LL), 0);
    assert_int_equal(weir_handover_wait(hb.get(), 5000000000LL), 0);
    for (Client &k : cl)
        assert_true(wait_closed(k));
    Client fresh = connect_to(b.port); // the listener is B's now
    want_b[local_port(fresh)] = WEIR_CLOSE_SHUTDOWN;
    assert_true(send_all(fresh, get("/b")));
    assert_int_equal(read_response(fresh).status, 200);
    assert_int_equal(a.shutdown(2000000000LL), 0);
    assert_int_equal(b.shutdown(2000000000LL), 0);
    expect_ledger(la, want_a, a.metrics());
    expect_ledger(lb, want_b, b.metrics());
}

// HTTP/2: after the preface, a DATA frame on stream 0 is a connection error
// (RFC 9113 §6.1): GOAWAY, then the close, told as H2_PROTOCOL.
void h2_protocol_error_is_told(void **) {
    Ledger l;
    Server s;
    assert_int_equal(s.start(events_config(&l)), 0);
    std::map<uint16_t, uint32_t> want;
    Client c = connect_to(s.port);
    want[local_port(c)] = WEIR_CLOSE_H2_PROTOCOL;
    static const char kBad[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                               "\x00\x00\x00\x00\x00\x00\x00\x00\x00"; // SETTINGS: empty
    std::string bytes(kBad, sizeof kBad - 1);
    bytes[24 + 3] = 0x4;                                                // type SETTINGS
    bytes += std::string("\x00\x00\x00\x00\x00\x00\x00\x00\x00", 9); // DATA, stream 0
    assert_true(send_all(c, bytes));
    assert_true(wait_closed(c));
    assert_int_equal(s.wait_closes(WEIR_CLOSE_H2_PROTOCOL, 1), 1);
    assert_int_equal(s.shutdown(2000000000LL), 0);
    expect_ledger(l, want, s.metrics());
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(overload_closes_are_told),
        cmocka_unit_test(upgrade_is_told_once),
        cmocka_unit_test(proxy_close_names_the_source),
        cmocka_unit_test(listeners_only_handover_is_told),
        cmocka_unit_test(h2_protocol_error_is_told),
    };
    return cmocka_run_group_tests_name("conn_event_reasons", tests, nullptr, nullptr);
}
