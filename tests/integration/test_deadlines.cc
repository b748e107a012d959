// Deadlines that bind (issue 32), on each backend. Every idle timer is set
// long here (seconds) and every client keeps making progress (a byte sent,
// or read, every half unit), so only the binding deadline can cut it:
//   - a trickled head, cut by request_timeout_ms: answered 408, then a FIN
//     (not a reset), counted request_timeout. Arm: request_timeout_ms off,
//     the same client is still open and sending at three deadlines;
//   - a body trickled below min_body_rate, cut at the end of its window:
//     408, slow_body. Arm: the rate off, still open at three windows;
//   - a body above the rate that takes longer than request_timeout_ms: 408,
//     request_timeout (the budget is the head's and the body's together);
//   - a reader that reads its answer below min_send_rate: closed,
//     slow_reader, while it was still reading. Arm: the rate off, still
//     served at three windows;
//   - a streamed body the host waits on, trickled below the rate: the
//     host's read says -ETIMEDOUT, it answers 408, the client reads it;
//   - a host that reads a streamed body slowly (driven mode): not cut,
//     though the whole takes several request deadlines and windows (time
//     the host holds the body is not charged to the client);
//   - a host that produces a streamed answer slowly: not cut by the send
//     rate (time with nothing queued is not charged).
// Times are in a unit measured at the start of each test (the scheduler's
// lateness on this machine now), so a loaded machine stretches them all.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

// The idle timers: never what cuts in these tests (a unit stretched by a
// stalled machine stretches them too).
uint32_t long_ms(int u) { return std::max<uint32_t>(20000, static_cast<uint32_t>(40 * u)); }

std::string g_huge(8u << 20, 'h');

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (str(r->path) == "/huge")
        weir_respond(ex, 200, nullptr, 0, g_huge.data(), g_huge.size(), 0);
    else
        answer(ex, 200, std::to_string(r->body.len));
}

// The unit: 40 ms, or four times the worst lateness of ten 5 ms sleeps
// measured now, whichever is more (scaled under the sanitizers).
int unit_ms() {
    int64_t worst = 0;
    for (int i = 0; i < 10; i++) {
        int64_t t = now_ms();
        sleep_ms(5);
        worst = std::max(worst, now_ms() - t - 5);
    }
    int u = std::max<int>(bound_ms(40), static_cast<int>(4 * worst));
    print_message("unit %d ms (worst sleep lateness %lld ms)\n", u, static_cast<long long>(worst));
    return u;
}

weir_config base(uint32_t mode, int u) {
    weir_config c = config(1, mode, mode == WEIR_MODE_INLINE ? handler : nullptr, nullptr);
    c.defer_accept = 0;
    c.header_timeout_ms = c.body_timeout_ms = c.write_timeout_ms = c.idle_timeout_ms = long_ms(u);
    c.max_output_bytes = 64u << 20;
    c.request_timeout_ms = c.min_body_rate = c.min_send_rate = WEIR_DEADLINE_OFF;
    return c;
}

// A client that sends `now` at once, then `slow` piece bytes every gap_ms,
// reading what comes, until the server closes or give_up_ms passes.
struct Trickle {
    size_t sent = 0;        // bytes of slow sent
    int64_t cut_ms = -1;    // from the first byte to the server's close; -1: still open
    int64_t last_send = -1; // from the first byte to the last send that took bytes
    bool reset = false;     // the close was a reset
    std::string got;
    int status() const { return got.rfind("HTTP/1.1 ", 0) == 0 ? std::atoi(got.c_str() + 9) : 0; }
};

Trickle trickle(uint16_t port, const std::string &now, const std::string &slow, size_t piece, int gap_ms,
                int give_up_ms) {
    Trickle t;
    Client c = connect_to(port);
    assert_true(c.fd >= 0);
    int64_t t0 = now_ms();
    if (!now.empty())
        assert_true(send_all(c, now));
    char buf[4096];
    while (now_ms() - t0 < give_up_ms) {
        if (t.sent < slow.size()) {
            size_t k = std::min(piece, slow.size() - t.sent);
            ssize_t n = send(c.fd, slow.data() + t.sent, k, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n > 0) {
                t.sent += static_cast<size_t>(n);
                t.last_send = now_ms() - t0;
            }
        }
        pollfd p{c.fd, POLLIN, 0};
        if (poll(&p, 1, gap_ms) > 0) {
            ssize_t r = recv(c.fd, buf, sizeof buf, 0);
            if (r > 0) {
                t.got.append(buf, static_cast<size_t>(r));
                continue;
            }
            t.reset = r < 0 && errno == ECONNRESET;
            t.cut_ms = now_ms() - t0;
            break;
        }
    }
    return t;
}

void show(const char *what, const Trickle &t) {
    print_message("%s: status %d, %s after %lld ms, %zu bytes trickled, last at %lld ms\n", what, t.status(),
                  t.cut_ms < 0 ? "still open" : t.reset ? "reset" : "closed (FIN)", static_cast<long long>(t.cut_ms),
                  t.sent, static_cast<long long>(t.last_send));
}

// A head trickled a byte every half unit: it would take ~200 units whole.
void test_trickled_head_cut_by_the_request_deadline(void **) {
    int u = unit_ms();
    const std::string head = "GET /x HTTP/1.1\r\nHost: t\r\nX-Pad: " + std::string(400, 'a') + "\r\n\r\n";
    for (bool on : {true, false}) {
        weir_config c = base(WEIR_MODE_INLINE, u);
        uint32_t deadline = static_cast<uint32_t>(8 * u);
        if (on)
            c.request_timeout_ms = deadline;
        Server s;
        assert_int_equal(s.start(c), 0);
        Trickle t = trickle(s.port, "", head, 1, u / 2, static_cast<int>(3 * deadline));
        show(on ? "trickled head, request deadline on" : "trickled head, arm: deadline off", t);
        weir_metrics m = s.metrics();
        if (on) {
            assert_int_equal(t.status(), 408);
            assert_false(t.reset);
            assert_true(t.cut_ms >= deadline - u / 4);
            assert_true(t.cut_ms < 2 * static_cast<int64_t>(deadline));
            assert_true(t.last_send >= t.cut_ms - 2 * u); // it was still sending when cut
            assert_int_equal(s.wait_closes(WEIR_CLOSE_REQUEST_TIMEOUT, 1), 1);
            assert_int_equal(m.closes[WEIR_CLOSE_HEADER_TIMEOUT], 0);
        } else {
            // The loss the rule prevents: the client holds its connection,
            // still sending, three deadlines on (the idle timers never fire).
            assert_int_equal(t.cut_ms, -1);
            assert_true(t.last_send >= 3 * static_cast<int64_t>(deadline) - 2 * u);
            assert_int_equal(m.closes[WEIR_CLOSE_REQUEST_TIMEOUT], 0);
        }
    }
}

std::string post_head(size_t len) {
    return "POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(len) + "\r\n\r\n";
}

// A body of 8 bytes each half unit (16 B a unit) against a minimum eight
// times that: cut at the end of its first window.
void test_trickled_body_cut_by_the_body_rate(void **) {
    int u = unit_ms();
    uint32_t window = static_cast<uint32_t>(6 * u);
    uint32_t rate = static_cast<uint32_t>(8 * 16 * 1000 / u);
    for (bool on : {true, false}) {
        weir_config c = base(WEIR_MODE_INLINE, u);
        c.rate_window_ms = window;
        if (on)
            c.min_body_rate = rate;
        Server s;
        assert_int_equal(s.start(c), 0);
        Trickle t = trickle(s.port, post_head(100000), std::string(100000, 'b'), 8, u / 2, static_cast<int>(3 * window));
        show(on ? "trickled body, body rate on" : "trickled body, arm: rate off", t);
        weir_metrics m = s.metrics();
        if (on) {
            assert_int_equal(t.status(), 408);
            assert_false(t.reset);
            assert_true(t.cut_ms >= window - u / 4);
            assert_true(t.cut_ms < 2 * static_cast<int64_t>(window));
            assert_true(t.last_send >= t.cut_ms - 2 * u);
            assert_int_equal(s.wait_closes(WEIR_CLOSE_SLOW_BODY, 1), 1);
            assert_int_equal(m.closes[WEIR_CLOSE_BODY_TIMEOUT], 0);
        } else {
            assert_int_equal(t.cut_ms, -1);
            assert_true(t.last_send >= 3 * static_cast<int64_t>(window) - 2 * u);
            assert_int_equal(m.closes[WEIR_CLOSE_SLOW_BODY], 0);
        }
    }
}

// A body well above the rate (256 B each half unit against 16 B a unit)
// that would take ~40 units whole, against a request deadline of 10 units.
void test_body_past_the_request_deadline(void **) {
    int u = unit_ms();
    weir_config c = base(WEIR_MODE_INLINE, u);
    c.rate_window_ms = static_cast<uint32_t>(4 * u);
    c.min_body_rate = static_cast<uint32_t>(16 * 1000 / u);
    uint32_t deadline = static_cast<uint32_t>(10 * u);
    c.request_timeout_ms = deadline;
    Server s;
    assert_int_equal(s.start(c), 0);
    Trickle t = trickle(s.port, post_head(20480), std::string(20480, 'b'), 256, u / 2, static_cast<int>(3 * deadline));
    show("body past the request deadline", t);
    assert_int_equal(t.status(), 408);
    assert_false(t.reset);
    assert_true(t.cut_ms >= deadline - u / 4);
    assert_true(t.cut_ms < 2 * static_cast<int64_t>(deadline));
    assert_true(t.sent < 20480);
    assert_int_equal(s.wait_closes(WEIR_CLOSE_REQUEST_TIMEOUT, 1), 1);
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_SLOW_BODY], 0);
}

// A reader with a small window that reads 512 bytes each half unit (1 KiB a
// unit) of an 8 MiB answer, against a minimum eight times that.
void test_trickled_reader_cut_by_the_send_rate(void **) {
    int u = unit_ms();
    uint32_t window = static_cast<uint32_t>(6 * u);
    for (bool on : {true, false}) {
        weir_config c = base(WEIR_MODE_INLINE, u);
        c.rate_window_ms = window;
        if (on)
            c.min_send_rate = static_cast<uint32_t>(8 * 1024 * 1000 / u);
        Server s;
        assert_int_equal(s.start(c), 0);
        Client cl = connect_to(s.port, 4096);
        assert_true(send_all(cl, get("/huge")));
        int64_t t0 = now_ms(), cut = -1, last_read = -1;
        size_t got = 0;
        char buf[512];
        while (now_ms() - t0 < 3 * static_cast<int64_t>(window) + 4 * u) {
            sleep_ms(u / 2);
            ssize_t r = recv(cl.fd, buf, sizeof buf, MSG_DONTWAIT);
            if (r > 0) {
                got += static_cast<size_t>(r);
                last_read = now_ms() - t0;
            }
            if (s.metrics().closes[WEIR_CLOSE_SLOW_READER] > 0) {
                cut = now_ms() - t0;
                break;
            }
        }
        print_message("trickled reader, send rate %s: %s at %lld ms, %zu bytes read, last at %lld ms\n",
                      on ? "on" : "off (arm)", cut < 0 ? "not cut" : "cut", static_cast<long long>(cut), got,
                      static_cast<long long>(last_read));
        weir_metrics m = s.metrics();
        assert_int_equal(m.closes[WEIR_CLOSE_WRITE_TIMEOUT], 0);
        if (on) {
            // The socket's buffers take the first megabytes at once, so the
            // first window may pass; the second cannot.
            assert_true(cut >= static_cast<int64_t>(window) - u / 4);
            assert_true(cut < 3 * static_cast<int64_t>(window) + 4 * u);
            assert_true(last_read >= cut - 2 * u); // still reading when cut
        } else {
            // The loss: an 8 MiB answer and its connection held by a reader
            // that could keep this up for hours.
            assert_int_equal(cut, -1);
            assert_true(last_read >= 3 * static_cast<int64_t>(window) - 2 * u);
            assert_int_equal(m.closes[WEIR_CLOSE_SLOW_READER], 0);
        }
    }
}

// Driven mode: runs the loop for ms, returning the last handle it gave.
weir_exchange *poll_for(weir_worker *w, int ms) {
    weir_exchange *out[8], *last = nullptr;
    int64_t until = now_ms() + ms;
    do {
        int n = weir_worker_poll(w, out, 8, 2);
        assert_true(n >= 0);
        if (n > 0)
            last = out[n - 1];
    } while (now_ms() < until);
    return last;
}

// The client sends a 64 KiB body at once; the host reads 1 KiB each half
// unit: 32 units whole, past the request deadline (8) and the rate's
// windows (6) several times over, at a rate far below the minimum. Not cut:
// the time is the host's. (Charging the time the host holds the body to the
// client, the mutant, cuts it at the first deadline.)
void test_host_slow_streamed_body_not_cut(void **) {
    int u = unit_ms();
    weir_config c = base(WEIR_MODE_DRIVEN, u);
    c.stream_body_bytes = 1;
    c.rate_window_ms = static_cast<uint32_t>(6 * u);
    c.min_body_rate = static_cast<uint32_t>(64 * 1024 * 1000 / u); // 64 KiB a unit
    c.request_timeout_ms = static_cast<uint32_t>(8 * u);
    Server s;
    assert_int_equal(s.start(c), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    Client cl = connect_to(s.port);
    const size_t kBody = 64 * 1024;
    std::thread sender([&] { send_all(cl, post_head(kBody) + std::string(kBody, 'b')); });
    int64_t t0 = now_ms();
    weir_exchange *ex = nullptr;
    while (!ex && now_ms() - t0 < bound_ms(5000))
        ex = poll_for(w, 5);
    assert_non_null(ex);
    size_t read = 0;
    int64_t rc = 0;
    char buf[1024];
    while (now_ms() - t0 < bound_ms(20000)) {
        poll_for(w, u / 2); // the host is busy elsewhere; the loop runs
        rc = weir_body_read(ex, buf, sizeof buf);
        if (rc > 0)
            read += static_cast<size_t>(rc);
        else if (rc != -EAGAIN)
            break;
    }
    int64_t took = now_ms() - t0;
    sender.join();
    print_message("host-slow streamed body: read %zu bytes in %lld ms, last read %lld (request deadline %u, "
                  "window %u)\n", read, static_cast<long long>(took), static_cast<long long>(rc),
                  c.request_timeout_ms, c.rate_window_ms);
    assert_int_equal(rc, 0);
    assert_int_equal(read, kBody);
    assert_int_equal(weir_respond(ex, 200, nullptr, 0, "done", 4, 0), 0);
    std::atomic<bool> stop{false};
    std::thread poller([&] {
        weir_exchange *out[8];
        while (!stop && weir_worker_poll(w, out, 8, 5) >= 0) {
        }
    });
    Response r = read_response(cl);
    stop = true;
    poller.join();
    assert_int_equal(r.status, 200);
    assert_true(took >= 3 * static_cast<int64_t>(c.request_timeout_ms));
    weir_metrics m = s.metrics();
    assert_int_equal(m.closes[WEIR_CLOSE_REQUEST_TIMEOUT], 0);
    assert_int_equal(m.closes[WEIR_CLOSE_SLOW_BODY], 0);
}

// A streamed body the host waits on (it reads whenever bytes come) while
// the client trickles it below the rate: the time is the client's. The
// host's read says -ETIMEDOUT at the end of the window, the host answers
// 408, and the client reads it, then a FIN; slow_body.
void test_client_slow_streamed_body_cut(void **) {
    int u = unit_ms();
    uint32_t window = static_cast<uint32_t>(6 * u);
    for (bool on : {true, false}) {
        weir_config c = base(WEIR_MODE_DRIVEN, u);
        c.stream_body_bytes = 1;
        c.rate_window_ms = window;
        if (on)
            c.min_body_rate = static_cast<uint32_t>(8 * 16 * 1000 / u);
        Server s;
        assert_int_equal(s.start(c), 0);
        weir_worker *w = nullptr;
        assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
        Client cl = connect_to(s.port);
        assert_true(send_all(cl, post_head(100000)));
        int64_t t0 = now_ms();
        weir_exchange *ex = nullptr;
        while (!ex && now_ms() - t0 < bound_ms(5000))
            ex = poll_for(w, 5);
        assert_non_null(ex);
        int64_t rc = -EAGAIN, cut = -1;
        size_t sent = 0, read = 0;
        char buf[4096];
        while (now_ms() - t0 < 3 * static_cast<int64_t>(window)) {
            if (send(cl.fd, "bbbbbbbb", 8, MSG_NOSIGNAL | MSG_DONTWAIT) == 8)
                sent += 8;
            poll_for(w, u / 2);
            while ((rc = weir_body_read(ex, buf, sizeof buf)) > 0)
                read += static_cast<size_t>(rc);
            if (rc != -EAGAIN) {
                cut = now_ms() - t0;
                break;
            }
        }
        print_message("client-slow streamed body, rate %s: read says %lld after %lld ms, %zu bytes trickled, %zu "
                      "read (window %u)\n", on ? "on" : "off (arm)", static_cast<long long>(rc),
                      static_cast<long long>(cut), sent, read, window);
        if (!on) {
            // The loss: the host waits on a client that could go on for hours.
            assert_int_equal(rc, -EAGAIN);
            assert_true(read >= sent - 8); // the host kept up: the client was the slow one
            assert_int_equal(s.metrics().closes[WEIR_CLOSE_SLOW_BODY], 0);
            assert_int_equal(weir_respond(ex, 200, nullptr, 0, "arm", 3, WEIR_RESPOND_CLOSE), 0);
            poll_for(w, 20);
            continue;
        }
        // No upper bound but the loop's three windows: time this thread
        // spends late between reads is the host's, rightly not charged (a
        // run with the machine stalled measured 687 ms for a 240 ms window).
        assert_int_equal(rc, -ETIMEDOUT);
        assert_true(cut >= window - u / 4);
        assert_int_equal(weir_respond(ex, 408, nullptr, 0, "slow", 4, 0), 0);
        std::atomic<bool> stop{false};
        std::thread poller([&] {
            weir_exchange *out[8];
            while (!stop && weir_worker_poll(w, out, 8, 5) >= 0) {
            }
        });
        Response r = read_response(cl);
        bool closed = wait_closed(cl, 2000);
        stop = true;
        poller.join();
        assert_int_equal(r.status, 408);
        assert_true(closed);
        assert_int_equal(s.wait_closes(WEIR_CLOSE_SLOW_BODY, 1), 1);
    }
}

// The host streams 256 bytes each half unit (512 B a unit) for 40 units,
// against a minimum send rate of 64 KiB a unit; the client reads at once.
// Not cut: nothing waits unsent, so no time is charged. (Charging the time
// the host holds the answer, the mutant, cuts it at the first window.)
void test_host_slow_streamed_answer_not_cut(void **) {
    int u = unit_ms();
    weir_config c = base(WEIR_MODE_DRIVEN, u);
    c.rate_window_ms = static_cast<uint32_t>(6 * u);
    c.min_send_rate = static_cast<uint32_t>(64 * 1024 * 1000 / u);
    Server s;
    assert_int_equal(s.start(c), 0);
    weir_worker *w = nullptr;
    assert_int_equal(weir_engine_worker(s.e, 0, &w), 0);
    Client cl = connect_to(s.port);
    assert_true(send_all(cl, get("/stream")));
    weir_exchange *ex = nullptr;
    int64_t t0 = now_ms();
    while (!ex && now_ms() - t0 < bound_ms(5000))
        ex = poll_for(w, 5);
    assert_non_null(ex);
    constexpr int kPieces = 80;
    const std::string piece(256, 's');
    assert_int_equal(weir_stream_start(ex, 200, nullptr, 0, kPieces * piece.size(), 0), 0);
    Response r;
    std::thread reader([&] { r = read_response(cl, bound_ms(30000)); });
    t0 = now_ms();
    int wrote = 0;
    for (; wrote < kPieces; wrote++) {
        if (weir_stream_write(ex, piece.data(), piece.size()) != 0)
            break;
        poll_for(w, u / 2);
    }
    if (wrote == kPieces)
        assert_int_equal(weir_stream_end(ex, nullptr, 0), 0);
    std::atomic<bool> stop{false};
    std::thread poller([&] {
        weir_exchange *out[8];
        while (!stop && weir_worker_poll(w, out, 8, 5) >= 0) {
        }
    });
    reader.join();
    stop = true;
    poller.join();
    int64_t took = now_ms() - t0;
    print_message("host-slow streamed answer: %d pieces written in %lld ms (window %u), status %d, %zu bytes\n", wrote,
                  static_cast<long long>(took), c.rate_window_ms, r.status, r.body.size());
    assert_int_equal(wrote, kPieces);
    assert_int_equal(r.status, 200);
    assert_int_equal(r.body.size(), kPieces * piece.size());
    assert_true(took >= 3 * static_cast<int64_t>(c.rate_window_ms));
    assert_int_equal(s.metrics().closes[WEIR_CLOSE_SLOW_READER], 0);
}

// The fields' defaults, the off sentinel and the window's validation.
void test_config(void **) {
    weir_config c;
    weir_config_init(&c);
    assert_int_equal(c.request_timeout_ms, 300000);
    assert_int_equal(c.min_body_rate, 500);
    assert_int_equal(c.min_send_rate, 500);
    assert_int_equal(c.rate_window_ms, 10000);
    weir_engine *e = nullptr;
    weir_config bad = config(1, WEIR_MODE_INLINE, handler, nullptr);
    bad.rate_window_ms = 9;
    assert_int_equal(weir_engine_create(&bad, &e), -EINVAL);
    bad.rate_window_ms = WEIR_DEADLINE_OFF;
    assert_int_equal(weir_engine_create(&bad, &e), -EINVAL);
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_REQUEST_TIMEOUT), "request_timeout");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_SLOW_BODY), "slow_body");
    assert_string_equal(weir_close_reason_name(WEIR_CLOSE_SLOW_READER), "slow_reader");
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_trickled_head_cut_by_the_request_deadline),
        cmocka_unit_test(test_trickled_body_cut_by_the_body_rate),
        cmocka_unit_test(test_body_past_the_request_deadline),
        cmocka_unit_test(test_trickled_reader_cut_by_the_send_rate),
        cmocka_unit_test(test_host_slow_streamed_body_not_cut),
        cmocka_unit_test(test_client_slow_streamed_body_cut),
        cmocka_unit_test(test_host_slow_streamed_answer_not_cut),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
