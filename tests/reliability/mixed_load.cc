// The client of the mixed load (mixed_load.h): per thread, one epoll
// (level-triggered) over non-blocking sockets, each connection a small state
// machine that walks its plan and checks every answer in order.
#include "mixed_load.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>

#include "close_race.h"
#include "mixed_diag.h"
#include "mixed_requests.h"
#include "support/net.h"

namespace mixed {

using testnet::now_ms;

namespace {

struct Conn {
    int fd = -1;
    size_t index = 0; // in Runner::open_
    bool connecting = true;
    bool silent = false, silent_wait = false;
    int steps_left = 0;
    int end = kEndFin;
    bool ended = false;   // the ending was sent (or, for kEndFin, reached)
    int reset_left = 0;   // kEndReset: answers still to read before the reset
    int end_cls = kGetNow; // what an error with no answer due is counted as
    std::string out;
    size_t out_off = 0;
    std::deque<size_t> cuts; // where a send stops early (writes split)
    bool want_out = false;   // EPOLLOUT armed
    std::deque<Expect> expect;
    std::string in;
    bool want_eof = false; // the last answer said Connection: close: the FIN is due
    int64_t deadline = 0;  // no progress by then: an error
    int64_t give_up_at = 0;
    int64_t connected_at = 0;
    int64_t started_us = 0; // when connect(2) was called (closerace::now_us)
    uint64_t answered = 0; // answers read on this connection
};

struct Shared {
    const Options &o;
    std::atomic<uint64_t> started{0};
    int64_t t_end = 0;
    explicit Shared(const Options &opt) : o(opt) {
        if (o.seconds > 0)
            t_end = now_ms() + o.seconds * 1000;
    }
    // Near the end no new silent connection starts: each holds the run
    // open for the ~2 s its server-side cut takes.
    bool near_end() const {
        return (o.requests && started.load(std::memory_order_relaxed) >= o.requests - o.requests / 32) ||
               (t_end && now_ms() >= t_end - 3000);
    }
    bool stopping() const {
        return (o.requests && started.load(std::memory_order_relaxed) >= o.requests) ||
               (t_end && now_ms() >= t_end) || (o.stop && o.stop->load());
    }
};

class Runner {
  public:
    Runner(Shared &sh, int index) : sh_(sh), gen_(sh.o.seed * 1000003ull + index, index), index_(index) {}
    void run();
    Counts c;

  private:
    void open(bool silent);
    void on_event(Conn *k, uint32_t ev);
    void connected(Conn *k);
    void next_step(Conn *k);
    void step(Conn *k);
    void ending(Conn *k);
    void push(Conn *k, Req &&q, int cls);
    void send_out(Conn *k);
    void sent(Conn *k);
    void read_in(Conn *k);
    void answers(Conn *k);
    void eof(Conn *k);
    void scan(int64_t now);
    void error(Conn *k, int cls, const std::string &what);
    void finish(Conn *k, bool reset);
    void arm(Conn *k, bool out);
    void progress(Conn *k) { k->deadline = now_ms() + sh_.o.answer_ms; }
    int err_cls(Conn *k) const { return !k->expect.empty() ? k->expect.front().cls : k->end_cls; }

    Shared &sh_;
    Requests gen_;
    int index_;
    int ep_ = -1;
    std::vector<Conn *> open_;
    std::vector<std::unique_ptr<Conn>> dead_; // freed after the event batch that closed them
    int keepalive_ = 0, silent_ = 0;
    uint64_t made_ = 0;
    int64_t retry_at_ = 0;
};

void Runner::run() {
    ep_ = ::epoll_create1(EPOLL_CLOEXEC);
    epoll_event evs[256];
    int64_t next_scan = 0;
    for (;;) {
        bool stop = sh_.stopping();
        if (!stop && now_ms() >= retry_at_)
            while (keepalive_ < sh_.o.concurrency && now_ms() >= retry_at_)
                open(false);
        if (stop && open_.empty())
            break;
        int n = ::epoll_wait(ep_, evs, 256, 5);
        for (int i = 0; i < n; i++)
            on_event(static_cast<Conn *>(evs[i].data.ptr), evs[i].events);
        int64_t now = now_ms();
        if (now >= next_scan) {
            scan(now);
            next_scan = now + 5;
        }
        dead_.clear();
    }
    ::close(ep_);
}

void Runner::open(bool silent) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        c.connect_errors++;
        retry_at_ = now_ms() + 10;
        return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Many source addresses: a run's connections outnumber one address's
    // ephemeral ports while the earlier ones sit in TIME_WAIT.
    ::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(0x7f000000u | (2 + (made_++ * 7 + index_) % 250) << 8 | 1);
    ::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(sh_.o.port);
    int64_t started_us = closerace::now_us();
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) < 0 && errno != EINPROGRESS) {
        if (c.notes.size() < 20)
            c.notes.push_back(std::string("connect: ") + strerror(errno));
        c.connect_errors++;
        ::close(fd);
        retry_at_ = now_ms() + 10;
        return;
    }
    auto *k = new Conn;
    k->fd = fd;
    k->started_us = started_us;
    k->silent = silent;
    k->index = open_.size();
    open_.push_back(k);
    (silent ? silent_ : keepalive_)++;
    progress(k);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.ptr = k;
    k->want_out = true;
    ::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
    // A few per cent of connections say nothing, on top of the keep-alive ones.
    if (!silent && silent_ < sh_.o.max_silent && gen_.roll(100) < 3 && !sh_.near_end())
        open(true);
}

void Runner::arm(Conn *k, bool out) {
    if (k->want_out == out)
        return;
    k->want_out = out;
    epoll_event ev{};
    ev.events = out ? EPOLLIN | EPOLLOUT : EPOLLIN;
    ev.data.ptr = k;
    ::epoll_ctl(ep_, EPOLL_CTL_MOD, k->fd, &ev);
}

void Runner::on_event(Conn *k, uint32_t ev) {
    if (k->fd < 0)
        return;
    if (k->connecting) {
        if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
            return;
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            if (c.notes.size() < 20)
                c.notes.push_back(std::string("connect: ") + strerror(err));
            c.connect_errors++;
            if (err == ECONNRESET && c.connect_resets.size() < 1000)
                c.connect_resets.push_back({k->started_us, closerace::now_us()});
            retry_at_ = now_ms() + 10;
            finish(k, false);
            return;
        }
        connected(k);
        return;
    }
    if ((ev & EPOLLOUT) && !k->out.empty())
        send_out(k);
    if (k->fd >= 0 && (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        read_in(k);
}

void Runner::connected(Conn *k) {
    k->connecting = false;
    k->connected_at = now_ms();
    c.connections++;
    progress(k);
    arm(k, false);
    if (k->silent) {
        k->silent_wait = gen_.roll(2) == 0;
        k->end_cls = k->silent_wait ? kSilentWait : kSilentGiveUp;
        c.sent[k->end_cls]++;
        if (k->silent_wait)
            k->deadline = now_ms() + sh_.o.silent_wait_ms;
        else
            k->give_up_at = now_ms() + 20 + static_cast<int64_t>(gen_.roll(180));
        return;
    }
    k->steps_left = static_cast<int>(gen_.roll(16));
    uint64_t r = gen_.roll(100);
    k->end = r < 35 ? kEndFin : r < 55 ? kEndClose : r < 70 ? kEndInvalid : r < 80 ? kEndAbortHead
             : r < 90 ? kEndAbortBody : kEndReset;
    next_step(k);
}

void Runner::push(Conn *k, Req &&q, int cls) {
    if (cls >= 0)
        q.expect.cls = cls;
    c.sent[q.expect.cls]++;
    sh_.started.fetch_add(1, std::memory_order_relaxed);
    k->out += q.bytes;
    k->expect.push_back(std::move(q.expect));
}

void Runner::next_step(Conn *k) {
    if (sh_.stopping())
        k->steps_left = 0; // wind down: straight to the ending
    if (k->steps_left > 0) {
        k->steps_left--;
        step(k);
    } else if (!k->ended) {
        k->ended = true;
        ending(k);
    }
}

void Runner::step(Conn *k) {
    if (gen_.roll(10) == 0) {
        int n = 2 + static_cast<int>(gen_.roll(15));
        for (int i = 0; i < n; i++)
            push(k, gen_.valid(), kPipelined);
    } else {
        push(k, gen_.valid(), -1);
    }
    if (gen_.roll(8) == 0) // split over up to three writes
        for (int i = static_cast<int>(gen_.roll(3)); i >= 0; i--)
            k->cuts.push_back(1 + gen_.roll(k->out.size()));
    std::sort(k->cuts.begin(), k->cuts.end());
    send_out(k);
}

void Runner::ending(Conn *k) {
    switch (k->end) {
    case kEndFin:
        c.ends[kEndFin]++;
        finish(k, false);
        return;
    case kEndClose:
        k->end_cls = kClose;
        push(k, gen_.valid(kClose, "Connection: close\r\n"), kClose);
        k->expect.back().then_eof = true;
        break;
    case kEndInvalid:
        k->end_cls = kInvalid;
        if (gen_.roll(5) == 0) // answered first, in order
            push(k, gen_.valid(), -1);
        push(k, gen_.invalid(), kInvalid);
        if (gen_.roll(3) == 0) // still sending when the 400 comes: the lingering close reads it
            k->out += std::string(1 + gen_.roll(8192), 'j');
        break;
    case kEndAbortHead: {
        k->end_cls = kAbortHead;
        Req q = gen_.valid();
        k->out = q.bytes.substr(0, 1 + gen_.roll(q.head_len - 1));
        c.sent[kAbortHead]++;
        sh_.started.fetch_add(1, std::memory_order_relaxed);
        break;
    }
    case kEndAbortBody: {
        k->end_cls = kAbortBody;
        Req q = gen_.post_with_body();
        k->out = q.bytes.substr(0, q.head_len + gen_.roll(q.bytes.size() - q.head_len));
        c.sent[kAbortBody]++;
        sh_.started.fetch_add(1, std::memory_order_relaxed);
        break;
    }
    case kEndReset: {
        k->end_cls = kReset;
        int n = 1 + static_cast<int>(gen_.roll(8));
        for (int i = 0; i < n; i++)
            push(k, gen_.valid(), kReset);
        k->reset_left = static_cast<int>(gen_.roll(n));
        break;
    }
    }
    send_out(k);
}

void Runner::send_out(Conn *k) {
    while (k->out_off < k->out.size()) {
        size_t end = k->out.size();
        while (!k->cuts.empty() && k->cuts.front() <= k->out_off)
            k->cuts.pop_front();
        if (!k->cuts.empty())
            end = k->cuts.front();
        ssize_t n = ::send(k->fd, k->out.data() + k->out_off, end - k->out_off, MSG_NOSIGNAL);
        if (n > 0) {
            k->out_off += static_cast<size_t>(n);
            c.bytes_sent += static_cast<uint64_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            arm(k, true);
            return;
        }
        error(k, err_cls(k), std::string("send: ") + strerror(errno));
        return;
    }
    k->out.clear();
    k->out_off = 0;
    k->cuts.clear();
    arm(k, false);
    progress(k);
    sent(k);
}

void Runner::sent(Conn *k) {
    if (!k->ended)
        return;
    if (k->end == kEndAbortHead || k->end == kEndAbortBody) {
        c.verified[k->end_cls]++;
        c.ends[k->end]++;
        finish(k, false); // the client's FIN in the middle of the request
    } else if (k->end == kEndReset && k->reset_left == 0) {
        c.ends[kEndReset]++;
        finish(k, true);
    }
}

void Runner::read_in(Conn *k) {
    char buf[65536];
    for (;;) {
        ssize_t n = ::recv(k->fd, buf, sizeof buf, 0);
        if (n > 0) {
            c.bytes_read += static_cast<uint64_t>(n);
            k->in.append(buf, static_cast<size_t>(n));
            progress(k);
            if (static_cast<size_t>(n) < sizeof buf)
                break;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n == 0) {
            answers(k);
            if (k->fd >= 0)
                eof(k);
        } else {
            error(k, err_cls(k), std::string("recv: ") + strerror(errno) + (k->want_eof ? " where a FIN was due" : ""));
        }
        return;
    }
    answers(k);
}

void Runner::answers(Conn *k) {
    int status;
    bool close;
    std::string body;
    while (!k->in.empty()) {
        if (k->expect.empty()) {
            error(k, k->end_cls, "bytes with no answer due: '" + k->in.substr(0, 60) + "'");
            return;
        }
        int r = take_answer(k->in, &status, &body, &close);
        if (r == 0)
            return;
        Expect &e = k->expect.front();
        if (r < 0 || status != e.status || (e.status == 200 && body != e.body) || close != e.then_eof) {
            std::string got = r < 0 ? "garbage '" + k->in.substr(0, 60) + "'"
                                    : std::to_string(status) + (close ? " close" : "") + " '" + body.substr(0, 40) + "'";
            error(k, e.cls, "expected " + std::to_string(e.status) + (e.then_eof ? " close" : "") + " '" +
                                e.body.substr(0, 40) + "', got " + got);
            return;
        }
        c.verified[e.cls]++;
        k->answered++;
        k->want_eof = e.then_eof;
        k->expect.pop_front();
        if (k->ended && k->end == kEndReset && --k->reset_left == 0) {
            c.ends[kEndReset]++;
            finish(k, true);
            return;
        }
    }
    if (!k->silent && k->expect.empty() && !k->want_eof && k->out.empty())
        next_step(k);
}

void Runner::eof(Conn *k) {
    if (k->silent_wait) {
        c.verified[kSilentWait]++;
        c.silent_wait_max_ms = std::max<uint64_t>(c.silent_wait_max_ms, now_ms() - k->connected_at);
        finish(k, false);
    } else if (k->want_eof && k->expect.empty()) {
        c.ends[k->end]++;
        finish(k, false);
    } else {
        error(k, err_cls(k), "EOF with " + std::to_string(k->expect.size()) + " answers due");
    }
}

void Runner::scan(int64_t now) {
    for (size_t i = 0; i < open_.size();) {
        Conn *k = open_[i];
        if (k->silent && !k->silent_wait && !k->connecting && now >= k->give_up_at) {
            c.verified[kSilentGiveUp]++;
            finish(k, false);
        } else if (now >= k->deadline && k->connecting) {
            if (c.notes.size() < 20)
                c.notes.push_back("connect timed out");
            c.connect_errors++;
            finish(k, true);
        } else if (now >= k->deadline && k->silent_wait) {
            error(k, kSilentWait,
                  "no close seen within " + std::to_string(now - k->connected_at) + " ms; the server's side: " +
                      server_side(k->fd) + ", the client's: " + client_side(k->fd));
        } else if (now >= k->deadline) {
            error(k, err_cls(k),
                  "timed out, " + std::to_string(k->expect.size()) + " answers due" +
                      (k->want_eof ? ", a FIN due" : "") + " (next '" +
                      (k->expect.empty() ? std::string() : k->expect.front().body.substr(0, 30)) + "', " +
                      std::to_string(k->in.size()) + " bytes of it read, " + std::to_string(k->out.size() - k->out_off) +
                      " bytes unsent, " + std::to_string(k->answered) + " answered before)");
        }
        if (i < open_.size() && open_[i] == k)
            i++;
    }
}

void Runner::error(Conn *k, int cls, const std::string &what) {
    c.errors[cls]++;
    if (c.notes.size() < 20)
        c.notes.push_back(std::string(class_name(cls)) + ": " + what);
    finish(k, true);
}

void Runner::finish(Conn *k, bool reset) {
    if (reset) {
        linger l{1, 0}; // the close sends a reset, whatever is unread or unsent
        ::setsockopt(k->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    }
    ::close(k->fd);
    k->fd = -1;
    (k->silent ? silent_ : keepalive_)--;
    Conn *last = open_.back();
    open_[k->index] = last;
    last->index = k->index;
    open_.pop_back();
    dead_.emplace_back(k);
}

} // namespace

Counts run(const Options &o) {
    Shared sh(o);
    std::vector<std::unique_ptr<Runner>> rs;
    for (int i = 0; i < o.threads; i++)
        rs.push_back(std::make_unique<Runner>(sh, i));
    std::vector<std::thread> ts;
    for (auto &r : rs)
        ts.emplace_back([&r] { r->run(); });
    for (auto &t : ts)
        t.join();
    Counts all;
    for (auto &r : rs)
        all.add(r->c);
    return all;
}

} // namespace mixed
