// Client-side tools for the slow-client tests: many raw non-blocking
// connections driven from one thread, and a keep-alive load that runs beside
// them and counts every answer that was not the one asked for.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "support/net.h"

namespace slow {

// Raises the soft (and if needed the hard) descriptor limit to at least n; we
// run as root, so the hard limit may grow up to fs.nr_open.
inline bool want_fds(rlim_t n) {
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return false;
    if (rl.rlim_cur >= n)
        return true;
    rl.rlim_cur = n;
    if (rl.rlim_max < n)
        rl.rlim_max = n;
    return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

// One raw connection: what it has received, and when it saw the close.
struct Peer {
    int fd = -1;
    int64_t opened_ms = 0;
    int64_t closed_ms = 0; // 0 while open
    bool reset = false;    // the close was a reset (ECONNRESET), not a FIN
    size_t sent = 0;       // bytes of its request sent so far
    std::string got;
};

// Opens n non-blocking connections to 127.0.0.1:port, a batch at a time so the
// listen backlog never overflows (an overflowed SYN is retried after a second,
// which would skew every deadline measured from opened_ms).
inline bool open_peers(std::vector<Peer> &ps, size_t n, uint16_t port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ps.reserve(ps.size() + n);
    for (size_t i = 0; i < n; i++) {
        Peer p;
        p.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (p.fd < 0)
            return false;
        int one = 1;
        setsockopt(p.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(p.fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 && errno != EINPROGRESS) {
            ::close(p.fd);
            return false;
        }
        p.opened_ms = testnet::now_ms();
        ps.push_back(std::move(p));
        if (i % 256 == 255)
            testnet::sleep_ms(5); // let the server's accept batches keep up
    }
    return true;
}

// Reads what each open peer has (non-blocking); records the close and whether
// it was a reset. Returns how many are still open.
inline size_t pump(std::vector<Peer> &ps) {
    size_t open = 0;
    char buf[4096];
    for (Peer &p : ps) {
        if (p.closed_ms)
            continue;
        for (;;) {
            ssize_t r = recv(p.fd, buf, sizeof buf, 0);
            if (r > 0) {
                p.got.append(buf, static_cast<size_t>(r));
                continue;
            }
            if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                p.reset = r < 0 && errno == ECONNRESET;
                p.closed_ms = testnet::now_ms();
            }
            break;
        }
        if (!p.closed_ms)
            open++;
    }
    return open;
}

inline void close_peers(std::vector<Peer> &ps) {
    for (Peer &p : ps)
        if (p.fd >= 0) {
            ::close(p.fd);
            p.fd = -1;
        }
}

// Keep-alive clients that run GET /ok in a loop beside the abuse and count
// anything but a 200 "ok" as an error. Process-lifetime (a failed cmocka
// assert longjmps past destructors, so the threads must never be joinable
// objects on the test's stack): start, then stop before asserting.
struct Load {
    std::atomic<bool> run{false};
    std::atomic<uint64_t> requests{0}, errors{0};
    std::vector<std::thread> ts;

    void start(uint16_t port, int clients) {
        run = true;
        requests = errors = 0;
        for (int i = 0; i < clients; i++)
            ts.emplace_back([this, port] {
                testnet::Client c = testnet::connect_to(port);
                while (run.load(std::memory_order_relaxed)) {
                    if (!testnet::send_all(c, testnet::get("/ok"))) {
                        errors++;
                        break;
                    }
                    testnet::Response r = testnet::read_response(c);
                    if (r.status != 200 || r.body != "ok") {
                        errors++;
                        break;
                    }
                    requests++;
                }
            });
    }
    void stop() {
        run = false;
        for (std::thread &t : ts)
            t.join();
        ts.clear();
    }
    static Load &the() {
        static Load *l = new Load; // never destroyed: see above
        return *l;
    }
};

} // namespace slow
