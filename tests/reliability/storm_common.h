// Shared by tests/reliability/test_storms*.cc (docs/reliability.md "Races"):
// the pool of threads that answers deferred exchanges, the storm's clients
// (keep-alive and pipelined, or a new connection per burst), their tally,
// and the conservation checks every storm ends with. Nothing here asserts:
// the storm's threads only count, and the test asserts on the counts once
// it has joined them (a failed assertion longjmps past destructors).
//
// Conservation, from both ends:
//   client: every request sent is answered, in order, exactly once (its
//     answer's body is its own target), or it was on a connection the server
//     closed under it; an answer nobody asked for, out of order or twice is
//     `wrong`; a connection that got no answer at all and was closed or reset
//     is `never_served`.
//   server: every connection accepted is closed with a counted reason
//     (accepted == the sum of closes, once shut down); every request parsed is
//     answered (requests == responses); and the answers the clients read are
//     the answers written (answered == responses).
//   the process: no descriptor left over once the engines are destroyed.
#pragma once

#include <dirent.h>
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "support/net.h"

namespace storm {

using namespace testnet;

// How long a storm's load lasts: WEIR_STORM_MS (make soak's knob), else 2 s.
inline int storm_ms() {
    const char *v = std::getenv("WEIR_STORM_MS");
    int ms = v ? std::atoi(v) : 0;
    return ms > 0 ? ms : 2000;
}

// Open descriptors of this process.
inline int open_fds() {
    int n = 0;
    if (DIR *d = ::opendir("/proc/self/fd")) {
        while (dirent *e = ::readdir(d))
            n += e->d_name[0] != '.';
        ::closedir(d);
        n--; // the directory's own
    }
    return n;
}

// Waits (bounded) for the descriptor count to come back to `want`: a socket
// io_uring closes is gone when the ring lets it go, not at the call.
inline int fds_settle(int want, int ms = 2000) {
    int64_t until = now_ms() + bound_ms(ms);
    int n = open_fds();
    while (n != want && now_ms() < until) {
        sleep_ms(5);
        n = open_fds();
    }
    return n;
}

// Eight threads that answer deferred exchanges in whatever order they take
// them: a thread takes up to four at once and answers them with one
// weir_respond_many, or one by one with weir_respond, after a yield or a
// sleep of up to 100 us, so answers of one connection come back out of
// order from different threads. Process-lifetime (a failed assertion must
// not leave a thread holding a dead pool).
class Pool {
  public:
    static constexpr int kThreads = 8;
    static Pool &get() {
        static Pool *p = new Pool;
        return *p;
    }
    void push(weir_exchange *ex) {
        {
            std::lock_guard<std::mutex> g(mu_);
            q_.push_back(ex);
            outstanding_++;
        }
        cv_.notify_one();
    }
    // Taken but not yet answered, or queued.
    uint64_t outstanding() {
        std::lock_guard<std::mutex> g(mu_);
        return outstanding_;
    }
    bool wait_idle(int ms) {
        int64_t until = now_ms() + bound_ms(ms);
        while (outstanding() != 0 && now_ms() < until)
            sleep_ms(2);
        return outstanding() == 0;
    }
    std::atomic<uint64_t> answered{0}; // weir_respond said 0
    std::atomic<uint64_t> gone{0};     // WEIR_E_GONE: the connection died first
    std::atomic<uint64_t> failed{0};   // anything else
    void reset_counts() { answered = gone = failed = 0; }

  private:
    Pool() {
        for (int i = 0; i < kThreads; i++)
            std::thread([this, i] { run(i); }).detach();
    }
    void run(int id) {
        std::minstd_rand rng(0x5eed + id);
        std::vector<weir_exchange *> batch;
        std::vector<std::string> bodies;
        std::vector<weir_answer_t> answers;
        for (;;) {
            batch.clear();
            {
                std::unique_lock<std::mutex> l(mu_);
                cv_.wait(l, [this] { return !q_.empty(); });
                size_t take = 1 + rng() % 4;
                while (!q_.empty() && batch.size() < take) {
                    batch.push_back(q_.front());
                    q_.pop_front();
                }
            }
            if (rng() % 2)
                std::this_thread::yield();
            else
                std::this_thread::sleep_for(std::chrono::microseconds(rng() % 100));
            bodies.clear();
            answers.clear();
            for (weir_exchange *ex : batch) // the body: the request's own target
                bodies.push_back(str(weir_exchange_request(ex)->target));
            if (batch.size() > 1 && rng() % 2) {
                for (size_t i = 0; i < batch.size(); i++) {
                    weir_answer_t a{};
                    a.ex = batch[i];
                    a.status = 200;
                    a.body = bodies[i].data();
                    a.body_len = bodies[i].size();
                    answers.push_back(a);
                }
                weir_respond_many(answers.data(), answers.size());
                for (auto &a : answers)
                    count(a.result);
            } else {
                for (size_t i = 0; i < batch.size(); i++)
                    count(weir_respond(batch[i], 200, nullptr, 0, bodies[i].data(), bodies[i].size(), 0));
            }
            std::lock_guard<std::mutex> g(mu_);
            outstanding_ -= batch.size();
        }
    }
    void count(int rc) { (rc == 0 ? answered : rc == WEIR_E_GONE ? gone : failed)++; }
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<weir_exchange *> q_;
    uint64_t outstanding_ = 0;
};

// The storms' handler: the answer's body is the request's target. user is
// the share deferred to the pool: one in `*defer_one_in` (1: every request;
// 0: none), counted per worker thread.
inline void handler(void *user, weir_exchange *ex) {
    int one_in = *static_cast<const int *>(user);
    thread_local uint64_t n = 0;
    if (one_in > 0 && n++ % one_in == 0 && weir_defer(ex) == 0) {
        Pool::get().push(ex);
        return;
    }
    std::string t = str(weir_exchange_request(ex)->target);
    weir_respond(ex, 200, nullptr, 0, t.data(), t.size(), 0);
}

// What the clients saw, summed over all of them.
struct Tally {
    std::atomic<uint64_t> conns{0};        // connect() succeeded
    std::atomic<uint64_t> refused{0};      // connect() refused: no listener then
    std::atomic<uint64_t> sent{0};         // requests written
    std::atomic<uint64_t> answered{0};     // answers read, each its request's own, in order
    std::atomic<uint64_t> wrong{0};        // answers out of order, twice, garbled or not 200
    std::atomic<uint64_t> never_served{0}; // connections closed or reset before any answer
    std::atomic<uint64_t> cut{0};          // requests unanswered on a connection closed after some answers
    std::atomic<uint64_t> cut_conns{0};    // such connections
    std::atomic<uint64_t> resets{0};       // connections that ended in a reset
    std::atomic<uint64_t> timeouts{0};     // no answer and no close within the bound
    std::atomic<uint64_t> fins{0};         // the FIN after an answered Connection: close
    std::atomic<uint64_t> own_closes{0};   // connections the client closed (the server's `peer`)
    std::string summary() const {
        char b[400];
        std::snprintf(b, sizeof b,
                      "conns %llu (refused %llu), sent %llu, answered %llu, wrong %llu, never served %llu, "
                      "cut %llu on %llu conns, resets %llu, timeouts %llu, fins %llu, client closes %llu",
                      (unsigned long long)conns, (unsigned long long)refused, (unsigned long long)sent,
                      (unsigned long long)answered, (unsigned long long)wrong, (unsigned long long)never_served,
                      (unsigned long long)cut, (unsigned long long)cut_conns, (unsigned long long)resets,
                      (unsigned long long)timeouts, (unsigned long long)fins, (unsigned long long)own_closes);
        return b;
    }
};

enum class Style {
    KeepAlive, // one connection for as long as the storm lasts, bursts of 1-8 pipelined requests
    Churn,     // a connection per burst of 1-4; the last asks Connection: close, or the client closes
};

// One client thread: bursts until `stop`, each burst's answers read and
// checked before the next. Connections refused (a pause closed every
// listener) are retried after a millisecond.
class Caller {
  public:
    Caller(uint16_t port, Style style, int id, Tally &t, std::atomic<bool> &stop)
        : port_(port), style_(style), id_(id), t_(t), stop_(stop), rng_(0xc0ffee + id) {}

    void run() {
        while (!stop_.load()) {
            if (c_.fd < 0 && !open())
                continue;
            burst();
        }
        if (c_.fd >= 0) {
            c_.close();
            t_.own_closes++;
        }
    }

  private:
    bool open() {
        c_ = connect_to(port_);
        if (c_.fd < 0) {
            t_.refused++;
            sleep_ms(1);
            return false;
        }
        t_.conns++;
        served_ = false;
        return true;
    }

    void burst() {
        int k = 1 + static_cast<int>(rng_() % (style_ == Style::KeepAlive ? 8 : 4));
        bool ask_close = style_ == Style::Churn && rng_() % 4 != 0;
        std::vector<std::string> targets;
        std::string bytes;
        for (int i = 0; i < k; i++) {
            targets.push_back("/s?c=" + std::to_string(id_) + "&n=" + std::to_string(seq_++));
            bytes += get(targets.back(), ask_close && i == k - 1 ? "Connection: close\r\n" : "");
        }
        t_.sent += k;
        send_all(c_, bytes); // a failure shows as the close below
        int got = 0;
        int end = read_answers(targets, &got); // 0: all answered; 1: EOF; 2: reset; 3: timeout
        t_.answered += got;
        if (got > 0)
            served_ = true;
        if (end == 0) {
            if (style_ == Style::KeepAlive)
                return;
            if (ask_close) {
                if (wait_end() == 1)
                    t_.fins++;
                else
                    t_.wrong++; // a reset, or no close at all, after Connection: close
            } else {
                t_.own_closes++;
            }
            c_.close();
            return;
        }
        if (end == 3)
            t_.timeouts++;
        if (end == 2)
            t_.resets++;
        if (!served_) {
            t_.never_served++;
        } else {
            t_.cut += k - got;
            t_.cut_conns++;
        }
        c_.close();
    }

    // Reads and checks the burst's answers. 0 all read; 1 EOF, 2 reset,
    // 3 nothing within the bound, before all were.
    int read_answers(const std::vector<std::string> &targets, int *got) {
        int64_t deadline = now_ms() + bound_ms(5000);
        for (;;) {
            while (*got < static_cast<int>(targets.size())) {
                Response r = take_response(c_);
                if (r.status == 0)
                    break;
                if (r.status != 200 || r.body != targets[*got])
                    t_.wrong++;
                else
                    (*got)++;
            }
            if (*got == static_cast<int>(targets.size()))
                return 0;
            int why = fill(deadline);
            if (why != 0)
                return why;
        }
    }

    // After an answered Connection: close: 1 EOF, 2 reset, 3 neither in time.
    int wait_end() {
        int64_t deadline = now_ms() + bound_ms(5000);
        for (;;) {
            int why = fill(deadline);
            if (why != 0)
                return why;
            if (!c_.buf.empty())
                return 2; // bytes after the last answer: not ours
        }
    }

    // 0 read some bytes; 1 EOF; 2 reset; 3 timeout.
    int fill(int64_t deadline) {
        for (;;) {
            int64_t left = deadline - now_ms();
            if (left <= 0)
                return 3;
            pollfd p{c_.fd, POLLIN, 0};
            int r = ::poll(&p, 1, static_cast<int>(left));
            if (r < 0 && errno == EINTR)
                continue;
            if (r == 0)
                return 3;
            char b[16384];
            ssize_t n = ::recv(c_.fd, b, sizeof b, 0);
            if (n > 0) {
                c_.buf.append(b, static_cast<size_t>(n));
                return 0;
            }
            if (n == 0)
                return 1;
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return 2;
        }
    }

    uint16_t port_;
    Style style_;
    int id_;
    Tally &t_;
    std::atomic<bool> &stop_;
    std::minstd_rand rng_;
    Client c_;
    uint64_t seq_ = 0;
    bool served_ = false;
};

// The storm's clients, on threads of their own; join() before asserting.
class Clients {
  public:
    Clients(uint16_t port, int keep_alive, int churn, Tally &t) {
        int id = 0;
        for (int i = 0; i < keep_alive + churn; i++) {
            auto *c = new Caller(port, i < keep_alive ? Style::KeepAlive : Style::Churn, id++, t, stop);
            threads_.emplace_back([c] {
                c->run();
                delete c;
            });
        }
    }
    void join() {
        stop = true;
        for (auto &t : threads_)
            t.join();
        threads_.clear();
    }
    std::atomic<bool> stop{false};

  private:
    std::vector<std::thread> threads_;
};

inline uint64_t sum_closes(const weir_metrics &m) {
    uint64_t n = 0;
    for (uint64_t c : m.closes)
        n += c;
    return n;
}

// Closes for a reason other than the ones named.
inline uint64_t other_closes(const weir_metrics &m, std::initializer_list<uint32_t> allowed) {
    uint64_t n = 0;
    for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++) {
        bool ok = false;
        for (uint32_t a : allowed)
            ok = ok || a == r;
        if (!ok)
            n += m.closes[r];
    }
    return n;
}

inline void print_closes(const char *who, const weir_metrics &m) {
    std::printf("%s: accepted %llu, requests %llu, responses %llu, closes", who, (unsigned long long)m.accepted,
                (unsigned long long)m.requests, (unsigned long long)m.responses);
    for (uint32_t r = 0; r < WEIR_CLOSE_REASONS; r++)
        if (m.closes[r])
            std::printf(" %s %llu", weir_close_reason_name(r), (unsigned long long)m.closes[r]);
    std::printf("\n");
}

} // namespace storm
