// Streamed request bodies (cfg.stream_body_bytes, weir_body_read): bodies
// far above the default max_body (lifted: WEIR_BODY_UNLIMITED) read as they arrive, Content-Length and chunked (with
// trailers), inline (on_request again after -EAGAIN) and driven (the handle
// again in a poll batch); requests pipelined behind a body; 100 Continue on
// the host's first read and refused by an answer first (417); an answer
// before the body's end closes (WEIR_CLOSE_BODY_UNREAD); a body that stalls
// (-ETIMEDOUT), breaks (a bad chunk) or loses its peer; the misuse codes.
//
// Arms, each with streaming off (stream_body_bytes 0, the default): the
// same 4 MiB body is a 413; the 100 Continue is sent before the host has
// seen the request, so it cannot refuse the body; and a buffered body is
// held whole by the engine, where a streamed one never has more than its
// buffer's worth waiting (the largest read shows it).
#include <sys/socket.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

uint64_t fnv(uint64_t h, const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
    return h;
}
constexpr uint64_t kFnv0 = 1469598103934665603ull;

struct Upload {
    uint64_t bytes = 0, hash = kFnv0;
    size_t largest = 0;
    int eagains = 0, calls = 0;
};

std::mutex g_mu;
std::map<weir_exchange *, Upload> g_up; // bodies being read
std::vector<int64_t> g_rcs;             // what the interesting calls returned
std::vector<weir_exchange *> g_parked;  // deferred, for the other-thread case
std::string g_trailers;
std::atomic<uint64_t> g_largest{0};

int reset_state(void **) {
    std::lock_guard<std::mutex> lk(g_mu);
    g_up.clear();
    g_rcs.clear();
    g_parked.clear();
    g_trailers.clear();
    g_largest = 0;
    return 0;
}

void record(int64_t rc) {
    std::lock_guard<std::mutex> lk(g_mu);
    g_rcs.push_back(rc);
}

std::vector<int64_t> rcs() {
    std::lock_guard<std::mutex> lk(g_mu);
    return g_rcs;
}

std::string hex(uint64_t v) {
    char b[17];
    std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
    return b;
}

// Reads what is there; answers at the end (or on the error). Returns
// whether the exchange was answered. The worker's thread.
bool pump(weir_exchange *ex, bool answer_errors) {
    static thread_local char buf[1 << 20];
    for (;;) {
        int64_t n = weir_body_read(ex, buf, sizeof buf);
        std::lock_guard<std::mutex> lk(g_mu);
        Upload &u = g_up[ex];
        u.calls++;
        if (n > 0) {
            u.bytes += static_cast<uint64_t>(n);
            u.hash = fnv(u.hash, buf, static_cast<size_t>(n));
            if (static_cast<size_t>(n) > u.largest)
                u.largest = static_cast<size_t>(n);
            if (static_cast<uint64_t>(n) > g_largest)
                g_largest = static_cast<uint64_t>(n);
            continue;
        }
        if (n == -EAGAIN) {
            u.eagains++;
            return false; // handed back when there is more
        }
        Upload done = u;
        g_up.erase(ex);
        if (n == 0) {
            const weir_request *r = weir_exchange_request(ex);
            for (uint32_t i = 0; i < r->num_trailers; i++)
                g_trailers += str(r->trailers[i].name) + "=" + str(r->trailers[i].value) + ";";
            std::string body = std::to_string(done.bytes) + " " + hex(done.hash);
            weir_respond(ex, 200, nullptr, 0, body.data(), body.size(), 0);
            return true;
        }
        g_rcs.push_back(n);
        if (n == WEIR_E_GONE)
            return true; // consumed
        if (answer_errors) {
            int st = n == -ETIMEDOUT ? 408 : weir_http1_status(static_cast<int>(n));
            weir_respond(ex, st ? st : 400, nullptr, 0, "body failed", 11, 0);
        }
        return true;
    }
}

void handler(void *, weir_exchange *ex) {
    bool mine;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        mine = g_up.count(ex) > 0;
    }
    if (mine) { // a body handed back, not a new request
        pump(ex, true);
        return;
    }
    const weir_request *r = weir_exchange_request(ex);
    std::string path = str(r->path);
    bool streamed = (r->flags & WEIR_REQ_BODY_STREAM) != 0;
    if (path == "/upload" && streamed) {
        {
            std::lock_guard<std::mutex> lk(g_mu);
            g_up[ex];
        }
        pump(ex, true);
    } else if (path == "/refuse") {
        answer(ex, 417, "no body, thanks"); // before any read: the 100 is never sent
    } else if (path == "/early") {
        char b[100];
        record(weir_body_read(ex, b, sizeof b)); // some of it, then the answer
        answer(ex, 200, "early");
    } else if (path == "/misuse") {
        char b[16];
        record(weir_body_read(ex, nullptr, 4)); // -EINVAL
        weir_header_t up = {{"Upgrade", 7}, {"x", 1}};
        record(weir_upgrade(ex, &up, 1)); // -EINVAL: a streamed body is no upgrade
        answer(ex, 200, "misuse");
        record(weir_body_read(ex, b, sizeof b)); // WEIR_E_STALE: answered
    } else if (path == "/defer") {
        assert_int_equal(weir_defer(ex), 0);
        std::lock_guard<std::mutex> lk(g_mu);
        g_parked.push_back(ex);
    } else {
        char b[16];
        int64_t rc = weir_body_read(ex, b, sizeof b);
        std::string s = "flags=" + std::to_string(r->flags & WEIR_REQ_BODY_STREAM) +
                        " len=" + std::to_string(r->body.len) + " blen=" + std::to_string(r->body_length) +
                        " read=" + std::to_string(rc) + " body=" + str(r->body);
        answer(ex, 200, s);
    }
}

// Streamed bodies here are far above the default max_body, which holds for
// them too (test_body_limits.cc): a host that streams unbounded uploads says
// so, with WEIR_BODY_UNLIMITED. The buffered arm (stream_over 0) keeps the
// default 1 MiB.
const weir_http1_limits *unlimited() {
    static weir_http1_limits l = [] {
        weir_http1_limits v;
        weir_http1_limits_init(&v);
        v.max_body = WEIR_BODY_UNLIMITED;
        return v;
    }();
    return &l;
}

weir_config cfg(uint32_t stream_over) {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.stream_body_bytes = stream_over;
    if (stream_over)
        c.limits = unlimited();
    return c;
}

std::string body_of(size_t n) {
    std::string b(n, '\0');
    for (size_t i = 0; i < n; i++)
        b[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
    return b;
}

std::string post(const std::string &path, size_t len, const std::string &extra = "") {
    return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(len) + "\r\n" + extra +
           "\r\n";
}

// Sends body in pieces from a thread, so the client reads while it writes.
std::thread send_slowly(Client &c, std::string body, size_t piece, int pause_ms) {
    return std::thread([&c, body = std::move(body), piece, pause_ms] {
        for (size_t off = 0; off < body.size(); off += piece) {
            if (!send_all(c, body.substr(off, piece)))
                return;
            if (pause_ms)
                sleep_ms(pause_ms);
        }
    });
}

std::string expect_upload(const std::string &body) { return std::to_string(body.size()) + " " + hex(fnv(kFnv0, body.data(), body.size())); }

// The rule: a 4 MiB body (max_body is 1 MiB) is read as it arrives; the
// engine never holds more than a buffer's worth of it.
void test_length_body_far_above_max_body(void **) {
    Server s;
    assert_int_equal(s.start(cfg(1)), 0);
    Client c = connect_to(s.port);
    std::string body = body_of(4u << 20);
    assert_true(send_all(c, post("/upload", body.size())));
    std::thread t = send_slowly(c, body, 256 * 1024, 1);
    Response r = read_response(c, bound_ms(20000));
    t.join();
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), expect_upload(body).c_str());
    // read_buffer_size 16 KiB (+ the room a body gets after its head): far from 4 MiB.
    print_message("largest read %llu\n", static_cast<unsigned long long>(g_largest.load()));
    assert_true(g_largest.load() <= 64 * 1024);
    assert_int_equal(s.metrics().parse_errors, 0);
}

// The arm: streaming off, the same body is refused (413), and a body within
// max_body is handed out whole, all of it held by the engine at once.
void test_arm_buffered_bodies(void **) {
    Server s;
    assert_int_equal(s.start(cfg(0)), 0);
    Client c = connect_to(s.port);
    std::string small = body_of(900 * 1024);
    assert_true(send_all(c, post("/plain", small.size()) + small));
    Response r = read_response(c, bound_ms(10000));
    assert_int_equal(r.status, 200);
    std::string want = "flags=0 len=921600 blen=921600 read=" + std::to_string(WEIR_E_STATE);
    assert_true(r.body.rfind(want, 0) == 0);
    Client c2 = connect_to(s.port);
    assert_true(send_all(c2, post("/upload", 4u << 20)));
    assert_int_equal(read_response(c2).status, 413);
}

// Below the threshold a body is buffered as before; at it, streamed.
void test_threshold(void **) {
    Server s;
    assert_int_equal(s.start(cfg(1000)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, post("/plain", 5) + "hello"));
    Response r = read_response(c);
    std::string want = "flags=0 len=5 blen=5 read=" + std::to_string(WEIR_E_STATE) + " body=hello";
    assert_string_equal(r.body.c_str(), want.c_str());
    std::string body = body_of(1000);
    assert_true(send_all(c, post("/upload", body.size()) + body));
    r = read_response(c);
    assert_string_equal(r.body.c_str(), expect_upload(body).c_str());
}

std::string chunked(const std::string &body, size_t piece, const std::string &trailers) {
    std::string out;
    for (size_t off = 0; off < body.size(); off += piece) {
        std::string p = body.substr(off, piece);
        char sz[32];
        std::snprintf(sz, sizeof sz, "%zx;ext=1\r\n", p.size());
        out += sz + p + "\r\n";
    }
    return out + "0\r\n" + trailers + "\r\n";
}

// Chunked, with trailers seen once the body ends; a request pipelined
// behind it (in the same bytes) is answered after it.
void test_chunked_with_trailers_and_pipelined(void **) {
    Server s;
    assert_int_equal(s.start(cfg(1u << 30)), 0); // chunked streams whatever the threshold
    Client c = connect_to(s.port);
    std::string body = body_of(300 * 1024 + 7);
    std::string head = "POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    std::string all = head + chunked(body, 10000, "X-Sum: 42\r\nX-B: b\r\n") + get("/after");
    std::thread t = send_slowly(c, all, 4000, 0);
    Response r = read_response(c, bound_ms(10000));
    t.join();
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), expect_upload(body).c_str());
    Response after = read_response(c);
    if (after.body.find("flags=0 len=0") != 0)
        print_message("after: %d [%s] buf [%s]\n", after.status, after.body.c_str(), c.buf.substr(0, 200).c_str());
    assert_true(after.body.find("flags=0 len=0") == 0);
    std::lock_guard<std::mutex> lk(g_mu);
    assert_string_equal(g_trailers.c_str(), "X-Sum=42;X-B=b;");
}

// Expect: 100-continue: the 100 comes with the host's first read, not
// before; an answer first (417) refuses the body, and the connection closes
// after it (the body may still be on its way).
void test_expect_continue_is_the_hosts(void **) {
    Server s;
    assert_int_equal(s.start(cfg(1u << 30)), 0); // expecting 100 streams whatever the threshold
    Client c = connect_to(s.port);
    assert_true(send_all(c, post("/upload", 5, "Expect: 100-continue\r\n")));
    // The handler read at once (-EAGAIN): the 100 is there.
    int64_t until = now_ms() + 3000;
    while (c.buf.find("\r\n\r\n") == std::string::npos && now_ms() < until && read_some(c))
        sleep_ms(1);
    assert_true(c.buf.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
    c.buf.erase(0, 25);
    assert_true(send_all(c, "hello"));
    Response r = read_response(c);
    assert_string_equal(r.body.c_str(), expect_upload("hello").c_str());

    Client d = connect_to(s.port);
    assert_true(send_all(d, post("/refuse", 1u << 20, "Expect: 100-continue\r\n")));
    Response no = read_response(d);
    assert_int_equal(no.status, 417);
    assert_string_equal(no.header("Connection").c_str(), "close");
    assert_true(wait_closed(d));
    assert_true(d.buf.find("100 Continue") == std::string::npos);
    assert_int_equal(s.wait_closes(WEIR_CLOSE_BODY_UNREAD, 1), 1);
    assert_int_equal(s.metrics().continues_sent, 1);
}

// The arm: streaming off, weir sends the 100 itself as soon as the head is
// in; the handler, called only once the body is whole, cannot refuse it.
void test_arm_continue_sent_by_weir(void **) {
    Server s;
    assert_int_equal(s.start(cfg(0)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, post("/refuse", 10, "Expect: 100-continue\r\n")));
    int64_t until = now_ms() + 3000;
    while (c.buf.find("\r\n\r\n") == std::string::npos && now_ms() < until && read_some(c))
        sleep_ms(1);
    assert_true(c.buf.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
}

// An answer before the body's end: the connection closes after it (counted),
// and the client, still sending, gets the whole answer, not a reset.
void test_answer_before_body_end_closes(void **) {
    Server s;
    assert_int_equal(s.start(cfg(1)), 0);
    Client c = connect_to(s.port);
    std::string body = body_of(2u << 20);
    assert_true(send_all(c, post("/early", body.size()) + body.substr(0, 1000)));
    std::thread t = send_slowly(c, body.substr(1000), 64 * 1024, 1);
    Response r = read_response(c, bound_ms(10000));
    assert_int_equal(r.status, 200);
    assert_string_equal(r.body.c_str(), "early");
    assert_string_equal(r.header("Connection").c_str(), "close");
    assert_true(wait_closed(c, bound_ms(10000)));
    t.join();
    assert_int_equal(s.wait_closes(WEIR_CLOSE_BODY_UNREAD, 1), 1);
    std::vector<int64_t> got = rcs();
    assert_int_equal(got.size(), 1);
    assert_true(got[0] > 0 && got[0] <= 100);
}

// A body that stops arriving: the host waiting on it hears -ETIMEDOUT once
// body_timeout_ms passed, and answers (408 here); then the close.
void test_stalled_body_times_out(void **) {
    weir_config c0 = cfg(1);
    c0.body_timeout_ms = 200;
    Server s;
    assert_int_equal(s.start(c0), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, post("/upload", 1000) + body_of(10)));
    Response r = read_response(c, bound_ms(5000));
    assert_int_equal(r.status, 408);
    assert_true(wait_closed(c));
    std::vector<int64_t> got = rcs();
    assert_int_equal(got.size(), 1);
    assert_int_equal(got[0], -ETIMEDOUT);
    assert_int_equal(s.wait_closes(WEIR_CLOSE_BODY_TIMEOUT, 1), 1);
}

// A chunked body that turns malformed: the data before it, then the error;
// the host's answer (400) closes the connection.
void test_bad_chunk(void **) {
    Server s;
    assert_int_equal(s.start(cfg(1)), 0);
    Client c = connect_to(s.port);
    std::string head = "POST /upload HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_true(send_all(c, head + "5\r\nhello\r\nzz\r\n"));
    Response r = read_response(c);
    assert_int_equal(r.status, 400);
    assert_true(wait_closed(c));
    std::vector<int64_t> got = rcs();
    assert_int_equal(got.size(), 1);
    assert_int_equal(got[0], WEIR_E_BAD_CHUNK);
    assert_int_equal(s.metrics().parse_errors, 1);
}

// The peer half-closes mid-body: -ECONNABORTED, the answer still reaches it.
// It resets: -ECONNABORTED too, or WEIR_E_GONE (consumed) when the socket
// was closed before the host's read.
void test_peer_leaves_mid_body(void **) {
    Server s;
    assert_int_equal(s.start(cfg(1)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, post("/upload", 1000) + body_of(10)));
    sleep_ms(50);
    shutdown(c.fd, SHUT_WR);
    Response r = read_response(c);
    assert_int_equal(r.status, 400); // weir_http1_status(-ECONNABORTED) is 0: the handler's 400
    Client d = connect_to(s.port);
    assert_true(send_all(d, post("/upload", 1000) + body_of(10)));
    sleep_ms(50);
    linger lg = {1, 0};
    setsockopt(d.fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    d.close();
    int64_t until = now_ms() + 3000;
    while (rcs().size() < 2 && now_ms() < until)
        sleep_ms(2);
    std::vector<int64_t> got = rcs();
    assert_int_equal(got.size(), 2);
    assert_int_equal(got[0], -ECONNABORTED);
    assert_true(got[1] == -ECONNABORTED || got[1] == WEIR_E_GONE);
}

// Misuse: NULL buffer, an upgrade, a read after the answer, a read of a
// buffered body, and a read from another thread.
void test_misuse(void **) {
    Server s;
    assert_int_equal(s.start(cfg(1)), 0);
    Client c = connect_to(s.port);
    assert_true(send_all(c, post("/misuse", 10) + body_of(10)));
    Response r = read_response(c);
    assert_string_equal(r.body.c_str(), "misuse");
    std::vector<int64_t> got = rcs();
    assert_int_equal(got.size(), 3);
    assert_int_equal(got[0], -EINVAL);
    assert_int_equal(got[1], -EINVAL);
    assert_int_equal(got[2], WEIR_E_STALE);
    Client d = connect_to(s.port);
    assert_true(send_all(d, post("/defer", 10) + body_of(10)));
    int64_t until = now_ms() + 3000;
    weir_exchange *ex = nullptr;
    while (!ex && now_ms() < until) {
        {
            std::lock_guard<std::mutex> lk(g_mu);
            if (!g_parked.empty())
                ex = g_parked[0];
        }
        sleep_ms(1);
    }
    assert_non_null(ex);
    char b[16];
    assert_int_equal(weir_body_read(ex, b, sizeof b), WEIR_E_STATE); // not the worker's thread
    assert_int_equal(answer(ex, 200, "d"), 0);
    assert_string_equal(read_response(d).body.c_str(), "d");
    assert_int_equal(s.wait_closes(WEIR_CLOSE_BODY_UNREAD, 2), 2); // both answered unread
}

// Driven: the host reads on its polling thread; -EAGAIN, then the handle
// comes back in a batch. The 100 waits for the host's first read.
void test_driven(void **) {
    weir_config c0 = config(1, WEIR_MODE_DRIVEN, nullptr, nullptr);
    c0.stream_body_bytes = 1;
    c0.limits = unlimited();
    Server s;
    assert_int_equal(s.start(c0), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    Client c = connect_to(s.port);
    std::string body = body_of(1u << 20);
    assert_true(send_all(c, post("/upload", body.size(), "Expect: 100-continue\r\n")));
    weir_exchange *out[8], *ex = nullptr;
    int64_t until = now_ms() + bound_ms(5000);
    while (!ex && now_ms() < until) {
        int n = weir_worker_poll(w, out, 8, 10);
        if (n > 0)
            ex = out[0];
    }
    assert_non_null(ex);
    assert_true(stays_silent(c, 100)); // no 100 before the host's read
    static char buf[1 << 16];
    assert_int_equal(weir_body_read(ex, buf, sizeof buf), -EAGAIN);
    int64_t u2 = now_ms() + 3000;
    while (c.buf.find("\r\n\r\n") == std::string::npos && now_ms() < u2 && read_some(c))
        assert_int_equal(weir_worker_poll(w, out, 8, 5), 0); // the loop runs while the host polls
    assert_true(c.buf.rfind("HTTP/1.1 100 Continue\r\n\r\n", 0) == 0);
    c.buf.erase(0, 25);
    std::thread t = send_slowly(c, body, 128 * 1024, 2);
    uint64_t bytes = 0, hash = kFnv0;
    int handbacks = 0;
    bool done = false;
    until = now_ms() + bound_ms(20000);
    while (!done && now_ms() < until) {
        int n = weir_worker_poll(w, out, 8, 10);
        assert_true(n >= 0);
        for (int i = 0; i < n; i++) {
            assert_true(out[i] == ex);
            handbacks++;
        }
        if (n == 0)
            continue;
        for (;;) {
            int64_t k = weir_body_read(ex, buf, sizeof buf);
            if (k > 0) {
                bytes += static_cast<uint64_t>(k);
                hash = fnv(hash, buf, static_cast<size_t>(k));
                continue;
            }
            if (k == 0) {
                std::string a = std::to_string(bytes) + " " + hex(hash);
                assert_int_equal(weir_respond(ex, 200, nullptr, 0, a.data(), a.size(), 0), 0);
                done = true;
            } else {
                assert_int_equal(k, -EAGAIN);
            }
            break;
        }
    }
    t.join();
    assert_true(done);
    assert_true(handbacks > 1);
    std::atomic<bool> got{false};
    std::thread poller([&] { // the loop runs while the host polls: the answer leaves
        while (weir_worker_poll(w, out, 8, 10) >= 0 && !got) {
        }
    });
    Response r = read_response(c);
    got = true;
    poller.join();
    assert_string_equal(r.body.c_str(), expect_upload(body).c_str());
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_length_body_far_above_max_body, reset_state),
        cmocka_unit_test_setup(test_arm_buffered_bodies, reset_state),
        cmocka_unit_test_setup(test_threshold, reset_state),
        cmocka_unit_test_setup(test_chunked_with_trailers_and_pipelined, reset_state),
        cmocka_unit_test_setup(test_expect_continue_is_the_hosts, reset_state),
        cmocka_unit_test_setup(test_arm_continue_sent_by_weir, reset_state),
        cmocka_unit_test_setup(test_answer_before_body_end_closes, reset_state),
        cmocka_unit_test_setup(test_stalled_body_times_out, reset_state),
        cmocka_unit_test_setup(test_bad_chunk, reset_state),
        cmocka_unit_test_setup(test_peer_leaves_mid_body, reset_state),
        cmocka_unit_test_setup(test_misuse, reset_state),
        cmocka_unit_test_setup(test_driven, reset_state),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
