// weir_engine_switch (DESIGN.md §6, docs/transplant.md): engine B takes over
// from engine A on one port (A on the test backend, B on the other one where
// io_uring runs, else the same), with keep-alive clients sending throughout,
// for each kind of host: inline handlers answering at once, inline handlers
// that defer and answer from another thread, driven hosts polling.
//   positive arm: every request is answered; after A's linger every
//     connection is on B (A holds none), new ones reach B, the ledger
//     balances; a connection made during A's linger ends on B; a switch
//     back moves everything to A again; a flap (back inside the linger)
//     keeps A's listener (a resume of the lingering socket, not a reopen).
//   metrics during the linger: reads of both engines' metrics while a
//     weir_engine_pause waits out the linger never take a quarter of it.
//   aborted switch: a switch whose transplant fails after B was resumed
//     pauses B again and sends what B took back: no answer comes from B,
//     B ends holding nothing.
//   negative arm (resume B and pause A, no transplant): A's keep-alive
//     connections stay stranded on the paused engine, the loss the
//     transplant in the switch prevents.
#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/linger.h"
#include "switch_common.h"

using namespace switchtest;

namespace {

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

// n keep-alive clients of A, each answered once by A.
std::vector<Client> served_by_a(Pair &p, int n) {
    std::vector<Client> cl;
    for (int i = 0; i < n; i++)
        cl.push_back(connect_to(p.a.s.port));
    assert_int_equal(round_trip(cl, "/one", 'A'), n);
    return cl;
}

void balanced(Server &s) {
    weir_metrics m = settle(s);
    assert_int_equal(m.transplant_detached, m.transplant_adopted + m.transplant_refused);
    assert_int_equal(m.transplant_in_flight, 0);
}

void there_and_back(Kind kind) {
    Pair p;
    p.start(kind);
    assert_true(p.ready());
    constexpr int kClients = 16;
    std::vector<Client> cl;
    for (int i = 0; i < kClients; i++)
        cl.push_back(connect_to(p.a.s.port));
    assert_int_equal(round_trip(cl, "/before", 'A'), kClients);

    assert_int_equal(weir_engine_switch(p.a.s.e, p.b.s.e), 0);
    for (int r = 0; r < 5; r++) // during the linger: answered, wherever
        round_trip(cl, "/during", 'B');
    Client early = connect_to(p.a.s.port); // during A's linger: A or B accepts it
    assert_true(send_all(early, get("/x")));
    assert_int_equal(read_response(early).status, 200);
    assert_int_equal(weir_engine_pause(p.a.s.e), 0); // A's linger ends, its listener closes
    cl.push_back(std::move(early));
    assert_int_equal(round_trip(cl, "/after", 'B'), kClients + 1);
    assert_int_equal(p.a.s.metrics().connections_open, 0);
    Client fresh = connect_to(p.a.s.port);
    assert_true(send_all(fresh, get("/fresh")));
    assert_string_equal(read_response(fresh).body.c_str(), "B /fresh");
    balanced(p.a.s);

    // And back.
    assert_int_equal(weir_engine_switch(p.b.s.e, p.a.s.e), 0);
    assert_int_equal(weir_engine_pause(p.b.s.e), 0);
    cl.push_back(std::move(fresh));
    assert_int_equal(round_trip(cl, "/back", 'A'), kClients + 2);
    assert_int_equal(p.b.s.metrics().connections_open, 0);
    balanced(p.b.s);
    balanced(p.a.s);
    weir_metrics ma = p.a.s.metrics(), mb = p.b.s.metrics();
    for (const weir_metrics *m : {&ma, &mb})
        for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
            if (r != WEIR_CLOSE_PEER)
                assert_int_equal(m->closes[r], 0); // nothing closed by either engine
}

void test_switch_there_and_back(void **) { there_and_back(Kind::Sync); }
void test_switch_there_and_back_async(void **) { there_and_back(Kind::Async); }
void test_switch_there_and_back_driven(void **) { there_and_back(Kind::Driven); }

void test_flap_keeps_the_listener(void **) {
    Pair p;
    p.start(Kind::Sync);
    assert_true(p.ready());
    std::vector<Client> cl = served_by_a(p, 4);
    weir_metrics m0 = p.a.s.metrics();
    assert_int_equal(weir_engine_switch(p.a.s.e, p.b.s.e), 0);
    sleep_ms(50); // inside A's 400 ms linger
    assert_int_equal(weir_engine_switch(p.b.s.e, p.a.s.e), 0);
    assert_int_equal(weir_engine_pause(p.b.s.e), 0);
    round_trip(cl, "/two", 'A');
    assert_int_equal(round_trip(cl, "/three", 'A'), 4);
    weir_metrics m1 = p.a.s.metrics();
    // The listener moved to B and back (or stayed, if the switch back came
    // first): no linger, no new socket, nothing closed (docs/transplant.md).
    assert_int_equal(m1.pause_reopens - m0.pause_reopens, 0);
    assert_int_equal(m1.pause_closes - m0.pause_closes, 0);
    assert_int_equal(p.a.s.metrics().pause_reopens + p.b.s.metrics().pause_reopens, 0);
    balanced(p.a.s);
    balanced(p.b.s);
}

void test_metrics_answer_during_the_linger(void **) {
    // celeris once had a Metrics() call blocked for the whole linger. Here a
    // weir_engine_pause waits out A's 400 ms linger on another thread while
    // both engines' metrics are read: no read may take a quarter of it.
    Pair p;
    p.start(Kind::Sync);
    assert_true(p.ready());
    std::vector<Client> cl = served_by_a(p, 4);
    // A switch's listener moves now, with no linger to wait: the old switch
    // (a test hook) gives this test its linger.
    weir::linger_hooks().switch_reopens = true;
    assert_int_equal(weir_engine_switch(p.a.s.e, p.b.s.e), 0);
    weir::linger_hooks().switch_reopens = false;
    int64_t t0 = now_ms(), paused_at = 0;
    std::thread waiter([&] {
        weir_engine_pause(p.a.s.e);
        paused_at = now_ms();
    });
    int64_t worst = 0;
    int reads = 0;
    while (now_ms() - t0 < 300) {
        for (Server *s : {&p.a.s, &p.b.s}) {
            int64_t b = now_ms();
            weir_metrics m = s->metrics();
            (void)m;
            worst = std::max(worst, now_ms() - b);
            reads++;
        }
        sleep_ms(1);
    }
    waiter.join();
    assert_true(paused_at - t0 >= 300); // the reads were made inside the linger
    assert_true(reads >= 100);
    assert_true(worst < 100);
    assert_int_equal(round_trip(cl, "/two", 'B'), 4);
    balanced(p.a.s);
}

void test_without_transplant_clients_are_stranded(void **) {
    // The arm that must lose: the switch's pause and resume alone.
    Pair p;
    p.start(Kind::Sync);
    assert_true(p.ready());
    std::vector<Client> cl = served_by_a(p, 8);
    assert_int_equal(weir_engine_resume(p.b.s.e), 0);
    assert_int_equal(weir_engine_pause(p.a.s.e), 0);
    assert_int_equal(round_trip(cl, "/two", 'A'), 8); // still on the paused engine
    assert_int_equal(p.a.s.metrics().connections_open, 8);
}

void test_aborted_switch_drains_the_standby(void **) {
    Pair p;
    p.start(Kind::Sync);
    assert_true(p.ready());
    Side c; // elsewhere: A is already transplanting there, so A to B fails
    assert_int_equal(c.start("C", Kind::Sync, test_backend(), 0, 400), 0);
    assert_int_equal(weir_engine_transplant(p.a.s.e, c.s.e, 0), 0);
    assert_int_equal(weir_engine_switch(p.a.s.e, p.b.s.e), WEIR_E_STATE);
    // B lingers again: what it accepts meanwhile goes back to A (and from A,
    // which transplants to C, on to C). Nobody is left on B. The clients
    // come once B's worker has acted (its listener reopened): without the
    // undo, about half of them would be B's.
    sleep_ms(100);
    std::vector<Client> cl;
    for (int i = 0; i < 16; i++) {
        cl.push_back(connect_to(p.a.s.port));
        assert_true(send_all(cl.back(), get("/x")));
    }
    for (auto &k : cl) {
        Response r = read_response(k);
        assert_int_equal(r.status, 200);
        assert_true(r.body == "A /x" || r.body == "C /x"); // never B: it holds no client
    }
    assert_int_equal(weir_engine_pause(p.b.s.e), 0); // B's linger ended: its listener is closed again
    for (auto &k : cl) {
        assert_true(send_all(k, get("/y")));
        Response r = read_response(k);
        assert_int_equal(r.status, 200);
        assert_true(r.body == "A /y" || r.body == "C /y");
    }
    assert_int_equal(p.b.s.metrics().connections_open, 0);
    balanced(p.b.s);
    balanced(p.a.s);
}

void test_switch_misuse(void **) {
    Pair p;
    p.start(Kind::Sync);
    assert_true(p.ready());
    Side c;
    assert_int_equal(c.start("C", Kind::Sync, test_backend(), 0, 400), 0);
    assert_int_equal(weir_engine_switch(nullptr, p.b.s.e), -EINVAL);
    assert_int_equal(weir_engine_switch(p.a.s.e, p.a.s.e), -EINVAL);
    assert_int_equal(weir_engine_switch(p.a.s.e, c.s.e), -EINVAL); // another port
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_switch_there_and_back),
        cmocka_unit_test(test_switch_there_and_back_async),
        cmocka_unit_test(test_switch_there_and_back_driven),
        cmocka_unit_test(test_aborted_switch_drains_the_standby),
        cmocka_unit_test(test_flap_keeps_the_listener),
        cmocka_unit_test(test_metrics_answer_during_the_linger),
        cmocka_unit_test(test_without_transplant_clients_are_stranded),
        cmocka_unit_test(test_switch_misuse),
    };
    return cmocka_run_group_tests_name("switch", tests, nullptr, nullptr);
}
