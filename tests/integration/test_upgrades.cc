// Upgrades (weir_upgrade, weir_upgrade_raw, weir_upgrade_take): the 101 leaves after the
// answers before it, the connection is handed back and taken with the bytes
// that came past the request, and then it is the host's (an echo here);
// an Upgrade request answered 200 stays HTTP (what follows is parsed); a
// request that did not ask cannot be upgraded; a client that leaves before
// the take gives WEIR_E_GONE. Inline and driven, on both backends.
//
// The rule's arm: what follows an Upgrade request is not parsed as HTTP
// until its answer says which protocol follows. test_upgrade_bytes_not_parsed
// sends bytes after it that are also a valid HTTP request: upgraded, they
// reach the host raw; parsed, they would have been a second request.
// test_upgrade_raw*: weir_upgrade_raw writes no 101 (the host writes its
// own on the socket it takes, a Hijack): the client's first bytes after the
// answer before it are the host's; the posted arm gives it from a foreign
// thread.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

std::mutex g_mu;
std::vector<std::string> g_unread; // what each take gave
std::vector<int> g_fds;            // taken sockets
std::vector<int> g_rcs;
std::atomic<int> g_requests{0};

int reset_state(void **) {
    std::lock_guard<std::mutex> lk(g_mu);
    for (int fd : g_fds)
        ::close(fd);
    g_fds.clear();
    g_unread.clear();
    g_rcs.clear();
    g_requests = 0;
    return 0;
}

// Takes an upgraded connection handed back; returns whether ex was one.
bool take(weir_exchange *ex) {
    int fd = -1;
    char buf[4096];
    size_t len = 0;
    int rc = weir_upgrade_take(ex, &fd, buf, 1, &len);
    if (rc == WEIR_E_STATE)
        return false; // a new request
    std::lock_guard<std::mutex> lk(g_mu);
    if (rc == -ENOBUFS) { // cap 1 was too small for the early bytes: call again with room
        g_rcs.push_back(rc);
        rc = weir_upgrade_take(ex, &fd, buf, sizeof buf, &len);
    }
    g_rcs.push_back(rc);
    if (rc == 0) {
        g_fds.push_back(fd);
        g_unread.emplace_back(buf, len);
        g_rcs.push_back(weir_upgrade_take(ex, &fd, buf, sizeof buf, &len)); // WEIR_E_STALE
    }
    return true;
}

void serve(weir_exchange *ex) {
    if (take(ex))
        return;
    g_requests++;
    const weir_request *r = weir_exchange_request(ex);
    std::string path = str(r->path);
    weir_header_t up = {{"Upgrade", 7}, {"echo", 4}};
    if (path == "/ws") {
        int rc = weir_upgrade(ex, &up, 1);
        std::lock_guard<std::mutex> lk(g_mu);
        g_rcs.push_back(rc);
        g_rcs.push_back(weir_upgrade_take(ex, nullptr, nullptr, 0, nullptr)); // -EINVAL
    } else if (path == "/raw") {
        int rc = weir_upgrade_raw(ex);
        std::lock_guard<std::mutex> lk(g_mu);
        g_rcs.push_back(rc);
    } else if (path == "/raw-posted") {
        int rc = 1;
        std::thread t([&] { rc = weir_upgrade_raw(ex); }); // not the worker's thread: posted
        t.join();
        std::lock_guard<std::mutex> lk(g_mu);
        g_rcs.push_back(rc);
    } else if (path == "/no") {
        int rc = weir_upgrade(ex, &up, 1); // the client did not ask
        std::lock_guard<std::mutex> lk(g_mu);
        g_rcs.push_back(rc);
        g_rcs.push_back(weir_upgrade_raw(ex)); // nor raw
        answer(ex, 200, "plain");
    } else {
        answer(ex, 200, path);
    }
}

void handler(void *, weir_exchange *ex) { serve(ex); }

const char *kUpgradeHead = "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n";

std::vector<int> rcs() {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_rcs;
}

bool wait_taken(size_t n) {
    int64_t until = now_ms() + 3000;
    while (now_ms() < until) {
        {
            std::lock_guard<std::mutex> lk(g_mu);
            if (g_fds.size() >= n)
                return true;
        }
        sleep_ms(1);
    }
    return false;
}

// Runs pump on a thread of its own until stop (or the end of the scope).
class Driver {
  public:
    explicit Driver(std::function<void()> pump) : t_([this, pump] {
        while (!done_)
            pump();
    }) {}
    ~Driver() { stop(); }
    void stop() {
        done_ = true;
        if (t_.joinable())
            t_.join();
    }

  private:
    std::atomic<bool> done_{false};
    std::thread t_;
};

// The whole flow: /a before it is answered first, the 101 follows, the
// early bytes come with the take, and the socket is then the host's.
void flow(Server &s, std::function<void()> pump) {
    Client c = connect_to(s.port);
    Driver driver(pump);
    assert_true(send_all(c, get("/a") + kUpgradeHead + "EARLY GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    Response a = read_response(c);
    assert_string_equal(a.body.c_str(), "/a");
    Response up = read_response(c);
    assert_int_equal(up.status, 101);
    assert_true(up.head.find("Connection: upgrade\r\n") != std::string::npos);
    assert_true(up.head.find("Upgrade: echo\r\n") != std::string::npos);
    bool got = wait_taken(1);
    driver.stop();
    assert_true(got);
    std::string early;
    int fd;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        early = g_unread[0];
        fd = g_fds[0];
    }
    // The rule: the bytes after the Upgrade request reached the host raw,
    // though they hold a valid HTTP request; only /a and /ws were requests.
    assert_string_equal(early.c_str(), "EARLY GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(g_requests.load(), 2);
    // The connection is the host's now: it writes raw bytes, and reads.
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    assert_int_equal(::write(fd, "raw!", 4), 4);
    assert_true(read_some(c) || true);
    int64_t until = now_ms() + 2000;
    while (c.buf.find("raw!") == std::string::npos && now_ms() < until) {
        read_some(c);
        sleep_ms(1);
    }
    assert_true(c.buf.find("raw!") != std::string::npos);
    assert_true(send_all(c, "ping"));
    char b[8] = {};
    assert_int_equal(::read(fd, b, 4), 4);
    assert_string_equal(b, "ping");
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_UPGRADED], 1);
    assert_int_equal(s.metrics().connections_open, 0);
    auto got_rcs = rcs();
    // upgrade 0, take(no args) -EINVAL, take(cap 1) -ENOBUFS, take 0, take again STALE
    assert_int_equal(got_rcs.size(), 5);
    assert_int_equal(got_rcs[0], 0);
    assert_int_equal(got_rcs[1], -EINVAL);
    assert_int_equal(got_rcs[2], -ENOBUFS);
    assert_int_equal(got_rcs[3], 0);
    assert_int_equal(got_rcs[4], WEIR_E_STALE);
}

void test_upgrade_inline(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    flow(s, [] { sleep_ms(1); });
}

void test_upgrade_driven(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_DRIVEN, nullptr, nullptr)), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    flow(s, [w] {
        weir_exchange *out[8];
        int n = weir_worker_poll(w, out, 8, 5);
        for (int i = 0; i < n; i++)
            serve(out[i]);
    });
}

// Answered 200, an Upgrade request stays HTTP: what follows is parsed.
void test_upgrade_declined_stays_http(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    Client c = connect_to(s.port);
    std::string head = "GET /declined HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n";
    assert_true(send_all(c, head + get("/next")));
    assert_string_equal(read_response(c).body.c_str(), "/declined");
    assert_string_equal(read_response(c).body.c_str(), "/next");
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_UPGRADED], 0);
}

void test_upgrade_not_asked(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, get("/no")));
    assert_string_equal(read_response(c).body.c_str(), "plain");
    auto got = rcs();
    assert_int_equal(got.size(), 2);
    assert_int_equal(got[0], -EINVAL);
    assert_int_equal(got[1], -EINVAL);
    assert_int_equal(weir_upgrade_raw(nullptr), -EINVAL);
}

// Raw: after /a's answer the client reads only what the host writes on the
// taken socket (its own 101); the early bytes come with the take as before.
void raw_flow(Server &s, const char *path, std::function<void()> pump) {
    Client c = connect_to(s.port);
    std::string head = std::string("GET ") + path + " HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: echo\r\n\r\n";
    Driver driver(pump);
    assert_true(send_all(c, get("/a") + head + "EARLY"));
    Response a = read_response(c);
    assert_string_equal(a.body.c_str(), "/a");
    bool got = wait_taken(1);
    driver.stop();
    assert_true(got);
    int fd;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        assert_string_equal(g_unread[0].c_str(), "EARLY");
        fd = g_fds[0];
    }
    const char *mine = "HTTP/1.1 101 Mine\r\nUpgrade: echo\r\n\r\n";
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    assert_int_equal(::write(fd, mine, strlen(mine)), (ssize_t)strlen(mine));
    int64_t until = now_ms() + 2000;
    while (c.buf.size() < strlen(mine) && now_ms() < until) {
        read_some(c);
        sleep_ms(1);
    }
    // The rule: weir wrote nothing for the raw upgrade (its own 101 would
    // come first, "HTTP/1.1 101 Switching Protocols").
    assert_string_equal(c.buf.c_str(), mine);
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_UPGRADED], 1);
    auto got_rcs = rcs();
    assert_true(got_rcs.size() >= 2);
    assert_int_equal(got_rcs[0], 0); // weir_upgrade_raw
}

void test_upgrade_raw(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    raw_flow(s, "/raw", [] { sleep_ms(1); });
}

void test_upgrade_raw_posted(void **) {
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_DRIVEN, nullptr, nullptr)), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    raw_flow(s, "/raw-posted", [w] {
        weir_exchange *out[8];
        int n = weir_worker_poll(w, out, 8, 5);
        for (int i = 0; i < n; i++)
            serve(out[i]);
    });
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_upgrade_inline, reset_state, reset_state),
        cmocka_unit_test_setup_teardown(test_upgrade_driven, reset_state, reset_state),
        cmocka_unit_test_setup_teardown(test_upgrade_declined_stays_http, reset_state, reset_state),
        cmocka_unit_test_setup_teardown(test_upgrade_not_asked, reset_state, reset_state),
        cmocka_unit_test_setup_teardown(test_upgrade_raw, reset_state, reset_state),
        cmocka_unit_test_setup_teardown(test_upgrade_raw_posted, reset_state, reset_state),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
