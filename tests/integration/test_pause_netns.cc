// The TCP_SYNCNT guard of the pause linger (DESIGN.md §5) with
// net.ipv4.tcp_synack_retries = 0, set inside a private network namespace the
// test makes (the sysctl is per namespace, so nothing outside changes): a
// forked child unshares CLONE_NEWNET, brings up lo, writes 0 to the sysctl,
// creates the engine there and runs T1's scenario (eight silent clients, a
// pause 300 ms after the connects, the clients speak after the pause).
//
//   T4 (positive): the lingering listeners read TCP_SYNCNT 1 and all eight
//      clients are served.
//   N3 (must lose, LingerHooks::skip_guard): without the guard the request
//      socks expire at their first timeout with no SYN-ACK retransmit once
//      the option is cleared: the eight are reset.
//
// Skips (with the reason printed) where namespaces are refused.
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "integration/pause_common.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace pausetest;

namespace {

struct ChildReport {
    int skip = 0; // 1: namespaces refused; why says why
    int synack_retries = -1;
    char why[160] = {};
    SilentResult r;
};

// Child side: no cmocka here (an assertion would longjmp into the parent's
// copy of the runner); everything goes back through the pipe.
void child(int out, bool skip_guard) {
    ChildReport rep;
    auto send = [&] {
        ssize_t n = ::write(out, &rep, sizeof rep);
        (void)n;
        ::_exit(0);
    };
    if (::unshare(CLONE_NEWNET) < 0) {
        rep.skip = 1;
        std::snprintf(rep.why, sizeof rep.why, "unshare(CLONE_NEWNET): %s", std::strerror(errno));
        send();
    }
    int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    if (s < 0 || ::ioctl(s, SIOCGIFFLAGS, &ifr) < 0 || (ifr.ifr_flags |= IFF_UP, ::ioctl(s, SIOCSIFFLAGS, &ifr) < 0)) {
        rep.skip = 1;
        std::snprintf(rep.why, sizeof rep.why, "cannot bring up lo in the new namespace: %s", std::strerror(errno));
        send();
    }
    ::close(s);
    int fd = ::open("/proc/sys/net/ipv4/tcp_synack_retries", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0\n", 2) != 2) {
        rep.skip = 1;
        std::snprintf(rep.why, sizeof rep.why, "cannot set tcp_synack_retries in the namespace: %s",
                      std::strerror(errno));
        send();
    }
    ::close(fd);
    rep.synack_retries = weir::read_synack_retries();
    hooks_reset();
    weir::linger_hooks().skip_guard = skip_guard;
    rep.r = run_silent(config(2, WEIR_MODE_INLINE, ok_handler, nullptr));
    send();
}

ChildReport run_in_netns(bool skip_guard) {
    ChildReport rep;
    int p[2];
    assert_int_equal(::pipe2(p, O_CLOEXEC), 0);
    std::fflush(stdout);
    pid_t pid = ::fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ::close(p[0]);
        child(p[1], skip_guard);
    }
    ::close(p[1]);
    size_t got = 0;
    auto *buf = reinterpret_cast<char *>(&rep);
    while (got < sizeof rep) {
        ssize_t n = ::read(p[0], buf + got, sizeof rep - got);
        if (n <= 0)
            break;
        got += static_cast<size_t>(n);
    }
    ::close(p[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(got, sizeof rep);
    return rep;
}

void test_pause_netns_t4_guard_saves_clients_at_zero_synack_retries(void **) {
    ChildReport rep = run_in_netns(false);
    if (rep.skip) {
        std::printf("T4 skipped: %s\n", rep.why);
        skip();
    }
    print_silent("T4 positive (tcp_synack_retries = 0, guard)", rep.r);
    assert_int_equal(rep.synack_retries, 0);
    const SilentResult &r = rep.r;
    assert_int_equal(r.setup_rc, 0);
    assert_int_equal(r.accepted_at_200ms, 0);
    assert_true(r.drop_delta >= kSilent || r.syn_recv >= kSilent);
    assert_int_equal(r.lingering, 2);
    assert_int_equal(r.syncnt[0], 1);
    assert_int_equal(r.syncnt[1], 1);
    assert_int_equal(r.m.pause_guards, 2);
    assert_int_equal(r.pause_rc, 0);
    assert_int_equal(r.served, kSilent);
    assert_int_equal(r.later_dial, -ECONNREFUSED);
}

void test_pause_netns_n3_no_guard_resets_at_zero_synack_retries(void **) {
    ChildReport rep = run_in_netns(true);
    if (rep.skip) {
        std::printf("N3 skipped: %s\n", rep.why);
        skip();
    }
    print_silent("N3 must lose (tcp_synack_retries = 0, no guard)", rep.r);
    assert_int_equal(rep.synack_retries, 0);
    const SilentResult &r = rep.r;
    assert_int_equal(r.setup_rc, 0);
    assert_int_equal(r.accepted_at_200ms, 0);
    assert_int_equal(r.lingering, 2);
    assert_int_not_equal(r.syncnt[0], 1);
    assert_int_equal(r.m.pause_guards, 0);
    assert_int_equal(r.pause_rc, 0);
    assert_int_equal(r.lost, kSilent);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pause_netns_t4_guard_saves_clients_at_zero_synack_retries),
        cmocka_unit_test(test_pause_netns_n3_no_guard_resets_at_zero_synack_retries),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
