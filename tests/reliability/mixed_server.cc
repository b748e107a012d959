// The server's half of the mixed load (mixed_load.h): the inline handler and
// the responder thread that answers the deferred exchanges.
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mixed_load.h"
#include "support/net.h"

namespace mixed {

namespace {

bool starts(weir_str_t s, const char *p) {
    size_t n = std::strlen(p);
    return s.len >= n && std::memcmp(s.ptr, p, n) == 0;
}

// "<prefix><path>" without a std::string per answer on the worker's thread.
int respond_tagged(weir_exchange *ex, char prefix, weir_str_t path) {
    char b[256];
    size_t n = path.len < sizeof b - 1 ? path.len : sizeof b - 1;
    b[0] = prefix;
    std::memcpy(b + 1, path.ptr, n);
    return weir_respond(ex, 200, nullptr, 0, b, n + 1, 0);
}

int respond_deferred(weir_exchange *ex) {
    // Read on this thread, after weir_defer: the views stay valid until the
    // answer (and after the connection died: the answer then is WEIR_E_GONE).
    const weir_request *r = weir_exchange_request(ex);
    if (starts(r->path, "/echol/"))
        return weir_respond(ex, 200, nullptr, 0, r->body.ptr, r->body.len, 0);
    return respond_tagged(ex, 'L', r->path);
}

// Answers deferred exchanges in arrival order from its own thread. One per
// process, never destroyed: a failed assertion longjmps past destructors,
// and a thread left behind must not be joined or reused by the next test.
// Its queue is a ring allocated once, so the test's side holds the same
// bytes whatever the peak of deferred exchanges a run reached (the leak
// check's bound is tighter than a growing queue's steps).
class Responder {
  public:
    static Responder &get() {
        static Responder *r = new Responder;
        return *r;
    }
    void push(weir_exchange *ex) {
        pending_.fetch_add(1);
        std::unique_lock<std::mutex> l(mu_);
        room_.wait(l, [this] { return tail_ - head_ < ring_.size(); });
        ring_[tail_++ % ring_.size()] = ex;
        l.unlock();
        cv_.notify_one();
    }
    uint64_t pending() const { return pending_.load(); }

  private:
    Responder() : ring_(1 << 16) { std::thread([this] { run(); }).detach(); }
    void run() {
        std::unique_lock<std::mutex> l(mu_);
        for (;;) {
            cv_.wait(l, [this] { return head_ != tail_; });
            weir_exchange *ex = ring_[head_++ % ring_.size()];
            l.unlock();
            room_.notify_one();
            respond_deferred(ex);
            pending_.fetch_sub(1);
            l.lock();
        }
    }
    std::mutex mu_;
    std::condition_variable cv_, room_;
    std::vector<weir_exchange *> ring_;
    uint64_t head_ = 0, tail_ = 0;
    std::atomic<uint64_t> pending_{0};
};

} // namespace

std::string big_body(size_t n) {
    std::string s(n, 'a');
    for (size_t i = 0; i < n; i++)
        s[i] = static_cast<char>('a' + (i * 7 + i / 26) % 26);
    return s;
}

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (starts(r->path, "/now/")) {
        respond_tagged(ex, 'N', r->path);
    } else if (starts(r->path, "/echo/")) {
        weir_respond(ex, 200, nullptr, 0, r->body.ptr, r->body.len, 0);
    } else if (starts(r->path, "/later/") || starts(r->path, "/echol/")) {
        if (weir_defer(ex) == 0)
            Responder::get().push(ex);
    } else if (starts(r->path, "/big/")) {
        // Built once per worker thread and per size: the large answers test
        // the output path, not this handler's allocations.
        thread_local std::string body;
        size_t n = std::strtoul(r->path.ptr + 5, nullptr, 10);
        if (body.size() != n)
            body = big_body(n);
        weir_respond(ex, 200, nullptr, 0, body.data(), body.size(), 0);
    } else {
        weir_respond(ex, 404, nullptr, 0, "no such path", 12, 0);
    }
}

uint64_t deferred_pending() { return Responder::get().pending(); }

bool wait_deferred_idle(int ms) {
    int64_t until = testnet::now_ms() + ms;
    while (deferred_pending() != 0 && testnet::now_ms() < until)
        testnet::sleep_ms(1);
    return deferred_pending() == 0;
}

} // namespace mixed
