// Hot upgrade inside one process (docs/upgrade.md): engine A offers, engine
// B takes over through the same Unix socket a successor process would use,
// so every path of the protocol runs under the sanitizers. The black-box
// test across processes and 20 upgrades is tests/scripts/demo_handover.sh.
//   - keep-alive clients, idle or with a deferred answer out, move to B at
//     their boundaries and keep their TCP connections; pipelined bytes read
//     by A follow their connection; the ledgers balance: A sent == B
//     received, nothing returned, lost or closed, A closed no connection;
//     a new connection after DONE is B's. Both backends each way.
//   - a carryover larger than one message (cut, then More messages).
//   - refused: a successor of another protocol (WEIR_HANDOVER_TEST_PROTO)
//     gets WEIR_E_HANDOVER_VERSION, A fails with it and serves on.
//   - a successor that hangs up after taking some images without
//     acknowledging them: A gets every one back (returned) and serves them
//     on the same TCP connections; its listeners are heard again. This is
//     the rule "nothing leaves before the Ack"; the arm without it is the
//     listeners-only test's loss.
//   - an offerer that vanishes before Done: the successor accepts at once
//     on the listeners it took, and counts in `lost` what the offerer last
//     said it held.
//   - listeners only (the arm): keep-alive clients see a FIN, counted in A's
//     `closed` and in closes[WEIR_CLOSE_HANDOVER]; B receives nothing.
//   - the deadline: an exchange never answered is closed at it, counted.
//   - misuse: NULL, states, a second offer, a transplant during one,
//     listen_fds with sockets that are not listeners, nobody offering.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "handover/wire.h"
#include "loop/listener.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/handover_ptr.h"
#include "support/net.h"

using namespace testnet;

namespace {

std::atomic<weir_exchange *> g_deferred{nullptr};

void handler(void *user, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    std::string path = str(r->path);
    if (path == "/defer") {
        weir_defer(ex);
        g_deferred = ex;
        return;
    }
    answer(ex, 200, std::string(static_cast<const char *>(user)) + " " + path);
}

weir_config cfg_for(uint32_t backend, const char *name, uint32_t workers = 2) {
    weir_config c = config(workers, WEIR_MODE_INLINE, handler, const_cast<char *>(name));
    c.backend = backend;
    return c;
}

uint32_t other(uint32_t b) { return b == WEIR_BACKEND_URING ? WEIR_BACKEND_EPOLL : WEIR_BACKEND_URING; }

std::string sock_path() {
    static int n = 0;
    return "/tmp/weir-test-handover-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".sock";
}

weir_handover_options opts(uint32_t flags = 0, uint32_t deadline_ms = 0, uint32_t wait_ms = 5000) {
    weir_handover_options o{};
    o.size = sizeof o;
    o.flags = flags;
    o.deadline_ms = deadline_ms;
    o.wait_ms = wait_ms;
    return o;
}

weir_handover_stats stats_of(weir_handover *h) {
    weir_handover_stats s{};
    s.size = sizeof s;
    assert_int_equal(weir_handover_stats_get(h, &s), 0);
    return s;
}

// B takes over from path (create, take over, start) into b; returns its handle.
HandoverPtr take_over(Server &b, const weir_config &cfg, const std::string &path, int want = 0) {
    int rc = create(cfg, &b.e);
    assert_int_equal(rc, 0);
    weir_handover_options o = opts();
    weir_handover *h = nullptr;
    rc = weir_handover_take_over(b.e, path.c_str(), &o, &h);
    assert_int_equal(rc, want);
    if (rc < 0)
        return nullptr;
    assert_int_equal(engine_port(b.e, &b.port), 0);
    assert_int_equal(weir_engine_start(b.e), 0);
    return HandoverPtr(h);
}

// n keep-alive clients of A's port, each served one GET by A.
std::vector<Client> served_by_a(uint16_t port, int n) {
    std::vector<Client> cl;
    for (int i = 0; i < n; i++) {
        cl.push_back(connect_to(port));
        assert_true(send_all(cl[i], get("/one")));
        assert_string_equal(read_response(cl[i]).body.c_str(), "A /one");
    }
    return cl;
}

// A client whose GET /defer the handler holds (g_deferred).
Client deferred_client(uint16_t port) {
    g_deferred = nullptr;
    Client busy = connect_to(port);
    assert_true(send_all(busy, get("/defer")));
    for (int64_t until = now_ms() + 3000; !g_deferred.load() && now_ms() < until;)
        sleep_ms(1);
    assert_non_null(g_deferred.load());
    return busy;
}

HandoverPtr offer(Server &a, const std::string &path, const weir_handover_options &o) {
    weir_handover *h = nullptr;
    assert_int_equal(weir_handover_offer(a.e, path.c_str(), &o, &h), 0);
    return HandoverPtr(h);
}

uint64_t total_closes(const weir_metrics &m) {
    uint64_t n = 0;
    for (uint64_t c : m.closes)
        n += c;
    return n;
}

void moves(uint32_t from, uint32_t to) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(from, "A")), 0);
    constexpr int kClients = 16;
    std::vector<Client> cl = served_by_a(a.port, kClients);
    // One in flight: its answer is A's to give, then it moves.
    Client busy = deferred_client(a.port);

    std::string path = sock_path();
    weir_handover_options o = opts();
    HandoverPtr ha = offer(a, path, o);
    assert_int_equal(stats_of(ha.get()).state, WEIR_HANDOVER_WAITING);
    HandoverPtr hb = take_over(b, cfg_for(to, "B"), path);
    assert_int_equal(b.port, a.port); // the same sockets

    // Pipelined behind the deferred answer: read by A, it travels with the image.
    assert_true(send_all(busy, get("/p1") + get("/p2")));
    assert_int_equal(weir_respond(g_deferred.load(), 200, nullptr, 0, "A /defer", 8, 0), 0);
    assert_string_equal(read_response(busy).body.c_str(), "A /defer");
    for (const char *p : {"/p1", "/p2"}) {
        std::string body = read_response(busy).body;
        assert_true(body == std::string("A ") + p || body == std::string("B ") + p);
    }
    assert_int_equal(weir_handover_wait(ha.get(), 5000000000LL), 0);
    assert_int_equal(weir_handover_wait(hb.get(), 5000000000LL), 0);
    for (int i = 0; i < kClients; i++) {
        assert_true(send_all(cl[i], get("/two")));
        assert_string_equal(read_response(cl[i]).body.c_str(), "B /two");
    }
    assert_true(send_all(busy, get("/after")));
    assert_string_equal(read_response(busy).body.c_str(), "B /after");
    Client late = connect_to(a.port);
    assert_true(send_all(late, get("/new")));
    assert_string_equal(read_response(late).body.c_str(), "B /new");

    weir_handover_stats sa = stats_of(ha.get()), sb = stats_of(hb.get());
    assert_int_equal(sa.state, WEIR_HANDOVER_DONE);
    assert_int_equal(sb.state, WEIR_HANDOVER_DONE);
    assert_int_equal(sa.listeners, 2);
    assert_int_equal(sb.listeners, 2);
    assert_int_equal(sa.sent, kClients + 1);
    assert_int_equal(sb.received, sa.sent);
    assert_int_equal(sa.returned + sa.closed + sb.refused + sb.lost, 0);
    assert_int_equal(total_closes(a.metrics()), 0); // nobody was closed in A
    weir_metrics mb = b.metrics();
    assert_int_equal(mb.transplant_received, kClients + 1);
}

void test_moves_epoll_to_epoll(void **) { moves(WEIR_BACKEND_EPOLL, WEIR_BACKEND_EPOLL); }
void test_moves_to_other_backend(void **) { moves(test_backend(), other(test_backend())); }
void test_moves_uring_to_uring(void **) { moves(WEIR_BACKEND_URING, WEIR_BACKEND_URING); }

// More unread bytes than one message holds: the image is cut and its rest
// follows in More messages. 3,000 pipelined GETs behind a deferred answer:
// the pipeline takes 64, the rest waits in A's 256 KiB read buffer.
void test_large_carryover_is_cut(void **) {
    Server a, b;
    weir_config ca = cfg_for(test_backend(), "A", 1);
    ca.read_buffer_size = 256 * 1024;
    assert_int_equal(a.start(ca), 0);
    Client busy = deferred_client(a.port);
    constexpr int kPipelined = 3000;
    std::string burst;
    for (int i = 0; i < kPipelined; i++)
        burst += get("/p" + std::to_string(i));
    assert_true(burst.size() > weir::handover::kMaxMsg);
    assert_true(send_all(busy, burst));
    std::string path = sock_path();
    weir_handover_options o = opts();
    HandoverPtr ha = offer(a, path, o);
    HandoverPtr hb = take_over(b, cfg_for(test_backend(), "B", 1), path);
    for (int64_t until = now_ms() + 3000; stats_of(ha.get()).state != WEIR_HANDOVER_MOVING && now_ms() < until;)
        sleep_ms(1);
    sleep_ms(50); // the workers act on the move in their next pass
    assert_int_equal(weir_respond(g_deferred.load(), 200, nullptr, 0, "A /defer", 8, 0), 0);
    assert_string_equal(read_response(busy).body.c_str(), "A /defer");
    int by_b = 0;
    for (int i = 0; i < kPipelined; i++) {
        std::string body = read_response(busy).body, p = "/p" + std::to_string(i);
        assert_true(body == "A " + p || body == "B " + p);
        by_b += body[0] == 'B';
    }
    assert_true(by_b > 2000); // what A had not parsed went with the image
    assert_int_equal(weir_handover_wait(ha.get(), 5000000000LL), 0);
    assert_int_equal(stats_of(ha.get()).sent, 1);
}

void test_version_refused(void **) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    Client c = connect_to(a.port);
    std::string path = sock_path();
    weir_handover_options o = opts();
    HandoverPtr ha = offer(a, path, o);
    ::setenv("WEIR_HANDOVER_TEST_PROTO", "99", 1);
    HandoverPtr hb = take_over(b, cfg_for(test_backend(), "B"), path, WEIR_E_HANDOVER_VERSION);
    ::unsetenv("WEIR_HANDOVER_TEST_PROTO");
    assert_null(hb.get());
    assert_int_equal(weir_handover_wait(ha.get(), 5000000000LL), WEIR_E_HANDOVER_VERSION);
    assert_true(send_all(c, get("/still")));
    assert_string_equal(read_response(c).body.c_str(), "A /still");
    // The refused offer is over: another may follow.
    ha.reset();
    ha = offer(a, path, o);
}

// A successor written by hand: takes the listeners and `images` images, acks
// none, hangs up. Returns the images it saw.
size_t fake_successor_hangs_up(const std::string &path, size_t images) {
    using namespace weir::handover;
    int s = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
    assert_int_equal(::connect(s, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
    HelloBody hb{kProto, kProto, ::getpid(), 2};
    assert_int_equal(send_msg(s, Type::Hello, &hb, sizeof hb, nullptr, 0, nullptr, 0, 0), 0);
    auto m = std::make_unique<Msg>();
    assert_int_equal(wait_readable(s, 5000), 0);
    assert_int_equal(recv_msg(s, *m, 0), 0);
    assert_int_equal(static_cast<int>(m->type()), static_cast<int>(Type::Offer));
    assert_int_equal(m->nfds, 2);
    m->close_fds(); // our copies of the listeners: A's stay open
    assert_int_equal(send_msg(s, Type::Ready, nullptr, 0, nullptr, 0, nullptr, 0, 0), 0);
    size_t got = 0;
    while (got < images && wait_readable(s, 5000) == 0 && recv_msg(s, *m, 0) == 0) {
        if (m->type() == Type::Image)
            got += m->nfds; // one message may carry many
        m->close_fds(); // as a crash would: A's copies keep the connections
    }
    ::close(s);
    return got;
}

void test_successor_hangs_up_everything_returns(void **) {
    Server a;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    constexpr int kClients = 8;
    std::vector<Client> cl = served_by_a(a.port, kClients);
    std::string path = sock_path();
    weir_handover_options o = opts();
    HandoverPtr ha = offer(a, path, o);
    assert_int_equal(fake_successor_hangs_up(path, kClients), kClients);
    int rc = weir_handover_wait(ha.get(), 5000000000LL);
    assert_true(rc == -EPIPE || rc == -ECONNRESET);
    weir_handover_stats sa = stats_of(ha.get());
    assert_int_equal(sa.state, WEIR_HANDOVER_FAILED);
    assert_int_equal(sa.sent, 0);
    assert_int_equal(sa.returned, kClients);
    for (int i = 0; i < kClients; i++) { // the same TCP connections, served by A
        assert_true(send_all(cl[i], get("/back")));
        assert_string_equal(read_response(cl[i]).body.c_str(), "A /back");
    }
    Client late = connect_to(a.port); // the listeners are heard again
    assert_true(send_all(late, get("/new")));
    assert_string_equal(read_response(late).body.c_str(), "A /new");
    assert_int_equal(total_closes(a.metrics()), 0);
}

// An offerer written by hand: gives the successor one real listener, says it
// holds `holding` connections, sends none, and vanishes.
void fake_offerer_vanishes(const std::string &path, int listener, uint64_t holding) {
    using namespace weir::handover;
    int ls = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un sa{};
    sa.sun_family = AF_UNIX;
    std::snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path.c_str());
    assert_int_equal(::bind(ls, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
    assert_int_equal(::listen(ls, 1), 0);
    std::thread t([&] {
        int s = ::accept(ls, nullptr, nullptr);
        auto m = std::make_unique<Msg>();
        if (s < 0 || wait_readable(s, 5000) != 0 || recv_msg(s, *m, 0) != 0 || m->type() != Type::Hello)
            return;
        OfferBody ob{1, ::getpid()};
        send_msg(s, Type::Offer, &ob, sizeof ob, nullptr, 0, &listener, 1, 0);
        if (wait_readable(s, 5000) == 0)
            recv_msg(s, *m, 0); // Ready
        CountBody c{holding};
        send_msg(s, Type::Holding, &c, sizeof c, nullptr, 0, nullptr, 0, 0);
        ::close(s); // gone before Done: what it held is lost
    });
    Server b;
    HandoverPtr hb = take_over(b, cfg_for(test_backend(), "B", 1), path);
    t.join();
    ::close(ls);
    ::unlink(path.c_str());
    int rc = weir_handover_wait(hb.get(), 5000000000LL);
    assert_true(rc == -ECONNRESET || rc == -EPIPE);
    weir_handover_stats sb = stats_of(hb.get());
    assert_int_equal(sb.state, WEIR_HANDOVER_FAILED);
    assert_int_equal(sb.lost, holding); // counted where it can be seen
    assert_int_equal(sb.received, 0);
    // The listener is B's alone now, and heard.
    Client c = connect_to(b.port);
    assert_true(send_all(c, get("/alone")));
    assert_string_equal(read_response(c).body.c_str(), "B /alone");
}

void test_offerer_vanishes_lost_counted(void **) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    assert_int_equal(weir::resolve_numeric("127.0.0.1", 0, &ss, &len), 0);
    weir::ListenOptions lo;
    int fd = weir::listener_open(ss, len, lo);
    assert_true(fd >= 0);
    fake_offerer_vanishes(sock_path(), fd, 3);
    ::close(fd); // our copy; B has its own
}

void test_listeners_only_closes(void **) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    constexpr int kClients = 6;
    std::vector<Client> cl = served_by_a(a.port, kClients);
    std::string path = sock_path();
    weir_handover_options o = opts(WEIR_HANDOVER_LISTENERS_ONLY);
    HandoverPtr ha = offer(a, path, o);
    HandoverPtr hb = take_over(b, cfg_for(test_backend(), "B"), path);
    assert_int_equal(weir_handover_wait(ha.get(), 5000000000LL), 0);
    for (int i = 0; i < kClients; i++)
        assert_true(wait_closed(cl[i], 3000)); // the loss this arm shows
    weir_handover_stats sa = stats_of(ha.get());
    assert_int_equal(sa.closed, kClients);
    assert_int_equal(sa.sent, 0);
    assert_int_equal(a.metrics().closes[WEIR_CLOSE_HANDOVER], kClients);
    assert_int_equal(weir_handover_wait(hb.get(), 5000000000LL), 0);
    assert_int_equal(stats_of(hb.get()).received, 0);
    Client late = connect_to(a.port);
    assert_true(send_all(late, get("/new")));
    assert_string_equal(read_response(late).body.c_str(), "B /new");
}

void test_deadline_closes_what_holds(void **) {
    Server a, b;
    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    Client busy = deferred_client(a.port);
    weir_exchange *stuck = g_deferred.load();
    Client idle = connect_to(a.port);
    assert_true(send_all(idle, get("/one")));
    assert_string_equal(read_response(idle).body.c_str(), "A /one");
    std::string path = sock_path();
    weir_handover_options o = opts(0, 300);
    HandoverPtr ha = offer(a, path, o);
    HandoverPtr hb = take_over(b, cfg_for(test_backend(), "B"), path);
    int64_t t0 = now_ms();
    assert_int_equal(weir_handover_wait(ha.get(), 5000000000LL), 0);
    assert_true(now_ms() - t0 >= 250); // not before the deadline
    assert_true(wait_closed(busy, 3000));
    weir_handover_stats sa = stats_of(ha.get());
    assert_int_equal(sa.closed, 1);
    assert_int_equal(sa.sent, 1);
    assert_int_equal(weir_respond(stuck, 200, nullptr, 0, "late", 4, 0), WEIR_E_GONE);
    assert_true(send_all(idle, get("/two")));
    assert_string_equal(read_response(idle).body.c_str(), "B /two");
}

void test_misuse(void **) {
    Server a, b;
    weir_handover_options o = opts(0, 0, 100);
    weir_handover *h = nullptr;
    weir_engine *fresh = nullptr;
    assert_int_equal(create(cfg_for(test_backend(), "F"), &fresh), 0);
    std::string path = sock_path();
    assert_int_equal(weir_handover_offer(nullptr, path.c_str(), &o, &h), -EINVAL);
    assert_int_equal(weir_handover_offer(fresh, path.c_str(), &o, &h), WEIR_E_STATE); // not listening
    assert_int_equal(weir_handover_take_over(fresh, path.c_str(), &o, &h), -ENOENT);  // nobody offers
    weir_handover_options bad = o;
    bad.size = 3;
    assert_int_equal(weir_handover_take_over(fresh, path.c_str(), &bad, &h), -EINVAL);
    assert_int_equal(weir_handover_offer(fresh, std::string(200, 'x').c_str(), &o, &h), WEIR_E_STATE);
    int pair[2];
    assert_int_equal(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
    assert_int_equal(weir_engine_listen_fds(fresh, pair, 1), -EINVAL); // not a TCP listener (closed)
    ::close(pair[1]);
    assert_int_equal(weir_engine_listen_fds(fresh, nullptr, 1), -EINVAL);
    weir_engine_destroy(fresh);

    assert_int_equal(a.start(cfg_for(test_backend(), "A")), 0);
    assert_int_equal(weir_handover_offer(a.e, std::string(200, 'x').c_str(), &o, &h), -EINVAL);
    assert_int_equal(weir_handover_offer(a.e, path.c_str(), &o, &h), 0);
    HandoverPtr ha(h);
    weir_handover *h2 = nullptr;
    assert_int_equal(weir_handover_offer(a.e, (path + "2").c_str(), &o, &h2), WEIR_E_STATE); // one at a time
    assert_int_equal(b.start(cfg_for(test_backend(), "B")), 0);
    assert_int_equal(weir_engine_transplant(a.e, b.e, 0), WEIR_E_STATE);
    assert_int_equal(weir_handover_take_over(b.e, path.c_str(), &o, &h2), WEIR_E_STATE); // b listens
    // Nobody came within wait_ms: the offer ends, the engine serves on.
    assert_int_equal(weir_handover_wait(ha.get(), 5000000000LL), -ETIMEDOUT);
    assert_int_equal(stats_of(ha.get()).state, WEIR_HANDOVER_FAILED);
    assert_int_equal(::access(path.c_str(), F_OK), -1); // the socket file is gone
    assert_int_equal(weir_handover_wait(nullptr, 0), -EINVAL);
    weir_handover_stats s{};
    assert_int_equal(weir_handover_stats_get(ha.get(), &s), -EINVAL); // size 0
    weir_handover_free(nullptr);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moves_epoll_to_epoll),
        cmocka_unit_test(test_moves_to_other_backend),
        cmocka_unit_test(test_moves_uring_to_uring),
        cmocka_unit_test(test_large_carryover_is_cut),
        cmocka_unit_test(test_version_refused),
        cmocka_unit_test(test_successor_hangs_up_everything_returns),
        cmocka_unit_test(test_offerer_vanishes_lost_counted),
        cmocka_unit_test(test_listeners_only_closes),
        cmocka_unit_test(test_deadline_closes_what_holds),
        cmocka_unit_test(test_misuse),
    };
    return cmocka_run_group_tests_name("handover", tests, nullptr, nullptr);
}
