// weir_engine_transplant (DESIGN.md §6, docs/transplant.md): live
// connections move from engine A (the test backend) to engine B (each
// backend in turn), each at its request boundary, in order, and the ledger
// balances: A.detached == A.adopted + A.refused, in_flight 0 at quiescence,
// in every case.
//   - keep-alive clients, idle at the call, are answered by B from then on;
//     a client's pipelined requests sent right after the call are answered
//     in order, each once (those A parsed before its hold by A); a client
//     that connects to A after the call ends on B too; A counts no close.
//   - pipelined carryover: a GET, a POST of 12,000 bytes and a GET sent in
//     one write while the connection is held (its deferred answer out): once
//     answered it moves, and B echoes the body byte for byte, in order.
//   - a deferred answer outstanding at the call: the connection stays on A
//     until it is answered (the answer reaches the client), then moves.
//   - a target over max_connections refuses: it gives the images back, A
//     closes them (a FIN at the boundary, never a reset), counted as
//     WEIR_CLOSE_TRANSPLANT_REFUSED in A's closes and refused in its ledger;
//     B counts no close for them. Mutant arm: a target that closed them
//     itself would show them in B's max_connections closes.
//   - WEIR_TRANSPLANT_END: a connection held for the move (a deferred answer
//     out) is served by A again once the transplant ends, and what A accepts
//     then stays on A; nothing was detached.
//   - API misuse: NULL, A to A, flags, a second transplant, a target that
//     is not running.
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

std::atomic<weir_exchange *> g_deferred{nullptr};

void handler(void *user, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    std::string path = str(r->path);
    if (path == "/defer") {
        weir_defer(ex);
        g_deferred = ex;
        return;
    }
    if (path == "/echo") {
        answer(ex, 200, std::string(r->body.ptr, r->body.len));
        return;
    }
    answer(ex, 200, std::string(static_cast<const char *>(user)) + " " + path);
}

weir_config cfg_for(uint32_t backend, const char *name) {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, const_cast<char *>(name));
    c.backend = backend;
    return c;
}

// Waits for A's ledger to settle; returns it.
weir_metrics settled(Server &a, uint64_t detached) {
    int64_t until = now_ms() + 3000;
    weir_metrics m = a.metrics();
    while ((m.transplant_detached < detached || m.transplant_in_flight != 0) && now_ms() < until) {
        sleep_ms(2);
        m = a.metrics();
    }
    return m;
}

// A client of port whose GET /defer the handler has deferred (g_deferred).
Client deferred_client(uint16_t port) {
    g_deferred = nullptr;
    Client c = connect_to(port);
    assert_true(send_all(c, get("/defer")));
    int64_t until = now_ms() + 3000;
    while (!g_deferred.load() && now_ms() < until)
        sleep_ms(1);
    assert_non_null(g_deferred.load());
    return c;
}

void ledger_balances(const weir_metrics &m) {
    assert_int_equal(m.transplant_detached, m.transplant_adopted + m.transplant_refused + m.transplant_in_flight);
    assert_int_equal(m.transplant_in_flight, 0);
}

// What reaches an idle client within ms: 1 a FIN (EOF), -errno an error (a
// reset), 0 nothing.
int end_of(Client &c, int ms) {
    pollfd p{c.fd, POLLIN, 0};
    if (::poll(&p, 1, ms) <= 0)
        return 0;
    char b[256];
    ssize_t n = ::recv(c.fd, b, sizeof b, 0);
    return n == 0 ? 1 : n < 0 ? -errno : 2; // 2: bytes, which an idle client never gets
}

void keep_alive_moves(uint32_t target) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    assert_int_equal(b.start(cfg_for(target, "B")), 0);
    constexpr int kClients = 20;
    std::vector<Client> cl;
    for (int i = 0; i < kClients; i++) {
        cl.push_back(connect_to(a.port));
        assert_true(send_all(cl[i], get("/one")));
        assert_string_equal(read_response(cl[i]).body.c_str(), "A /one");
    }
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    // Pipelined right after the call, on every client.
    for (int i = 0; i < kClients; i++)
        assert_true(send_all(cl[i], get("/p1") + get("/p2") + get("/p3")));
    for (int i = 0; i < kClients; i++)
        for (const char *p : {"/p1", "/p2", "/p3"}) {
            std::string body = read_response(cl[i]).body;
            assert_true(body == std::string("A ") + p || body == std::string("B ") + p);
        }
    weir_metrics ma = settled(a, kClients);
    assert_int_equal(ma.transplant_detached, kClients);
    assert_int_equal(ma.transplant_adopted, kClients);
    assert_int_equal(ma.transplant_refused, 0);
    ledger_balances(ma);
    for (int i = 0; i < kClients; i++) {
        assert_true(send_all(cl[i], get("/later")));
        assert_string_equal(read_response(cl[i]).body.c_str(), "B /later");
    }
    // A keeps transplanting what it accepts.
    Client late = connect_to(a.port);
    assert_true(send_all(late, get("/new")));
    std::string first = read_response(late).body; // A may parse it before the hold
    assert_true(first == "A /new" || first == "B /new");
    assert_true(send_all(late, get("/new2")));
    assert_string_equal(read_response(late).body.c_str(), "B /new2");
    ma = settled(a, kClients + 1);
    ledger_balances(ma);
    uint64_t closes = 0;
    for (uint64_t n : ma.closes)
        closes += n;
    assert_int_equal(closes, 0); // a move is not a close
    assert_int_equal(ma.connections_open, 0);
    weir_metrics mb = b.metrics();
    assert_int_equal(mb.transplant_received, kClients + 1);
    assert_int_equal(mb.connections_open, kClients + 1);
}

void test_keep_alive_to_epoll(void **) { keep_alive_moves(WEIR_BACKEND_EPOLL); }
void test_keep_alive_to_uring(void **) { keep_alive_moves(WEIR_BACKEND_URING); }

// A request body in the carried-over bytes arrives byte for byte. The
// client's /defer is outstanding at the call, so its connection stays; then
// one write brings a GET, a POST of 12,000 bytes of every byte value and a
// GET, which the held connection must not parse (on io_uring its recv has
// already taken them: they leave in the image; on epoll they wait in the
// socket). The answer lets it reach its boundary and move: B must echo the
// body exactly and answer in order.
void carryover_identical(uint32_t target) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    assert_int_equal(b.start(cfg_for(target, "B")), 0);
    std::string body(12000, '\0');
    for (size_t i = 0; i < body.size(); i++)
        body[i] = static_cast<char>((i * 131 + i / 256) & 0xff);
    Client c = deferred_client(a.port);
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    sleep_ms(30); // A has acted on the call: the connection is held
    std::string post = "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) +
                       "\r\n\r\n" + body;
    assert_true(send_all(c, get("/one") + post + get("/two")));
    sleep_ms(30);
    assert_int_equal(a.metrics().transplant_detached, 0);
    std::thread t([] { answer(g_deferred.load(), 200, "A deferred"); });
    t.join();
    assert_string_equal(read_response(c).body.c_str(), "A deferred");
    assert_string_equal(read_response(c).body.c_str(), "B /one");
    Response echo = read_response(c);
    assert_int_equal(echo.status, 200);
    assert_int_equal(echo.body.size(), body.size());
    assert_true(echo.body == body);
    assert_string_equal(read_response(c).body.c_str(), "B /two");
    weir_metrics ma = settled(a, 1);
    assert_int_equal(ma.transplant_detached, 1);
    ledger_balances(ma);
    assert_int_equal(b.metrics().connections_open, 1);
}

void test_carryover_identical_to_epoll(void **) { carryover_identical(WEIR_BACKEND_EPOLL); }
void test_carryover_identical_to_uring(void **) { carryover_identical(WEIR_BACKEND_URING); }

void test_deferred_answer_moves_after(void **) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    assert_int_equal(b.start(cfg_for(test_backend() == WEIR_BACKEND_URING ? WEIR_BACKEND_EPOLL : WEIR_BACKEND_URING,
                                     "B")),
                     0);
    Client c = deferred_client(a.port);
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    sleep_ms(100);
    assert_int_equal(a.metrics().transplant_detached, 0); // its answer is still out: it stays
    std::thread t([] { answer(g_deferred.load(), 200, "A deferred"); });
    t.join();
    assert_string_equal(read_response(c).body.c_str(), "A deferred");
    weir_metrics ma = settled(a, 1);
    assert_int_equal(ma.transplant_detached, 1);
    ledger_balances(ma);
    assert_true(send_all(c, get("/after")));
    assert_string_equal(read_response(c).body.c_str(), "B /after");
}

void test_full_target_refuses(void **) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    weir_config cb = cfg_for(test_backend(), "B");
    cb.max_connections = 1;
    assert_int_equal(b.start(cb), 0);
    constexpr int kClients = 3;
    std::vector<Client> cl;
    for (int i = 0; i < kClients; i++) {
        cl.push_back(connect_to(a.port));
        assert_true(send_all(cl[i], get("/one")));
        assert_int_equal(read_response(cl[i]).status, 200);
    }
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    weir_metrics ma = settled(a, kClients);
    assert_int_equal(ma.transplant_adopted, 1);
    assert_int_equal(ma.transplant_refused, kClients - 1);
    ledger_balances(ma);
    assert_int_equal(a.wait_closes(WEIR_CLOSE_TRANSPLANT_REFUSED, kClients - 1), kClients - 1);
    int fins = 0, quiet = 0;
    for (int i = 0; i < kClients; i++) {
        int e = end_of(cl[i], 300);
        assert_true(e == 0 || e == 1); // never a reset (nor bytes)
        fins += e == 1;
        quiet += e == 0;
    }
    assert_int_equal(fins, kClients - 1);
    assert_int_equal(quiet, 1);
    int served = 0;
    for (int i = 0; i < kClients; i++) {
        if (!send_all(cl[i], get("/two")))
            continue;
        Response r = read_response(cl[i], 2000);
        if (r.status == 200) {
            assert_string_equal(r.body.c_str(), "B /two");
            served++;
        }
    }
    assert_int_equal(served, 1);
    weir_metrics mb = b.metrics();
    assert_int_equal(mb.closes[WEIR_CLOSE_MAX_CONNECTIONS], 0); // given back, not closed by B
    assert_int_equal(mb.transplant_received, 1);
    ma = a.metrics();
    assert_int_equal(ma.closes[WEIR_CLOSE_TRANSPLANT_REFUSED], kClients - 1);
    assert_int_equal(ma.connections_open, 0);
}

void test_end_serves_held_connections_here(void **) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    assert_int_equal(b.start(cfg_for(test_backend(), "B")), 0);
    Client c = deferred_client(a.port);
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    sleep_ms(50); // A's worker holds the connection for the move
    assert_int_equal(weir_engine_transplant(a.e, nullptr, WEIR_TRANSPLANT_END), 0);
    assert_int_equal(weir_engine_transplant(a.e, nullptr, WEIR_TRANSPLANT_END), 0); // nothing left to end
    std::thread t([] { answer(g_deferred.load(), 200, "A deferred"); });
    t.join();
    assert_string_equal(read_response(c).body.c_str(), "A deferred");
    // Pipelined: a held connection would leave before the second.
    assert_true(send_all(c, get("/after") + get("/after2")));
    assert_string_equal(read_response(c).body.c_str(), "A /after");
    assert_string_equal(read_response(c).body.c_str(), "A /after2");
    Client late = connect_to(a.port);
    assert_true(send_all(late, get("/new")));
    assert_string_equal(read_response(late).body.c_str(), "A /new");
    assert_true(send_all(late, get("/new2")));
    assert_string_equal(read_response(late).body.c_str(), "A /new2");
    weir_metrics ma = a.metrics();
    assert_int_equal(ma.transplant_detached, 0);
    ledger_balances(ma);
    assert_int_equal(ma.connections_open, 2);
    assert_int_equal(b.metrics().connections_open, 0);
    // A new transplant after the end works as the first did.
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    assert_true(send_all(late, get("/moved")));
    Response moved = read_response(late);
    assert_true(moved.body.substr(1) == " /moved" && (moved.body[0] == 'A' || moved.body[0] == 'B'));
    ma = settled(a, 2);
    assert_int_equal(ma.transplant_detached, 2);
    ledger_balances(ma);
}

void test_transplant_misuse(void **) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    weir_engine *idle = nullptr;
    weir_config ci = cfg_for(test_backend(), "I");
    assert_int_equal(weir_engine_create(&ci, &idle), 0);
    assert_int_equal(weir_engine_transplant(nullptr, a.e, 0), -EINVAL);
    assert_int_equal(weir_engine_transplant(a.e, nullptr, 0), -EINVAL);
    assert_int_equal(weir_engine_transplant(a.e, a.e, 0), -EINVAL);
    assert_int_equal(weir_engine_transplant(a.e, idle, 0), WEIR_E_STATE); // not listening
    assert_int_equal(weir_engine_listen(idle), 0);
    assert_int_equal(weir_engine_transplant(a.e, idle, 0), WEIR_E_STATE); // inline, not started
    weir_engine_destroy(idle);
    assert_int_equal(b.start(cfg_for(test_backend(), "B")), 0);
    assert_int_equal(weir_engine_transplant(a.e, b.e, 2), -EINVAL); // no such flag
    assert_int_equal(weir_engine_transplant(a.e, a.e, WEIR_TRANSPLANT_END), -EINVAL);
    assert_int_equal(weir_engine_transplant(nullptr, nullptr, WEIR_TRANSPLANT_END), -EINVAL);
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0);
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), 0); // again to the same target: nothing new
    Server c;
    assert_int_equal(c.start(cfg_for(test_backend(), "C")), 0);
    assert_int_equal(weir_engine_transplant(a.e, c.e, 0), WEIR_E_STATE); // already transplanting elsewhere
    assert_int_equal(b.shutdown(0), 0);
    assert_int_equal(weir_engine_transplant(b.e, a.e, 0), WEIR_E_SHUTDOWN);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep_alive_to_epoll),
        cmocka_unit_test(test_keep_alive_to_uring),
        cmocka_unit_test(test_carryover_identical_to_epoll),
        cmocka_unit_test(test_carryover_identical_to_uring),
        cmocka_unit_test(test_deferred_answer_moves_after),
        cmocka_unit_test(test_full_target_refuses),
        cmocka_unit_test(test_end_serves_held_connections_here),
        cmocka_unit_test(test_transplant_misuse),
    };
    return cmocka_run_group_tests_name("transplant", tests, nullptr, nullptr);
}
