// The kernel's listener-close race (close_race.h, docs/reliability.md "The
// listener-close race"): what a client connecting while listeners close
// sees, measured under a switch storm so that a rare kernel event shows in
// seconds, and kept apart from any reset the engine would cause.
// A client keeps 64 connects in flight, each sending one request with
// Connection: close and reading to EOF, against A and B (the test backend,
// two workers each, a 30 ms linger) switching every ~10 ms, in a private
// network namespace with net.ipv4.tcp_migrate_req = 1.
//   control arm (no switches, no listener closes): 0 resets of any kind.
//   storm arm: every connection lost before its answer (a reset, or a FIN
//     and a reset: ECONNRESET or EPIPE) is attributed, a listener having
//     closed from 0.5 ms before its connect to 5 ms after (close_race.h); no
//     other error, every other answer 200; the kernel migrated
//     queued handshakes (TCPMigrateReqSuccess > 0) and never failed to
//     (TCPMigrateReqFailure 0). The losses are printed: measured on 6.18,
//     0-3 per 240 switches at ~12k connections a second (one in 1,500
//     switches an EPIPE, the rest resets while connecting), each connect
//     begun 0.7 ms before to 0.4 ms after a listener's close.
//   What this can and cannot tell: with a close every ~10 ms here, about
//     half of all moments are near one, so a loss the engine caused would
//     pass this arm by chance half the time; the control arm and the soak
//     (a close every few seconds, where chance attributes one loss in ~250)
//     are what tell such a loss apart. This arm pins the kernel's side: the
//     losses happen, only at closes, and migration never fails.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "close_race.h"
#include "loop/linger.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"
#include "support/netns.h"

using namespace testnet;

namespace {

std::string g_netns; // why the private namespace could not be made; "" when it was

void handler(void *, weir_exchange *ex) { answer(ex, 200, "ok"); }

// The client: 64 connects in flight, from many source addresses.
struct Flood {
    uint16_t port = 0;
    std::atomic<bool> stop{false};
    long answered = 0, lost_connecting = 0, lost_after_request = 0, other = 0;
    std::string first_other;
    std::vector<std::pair<int64_t, int64_t>> lost; // (begun, seen) of each connection lost

    struct C {
        int fd = -1;
        int64_t begun = 0;
        bool connecting = true;
        std::string in;
    };

    void open(int ep, C &c, unsigned n) {
        c = C{};
        c.begun = closerace::now_us();
        c.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int one = 1;
        ::setsockopt(c.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(0x7f000000u | (2 + n % 250) << 8 | 1);
        ::bind(c.fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        if (::connect(c.fd, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0 && errno != EINPROGRESS)
            note_other(strerror(errno));
        epoll_event ev{EPOLLOUT | EPOLLIN, {}};
        ev.data.ptr = &c;
        ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    }

    void note_other(const std::string &what) {
        if (other++ == 0)
            first_other = what;
    }

    void run() {
        int ep = ::epoll_create1(EPOLL_CLOEXEC);
        std::vector<C> cs(64);
        unsigned made = 0;
        for (C &c : cs)
            open(ep, c, made++);
        size_t live = cs.size();
        int64_t give_up = 0;
        while (live > 0) {
            if (stop && !give_up)
                give_up = now_ms() + bound_ms(5000);
            if (give_up && now_ms() > give_up) {
                note_other("connections still open 5 s after the end");
                break;
            }
            epoll_event evs[64];
            int n = ::epoll_wait(ep, evs, 64, 50);
            for (int i = 0; i < n; i++) {
                C &c = *static_cast<C *>(evs[i].data.ptr);
                if (c.fd < 0 || !step(ep, c, evs[i].events))
                    continue;
                ::close(c.fd); // this connection is over: the next one
                c.fd = -1;
                if (stop)
                    live--;
                else
                    open(ep, c, made++);
            }
        }
        for (C &c : cs)
            if (c.fd >= 0)
                ::close(c.fd);
        ::close(ep);
    }

    // True when the connection is over (answered, reset or failed).
    bool step(int ep, C &c, uint32_t events) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            failed_with(c, err);
            return true;
        }
        if (c.connecting) {
            if (!(events & EPOLLOUT))
                return false;
            c.connecting = false;
            static const char req[] = "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
            if (::send(c.fd, req, sizeof req - 1, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof req - 1)) {
                failed_with(c, errno);
                return true;
            }
            epoll_event ev{EPOLLIN, {}};
            ev.data.ptr = &c;
            ::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev);
            return false;
        }
        char buf[512];
        ssize_t r;
        while ((r = ::recv(c.fd, buf, sizeof buf, 0)) > 0)
            c.in.append(buf, static_cast<size_t>(r));
        if (r < 0 && errno == EAGAIN)
            return false;
        if (r < 0)
            failed_with(c, errno);
        else if (c.in.rfind("HTTP/1.1 200", 0) == 0)
            answered++;
        else
            note_other("answer: " + c.in.substr(0, 40));
        return true;
    }

    // A reset (ECONNRESET), or a FIN and then a reset (EPIPE), before the
    // answer: the connection was lost. Anything else is another error.
    void failed_with(C &c, int err) {
        if (err == ECONNRESET || err == EPIPE) {
            (c.connecting ? lost_connecting : lost_after_request)++;
            lost.push_back({c.begun, closerace::now_us()});
        } else {
            note_other(strerror(err));
        }
    }
};

weir_engine *make(uint16_t port) {
    weir_config c = config(2, WEIR_MODE_INLINE, handler, nullptr);
    c.port = port;
    c.linger_ms = 30;
    weir_engine *e = nullptr;
    if (create(c, &e) != 0)
        return nullptr;
    assert_int_equal(weir_engine_listen(e), 0);
    assert_int_equal(weir_engine_start(e), 0);
    return e;
}

struct Outcome {
    long switches = 0, migrated = 0, migrate_failed = 0;
    size_t attributed = 0;
    uint64_t accepted = 0, closes[WEIR_CLOSE_REASONS] = {};
};

// Runs the flood for ms, switching every ~10 ms when storm is set.
Outcome flood(Flood &f, int ms, bool storm) {
    Outcome o;
    weir_engine *e[2] = {make(0), nullptr};
    uint16_t port = 0;
    assert_int_equal(engine_port(e[0], &port), 0);
    e[1] = make(port);
    assert_int_equal(weir_engine_pause(e[1]), 0);
    closerace::clear();
    long ok0 = tcpext("TCPMigrateReqSuccess"), fail0 = tcpext("TCPMigrateReqFailure");
    f.port = port;
    std::thread t([&] { f.run(); });
    int active = 0;
    for (int64_t end = now_ms() + ms; now_ms() < end;) {
        if (storm) {
            weir_engine_switch(e[active], e[1 - active]);
            weir_engine_pause(e[active]); // waits out the 30 ms linger, then the close
            active = 1 - active;
            o.switches++;
        }
        sleep_ms(10);
    }
    f.stop = true;
    t.join();
    o.migrated = tcpext("TCPMigrateReqSuccess") - ok0;
    o.migrate_failed = tcpext("TCPMigrateReqFailure") - fail0;
    o.attributed = closerace::count_attributed(f.lost);
    for (weir_engine *x : e) {
        weir_engine_shutdown(x, 2000000000);
        weir_metrics m{};
        m.size = sizeof m;
        weir_engine_metrics(x, &m);
        for (uint32_t k = 0; k < WEIR_CLOSE_REASONS; k++)
            o.closes[k] += m.closes[k];
        o.accepted += m.accepted;
        weir_engine_destroy(x);
    }
    std::string reasons;
    for (uint32_t k = 0; k < WEIR_CLOSE_REASONS; k++)
        if (o.closes[k])
            reasons += std::string(" ") + weir_close_reason_name(k) + " " + std::to_string(o.closes[k]);
    print_message("  accepted %llu, closes:%s\n", (unsigned long long)o.accepted, reasons.c_str());
    print_message("%s: %ld switches, %ld answered; lost %ld while connecting and %ld after the request (%zu of "
                  "them near a listener close), other errors %ld%s%s; kernel migrations %ld, failed %ld\n",
                  storm ? "storm" : "control", o.switches, f.answered, f.lost_connecting, f.lost_after_request,
                  o.attributed, f.other, f.first_other.empty() ? "" : ": ", f.first_other.c_str(),
                  o.migrated, o.migrate_failed);
    for (const auto &[begun, seen] : f.lost)
        print_message("  lost %lld us after its connect began\n", static_cast<long long>(seen - begun));
    return o;
}

bool setup() {
    if (!g_netns.empty()) {
        print_message("skipped: %s\n", g_netns.c_str());
        return false;
    }
    assert_true(write_sysctl("net/ipv4/tcp_migrate_req", "1"));
    closerace::install();
    return true;
}

int storm_ms() {
    const char *s = std::getenv("WEIR_CLOSE_RACE_MS");
    return s && *s ? std::atoi(s) : 6000;
}

void test_no_closes_no_resets(void **) {
    if (!setup())
        skip();
    Flood f;
    flood(f, 2000, false);
    assert_true(f.answered > 1000 / kSlowdown);
    assert_int_equal(f.lost_connecting + f.lost_after_request, 0);
    assert_int_equal(f.other, 0);
}

void test_storm_resets_are_the_race(void **) {
    // The race needs listener closes: a switch moves its listeners now
    // (docs/transplant.md) and closes none (the same storm with them moving:
    // 469 switches, 41,649 answered, 0 lost), so the storm runs the old
    // switch, a test hook, whose closes are what pause still does.
    weir::linger_hooks().switch_reopens = true;
    if (!setup())
        skip();
    Flood f;
    Outcome o = flood(f, storm_ms(), true);
    // That the storm ran (ThreadSanitizer runs it ~10x slower).
    assert_true(o.switches >= 50 / kSlowdown);
    assert_true(f.answered > 1000 / kSlowdown);
    if (kSlowdown == 1) // at a tenth of the rate a run may queue nothing at a close
        assert_true(o.migrated > 0);
    assert_int_equal(o.migrate_failed, 0);
    assert_int_equal(o.attributed, f.lost.size());
    assert_int_equal(f.other, 0);
}

} // namespace

int main() {
    g_netns = enter_private_net(); // before any thread: the threads made later live in it
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_closes_no_resets),
        cmocka_unit_test(test_storm_resets_are_the_race),
    };
    return cmocka_run_group_tests_name("listener_close_race", tests, nullptr, nullptr);
}
