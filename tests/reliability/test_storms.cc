// Storms (docs/reliability.md "Races"), on each backend, each a few seconds
// (WEIR_STORM_MS, 2 s by default, is how long the load lasts), each ended by
// the conservation checks of storm_common.h: every request answered exactly
// once and in order or its connection closed under it with a counted reason,
// accepted == the sum of closes, every parsed request answered and every
// answer written read, and no descriptor left over. The switch storm is in
// test_storms_switch.cc.
//   deferred: every request deferred by its inline handler and answered by
//     one of eight pool threads (weir_respond or weir_respond_many, in any
//     order), under 12 keep-alive pipelining clients and 4 churning ones:
//     nothing lost, nothing cut, nothing reset.
//   pause/resume: one control thread calls begin_pause, pause and resume in
//     random, often back-to-back, sequences while a second resumes at random
//     (releasing a waiting pause with -ECANCELED), under the same clients, a
//     third of the requests deferred: no accepted connection goes unserved
//     (a connect the kernel completed in a closing listener's last
//     microseconds, docs/pause.md "What it still cannot save", is reset
//     without being accepted: counted, never accepted), no keep-alive
//     connection is cut, and the pause ledger balances (every linger ended
//     by a close or an abort, every close reopened by the final resume).
//   shutdown mid-load: the same, and weir_engine_shutdown in the middle of it
//     while the control threads still command: the shutdown returns 0, what
//     was accepted is answered or closed for the shutdown, nothing else, and
//     the listeners close as it begins (at most 64 connections accepted while
//     it runs; its mutant, the listener drained before its close, accepted
//     and reset hundreds to thousands on io_uring).
// The rules they stand on have their own tests with their mutants
// (test_poster_destroy, test_engine_deferred, test_pause_*); a storm's job is
// to find the interleavings those do not script, and TSAN=1 runs them.
#include <cerrno>
#include <random>
#include <thread>
#include <vector>

#include "loop/engine.h"
#include "reliability/storm_common.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace storm;

namespace {

int g_all = 1;   // every request deferred
int g_third = 3; // one in three

weir::Engine *internal(weir_engine *e) { return reinterpret_cast<weir::Engine *>(e); }

bool all_listeners(weir_engine *e, weir::ListenerState st, int ms) {
    int64_t until = now_ms() + bound_ms(ms);
    for (;;) {
        bool all = true;
        for (uint32_t i = 0; i < internal(e)->worker_count(); i++)
            all = all && internal(e)->worker(i)->listener_state() == st;
        if (all || now_ms() >= until)
            return all;
        sleep_ms(2);
    }
}

// Waits (bounded) until the server holds no connection: the clients' own
// closes have all been seen, so a shutdown after it closes nothing.
bool drained(Server &s, int ms = 3000) {
    int64_t until = now_ms() + bound_ms(ms);
    while (s.metrics().connections_open != 0 && now_ms() < until)
        sleep_ms(2);
    return s.metrics().connections_open == 0;
}

// The pause commands, from two threads, until `stop`. Any return code the
// engine's state allows is counted in ok; anything else in bad (and the first
// one kept).
struct Control {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> ok{0}, bad{0}, cancelled{0}, shut{0};
    std::atomic<int> first_bad{0};
    std::vector<std::thread> threads;

    void start(weir_engine *e) {
        threads.emplace_back([this, e] { commander(e); });
        threads.emplace_back([this, e] { resumer(e); });
    }
    void join() {
        stop = true;
        for (auto &t : threads)
            t.join();
        threads.clear();
    }
    void note(int rc, bool may_cancel) {
        if (rc == 0)
            ok++;
        else if (rc == -ECANCELED && may_cancel)
            cancelled++;
        else if (rc == WEIR_E_SHUTDOWN)
            shut++;
        else if (bad++ == 0)
            first_bad = rc;
    }
    void commander(weir_engine *e) {
        std::minstd_rand rng(7);
        while (!stop.load()) {
            switch (rng() % 8) {
            case 0:
            case 1:
            case 2:
                note(weir_engine_begin_pause(e), false);
                break;
            case 3:
            case 4:
                note(weir_engine_pause(e), true); // waits for the linger, or a resume
                break;
            default:
                note(weir_engine_resume(e), false);
            }
            if (rng() % 3) // else back-to-back
                sleep_ms(static_cast<int>(rng() % 40));
        }
    }
    void resumer(weir_engine *e) {
        std::minstd_rand rng(11);
        while (!stop.load()) {
            sleep_ms(static_cast<int>(10 + rng() % 120));
            note(weir_engine_resume(e), false);
        }
    }
};

void test_storm_deferred_answers_from_many_threads(void **) {
    Pool &pool = Pool::get();
    pool.reset_counts();
    int fds0 = open_fds();
    auto *s = new Server; // leaked, not destroyed, if an assertion fails
    assert_int_equal(s->start(config(2, WEIR_MODE_INLINE, handler, &g_all)), 0);
    auto *t = new Tally;
    auto *cl = new Clients(s->port, 12, 4, *t);
    sleep_ms(storm_ms());
    cl->join();
    bool settled = drained(*s) && pool.wait_idle(3000);
    int rc = weir_engine_shutdown(s->e, 2000LL * 1000 * 1000);
    weir_metrics m = s->metrics();
    std::printf("deferred storm [%s]: %s\n", test_backend_name(), t->summary().c_str());
    print_closes("server", m);
    std::printf("pool: answered %llu, gone %llu, failed %llu\n", (unsigned long long)pool.answered.load(),
                (unsigned long long)pool.gone.load(), (unsigned long long)pool.failed.load());
    assert_true(settled);
    assert_int_equal(rc, 0);
    assert_true(t->sent > 1000);
    assert_int_equal(t->wrong, 0);
    assert_int_equal(t->timeouts, 0);
    assert_int_equal(t->never_served, 0);
    assert_int_equal(t->cut, 0);
    assert_int_equal(t->resets, 0);
    assert_int_equal(t->answered, t->sent);
    assert_int_equal(m.requests, t->sent);
    assert_int_equal(m.responses, t->sent);
    assert_int_equal(pool.answered, t->sent); // every one deferred, answered once
    assert_int_equal(pool.gone, 0);
    assert_int_equal(pool.failed, 0);
    assert_int_equal(m.accepted, t->conns);
    assert_int_equal(sum_closes(m), m.accepted);
    assert_int_equal(m.closes[WEIR_CLOSE_PEER], t->own_closes);
    assert_int_equal(m.closes[WEIR_CLOSE_NOT_KEEP_ALIVE], t->fins);
    assert_int_equal(other_closes(m, {WEIR_CLOSE_PEER, WEIR_CLOSE_NOT_KEEP_ALIVE}), 0);
    assert_int_equal(m.connections_open, 0);
    delete s;
    assert_int_equal(fds_settle(fds0), fds0);
    delete cl;
    delete t;
}

void test_storm_pause_resume(void **) {
    Pool &pool = Pool::get();
    pool.reset_counts();
    int fds0 = open_fds();
    weir_config c = config(2, WEIR_MODE_INLINE, handler, &g_third);
    c.linger_ms = 40; // many lingers, each ended by a close or a resume
    auto *s = new Server;
    assert_int_equal(s->start(c), 0);
    auto *t = new Tally;
    auto *cl = new Clients(s->port, 8, 8, *t);
    auto *ctl = new Control;
    ctl->start(s->e);
    sleep_ms(storm_ms());
    ctl->join();
    int resumed = weir_engine_resume(s->e);
    bool active = all_listeners(s->e, weir::ListenerState::Active, 2000);
    sleep_ms(200); // served again, by listeners back from every state
    cl->join();
    bool settled = drained(*s) && pool.wait_idle(3000);
    weir_metrics m = s->metrics();
    std::printf("pause storm [%s]: %s\n", test_backend_name(), t->summary().c_str());
    std::printf("commands: ok %llu, cancelled %llu, bad %llu (first %d); lingers %llu, closes %llu, aborts %llu, "
                "clears %llu, restores %llu, reopens %llu, reopen errors %llu, drained %llu\n",
                (unsigned long long)ctl->ok, (unsigned long long)ctl->cancelled, (unsigned long long)ctl->bad,
                ctl->first_bad.load(), (unsigned long long)m.pause_lingers, (unsigned long long)m.pause_closes,
                (unsigned long long)m.pause_aborts, (unsigned long long)m.pause_defer_clears,
                (unsigned long long)m.pause_defer_restores, (unsigned long long)m.pause_reopens,
                (unsigned long long)m.pause_reopen_errors, (unsigned long long)m.pause_drain_accepted);
    print_closes("server", m);
    assert_int_equal(resumed, 0);
    assert_true(active);
    assert_true(settled);
    assert_int_equal(ctl->bad, 0);
    assert_int_equal(ctl->shut, 0);
    assert_true(m.pause_closes > 0 && m.pause_aborts > 0); // the storm went through both ends of a linger
    // The pause ledger, now that every listener is active again.
    assert_int_equal(m.pause_lingers, m.pause_closes + m.pause_aborts);
    assert_int_equal(m.pause_defer_clears, m.pause_lingers);
    assert_int_equal(m.pause_defer_restores, m.pause_aborts);
    assert_int_equal(m.pause_reopens, m.pause_closes);
    assert_int_equal(m.pause_reopen_errors, 0);
    assert_int_equal(m.pause_setsockopt_errors, 0);
    // The clients: nothing wrong, nothing cut, and what was never served was
    // never accepted either (the kernel's close race), so every connection
    // the server accepted was served.
    assert_int_equal(t->wrong, 0);
    assert_int_equal(t->timeouts, 0);
    assert_int_equal(t->cut, 0);
    assert_int_equal(m.accepted, t->conns - t->never_served);
    assert_int_equal(m.requests, t->answered);
    assert_int_equal(m.responses, t->answered);
    assert_int_equal(pool.gone + pool.failed, 0);
    assert_int_equal(sum_closes(m), m.accepted);
    assert_int_equal(m.closes[WEIR_CLOSE_PEER], t->own_closes);
    assert_int_equal(m.closes[WEIR_CLOSE_NOT_KEEP_ALIVE], t->fins);
    assert_int_equal(other_closes(m, {WEIR_CLOSE_PEER, WEIR_CLOSE_NOT_KEEP_ALIVE}), 0);
    assert_int_equal(weir_engine_shutdown(s->e, 2000LL * 1000 * 1000), 0);
    delete s;
    assert_int_equal(fds_settle(fds0), fds0);
    delete ctl;
    delete cl;
    delete t;
}

void test_storm_shutdown_mid_load(void **) {
    Pool &pool = Pool::get();
    pool.reset_counts();
    int fds0 = open_fds();
    weir_config c = config(2, WEIR_MODE_INLINE, handler, &g_third);
    c.linger_ms = 40;
    auto *s = new Server;
    assert_int_equal(s->start(c), 0);
    auto *t = new Tally;
    auto *cl = new Clients(s->port, 8, 8, *t);
    auto *ctl = new Control;
    ctl->start(s->e);
    sleep_ms(storm_ms() / 2);
    // In the middle of the load, with the commands still coming: they meet
    // the shutdown (WEIR_E_SHUTDOWN), a waiting pause is released.
    uint64_t accepted_before = s->metrics().accepted;
    int64_t t0 = now_ms();
    int rc = weir_engine_shutdown(s->e, 3000LL * 1000 * 1000);
    int64_t shutdown_ms = now_ms() - t0;
    sleep_ms(100);
    ctl->join();
    cl->join();
    bool idle = pool.wait_idle(3000);
    weir_metrics m = s->metrics();
    std::printf("shutdown storm [%s]: %s\n", test_backend_name(), t->summary().c_str());
    std::printf("commands: ok %llu, cancelled %llu, after the shutdown %llu, bad %llu (first %d)\n",
                (unsigned long long)ctl->ok, (unsigned long long)ctl->cancelled, (unsigned long long)ctl->shut,
                (unsigned long long)ctl->bad, ctl->first_bad.load());
    std::printf("pool: answered %llu, gone %llu, failed %llu\n", (unsigned long long)pool.answered.load(),
                (unsigned long long)pool.gone.load(), (unsigned long long)pool.failed.load());
    print_closes("server", m);
    uint64_t accepted_during = m.accepted - accepted_before;
    std::printf("shutdown: %lld ms, %llu connections accepted while it ran\n", (long long)shutdown_ms,
                (unsigned long long)accepted_during);
    assert_int_equal(rc, 0); // the work in flight ended inside the grace
    // The listeners close as the shutdown begins: the churn's connects are
    // refused from then on, not accepted only to be closed for as long as
    // they come (a drain of the listener did that: hundreds to thousands on
    // io_uring). What a worker admitted before it acted, and what the
    // multishot accept had taken, is all it may accept.
    assert_true(accepted_during <= 64);
    assert_true(idle);
    assert_int_equal(ctl->bad, 0);
    assert_true(ctl->shut > 0); // the commands did meet the shutdown
    assert_int_equal(t->wrong, 0);
    assert_int_equal(t->timeouts, 0);
    // Every request parsed was answered, every answer written was read; what
    // was cut was never parsed, on a connection closed for the shutdown.
    assert_int_equal(m.requests, m.responses);
    assert_int_equal(t->answered, m.responses);
    assert_true(t->cut <= m.closes[WEIR_CLOSE_SHUTDOWN] * 8);
    assert_true(t->cut_conns <= m.closes[WEIR_CLOSE_SHUTDOWN]);
    assert_int_equal(pool.gone + pool.failed, 0);
    assert_int_equal(sum_closes(m), m.accepted);
    assert_int_equal(other_closes(m, {WEIR_CLOSE_PEER, WEIR_CLOSE_NOT_KEEP_ALIVE, WEIR_CLOSE_SHUTDOWN}), 0);
    assert_int_equal(m.connections_open, 0);
    delete s;
    assert_int_equal(fds_settle(fds0), fds0);
    delete ctl;
    delete cl;
    delete t;
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_storm_deferred_answers_from_many_threads),
        cmocka_unit_test(test_storm_pause_resume),
        cmocka_unit_test(test_storm_shutdown_mid_load),
    };
    return cmocka_run_group_tests_name("storms", tests, nullptr, nullptr);
}
