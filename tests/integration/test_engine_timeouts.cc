// Timers and connection limits: header, idle and write timeouts close with
// their counted reasons; activity keeps a keep-alive connection; over
// max_connections a connection is accepted, answered 503 and closed, counted,
// without spin (the answer itself: test_max_conns_answer.cc).
#include "cmocka_cxx.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>

#include "support/net.h"

using namespace testnet;

namespace {

std::string g_big(16u << 20, 'z');

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (str(r->path) == "/big")
        weir_respond(ex, 200, nullptr, 0, g_big.data(), g_big.size(), 0);
    else if (str(r->path) == "/60k")
        weir_respond(ex, 200, nullptr, 0, g_big.data(), 60 * 1024, 0);
    else
        answer(ex, 200, "ok");
}

weir_config base() {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.defer_accept = 0; // these clients connect and stay silent on purpose
    c.header_timeout_ms = 200;
    c.idle_timeout_ms = 300;
    c.write_timeout_ms = 300;
    return c;
}

void test_timeouts_header(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, "GET / HTTP/1.1\r\nHo"));
    int64_t t0 = now_ms();
    // more bytes of the same head do not extend the deadline
    sleep_ms(100);
    assert_true(send_all(c, "st: t\r\nX-A: 1\r\n"));
    assert_true(wait_closed(c, 3000));
    int64_t took = now_ms() - t0;
    assert_true(took >= 150);
    assert_true(took < 1500);
    assert_int_equal(s.wait_closes(WEIR_CLOSE_HEADER_TIMEOUT, 1), 1);
}

void test_timeouts_idle(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/")));
    assert_int_equal(read_response(c).status, 200);
    int64_t t0 = now_ms();
    assert_true(wait_closed(c, 3000));
    int64_t took = now_ms() - t0;
    assert_true(took >= 250);
    assert_int_equal(s.wait_closes(WEIR_CLOSE_IDLE_TIMEOUT, 1), 1);
}

void test_timeouts_activity_keeps_connection(void **) {
    Server s;
    assert_int_equal(s.start(base()), 0);
    Client c = connect_to(s.port);
    // 8 requests 100 ms apart: 800 ms in all, well past the 300 ms idle timeout
    for (int i = 0; i < 8; i++) {
        assert_true(send_all(c, get("/")));
        assert_int_equal(read_response(c).status, 200);
        sleep_ms(100);
    }
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_IDLE_TIMEOUT], 0);
}

void test_timeouts_write(void **) {
    weir_config cfg = base();
    cfg.max_output_bytes = 64u << 20;
    Server s;
    assert_int_equal(s.start(cfg), 0);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(s.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    Client c(fd);
    assert_true(send_all(c, get("/big")));
    // never read: the server's output stalls, then the write timeout closes it
    assert_int_equal(s.wait_closes(WEIR_CLOSE_WRITE_TIMEOUT, 1, 5000), 1);
}

void test_timeouts_output_limit(void **) {
    weir_config cfg = base();
    cfg.max_output_bytes = 64 * 1024;
    Server s;
    assert_int_equal(s.start(cfg), 0);
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(s.port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0);
    Client c(fd);
    // One answer above the limit is refused up front (-EMSGSIZE,
    // test_exchange_handles.cc); answers each under it, pipelined to a
    // client that never reads, pile up past it.
    std::string all;
    for (int i = 0; i < 300; i++)
        all += get("/60k");
    assert_true(send_all(c, all));
    assert_int_equal(s.wait_closes(WEIR_CLOSE_OUTPUT_LIMIT, 1, 5000), 1);
}

void test_timeouts_peer_gone_mid_answer_no_sigpipe(void **) {
    // The client asks for 16 MiB and leaves at once: the server's writes hit
    // a closed socket. SIGPIPE keeps its default action here, so a write that
    // could raise it would kill this test process.
    weir_config cfg = base();
    cfg.max_output_bytes = 64u << 20; // not the output limit: the writes must happen
    // Nor the write timeout: under TSan one pass that copies the other
    // clients' 16 MiB answers outlasts 300 ms, and the timer would fire
    // before the pass's events show the peer gone.
    cfg.write_timeout_ms = bound_ms(300);
    Server s;
    assert_int_equal(s.start(cfg), 0);
    uint64_t before = s.metrics().closes[WEIR_CLOSE_PEER] + s.metrics().closes[WEIR_CLOSE_IO_ERROR];
    for (int i = 0; i < 3; i++) {
        Client c = connect_to(s.port);
        assert_true(send_all(c, get("/big")));
        sleep_ms(20);
    }
    int64_t until = now_ms() + bound_ms(3000);
    while (s.metrics().closes[WEIR_CLOSE_PEER] + s.metrics().closes[WEIR_CLOSE_IO_ERROR] < before + 3 &&
           now_ms() < until)
        sleep_ms(5);
    weir_metrics m = s.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_PEER] + m.closes[WEIR_CLOSE_IO_ERROR], before + 3);
}

void test_timeouts_max_connections(void **) {
    weir_config cfg = base();
    cfg.max_connections = 2;
    cfg.idle_timeout_ms = 10000;
    cfg.header_timeout_ms = 10000;
    Server s;
    assert_int_equal(s.start(cfg), 0);
    Client a = connect_to(s.port), b = connect_to(s.port);
    for (Client *k : {&a, &b}) {
        assert_true(send_all(*k, get("/")));
        assert_int_equal(read_response(*k).status, 200);
    }
    for (int i = 0; i < 3; i++) {
        Client over = connect_to(s.port);
        assert_true(over.fd >= 0);
        assert_true(wait_closed(over, 3000)); // accepted, then closed
    }
    assert_int_equal(s.wait_closes(WEIR_CLOSE_MAX_CONNECTIONS, 3), 3);
    weir_metrics m0 = s.metrics();
    assert_int_equal(m0.connections_open, 2);
    // not spinning: no pass runs while nothing happens
    sleep_ms(300);
    weir_metrics m1 = s.metrics();
    assert_true(m1.loop_passes - m0.loop_passes < 10);
    assert_int_equal(m1.accept_owed, m0.accept_owed);
    // the two held connections still work
    assert_true(send_all(a, get("/")));
    assert_int_equal(read_response(a).status, 200);
}

void test_timeouts_max_connections_across_workers(void **) {
    weir_config cfg = base();
    cfg.workers = 2;
    cfg.max_connections = 1;
    cfg.idle_timeout_ms = 10000;
    Server s;
    assert_int_equal(s.start(cfg), 0);
    // Whichever listener the kernel picks, the first two connections fit (a
    // full worker hands its new one to the sibling); the rest are refused.
    std::vector<Client> held;
    int served = 0, refused = 0;
    for (int i = 0; i < 6; i++) {
        Client k = connect_to(s.port);
        assert_true(send_all(k, get("/")));
        Response r = read_response(k, 3000);
        if (r.status == 200) {
            served++;
            held.push_back(std::move(k));
        } else {
            refused++;
        }
    }
    assert_int_equal(served, 2);
    assert_int_equal(refused, 4);
    weir_metrics m = s.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_MAX_CONNECTIONS], 4);
    assert_int_equal(m.accepted, 6);
}

void test_timeouts_handoff_to_sibling_serves(void **) {
    // Two workers with room for one connection each. Pairs of connections
    // until the kernel puts both of a pair on one listener (a fair coin each
    // time): the full worker hands the second to its sibling, which serves it.
    weir_config cfg = base();
    cfg.workers = 2;
    cfg.max_connections = 1;
    cfg.idle_timeout_ms = 10000;
    Server s;
    assert_int_equal(s.start(cfg), 0);
    for (int round = 0; round < 30 && s.metrics().handoffs == 0; round++) {
        Client a = connect_to(s.port), b = connect_to(s.port);
        for (Client *k : {&a, &b}) {
            assert_true(send_all(*k, get("/")));
            assert_int_equal(read_response(*k, 3000).status, 200);
        }
        a.close();
        b.close();
        int64_t until = now_ms() + 2000;
        while (s.metrics().connections_open != 0 && now_ms() < until)
            sleep_ms(2);
    }
    weir_metrics m = s.metrics();
    assert_true(m.handoffs >= 1);
    assert_int_equal(m.closes[WEIR_CLOSE_MAX_CONNECTIONS], 0);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeouts_header),
        cmocka_unit_test(test_timeouts_idle),
        cmocka_unit_test(test_timeouts_activity_keeps_connection),
        cmocka_unit_test(test_timeouts_write),
        cmocka_unit_test(test_timeouts_output_limit),
        cmocka_unit_test(test_timeouts_peer_gone_mid_answer_no_sigpipe),
        cmocka_unit_test(test_timeouts_max_connections),
        cmocka_unit_test(test_timeouts_max_connections_across_workers),
        cmocka_unit_test(test_timeouts_handoff_to_sibling_serves),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
