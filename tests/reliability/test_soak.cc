// The soak (issue 14, docs/reliability.md "The soak"): the mixed load
// (mixed_load.h) against a pair of engines on one port, A on the test
// backend and B on the other (io_uring when A is epoll and the kernel runs
// it), two inline workers each, while this thread cycles every few seconds:
//   a switch: weir_engine_switch(active, standby), then weir_engine_pause
//     on the outgoing one (at once: its listeners moved to the standby,
//     docs/transplant.md);
//   an aborted pause: weir_engine_begin_pause(active), 200-800 ms (inside
//     the linger), weir_engine_resume(active).
// Alternating, not both backends at once: each backend in turn gets the
// whole machine and the whole mix, and the live keep-alive connections
// move between them at every switch, so transplant's images, refusals and
// ledger are soaked too; two engines side by side would each get half the
// CPU and never move a connection.
// Then, as test_leaks checks one engine: 0 client errors (a connect reset
// by the kernel's listener-close race, close_race.h, is counted apart and
// reported, with the kernel's migrations); over the pair,
// accepted == the sum of closes and every reason what the mix calls for;
// the ledgers balanced; no switch closed or reopened a listener (only B's
// first pause closed its two); the same descriptors, and allocated
// bytes within g_byte_bound, before the engines are made and after both
// are destroyed; RSS sampled every second.
// Knobs: WEIR_SOAK_SECONDS (8 s by default, a cycle a second, and on past
// 8 s until two switches and an aborted pause were made, as a loaded
// machine can be slow to; make soak sets SOAK_MINUTES * 60, a cycle every
// 3 s), WEIR_SOAK_REPORT (a path: the Markdown report, soak_report.h),
// WEIR_SOAK_COMMAND (the command the report says ran it). The binary runs
// on the stock kernel setting net.ipv4.tcp_migrate_req = 0 (set in a
// private network namespace where one can be made, else the host's,
// checked): a switch moves its listeners (docs/transplant.md) and closes
// none, so every reset a client sees is counted as an error. The samples'
// buffer is reserved before the leak baseline (soak::reserve_for): grown
// during the run, a sample a second, it once read as +70 KB "leaked".
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "close_race.h"
#include "leak_check.h"
#include "mixed_load.h"
#include "soak_report.h"
#include "support/net.h"
#include "support/netns.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace testnet;

namespace {

std::string g_netns;
bool g_exact = true;
// As test_leaks' bound (the arenas and cached stacks' TLS glibc keeps), for
// the ~9 threads here.
size_t g_byte_bound = 32 * 1024;

int soak_seconds() {
    const char *v = std::getenv("WEIR_SOAK_SECONDS");
    return v && *v ? std::atoi(v) : 8;
}

const char *backend_name(uint32_t b) { return b == WEIR_BACKEND_URING ? "io_uring" : "epoll"; }

// io_uring when the test runs on epoll and the kernel runs it; else epoll.
uint32_t other_backend() {
    if (test_backend() == WEIR_BACKEND_URING)
        return WEIR_BACKEND_EPOLL;
    weir_config c = config(1, WEIR_MODE_INLINE, mixed::handler, nullptr);
    c.backend = WEIR_BACKEND_URING;
    weir_engine *e = nullptr;
    if (weir_engine_create(&c, &e) != 0)
        return WEIR_BACKEND_EPOLL;
    weir_engine_destroy(e);
    return WEIR_BACKEND_URING;
}

weir_metrics metrics(weir_engine *e) {
    weir_metrics m{};
    m.size = sizeof m;
    weir_engine_metrics(e, &m);
    return m;
}

// An inline engine of the given backend on port (0: a new one), serving.
weir_engine *make(uint32_t backend, uint16_t port) {
    weir_config c = config(2, WEIR_MODE_INLINE, mixed::handler, nullptr);
    c.backend = backend;
    c.port = port;
    c.header_timeout_ms = 1000; // as test_leaks: silent connections cut in ~2 s
    weir_engine *e = nullptr;
    assert_int_equal(create(c, &e), 0);
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_start(e), 0);
    return e;
}

void failed(soak::Result &r, const std::string &what) {
    if (r.failures.size() < 40)
        r.failures.push_back(what);
}

// One soak of at least `seconds`, a cycle every gap_ms, and at least
// min_switches switches and one aborted pause however slow the machine is
// (bounded: three times the time asked, and 30 s more). Nothing here asserts
// while the driver's thread runs (a cmocka failure longjmps past its join):
// what goes wrong is written into the result's failures.
void run(soak::Result &r, int seconds, int gap_ms, int min_switches) {
    uint32_t be[2] = {test_backend(), other_backend()};
    r.name[0] = backend_name(be[0]);
    r.name[1] = backend_name(be[1]);
    weir_engine *e[2];
    e[0] = make(be[0], 0);
    uint16_t port = 0;
    assert_int_equal(engine_port(e[0], &port), 0);
    e[1] = make(be[1], port);
    assert_int_equal(weir_engine_pause(e[1]), 0); // B stands by, its listeners closed
    int active = 0;
    closerace::clear();
    long mig0 = tcpext("TCPMigrateReqSuccess"), migf0 = tcpext("TCPMigrateReqFailure");

    std::atomic<bool> done{false}, stop{false};
    mixed::Options o;
    o.port = port;
    o.stop = &stop;
    o.seed = static_cast<uint32_t>(now_ms());
    std::thread driver([&] {
        r.c = mixed::run(o);
        done = true;
    });
    int64_t t0 = now_ms(), next_sample = t0, next_cycle = t0 + gap_ms;
    int64_t t_end = t0 + seconds * 1000LL, t_cap = t0 + seconds * 3000LL + 30000;
    uint32_t roll = o.seed;
    bool do_switch = true;
    while (!done.load()) {
        int64_t now = now_ms();
        if (now >= next_sample) {
            r.samples.push_back({(now - t0) / 1000.0, leakcheck::rss_bytes(), leakcheck::allocated_bytes(),
                                 metrics(e[0]).requests + metrics(e[1]).requests});
            next_sample += 1000;
            if (r.samples.size() % 60 == 0) // a line a minute: make soak shows them
                print_message("soak: %.0f min, %llu requests, %d switches, RSS %.1f MiB\n", r.samples.back().t / 60,
                              (unsigned long long)r.samples.back().requests, r.switches,
                              r.samples.back().rss / 1048576.0);
        }
        if (!stop.load() && ((now >= t_end && r.switches >= min_switches && r.aborted_pauses >= 1) || now >= t_cap))
            stop = true;
        if (now >= next_cycle && !stop.load()) {
            if (do_switch) {
                int rc = weir_engine_switch(e[active], e[1 - active]);
                if (rc != 0)
                    failed(r, std::string("weir_engine_switch: ") + weir_err_name(rc));
                if ((rc = weir_engine_pause(e[active])) != 0)
                    failed(r, std::string("weir_engine_pause after a switch: ") + weir_err_name(rc));
                active = 1 - active;
                r.switches++;
            } else {
                roll = roll * 1103515245u + 12345u;
                int rc = weir_engine_begin_pause(e[active]);
                sleep_ms(200 + static_cast<int>((roll >> 16) % 600));
                int rc2 = weir_engine_resume(e[active]);
                if (rc != 0 || rc2 != 0)
                    failed(r, std::string("aborted pause: ") + weir_err_name(rc) + ", " + weir_err_name(rc2));
                r.aborted_pauses++;
            }
            do_switch = !do_switch;
            next_cycle = now_ms() + gap_ms;
        }
        sleep_ms(20);
    }
    driver.join();
    r.seconds = (now_ms() - t0) / 1000.0;

    // The client closed its side of everything: the servers' sides follow,
    // images in flight arrive, the responder answers what is deferred.
    for (int64_t until = now_ms() + 10000; now_ms() < until; sleep_ms(5)) {
        weir_metrics a = metrics(e[0]), b = metrics(e[1]);
        if (a.connections_open + b.connections_open + a.transplant_in_flight + b.transplant_in_flight == 0)
            break;
    }
    if (!mixed::wait_deferred_idle(10000))
        failed(r, "deferred exchanges still unanswered");
    for (int i = 0; i < 2; i++) {
        int rc = weir_engine_shutdown(e[i], 5000000000);
        if (rc != 0)
            failed(r, std::string("shutdown: ") + weir_err_name(rc));
    }
    for (int i = 0; i < 2; i++)
        r.m[i] = metrics(e[i]);
    for (int i = 0; i < 2; i++)
        weir_engine_destroy(e[i]);

    r.migrated = mig0 < 0 ? -1 : tcpext("TCPMigrateReqSuccess") - mig0;
    r.migrate_failed = migf0 < 0 ? -1 : tcpext("TCPMigrateReqFailure") - migf0;
    // A connect the kernel reset because the listener it reached closed
    // under its handshake is no error of the engine's (close_race.h); every
    // other error is.
    // Every reset is an error (issue 32): a switch closes no listener now
    // (its socket moves), so none is the kernel's to excuse. The ones a
    // listener close would explain are still counted apart, for the report.
    r.race_resets = closerace::count_attributed(r.c.connect_resets);
    if (r.c.total_errors() > 0)
        failed(r, std::to_string(r.c.total_errors()) + " client errors (" + std::to_string(r.race_resets) +
                      " at a listener close)");
    for (const std::string &m : leakcheck::mix_mismatches(r.c, {r.m[0], r.m[1]}))
        failed(r, m);
    for (int i = 0; i < 2; i++) {
        const weir_metrics &m = r.m[i];
        if (m.transplant_detached != m.transplant_adopted + m.transplant_refused + m.transplant_in_flight)
            failed(r, std::string("ledger of ") + r.name[i] + " unbalanced");
    }
    // Counted per listener (two per engine).
    uint64_t closes = r.m[0].pause_closes + r.m[1].pause_closes;
    uint64_t reopens = r.m[0].pause_reopens + r.m[1].pause_reopens;
    // B's first pause closed both of its listeners; a switch moves them
    // (docs/transplant.md) and neither closes nor reopens any.
    if (closes != 2u || reopens != 0)
        failed(r, "pause closes " + std::to_string(closes) + " and reopens " + std::to_string(reopens) + " after " +
                      std::to_string(r.switches) + " switches");
    if (r.m[0].pause_aborts + r.m[1].pause_aborts < static_cast<uint64_t>(r.aborted_pauses))
        failed(r, "fewer lingers aborted than aborted pauses");
}

void test_soak_pause_switch_mixed_load(void **) {
    // The stock kernel setting (tcp_migrate_req = 0) in a private namespace
    // where one can be made (so it is set without touching the host's),
    // else the host's, checked.
    if (g_netns.empty()) {
        assert_true(write_sysctl("net/ipv4/tcp_migrate_req", "0"));
    } else {
        FILE *f = std::fopen("/proc/sys/net/ipv4/tcp_migrate_req", "r");
        int v = 0;
        if (f) {
            if (std::fscanf(f, "%d", &v) != 1)
                v = 0;
            std::fclose(f);
        }
        if (v != 0) {
            print_message("skipped: %s, and the host's tcp_migrate_req is %d\n", g_netns.c_str(), v);
            skip();
        }
    }
    int seconds = soak_seconds();
    closerace::install();
    soak::Result warm;
    run(warm, 2, 500, 1); // the threads, rings and arenas a run keeps for the process
    for (const std::string &f : warm.failures)
        print_message("warm-up: %s\n", f.c_str());
    assert_true(warm.failures.empty());
    soak::Result r;
    soak::reserve_for(r, seconds * 3LL + 30); // run()'s cap on its length
    leakcheck::Baseline b = leakcheck::take();
    run(r, seconds, seconds >= 60 ? 3000 : 1000, 2);
    r.leaks = leakcheck::check(b, g_byte_bound);
    r.byte_bound = g_byte_bound;
    if (!r.leaks.fds_ok)
        failed(r, "descriptors: " + r.leaks.describe());
    if (!r.leaks.bytes_ok && g_exact)
        failed(r, "allocated bytes: " + r.leaks.describe());
    const char *cmd = std::getenv("WEIR_SOAK_COMMAND");
    std::string report = soak::markdown(r, cmd && *cmd ? cmd : "WEIR_SOAK_SECONDS=" + std::to_string(seconds) +
                                                                   " build/tests/reliability/test_soak");
    mixed::print_lines(report);
    if (const char *path = std::getenv("WEIR_SOAK_REPORT"))
        assert_true(soak::write(path, report));
    assert_true(r.failures.empty());
    assert_true(r.switches >= 2);
    assert_true(r.aborted_pauses >= 1);
}

} // namespace

int main(int argc, char **argv) {
    g_exact = leakcheck::exact_byte_count(argc, argv);
    if (!g_exact)
        g_byte_bound = 1024 * 1024;
    g_netns = enter_private_net(); // before any thread: the threads made later live in it
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_soak_pause_switch_mixed_load),
    };
    return cmocka_run_group_tests_name("soak", tests, nullptr, nullptr);
}
