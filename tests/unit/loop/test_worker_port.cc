// The shared worker driven through a scripted fake port (lib/loop/port.h),
// deterministically: the test decides when input lands, when a write or a
// close completes, and what the kernel would still reference.
//   - settle: one pass, one write of all of a connection's answers, the
//     timer its state calls for;
//   - close with operations in flight: a closed slot stays (not reused,
//     its lent bytes intact) until the last completion arrives; the
//     negative arm, a port that does not count its operation, shows the
//     loss: the slot is reused at once and the late completion would name
//     another connection;
//   - detach/adopt: a connection moves to a worker of another engine at its
//     request boundary with the bytes of its next requests, and the client
//     sees exactly the bytes it would have seen had it never moved.
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loop/engine.h"
#include "loop/port.h"
#include "loop/worker.h"
#include "support/http_text.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()

using namespace weir;
using testnet::blank_date;

namespace {

struct HeldOp {
    Slot *s = nullptr;
    int fd = -1;          // the fd the operation was posted for
    std::string bytes;    // a write: what it covered, copied when posted
    const char *base = nullptr;
    size_t len = 0;
};

class FakePort final : public Port {
  public:
    Worker *w = nullptr;
    std::deque<Accepted> accepts;
    std::vector<Slot *> started;
    std::map<int, std::string> out; // every byte written, per fd
    int writes = 0;                 // write completions reported
    bool hold_writes = false;
    bool async_close = false;
    bool count_ops = true;          // false: the arm that must lose
    std::vector<HeldOp> held_writes, held_closes;
    std::vector<int> closed, released;
    int wakes = 0;
    bool woke = false;
    std::vector<std::pair<Slot *, std::string>> in_wait;

    int init(Worker &wk) override {
        w = &wk;
        return 0;
    }
    int listen(int) override { return 0; }
    void unlisten(int) override {}
    Take accept(int, Accepted &a, bool) override {
        if (accepts.empty())
            return Take::Empty;
        a = accepts.front();
        accepts.pop_front();
        return Take::Took;
    }
    int start(Slot &s) override {
        started.push_back(&s);
        return 0;
    }
    void want_read(Slot &) override {}
    void write(Slot &s) override {
        for (HeldOp &h : held_writes)
            if (h.s == &s)
                return; // one write at a time; the completion picks up the rest
        iovec v[64];
        size_t k = w->lend_output(s, v, 64);
        if (k == 0)
            return;
        HeldOp h;
        h.s = &s;
        h.fd = s.fd;
        for (size_t i = 0; i < k; i++)
            h.bytes.append(static_cast<char *>(v[i].iov_base), v[i].iov_len);
        h.base = static_cast<char *>(v[0].iov_base);
        h.len = v[0].iov_len;
        if (hold_writes) {
            if (count_ops)
                w->op_begin(s);
            held_writes.push_back(h);
            return;
        }
        out[s.fd] += h.bytes;
        writes++;
        w->written(s, static_cast<ssize_t>(h.bytes.size()));
    }
    void close(Slot &s, bool) override {
        closed.push_back(s.fd);
        if (async_close) {
            if (count_ops)
                w->op_begin(s);
            HeldOp h;
            h.s = &s;
            h.fd = s.fd;
            held_closes.push_back(h);
        }
    }
    void release(Slot &s) override { released.push_back(s.fd); }
    void wait(int) override {
        if (woke) {
            woke = false;
            w->woken();
        }
        for (auto &d : in_wait) // what the kernel reports during the next wait
            deliver(*d.first, d.second);
        in_wait.clear();
    }
    void wake() override {
        wakes++;
        woke = true;
    }
    const char *name() const override { return "fake"; }

    // ---- the script
    void deliver(Slot &s, const std::string &bytes) {
        size_t off = 0;
        while (off < bytes.size()) {
            iovec sp = w->lend_input(s);
            assert_true(sp.iov_len > 0);
            size_t n = std::min(sp.iov_len, bytes.size() - off);
            std::memcpy(sp.iov_base, bytes.data() + off, n);
            w->input(s, n);
            off += n;
        }
    }
    void complete_write(size_t i) {
        HeldOp h = held_writes[i];
        held_writes.erase(held_writes.begin() + static_cast<long>(i));
        out[h.fd] += h.bytes;
        writes++;
        w->written(*h.s, static_cast<ssize_t>(h.bytes.size()));
        if (count_ops)
            w->op_end(*h.s);
    }
    // Returns the fd the slot holds when the completion arrives (-1 while it
    // is still the closed connection's).
    int complete_close(size_t i) {
        HeldOp h = held_closes[i];
        held_closes.erase(held_closes.begin() + static_cast<long>(i));
        int now = h.s->fd;
        if (count_ops)
            w->op_end(*h.s);
        return now;
    }
};

std::vector<FakePort *> g_fakes;

int fake_factory(uint32_t, std::unique_ptr<Port> *out) {
    auto *p = new FakePort;
    g_fakes.push_back(p);
    out->reset(p);
    return 0;
}

// A driven, one-worker engine on a fake port (its listener is a real bound
// socket nobody dials: the fake's accept queue stands in for it).
struct Rig {
    Engine *e = nullptr;
    Worker *w = nullptr;
    FakePort *port = nullptr;
    explicit Rig(uint32_t header_timeout_ms = 10000) {
        weir_config c;
        weir_config_init(&c);
        c.workers = 1;
        c.mode = WEIR_MODE_DRIVEN;
        c.defer_accept = 0;
        c.header_timeout_ms = header_timeout_ms;
        assert_int_equal(Engine::create(&c, &e, fake_factory), 0);
        port = g_fakes.back();
        assert_int_equal(e->listen(), 0);
        w = e->worker(0);
    }
    ~Rig() { delete e; }
    std::vector<weir_exchange *> poll() {
        weir_exchange *xs[16];
        int n = weir_worker_poll(reinterpret_cast<weir_worker *>(w), xs, 16, 0);
        assert_true(n >= 0);
        return std::vector<weir_exchange *>(xs, xs + n);
    }
    Slot &connect(int fd) {
        Accepted a;
        a.fd = fd;
        port->accepts.push_back(a);
        size_t before = port->started.size();
        w->door_ready();
        poll();
        assert_int_equal(port->started.size(), before + 1);
        return *port->started.back();
    }
};

std::string path_of(weir_exchange *x) {
    const weir_request *r = weir_exchange_request(x);
    return std::string(r->path.ptr, r->path.len);
}

void answer_path(weir_exchange *x) {
    std::string p = path_of(x);
    assert_int_equal(weir_respond(x, 200, nullptr, 0, p.data(), p.size(), 0), 0);
}

const std::string kGetA = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
const std::string kGetB = "GET /b HTTP/1.1\r\nHost: x\r\n\r\n";

void test_worker_port_settle_one_write(void **) {
    Rig r;
    Slot &s = r.connect(1001);
    assert_int_equal(static_cast<int>(s.timer.kind), static_cast<int>(TimerKind::Head)); // the first byte's deadline
    r.port->deliver(s, kGetA + kGetB);
    auto xs = r.poll();
    assert_int_equal(xs.size(), 2);
    r.poll(); // a pass settles it
    assert_int_equal(static_cast<int>(s.timer.kind), static_cast<int>(TimerKind::None)); // the handlers' turn
    answer_path(xs[1]);
    answer_path(xs[0]);
    r.poll();
    // Both answers, in request order, in one write.
    assert_int_equal(r.port->writes, 1);
    std::string o = blank_date(r.port->out[1001]);
    assert_true(o.find("\r\n\r\n/a") != std::string::npos);
    assert_true(o.find("/a") < o.find("/b"));
    assert_int_equal(static_cast<int>(s.timer.kind), static_cast<int>(TimerKind::Idle));
    assert_int_equal(r.w->states_in_use(), 0); // idle keep-alive: no buffers
    g_fakes.clear();
}

void test_worker_port_close_waits_for_operations(void **) {
    Rig r;
    r.port->hold_writes = true;
    Slot &s = r.connect(1001);
    r.port->deliver(s, kGetA);
    auto xs = r.poll();
    answer_path(xs[0]);
    r.poll();
    assert_int_equal(r.port->held_writes.size(), 1); // the kernel holds the answer's bytes
    HeldOp h = r.port->held_writes[0];
    // The peer resets while the write is in flight: the worker closes.
    r.w->input_end(s, ECONNRESET);
    r.poll();
    assert_int_equal(r.port->closed.size(), 1);
    assert_int_equal(s.fd, -1);
    assert_int_equal(r.w->slots_in_use(), 1); // not freed: an operation names it
    assert_memory_equal(h.base, h.bytes.data(), h.len);
    // A new connection must not get the slot the kernel still names.
    Slot &t = r.connect(1002);
    assert_ptr_not_equal(&t, &s);
    r.port->deliver(t, kGetB);
    xs = r.poll();
    answer_path(xs[0]);
    r.poll();
    assert_memory_equal(h.base, h.bytes.data(), h.len); // still the first answer's bytes
    // The last completion arrives: now the slot goes.
    r.port->complete_write(0);
    r.poll();
    assert_int_equal(r.w->slots_in_use(), 1); // only the new connection
    assert_int_equal(r.e->cfg().mode, WEIR_MODE_DRIVEN);
    g_fakes.clear();
}

// A head that completes in the very pass its deadline expires in made it:
// the timer belongs to the state it was armed for, and that state is gone.
void test_worker_port_deadline_met_in_the_same_pass(void **) {
    Rig r(1);
    Slot &s = r.connect(1001); // the header deadline: 1 ms from now
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, nullptr);
    // The request completes in the wait of the pass whose timers then find
    // the deadline expired, before any settle re-armed them.
    r.port->in_wait.push_back({&s, kGetA});
    auto xs = r.poll();
    assert_int_equal(xs.size(), 1);
    assert_int_equal(s.fd, 1001);
    assert_int_equal(r.port->closed.size(), 0);
    answer_path(xs[0]);
    r.poll();
    assert_true(r.port->out[1001].find("\r\n\r\n/a") != std::string::npos);
    weir_metrics m{};
    m.size = sizeof m;
    r.e->metrics(&m);
    assert_int_equal(m.closes[WEIR_CLOSE_HEADER_TIMEOUT] + m.closes[WEIR_CLOSE_SILENT], 0);
    g_fakes.clear();
}

// An asynchronous close: positive with the count, and the arm that must lose.
int async_close_outcome(bool count_ops, Slot **first, Slot **second) {
    Rig r;
    r.port->async_close = true;
    r.port->count_ops = count_ops;
    Slot &s = r.connect(1001);
    r.w->input_end(s, 0); // the peer's FIN: nothing to answer, close
    r.poll();
    assert_int_equal(r.port->held_closes.size(), 1);
    Slot &t = r.connect(1002);
    *first = &s;
    *second = &t;
    int fd_at_completion = r.port->complete_close(0);
    r.poll();
    g_fakes.clear();
    return fd_at_completion;
}

void test_worker_port_async_close_keeps_slot(void **) {
    Slot *a, *b;
    int fd = async_close_outcome(true, &a, &b);
    assert_ptr_not_equal(a, b);
    assert_int_equal(fd, -1); // the completion found the closed connection's slot
}

void test_worker_port_async_close_negative_arm_uncounted(void **) {
    Slot *a, *b;
    int fd = async_close_outcome(false, &a, &b);
    assert_ptr_equal(a, b);    // freed at once and reused ...
    assert_int_equal(fd, 1002); // ... so the late completion names another connection
}

std::string serve_never_moved(const std::vector<std::string> &reads) {
    Rig r;
    Slot &s = r.connect(7);
    for (const std::string &bytes : reads) {
        r.port->deliver(s, bytes);
        for (weir_exchange *x : r.poll())
            answer_path(x);
        r.poll();
    }
    std::string o = blank_date(r.port->out[7]);
    g_fakes.clear();
    return o;
}

void test_worker_port_detach_adopt_across_engines(void **) {
    const std::string kPostC = "POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody";
    const std::vector<std::string> reads = {kGetA, kGetB + kPostC.substr(0, 30), kPostC.substr(30)};
    std::string want = serve_never_moved(reads);

    Rig a, b;
    Slot &s = a.connect(7);
    a.port->deliver(s, reads[0]);
    auto xs = a.poll();
    assert_int_equal(xs.size(), 1);
    uint64_t id = weir_exchange_request(xs[0])->connection_id;
    // The move is asked for while /a is in flight; more bytes arrive.
    a.w->detach_all_to(b.w);
    a.port->deliver(s, reads[1]);
    assert_int_equal(a.poll().size(), 0); // held: nothing new is parsed
    assert_int_equal(a.port->released.size(), 0);
    answer_path(xs[0]);
    a.poll(); // /a written: a request boundary, so it leaves
    assert_int_equal(a.port->released.size(), 1);
    assert_int_equal(a.port->released[0], 7);
    assert_int_equal(a.port->closed.size(), 0); // released, not closed
    assert_int_equal(a.w->slots_in_use(), 0);
    assert_true(b.port->wakes > 0);

    // The other engine's hand-off door admits it with its unread bytes.
    xs = b.poll();
    assert_int_equal(b.port->started.size(), 1);
    Slot &t = *b.port->started[0];
    assert_int_equal(t.fd, 7);
    assert_int_equal(xs.size(), 1); // /b, from the image's bytes
    assert_int_equal(weir_exchange_request(xs[0])->connection_id, id);
    answer_path(xs[0]);
    b.poll();
    b.port->deliver(t, reads[2]);
    for (weir_exchange *x : b.poll())
        answer_path(x);
    b.poll();
    std::string got = blank_date(a.port->out[7] + b.port->out[7]);
    assert_string_equal(got.c_str(), want.c_str());
    weir_metrics ma{}, mb{};
    ma.size = mb.size = sizeof ma;
    a.e->metrics(&ma);
    b.e->metrics(&mb);
    assert_int_equal(ma.connections_open, 0);
    assert_int_equal(mb.connections_open, 1);
    assert_int_equal(ma.requests, 1);
    assert_int_equal(mb.requests, 2);
    assert_int_equal(ma.responses + mb.responses, 3);
    uint64_t closes = 0;
    for (uint64_t c : ma.closes)
        closes += c;
    assert_int_equal(closes, 0); // a move is not a close
    g_fakes.clear();
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_worker_port_settle_one_write),
        cmocka_unit_test(test_worker_port_close_waits_for_operations),
        cmocka_unit_test(test_worker_port_deadline_met_in_the_same_pass),
        cmocka_unit_test(test_worker_port_async_close_keeps_slot),
        cmocka_unit_test(test_worker_port_async_close_negative_arm_uncounted),
        cmocka_unit_test(test_worker_port_detach_adopt_across_engines),
    };
    return cmocka_run_group_tests_name("worker_port", tests, nullptr, nullptr);
}
