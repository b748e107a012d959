// DESIGN.md §7: an allocation that fails on a worker thread closes that one
// connection (WEIR_CLOSE_RESOURCE, counted, logged once) and never throws
// through the loop.
//
// The injector interposes malloc & co. (support/malloc_probe.h) and, while armed, fails every allocation made on the worker thread,
// which the handler names on its first call. A keep-alive connection pins the
// pool's only state (it sent part of a head), so a new connection needs a
// fresh one, and that allocation fails.
//   positive arm: the new connection is closed, counted and logged once; the
//     engine then serves the pinned connection and new ones as before;
//   negative arm (the code path before this rule, ConnHooks::alloc_throws: a
//     failed state allocation throws std::bad_alloc): the same injection
//     aborts the whole process (run in a child, which dies of SIGABRT).
// A foreign answer to a connection that closed (driven mode: the test's
// thread polls, another thread answers) while every allocation on the
// answering thread fails:
//   positive arm: weir_respond says WEIR_E_GONE, and the zombie slot (and its
//     connection state) is freed by the next polls: the release rides on the
//     exchange itself and allocates nothing;
//   negative arm (LoopHooks::drop_by_answer, the drop as it was: an allocated
//     Answer, nothing posted when it cannot be had): the slot stays in use
//     through every later poll, a zombie never freed.
// Under ASan the allocator belongs to the sanitizer: every arm skips there.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "conn/conn.h"
#include "loop/engine.h"
#include "loop/hooks.h"
#include "support/malloc_probe.h"
#include "support/net.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace testnet;

namespace {
std::atomic<bool> g_fail{false};
std::atomic<uint64_t> g_failed{0};
thread_local bool tl_worker = false;
thread_local bool tl_failing = false; // this thread's allocations all fail (the drop cases' answerer)

inline bool refuse() {
    if (tl_failing || (tl_worker && g_fail.load(std::memory_order_relaxed))) {
        g_failed.fetch_add(1, std::memory_order_relaxed);
        return true;
    }
    return false;
}
} // namespace

bool malloc_probe_allow() { return !refuse(); }

namespace {

std::atomic<int> g_logs{0};
char g_last_log[256];

void on_log(void *, int, const char *msg) {
    // The worker's thread, possibly while allocations fail: no allocation here.
    std::strncpy(g_last_log, msg, sizeof g_last_log - 1);
    g_logs.fetch_add(1);
}

void handler(void *, weir_exchange *ex) {
    tl_worker = true;
    answer(ex, 200, "ok");
}

struct Outcome {
    bool refused_closed = false; // the new connection saw EOF without an answer
    uint64_t resource_closes = 0;
    bool served_after = false;   // the pinned and a new connection were served afterwards
};

// The scenario both arms share. Returns what the clients saw.
Outcome inject_once(Server &s) {
    Outcome o;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.log = on_log;
    if (s.start(c) != 0)
        return o;
    Client pinned = connect_to(s.port);
    if (!send_all(pinned, get("/")) || read_response(pinned).status != 200) // names the worker thread
        return o;
    const std::string part = "GET /pinned HTTP/1.1\r\nHo";
    uint64_t in0 = s.metrics().bytes_in;
    send_all(pinned, part);
    for (int64_t until = now_ms() + 5000; s.metrics().bytes_in < in0 + part.size() && now_ms() < until;)
        sleep_ms(1);

    g_fail = true;
    Client fresh = connect_to(s.port);
    send_all(fresh, get("/fresh"));
    for (int64_t until = now_ms() + 5000; s.metrics().closes[WEIR_CLOSE_RESOURCE] < 1 && now_ms() < until;)
        sleep_ms(1);
    g_fail = false;
    o.refused_closed = wait_closed(fresh, 3000) && fresh.buf.empty();
    o.resource_closes = s.metrics().closes[WEIR_CLOSE_RESOURCE];

    send_all(pinned, "st: t\r\n\r\n");
    Client later = connect_to(s.port);
    send_all(later, get("/later"));
    o.served_after = read_response(pinned).status == 200 && read_response(later).status == 200;
    return o;
}

void test_alloc_failure_closes_one_connection(void **) {
#ifdef WEIR_NO_INTERPOSE
    skip();
#endif
    g_logs = 0;
    g_failed = 0;
    Outcome o;
    {
        Server s;
        o = inject_once(s);
    }
    print_message("%llu allocations refused on the worker thread; %llu resource closes; log: \"%s\"\n",
                  static_cast<unsigned long long>(g_failed.load()), static_cast<unsigned long long>(o.resource_closes),
                  g_last_log);
    assert_true(g_failed.load() > 0);
    assert_true(o.refused_closed);
    assert_int_equal(o.resource_closes, 1);
    assert_int_equal(g_logs.load(), 1);
    assert_non_null(std::strstr(g_last_log, "out of memory"));
    assert_true(o.served_after);
}

void test_alloc_failure_negative_arm_throwing_path_aborts(void **) {
#ifdef WEIR_NO_INTERPOSE
    skip();
#endif
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(20); // a hang is not the abort this arm looks for
        weir::conn_hooks().alloc_throws = true;
        Server s;
        Outcome o = inject_once(s);
        _exit(o.served_after ? 0 : 3); // alive: the arm failed to show the loss
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    print_message("throwing path: child %s %d\n", WIFSIGNALED(status) ? "killed by signal" : "exited with",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

struct DropOutcome {
    int rc = 0;              // what the foreign weir_respond returned
    uint64_t refused = 0;    // allocations refused on the answering thread
    uint64_t slots_before = 0, slots_after = 0, states_after = 0;
    bool ok = false;         // the scenario ran to the end
};

// One polled exchange whose client goes away; then a foreign thread whose
// every allocation fails answers it, and the test's thread polls on.
DropOutcome drop_after_close() {
    DropOutcome o;
    weir_config c = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
    weir_engine *e = nullptr;
    if (create(c, &e) != 0)
        return o;
    weir_worker *ww = nullptr;
    sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (weir_engine_listen(e) != 0 || weir_engine_worker(e, 0, &ww) != 0 || weir_engine_addr(e, &ss, &len) != 0) {
        weir_engine_destroy(e);
        return o;
    }
    weir::Worker *w = reinterpret_cast<weir::Engine *>(e)->worker(0);
    uint16_t port = ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
    weir_exchange *x = nullptr;
    {
        Client cl = connect_to(port);
        send_all(cl, get("/held"));
        for (int64_t until = now_ms() + 3000; !x && now_ms() < until;)
            if (weir_worker_poll(ww, &x, 1, 20) < 0)
                break;
        linger lg{1, 0}; // a reset: a FIN alone would leave the connection open for x's answer
        setsockopt(cl.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    } // the worker sees the reset with x still out: it closes, x's slot turns zombie
    weir_metrics m;
    m.size = sizeof m;
    for (int64_t until = now_ms() + 3000; x && now_ms() < until;) {
        weir_worker_poll(ww, nullptr, 0, 20);
        weir_engine_metrics(e, &m);
        if (m.connections_open == 0)
            break;
    }
    if (!x || m.connections_open != 0) {
        weir_engine_destroy(e);
        return o;
    }
    o.slots_before = w->slots_in_use(); // this thread polls: it owns the worker
    std::thread answerer([&] {
        tl_failing = true;
        uint64_t f0 = g_failed.load();
        o.rc = answer(x, 200, "too late");
        o.refused = g_failed.load() - f0;
        tl_failing = false;
    });
    answerer.join();
    for (int i = 0; i < 10; i++)
        weir_worker_poll(ww, nullptr, 0, 20);
    o.slots_after = w->slots_in_use();
    o.states_after = w->states_in_use();
    o.ok = true;
    weir_engine_destroy(e);
    return o;
}

void test_alloc_failure_drop_answer_frees_zombie(void **) {
#ifdef WEIR_NO_INTERPOSE
    skip();
#endif
    DropOutcome o = drop_after_close();
    print_message("foreign answer after the close: rc %s, %llu allocations refused; slots in use %llu -> %llu, "
                  "states %llu\n",
                  weir_err_name(o.rc), static_cast<unsigned long long>(o.refused),
                  static_cast<unsigned long long>(o.slots_before), static_cast<unsigned long long>(o.slots_after),
                  static_cast<unsigned long long>(o.states_after));
    assert_true(o.ok);
    assert_int_equal(o.rc, WEIR_E_GONE);
    assert_int_equal(o.slots_before, 1); // the zombie: closed, its exchange out
    assert_int_equal(o.slots_after, 0);
    assert_int_equal(o.states_after, 0);
}

void test_alloc_failure_drop_answer_negative_arm_leaks_zombie(void **) {
#ifdef WEIR_NO_INTERPOSE
    skip();
#endif
    weir::loop_hooks().drop_by_answer.store(true);
    DropOutcome o = drop_after_close();
    weir::loop_hooks().drop_by_answer.store(false);
    print_message("the drop as it was: rc %s, %llu allocations refused; slots in use %llu -> %llu\n",
                  weir_err_name(o.rc), static_cast<unsigned long long>(o.refused),
                  static_cast<unsigned long long>(o.slots_before), static_cast<unsigned long long>(o.slots_after));
    assert_true(o.ok);
    assert_int_equal(o.rc, WEIR_E_GONE);
    assert_true(o.refused > 0); // the Answer could not be had
    assert_int_equal(o.slots_before, 1);
    assert_int_equal(o.slots_after, 1); // never freed
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_failure_closes_one_connection),
        cmocka_unit_test(test_alloc_failure_negative_arm_throwing_path_aborts),
        cmocka_unit_test(test_alloc_failure_drop_answer_frees_zombie),
        cmocka_unit_test(test_alloc_failure_drop_answer_negative_arm_leaks_zombie),
    };
    return cmocka_run_group_tests_name("alloc_failure", tests, nullptr, nullptr);
}
