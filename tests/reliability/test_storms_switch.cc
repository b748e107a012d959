// The switch storm (docs/reliability.md "Races", docs/transplant.md): A (the
// test backend) and B (the other one, where the kernel runs io_uring) on one
// port, two workers each, a third of the requests deferred to the pool;
// weir_engine_switch back and forth, A to B to A, with gaps of 0-40 ms (so
// most switches come back inside the outgoing linger: a flap) for as long as
// the load lasts (WEIR_STORM_MS, 2 s by default), under 12 keep-alive
// pipelining clients and 4 churning ones. Then the loser's linger runs out
// and the load stops.
//   Every switch returns 0; no request is lost, cut, answered twice or out of
//   order (connections move at request boundaries, carrying the pipelined
//   bytes they read); every connection either engine accepted is served
//   (one the kernel completed in a closing listener's last microseconds is
//   reset without being accepted: counted, never accepted); both ledgers
//   balance (detached == adopted, nothing refused, nothing in flight, and
//   what each received is what the other's ledger says it adopted); across
//   both engines accepted == the sum of closes, with no close but the
//   peer's and Connection: close; no descriptor left over.
#include <random>
#include <thread>

#include "integration/switch_common.h"
#include "reliability/storm_common.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace storm;

namespace {

int g_third = 3;

bool drained(Server &s, int ms = 3000) {
    int64_t until = now_ms() + bound_ms(ms);
    while (s.metrics().connections_open != 0 && now_ms() < until)
        sleep_ms(2);
    return s.metrics().connections_open == 0;
}

void print_ledger(const char *who, const weir_metrics &m) {
    std::printf("%s ledger: detached %llu, adopted %llu, refused %llu, in flight %llu, received %llu\n", who,
                (unsigned long long)m.transplant_detached, (unsigned long long)m.transplant_adopted,
                (unsigned long long)m.transplant_refused, (unsigned long long)m.transplant_in_flight,
                (unsigned long long)m.transplant_received);
}

void test_storm_switch_back_and_forth(void **) {
    Pool &pool = Pool::get();
    pool.reset_counts();
    int fds0 = open_fds();
    auto *a = new Server, *b = new Server; // leaked, not destroyed, if an assertion fails
    weir_config ca = config(2, WEIR_MODE_INLINE, handler, &g_third);
    ca.linger_ms = 150;
    assert_int_equal(a->start(ca), 0);
    weir_config cb = ca;
    cb.backend = switchtest::other_backend();
    cb.port = a->port;
    assert_int_equal(b->start(cb), 0);
    assert_int_equal(weir_engine_pause(b->e), 0); // the standby
    auto *t = new Tally;
    auto *cl = new Clients(a->port, 12, 4, *t);

    std::minstd_rand rng(3);
    int switches = 0, bad = 0, first_bad = 0;
    weir_engine *from = a->e, *to = b->e;
    int64_t until = now_ms() + storm_ms();
    while (now_ms() < until) {
        int rc = weir_engine_switch(from, to);
        switches++;
        if (rc != 0 && bad++ == 0)
            first_bad = rc;
        std::swap(from, to);
        sleep_ms(static_cast<int>(rng() % 41));
    }
    // `to` is the loser: its linger runs out (its listeners close) and what
    // it still held has moved.
    int paused = weir_engine_pause(to);
    sleep_ms(100); // clients served by the winner alone
    cl->join();
    Server *winner = from == a->e ? a : b, *loser = from == a->e ? b : a;
    bool settled = drained(*loser) && drained(*winner) && pool.wait_idle(3000);
    weir_metrics ma = switchtest::settle(*a), mb = switchtest::settle(*b);
    std::printf("switch storm [%s -> %s]: %d switches; %s\n", test_backend_name(),
                cb.backend == WEIR_BACKEND_URING ? "uring" : "epoll", switches, t->summary().c_str());
    print_closes("A", ma);
    print_closes("B", mb);
    print_ledger("A", ma);
    print_ledger("B", mb);
    std::printf("pool: answered %llu, gone %llu, failed %llu\n", (unsigned long long)pool.answered.load(),
                (unsigned long long)pool.gone.load(), (unsigned long long)pool.failed.load());
    assert_int_equal(bad, 0);
    (void)first_bad;
    assert_true(switches >= 20);
    assert_int_equal(paused, 0);
    assert_true(settled);
    assert_int_equal(t->wrong, 0);
    assert_int_equal(t->timeouts, 0);
    assert_int_equal(t->cut, 0);
    assert_int_equal(ma.accepted + mb.accepted, t->conns - t->never_served);
    assert_int_equal(ma.requests + mb.requests, t->answered);
    assert_int_equal(ma.responses + mb.responses, t->answered);
    assert_int_equal(pool.gone + pool.failed, 0);
    assert_true(ma.transplant_detached > 0 && mb.transplant_detached > 0); // connections went both ways
    for (const weir_metrics *m : {&ma, &mb}) {
        assert_int_equal(m->transplant_in_flight, 0);
        assert_int_equal(m->transplant_refused, 0);
        assert_int_equal(m->transplant_detached, m->transplant_adopted);
    }
    assert_int_equal(ma.transplant_received, mb.transplant_adopted);
    assert_int_equal(mb.transplant_received, ma.transplant_adopted);
    assert_int_equal(weir_engine_shutdown(loser->e, 2000LL * 1000 * 1000), 0);
    assert_int_equal(weir_engine_shutdown(winner->e, 2000LL * 1000 * 1000), 0);
    ma = a->metrics();
    mb = b->metrics();
    assert_int_equal(sum_closes(ma) + sum_closes(mb), ma.accepted + mb.accepted);
    assert_int_equal(ma.closes[WEIR_CLOSE_PEER] + mb.closes[WEIR_CLOSE_PEER], t->own_closes);
    assert_int_equal(ma.closes[WEIR_CLOSE_NOT_KEEP_ALIVE] + mb.closes[WEIR_CLOSE_NOT_KEEP_ALIVE], t->fins);
    assert_int_equal(other_closes(ma, {WEIR_CLOSE_PEER, WEIR_CLOSE_NOT_KEEP_ALIVE}), 0);
    assert_int_equal(other_closes(mb, {WEIR_CLOSE_PEER, WEIR_CLOSE_NOT_KEEP_ALIVE}), 0);
    delete loser;
    delete winner;
    assert_int_equal(fds_settle(fds0), fds0);
    delete cl;
    delete t;
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_storm_switch_back_and_forth),
    };
    return cmocka_run_group_tests_name("storms_switch", tests, nullptr, nullptr);
}
