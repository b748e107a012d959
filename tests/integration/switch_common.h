// Shared by tests/integration/test_switch*.cc: two engines on one port, each
// answering "<name> <path>" in one of the three ways a host can (an inline
// handler that answers at once, one that defers and answers from another
// thread, a driven host polling its worker), and the ledger check every
// switch test makes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "support/net.h"

namespace switchtest {

using namespace testnet;

enum class Kind { Sync, Async, Driven };

inline std::string answer_text(const char *name, weir_exchange *ex) {
    return std::string(name) + " " + str(weir_exchange_request(ex)->path);
}

// Answers deferred exchanges from its own thread, in arrival order. One per
// process, never destroyed: a failed assertion longjmps past destructors,
// and a responder left behind must not be reused or joined by the next test.
class Responder {
  public:
    static Responder &get() {
        static Responder *r = new Responder;
        return *r;
    }
    void push(const char *name, weir_exchange *ex) {
        {
            std::lock_guard<std::mutex> g(mu_);
            q_.emplace_back(name, ex);
        }
        cv_.notify_one();
    }

  private:
    Responder() { std::thread([this] { run(); }).detach(); }
    void run() {
        std::unique_lock<std::mutex> l(mu_);
        for (;;) {
            cv_.wait(l, [this] { return !q_.empty(); });
            auto [name, ex] = q_.front();
            q_.pop_front();
            l.unlock();
            answer(ex, 200, answer_text(name, ex));
            l.lock();
        }
    }
    std::mutex mu_;
    std::condition_variable cv_;
    std::deque<std::pair<const char *, weir_exchange *>> q_;
};

struct Side;
inline void sync_handler(void *user, weir_exchange *ex);
inline void async_handler(void *user, weir_exchange *ex);

// One engine of the pair. The host thread (driven) stops before the engine
// is destroyed: members are destroyed after the destructor's body.
struct Side {
    Server s;
    const char *name = "";
    Kind kind = Kind::Sync;
    std::atomic<bool> stop{false};
    std::thread host;

    int start(const char *n, Kind k, uint32_t backend, uint16_t port, uint32_t linger_ms) {
        name = n;
        kind = k;
        weir_config c = config(1, k == Kind::Driven ? WEIR_MODE_DRIVEN : WEIR_MODE_INLINE,
                               k == Kind::Driven ? nullptr : k == Kind::Sync ? sync_handler : async_handler, this);
        c.backend = backend;
        c.port = port;
        c.linger_ms = linger_ms;
        int rc = s.start(c);
        if (rc < 0 || k != Kind::Driven)
            return rc;
        weir_worker *w = nullptr;
        if ((rc = weir_engine_worker(s.e, 0, &w)) < 0)
            return rc;
        host = std::thread([this, w] {
            weir_exchange *out[64];
            while (!stop.load()) {
                int got = weir_worker_poll(w, out, 64, 20);
                if (got < 0)
                    return;
                for (int i = 0; i < got; i++)
                    answer(out[i], 200, answer_text(name, out[i]));
            }
        });
        return 0;
    }
    ~Side() {
        stop = true;
        if (host.joinable())
            host.join();
    }
};

inline void sync_handler(void *user, weir_exchange *ex) {
    answer(ex, 200, answer_text(static_cast<Side *>(user)->name, ex));
}

inline void async_handler(void *user, weir_exchange *ex) {
    auto *side = static_cast<Side *>(user);
    weir_defer(ex);
    Responder::get().push(side->name, ex);
}

// io_uring when the test runs on epoll and the kernel runs it; else epoll.
inline uint32_t other_backend() {
    if (test_backend() == WEIR_BACKEND_URING)
        return WEIR_BACKEND_EPOLL;
    weir_config c = config(1, WEIR_MODE_INLINE, sync_handler, nullptr);
    c.backend = WEIR_BACKEND_URING;
    weir_engine *e = nullptr;
    if (weir_engine_create(&c, &e) != 0)
        return WEIR_BACKEND_EPOLL;
    weir_engine_destroy(e);
    return WEIR_BACKEND_URING;
}

// A on the test backend, active; B on the other one, paused (the standby,
// its listener closed), on A's port.
struct Pair {
    Side a, b;
    void start(Kind k, uint32_t linger_ms = 400) {
        if (a.start("A", k, test_backend(), 0, linger_ms) != 0)
            return; // skipped (the backend is unavailable) or failed: the caller asserts
        b.start("B", k, other_backend(), a.s.port, linger_ms);
        weir_engine_pause(b.s.e);
    }
    bool ready() const { return a.s.e && b.s.e; }
};

// Waits for s's ledger to settle: detached == adopted + refused, nothing in
// flight. Returns the settled metrics.
inline weir_metrics settle(Server &s) {
    int64_t until = now_ms() + 3000;
    weir_metrics m = s.metrics();
    while (m.transplant_in_flight != 0 && now_ms() < until) {
        sleep_ms(2);
        m = s.metrics();
    }
    return m;
}

} // namespace switchtest
