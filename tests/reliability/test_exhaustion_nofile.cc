// Exhaustion: descriptors (issue 14). An engine whose process may hold 256
// descriptors (RLIMIT_NOFILE) meets 1,000 clients at once. The engine runs in
// a child process that lowers its own limit, so the test's 1,000 client
// sockets do not count against it; the child answers the test's commands
// (metrics, quit) over a pipe.
//   - no crash: the child serves, shuts down and exits 0;
//   - no spin at the limit: over 1.5 s with ~750 clients waiting and accept
//     failing with EMFILE, the engine's CPU (the child's CPU clock, every
//     thread) stays under 10 % of what a busy loop spinning in the same
//     window gets, and its passes follow the 50 ms retry, not the CPU;
//   - accepting resumes within a second of descriptors freeing: the test
//     closes the clients it was answered on, and the first waiting client is
//     answered within 1 s (measured: tens of ms, the retry interval);
//   - what a waiting client sees (docs/reliability.md): its connect completed
//     at once (the kernel's backlog, 1,024 here, holds it), its request waits
//     in the kernel, and it is answered when a descriptor frees: every one of
//     the 1,000 is answered, none is reset.
// The rule's mutant (checked by hand: the door owed after a resource error
// instead of waiting for its retry, doors.h): the engine's CPU at the limit
// is that of a busy loop and this test fails.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "support/cpu_clock.h"
#include "support/crowd.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

constexpr rlim_t kNoFile = 256;
constexpr int kAttempts = 1000;

// A measurement knob (docs/reliability.md): WEIR_EXHAUST_BACKLOG=16 makes the
// backlog overflow; clients then wait for the kernel's retransmissions.
uint32_t backlog() {
    const char *b = std::getenv("WEIR_EXHAUST_BACKLOG");
    return b && *b ? static_cast<uint32_t>(std::atoi(b)) : 1024;
}
bool overflowing() { return backlog() < 1024; }

bool read_full(int fd, void *p, size_t n) {
    auto *b = static_cast<char *>(p);
    while (n > 0) {
        ssize_t r = ::read(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        b += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

bool write_full(int fd, const void *p, size_t n) {
    auto *b = static_cast<const char *>(p);
    while (n > 0) {
        ssize_t r = ::write(fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        b += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}

void handler(void *, weir_exchange *ex) { answer(ex, 200, "ok"); }

// The child: the engine under the limit. It reports create/listen/start's
// result and the port, then serves until told to quit (or the test is gone).
[[noreturn]] void serve_limited(int cmd, int rep) {
    alarm(120); // a test that lost its child must not leave it behind for ever
    for (int fd = 3; fd < 1024; fd++)
        if (fd != cmd && fd != rep)
            ::close(fd);
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = kNoFile;
    int rc = ::setrlimit(RLIMIT_NOFILE, &rl) == 0 ? 0 : -errno;
    weir_config c = config(2, WEIR_MODE_INLINE, handler, nullptr);
    c.backlog = backlog();
    weir_engine *e = nullptr;
    if (rc == 0)
        rc = weir_engine_create(&c, &e);
    if (rc == 0)
        rc = weir_engine_listen(e);
    if (rc == 0)
        rc = weir_engine_start(e);
    uint16_t port = 0;
    if (rc == 0) {
        sockaddr_storage ss;
        socklen_t len = sizeof ss;
        weir_engine_addr(e, &ss, &len);
        port = ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port);
    }
    write_full(rep, &rc, sizeof rc);
    write_full(rep, &port, sizeof port);
    char op = 0;
    while (rc == 0 && read_full(cmd, &op, 1) && op == 'm') {
        weir_metrics m;
        m.size = sizeof m;
        weir_engine_metrics(e, &m);
        write_full(rep, &m, sizeof m);
    }
    if (e) {
        rc = weir_engine_shutdown(e, 1000000000);
        weir_engine_destroy(e);
    }
    if (op == 'q')
        write_full(rep, &rc, sizeof rc);
    _exit(0);
}

struct Child {
    pid_t pid = -1;
    int cmd = -1, rep = -1;
    int rc = -1;
    uint16_t port = 0;

    bool spawn() {
        int a[2], b[2];
        if (::pipe2(a, O_CLOEXEC) < 0 || ::pipe2(b, O_CLOEXEC) < 0)
            return false;
        pid = ::fork();
        if (pid < 0)
            return false;
        if (pid == 0) {
            ::close(a[1]);
            ::close(b[0]);
            serve_limited(a[0], b[1]);
        }
        ::close(a[0]);
        ::close(b[1]);
        cmd = a[1];
        rep = b[0];
        return read_full(rep, &rc, sizeof rc) && read_full(rep, &port, sizeof port);
    }
    weir_metrics metrics() {
        weir_metrics m{};
        char op = 'm';
        if (!write_full(cmd, &op, 1) || !read_full(rep, &m, sizeof m))
            m.size = 0;
        return m;
    }
    // Quits the child; returns its exit status (-1: it did not exit cleanly).
    int quit(int *shutdown_rc) {
        char op = 'q';
        *shutdown_rc = -1;
        if (write_full(cmd, &op, 1))
            read_full(rep, shutdown_rc, sizeof *shutdown_rc);
        int status = 0;
        pid_t w = ::waitpid(pid, &status, 0);
        pid = -1;
        return w > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    ~Child() {
        if (cmd >= 0)
            ::close(cmd);
        if (rep >= 0)
            ::close(rep);
        if (pid > 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, nullptr, 0);
        }
    }
};

void test_nofile_256_thousand_attempts(void **) {
    // The child holds its engine in its own process: a failed assert here
    // leaves it to the test process's exit (EOF on its pipe, then alarm).
    static Child ch;
    ch = Child();
    assert_true(ch.spawn());
    if (ch.rc == WEIR_E_UNAVAILABLE) {
        print_message("backend %s unavailable\n", test_backend_name());
        skip();
    }
    assert_int_equal(ch.rc, 0);

    Crowd crowd;
    int connected = crowd.connect_all(ch.port, kAttempts, 5000);
    const std::string req = get("/");
    int sent = crowd.send_all(req);
    print_message("backlog %u: %d of %d connects completed at once, %d requests sent\n", backlog(), connected,
                  kAttempts, sent);
    if (!overflowing()) {
        assert_int_equal(connected, kAttempts); // the backlog (1,024) holds every handshake
        assert_int_equal(sent, kAttempts);
    }
    crowd.pump(5000, 400); // until 400 ms pass with no new answer
    int first_wave = crowd.count_answered();
    print_message("RLIMIT_NOFILE %llu: %d of %d clients answered, the rest wait\n",
                  static_cast<unsigned long long>(kNoFile), first_wave, kAttempts);
    assert_true(first_wave >= 200);
    assert_true(first_wave < static_cast<int>(kNoFile));
    assert_int_equal(crowd.count_closed_unanswered(), 0);

    // At the limit: the engine waits for its retry, it does not spin.
    // The reference spins in the same window, so both meet the same
    // contention (2 cores shared with other work: a busy loop gets 4-100 %).
    weir_metrics m0 = ch.metrics();
    int64_t cpu0 = process_cpu_ns(ch.pid), t0 = now_ms();
    int64_t busy = busy_loop_cpu_ns(1500);
    weir_metrics m1 = ch.metrics();
    int64_t cpu1 = process_cpu_ns(ch.pid), t1 = now_ms();
    crowd.pump(100, 100); // whatever came meanwhile (nothing should)
    print_message("at the limit for %lld ms: engine CPU %.2f ms, a busy loop %.1f ms; %llu passes, %llu EMFILE\n",
                  static_cast<long long>(t1 - t0), (cpu1 - cpu0) / 1e6, busy / 1e6,
                  static_cast<unsigned long long>(m1.loop_passes - m0.loop_passes),
                  static_cast<unsigned long long>(m1.accept_resource_errors - m0.accept_resource_errors));
    assert_int_equal(m0.size, sizeof m0);
    assert_int_equal(crowd.count_answered(), first_wave);
    assert_true(m1.accept_resource_errors > m0.accept_resource_errors);
    assert_true((cpu1 - cpu0) * 10 < busy);
    // Two workers, a retry each 50 ms: about 60 passes; a spinning loop makes 100,000s.
    assert_true(m1.loop_passes - m0.loop_passes <= 300);

    // Descriptors free: the answered clients close, the waiting ones get in.
    int freed = crowd.close_answered();
    int64_t tf = now_ms();
    // Each client closes once answered, so the next ones get in; a connect
    // that completes late (the backlog overflowed) sends its request then.
    crowd.pump(overflowing() ? 60000 : 20000, overflowing() ? 20000 : 3000, true, &req);
    int64_t first_after = INT64_MAX, worst_wait = 0;
    for (const Crowd::Peer &p : crowd.peers)
        if (p.answered && p.answered_ms >= tf) {
            first_after = std::min(first_after, p.answered_ms - tf);
            worst_wait = std::max(worst_wait, p.answered_ms - p.sent_ms);
        }
    int total = crowd.count_answered();
    weir_metrics m2 = ch.metrics();
    print_message("freed %d: first waiting client answered %lld ms later; all %d answered %lld ms after the free; "
                  "the longest wait %lld ms; accepted %llu, EMFILE %llu in all\n",
                  freed, static_cast<long long>(first_after), total, static_cast<long long>(now_ms() - tf),
                  static_cast<long long>(worst_wait), static_cast<unsigned long long>(m2.accepted),
                  static_cast<unsigned long long>(m2.accept_resource_errors));
    if (overflowing()) {
        // What a client past the backlog sees: answered when a retransmission
        // of the kernel's (SYN, or SYN-ACK after its ACK was dropped) gets in.
        std::vector<int64_t> at;
        for (const Crowd::Peer &p : crowd.peers)
            if (p.answered && p.answered_ms >= tf)
                at.push_back(p.answered_ms - tf);
        std::sort(at.begin(), at.end());
        for (int q : {10, 25, 50, 75, 90, 95, 99, 100})
            if (!at.empty())
                print_message("  %3d %% of those answered after the free within %lld ms\n", q,
                              static_cast<long long>(at[(at.size() - 1) * static_cast<size_t>(q) / 100]));
        print_message("  %d never answered, %d closed unanswered; engine closes:", kAttempts - total,
                      crowd.count_closed_unanswered());
        for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
            if (m2.closes[r])
                print_message(" %s %llu", weir_close_reason_name(r), static_cast<unsigned long long>(m2.closes[r]));
        print_message("\n");
        int resets = 0, eofs = 0, others = 0;
        for (const Crowd::Peer &p : crowd.peers)
            if (p.closed && !p.answered)
                (p.err == ECONNRESET ? resets : p.err == 0 ? eofs : others)++;
        print_message("  closed unanswered: %d reset, %d EOF, %d other\n", resets, eofs, others);
    }
    assert_true(first_after < 1000);
    if (overflowing()) {
        // Whatever the kernel did to the clients past the backlog, weir
        // closed none of its own accord: every close is the client's.
        assert_int_equal(m2.closes[WEIR_CLOSE_PEER], m2.accepted - m2.connections_open);
    } else {
        assert_int_equal(total, kAttempts);
        assert_int_equal(crowd.count_closed_unanswered(), 0);
        assert_int_equal(m2.accepted, static_cast<uint64_t>(kAttempts));
    }
    int shutdown_rc = -1;
    assert_int_equal(ch.quit(&shutdown_rc), 0); // no crash
    assert_int_equal(shutdown_rc, 0);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nofile_256_thousand_attempts),
    };
    return cmocka_run_group_tests_name("exhaustion_nofile", tests, nullptr, nullptr);
}
