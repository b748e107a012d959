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
// Under ASan the allocator belongs to the sanitizer: both arms skip there.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "conn/conn.h"
#include "support/malloc_probe.h"
#include "support/net.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace testnet;

namespace {
std::atomic<bool> g_fail{false};
std::atomic<uint64_t> g_failed{0};
thread_local bool tl_worker = false;

inline bool refuse() {
    if (tl_worker && g_fail.load(std::memory_order_relaxed)) {
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

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_failure_closes_one_connection),
        cmocka_unit_test(test_alloc_failure_negative_arm_throwing_path_aborts),
    };
    return cmocka_run_group_tests_name("alloc_failure", tests, nullptr, nullptr);
}
