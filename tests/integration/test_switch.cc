// weir_engine_switch (DESIGN.md §6, docs/transplant.md): engine B takes over
// from engine A on one port (A on the test backend, B on the other one where
// io_uring runs, else the same), with keep-alive clients sending throughout.
//   positive arm: every request is answered; after A's linger every
//     connection is on B (A holds none), new ones reach B, the ledger
//     balances; a connection made during A's linger ends on B; a switch
//     back moves everything to A again; a flap (back inside the linger)
//     keeps A's listener (a resume of the lingering socket, not a reopen).
//   negative arm (resume B and pause A, no transplant): A's keep-alive
//     connections stay stranded on the paused engine, the loss the
//     transplant in the switch prevents.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

void handler(void *user, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    answer(ex, 200, std::string(static_cast<const char *>(user)) + " " + str(r->path));
}

uint32_t other_backend() {
    if (test_backend() == WEIR_BACKEND_URING)
        return WEIR_BACKEND_EPOLL;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.backend = WEIR_BACKEND_URING;
    weir_engine *e = nullptr;
    if (weir_engine_create(&c, &e) != 0)
        return WEIR_BACKEND_EPOLL;
    weir_engine_destroy(e);
    return WEIR_BACKEND_URING;
}

struct Pair {
    Server a, b;
    void start() {
        weir_config ca = config(1, WEIR_MODE_INLINE, handler, const_cast<char *>("A"));
        ca.linger_ms = 400;
        assert_int_equal(a.start(ca), 0);
        weir_config cb = config(1, WEIR_MODE_INLINE, handler, const_cast<char *>("B"));
        cb.backend = other_backend();
        cb.port = a.port;
        cb.linger_ms = 400;
        assert_int_equal(b.start(cb), 0);
        assert_int_equal(weir_engine_pause(b.e), 0); // the standby: its listener closed
    }
};

// Sends one request on every client and checks each answer's path; returns
// how many were answered by `who`.
int round_trip(std::vector<Client> &cl, const std::string &path, char who) {
    int n = 0;
    for (auto &c : cl)
        assert_true(send_all(c, get(path)));
    for (auto &c : cl) {
        Response r = read_response(c);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.c_str() + 1, (" " + path).c_str());
        n += r.body[0] == who;
    }
    return n;
}

void balanced(Server &s) {
    int64_t until = now_ms() + 3000;
    weir_metrics m = s.metrics();
    while (m.transplant_in_flight != 0 && now_ms() < until) {
        sleep_ms(2);
        m = s.metrics();
    }
    assert_int_equal(m.transplant_detached, m.transplant_adopted + m.transplant_refused);
    assert_int_equal(m.transplant_in_flight, 0);
}

void test_switch_there_and_back(void **) {
    Pair p;
    p.start();
    constexpr int kClients = 16;
    std::vector<Client> cl;
    for (int i = 0; i < kClients; i++)
        cl.push_back(connect_to(p.a.port));
    assert_int_equal(round_trip(cl, "/before", 'A'), kClients);

    assert_int_equal(weir_engine_switch(p.a.e, p.b.e), 0);
    for (int r = 0; r < 5; r++) // during the linger: answered, wherever
        round_trip(cl, "/during", 'B');
    Client early = connect_to(p.a.port); // during A's linger: A or B accepts it
    assert_true(send_all(early, get("/x")));
    assert_int_equal(read_response(early).status, 200);
    assert_int_equal(weir_engine_pause(p.a.e), 0); // A's linger ends, its listener closes
    cl.push_back(std::move(early));
    assert_int_equal(round_trip(cl, "/after", 'B'), kClients + 1);
    assert_int_equal(p.a.metrics().connections_open, 0);
    Client fresh = connect_to(p.a.port);
    assert_true(send_all(fresh, get("/fresh")));
    assert_string_equal(read_response(fresh).body.c_str(), "B /fresh");
    balanced(p.a);

    // And back.
    assert_int_equal(weir_engine_switch(p.b.e, p.a.e), 0);
    assert_int_equal(weir_engine_pause(p.b.e), 0);
    cl.push_back(std::move(fresh));
    assert_int_equal(round_trip(cl, "/back", 'A'), kClients + 2);
    assert_int_equal(p.b.metrics().connections_open, 0);
    balanced(p.b);
    balanced(p.a);
    weir_metrics ma = p.a.metrics(), mb = p.b.metrics();
    for (const weir_metrics *m : {&ma, &mb})
        for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
            if (r != WEIR_CLOSE_PEER)
                assert_int_equal(m->closes[r], 0); // nothing closed by either engine
}

void test_flap_keeps_the_listener(void **) {
    Pair p;
    p.start();
    std::vector<Client> cl;
    for (int i = 0; i < 4; i++)
        cl.push_back(connect_to(p.a.port));
    round_trip(cl, "/one", 'A');
    weir_metrics m0 = p.a.metrics();
    assert_int_equal(weir_engine_switch(p.a.e, p.b.e), 0);
    sleep_ms(50); // inside A's 400 ms linger
    assert_int_equal(weir_engine_switch(p.b.e, p.a.e), 0);
    assert_int_equal(weir_engine_pause(p.b.e), 0);
    round_trip(cl, "/two", 'A');
    assert_int_equal(round_trip(cl, "/three", 'A'), 4);
    weir_metrics m1 = p.a.metrics();
    assert_int_equal(m1.pause_aborts - m0.pause_aborts, 1);   // the lingering listener resumed
    assert_int_equal(m1.pause_reopens - m0.pause_reopens, 0); // not a new socket
    assert_int_equal(m1.pause_closes - m0.pause_closes, 0);
    balanced(p.a);
    balanced(p.b);
}

void test_without_transplant_clients_are_stranded(void **) {
    // The arm that must lose: the switch's pause and resume alone.
    Pair p;
    p.start();
    std::vector<Client> cl;
    for (int i = 0; i < 8; i++)
        cl.push_back(connect_to(p.a.port));
    round_trip(cl, "/one", 'A');
    assert_int_equal(weir_engine_resume(p.b.e), 0);
    assert_int_equal(weir_engine_pause(p.a.e), 0);
    assert_int_equal(round_trip(cl, "/two", 'A'), 8); // still on the paused engine
    assert_int_equal(p.a.metrics().connections_open, 8);
}

void test_switch_misuse(void **) {
    Pair p;
    p.start();
    Server c;
    assert_int_equal(c.start(config(1, WEIR_MODE_INLINE, handler, const_cast<char *>("C"))), 0);
    assert_int_equal(weir_engine_switch(nullptr, p.b.e), -EINVAL);
    assert_int_equal(weir_engine_switch(p.a.e, p.a.e), -EINVAL);
    assert_int_equal(weir_engine_switch(p.a.e, c.e), -EINVAL); // another port
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_switch_there_and_back),
        cmocka_unit_test(test_flap_keeps_the_listener),
        cmocka_unit_test(test_without_transplant_clients_are_stranded),
        cmocka_unit_test(test_switch_misuse),
    };
    return cmocka_run_group_tests_name("switch", tests, nullptr, nullptr);
}
