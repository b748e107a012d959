// Shared by tests/integration/test_pause_*.cc: silent clients, the kernel's
// own counters (TcpExt TCPDeferAcceptDrop, SYN-RECV entries), the linger
// hooks' recorders and the two scenarios the arms share. Nothing here
// asserts: the scenarios also run in a forked child (a private network
// namespace) and ship their results back through a pipe.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "loop/engine.h"
#include "loop/linger.h"
#include "support/net.h"
#include "support/netns.h"

namespace pausetest {

using namespace testnet;

inline weir::Engine *internal(weir_engine *e) { return reinterpret_cast<weir::Engine *>(e); }

inline void ok_handler(void *, weir_exchange *ex) { answer(ex, 200, "ok"); }

// A blocking dial to 127.0.0.1:port. The fd, or -errno (ECONNREFUSED once
// every listener is closed).
inline int dial(uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0) {
        int e = errno;
        ::close(fd);
        return -e;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

inline uint16_t local_port(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len);
    return ntohs(a.sin_port);
}

// Sends one request on a client that has said nothing so far: true when it
// is answered 200 (served), false when it gets a reset, an EOF or nothing
// within timeout_ms (lost).
inline bool served(Client &c, int timeout_ms = 3000) {
    if (!send_all(c, get("/late")))
        return false;
    return read_response(c, timeout_ms).status == 200;
}

// TcpExt TCPDeferAcceptDrop of this network namespace, -1 when unreadable.
inline long long defer_accept_drops() { return tcpext("TCPDeferAcceptDrop"); }

// Request socks (state 03, SYN-RECV) on local port `port`, as ss shows them.
inline int syn_recv_count(uint16_t port) {
    std::ifstream f("/proc/net/tcp");
    std::string line;
    std::getline(f, line);
    int n = 0;
    while (std::getline(f, line)) {
        std::istringstream l(line);
        std::string sl, local, remote, st;
        if (!(l >> sl >> local >> remote >> st))
            continue;
        size_t colon = local.find(':');
        if (colon == std::string::npos)
            continue;
        if (std::stoul(local.substr(colon + 1), nullptr, 16) == port && st == "03")
            n++;
    }
    return n;
}

inline uint64_t socket_cookie(int fd) {
    uint64_t c = 0;
    socklen_t len = sizeof c;
    return ::getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &len) < 0 ? 0 : c;
}

// ---- hook recorders (the worker's thread writes, the test reads)

constexpr int kMaxWorkers = 4;
struct Events {
    std::atomic<int64_t> clear[kMaxWorkers];
    std::atomic<int64_t> close[kMaxWorkers];
    std::atomic<int64_t> restore[kMaxWorkers];
    std::atomic<int64_t> accept_at[65536]; // by the client's port
};
inline Events &events() {
    static Events ev;
    return ev;
}
inline void record_event(uint32_t w, weir::LingerEvent ev) {
    if (w >= kMaxWorkers)
        return;
    int64_t t = now_ms();
    if (ev == weir::LingerEvent::Clear)
        events().clear[w] = t;
    else if (ev == weir::LingerEvent::Close)
        events().close[w] = t;
    else
        events().restore[w] = t;
}
inline void record_accept(int fd) {
    sockaddr_in a{};
    socklen_t len = sizeof a;
    if (::getpeername(fd, reinterpret_cast<sockaddr *>(&a), &len) == 0)
        events().accept_at[ntohs(a.sin_port)] = now_ms();
}
// Resets every hook and recorder and installs the recorders.
inline void hooks_reset() {
    weir::linger_hooks().reset();
    for (int i = 0; i < kMaxWorkers; i++) {
        events().clear[i] = 0;
        events().close[i] = 0;
        events().restore[i] = 0;
    }
    for (auto &a : events().accept_at)
        a = 0;
    weir::linger_hooks().on_event = record_event;
    weir::linger_hooks().on_accept = record_accept;
}

// Waits (bounded) until every worker's listener is in `st`.
inline bool wait_state(weir_engine *e, weir::ListenerState st, int timeout_ms) {
    int64_t until = now_ms() + timeout_ms;
    weir::Engine *en = internal(e);
    for (;;) {
        bool all = true;
        for (uint32_t i = 0; i < en->worker_count(); i++)
            all = all && en->worker(i)->listener_state() == st;
        if (all)
            return true;
        if (now_ms() >= until)
            return false;
        sleep_ms(2);
    }
}

// ---- scenario 1: eight silent clients, a pause inside the kernel's
// one-second timer, the clients speak only after weir_engine_pause returned.

constexpr int kSilent = 8;

struct SilentResult {
    int setup_rc = 0;
    int connected = 0;
    uint64_t accepted_at_200ms = 0;
    long long drop_delta = -1;  // TCPDeferAcceptDrop growth by 200 ms
    int syn_recv = 0;           // SYN-RECV entries on the port at 200 ms
    int syncnt[kMaxWorkers] = {}; // TCP_SYNCNT read on each lingering listener
    int lingering = 0;          // listeners seen lingering
    int pause_rc = 1;
    int64_t pause_ms = 0;       // begin_pause to weir_engine_pause's return
    int served = 0;
    int lost = 0;
    int later_dial = 0;         // -errno of a dial after the pause (or an fd > 0)
    weir_metrics m{};
};

inline SilentResult run_silent(weir_config c) {
    SilentResult r;
    Server s;
    r.setup_rc = s.start(c);
    if (r.setup_rc != 0)
        return r;
    long long drops0 = defer_accept_drops();
    int64_t t0 = now_ms();
    std::vector<Client> clients;
    for (int i = 0; i < kSilent; i++) {
        int fd = dial(s.port);
        if (fd >= 0) {
            clients.emplace_back(fd);
            r.connected++;
        }
    }
    sleep_ms(static_cast<int>(std::max<int64_t>(0, t0 + 200 - now_ms())));
    r.accepted_at_200ms = s.metrics().accepted;
    long long drops1 = defer_accept_drops();
    r.drop_delta = drops0 < 0 || drops1 < 0 ? -1 : drops1 - drops0;
    r.syn_recv = syn_recv_count(s.port);
    sleep_ms(static_cast<int>(std::max<int64_t>(0, t0 + 300 - now_ms())));

    int64_t p0 = now_ms();
    r.pause_rc = weir_engine_begin_pause(s.e);
    if (r.pause_rc == 0) {
        // Read the guard on each listener while it lingers (a repeated begin
        // is harmless, so weir_engine_pause below is begin + wait).
        weir::Engine *en = internal(s.e);
        int64_t until = now_ms() + 1000;
        for (uint32_t i = 0; i < en->worker_count() && i < kMaxWorkers; i++) {
            while (en->worker(i)->listener_state() == weir::ListenerState::Active && now_ms() < until)
                sleep_ms(1);
            int fd = en->worker(i)->listen_fd();
            if (en->worker(i)->listener_state() == weir::ListenerState::Lingering && fd >= 0) {
                r.lingering++;
                r.syncnt[i] = weir::syncnt_get(fd);
            }
        }
        r.pause_rc = weir_engine_pause(s.e);
    }
    r.pause_ms = now_ms() - p0;
    for (auto &cl : clients) {
        if (served(cl))
            r.served++;
        else
            r.lost++;
    }
    r.later_dial = dial(s.port);
    if (r.later_dial >= 0)
        ::close(r.later_dial);
    r.m = s.metrics();
    return r;
}

inline void print_silent(const char *arm, const SilentResult &r) {
    std::printf("%s: connected %d, accepted@200ms %llu, TCPDeferAcceptDrop +%lld, SYN-RECV %d, lingering %d "
                "(TCP_SYNCNT %d/%d), pause rc %d after %lld ms, served %d, lost %d, later dial %d, "
                "lingers %llu closes %llu clears %llu guards %llu drained %llu\n",
                arm, r.connected, (unsigned long long)r.accepted_at_200ms, r.drop_delta, r.syn_recv, r.lingering,
                r.syncnt[0], r.syncnt[1], r.pause_rc, (long long)r.pause_ms, r.served, r.lost, r.later_dial,
                (unsigned long long)r.m.pause_lingers, (unsigned long long)r.m.pause_closes,
                (unsigned long long)r.m.pause_defer_clears, (unsigned long long)r.m.pause_guards,
                (unsigned long long)r.m.pause_drain_accepted);
    std::fflush(stdout);
}

// ---- scenario 2: a silent dial every 15 ms through the pause.

struct Dial {
    int64_t connected_at = 0;
    uint16_t port = 0;
    Client c;
    bool ok = false;
    int64_t accepted_at = 0;
};

struct DialResult {
    int setup_rc = 0;
    std::vector<Dial> dials;
    int64_t pause_begin = 0, pause_end = 0;
    int pause_rc = 1;
    int64_t clear[kMaxWorkers] = {};
    int64_t close[kMaxWorkers] = {};
    int workers = 0;
    int64_t last_clear = 0, first_close = 0, last_close = 0;
    weir_metrics m{};
};

inline DialResult run_dials(weir_config c) {
    DialResult r;
    Server s;
    r.setup_rc = s.start(c);
    if (r.setup_rc != 0)
        return r;
    r.workers = static_cast<int>(c.workers);
    int64_t t0 = now_ms();
    std::atomic<bool> stop{false};
    std::vector<Dial> dials;
    dials.reserve(600);
    std::thread dialer([&] {
        for (int i = 0; !stop && now_ms() < t0 + 5000; i++) {
            int64_t at = t0 + 15LL * i;
            int64_t wait = at - now_ms();
            if (wait > 0)
                sleep_ms(static_cast<int>(wait));
            int fd = dial(s.port);
            if (fd < 0) {
                if (fd == -ECONNREFUSED)
                    break; // every listener closed
                continue;
            }
            Dial d;
            d.connected_at = now_ms();
            d.port = local_port(fd);
            d.c = Client(fd);
            dials.push_back(std::move(d));
        }
    });
    sleep_ms(300);
    r.pause_begin = now_ms();
    r.pause_rc = weir_engine_pause(s.e);
    r.pause_end = now_ms();
    sleep_ms(100); // the dialer sees the refusal
    stop = true;
    dialer.join();
    for (int i = 0; i < r.workers && i < kMaxWorkers; i++) {
        r.clear[i] = events().clear[i];
        r.close[i] = events().close[i];
    }
    r.last_clear = *std::max_element(r.clear, r.clear + r.workers);
    r.first_close = *std::min_element(r.close, r.close + r.workers);
    r.last_close = *std::max_element(r.close, r.close + r.workers);
    for (auto &d : dials) {
        d.ok = served(d.c);
        d.accepted_at = events().accept_at[d.port];
    }
    r.dials = std::move(dials);
    r.m = s.metrics();
    return r;
}

} // namespace pausetest
