// The overload manager's idle closes (issue 32; worker_overload.cc
// overload_sweep and overload_idle_close, worker_conns.cc close_conn): one
// worker, cfg.overload_conns = 20, so 16 open connections (80 %) are level 1.
// Arms:
//   rule:      10 keep-alive clients idle after one answer; 6 silent connects
//              make 16: the idle ten get a FIN (EOF, not a reset) within a
//              bound in units of this run, counted in overload_idle_closed
//              and closes[WEIR_CLOSE_OVERLOAD]; the 6 that have sent nothing
//              are kept, and answered.
//   after:     an answer written keep-alive before the rise, still leaving
//              at the sweep: once it has left, that connection closes too.
//   negative:  the watermark off (level held at 0): the same idle ten stay
//              open through the same window, and answer again (the loss: the
//              descriptors and buffers the rule gives back stay held).
//   re-read:   the rule with the level not re-read after the accept batch
//              (LoopHooks::overload_skip_batch_reread, the mutant): the batch
//              that reached 16 goes unseen, and the idle ten stay open.
//   linger:    at level 1 a client pipelines 1 MiB of requests; its answer
//              closes (keep-alive off) with input still unread, and the close
//              lingers: the answers, then EOF. Its negative arm
//              (LoopHooks::overload_close_plain) closes at once: a reset.
//   race:      clients keep sending requests while the level rises and falls
//              under them: each sees a whole answer or a clean EOF before its
//              next answer, never a reset, never a cut answer.
// Runs on both backends (WEIR_TEST_BACKEND).
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/hooks.h"
#include "support/net.h"

using namespace testnet;

namespace {

constexpr uint32_t kMark = 20; // level 1 at 16 open connections
constexpr size_t kIdle = 10;
constexpr size_t kSilent = 6;

const std::string kBig(8 << 20, 'b'); // past what the kernel's buffers hold

void handler(void *, weir_exchange *ex) {
    if (str(weir_exchange_request(ex)->path) == "/big")
        answer(ex, 200, kBig);
    else
        answer(ex, 200, "fast");
}

bool wait_for(const Server &s, bool (*ok)(const weir_metrics &), int ms = 5000) {
    int64_t deadline = now_ms() + bound_ms(ms);
    while (now_ms() < deadline) {
        if (ok(s.metrics()))
            return true;
        sleep_ms(1);
    }
    return ok(s.metrics());
}

void wait_open(const Server &s, uint64_t n) {
    int64_t deadline = now_ms() + bound_ms(5000);
    while (s.metrics().connections_open != n && now_ms() < deadline)
        sleep_ms(1);
    assert_int_equal(s.metrics().connections_open, n);
}

// How a connection ended, waiting at most ms: 0 EOF, an errno, or ETIMEDOUT.
// Bytes that came first are appended to c.buf.
int ending(Client &c, int ms) {
    int64_t until = now_ms() + ms;
    for (;;) {
        int left = static_cast<int>(until - now_ms());
        if (left <= 0)
            return ETIMEDOUT;
        pollfd p{c.fd, POLLIN, 0};
        if (::poll(&p, 1, left) <= 0)
            continue;
        char buf[4096];
        ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0)
            return 0;
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return errno;
        }
        c.buf.append(buf, static_cast<size_t>(n));
    }
}

struct Rig {
    Server s;
    std::vector<Client> idle, silent;
    int64_t unit = 1;

    void start(uint32_t mark) {
        weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
        c.overload_conns = mark;
        c.idle_timeout_ms = 30000;
        c.header_timeout_ms = 30000;
        c.defer_accept = 0; // a silent connect is accepted now, and counts now
        c.max_output_bytes = 16 << 20; // /big waits in weir's output, not closed for it
        assert_int_equal(s.start(c), 0);
        // A request's round trip on a fresh connection, in ms: the run's unit.
        int64_t best = INT64_MAX;
        for (int i = 0; i < 5; i++) {
            int64_t t0 = now_ms();
            Client k = connect_to(s.port);
            assert_true(send_all(k, get("/fast")));
            assert_int_equal(read_response(k).status, 200);
            best = std::min(best, now_ms() - t0);
        }
        unit = best < 1 ? 1 : best;
        wait_open(s, 0);
    }
    // n keep-alive clients, each answered once and now idle between requests.
    void serve_idle(size_t n) {
        for (size_t i = 0; i < n; i++) {
            idle.push_back(connect_to(s.port));
            assert_true(send_all(idle.back(), get("/fast")));
            Response r = read_response(idle.back());
            assert_int_equal(r.status, 200);
            assert_string_equal(r.header("Connection").c_str(), "");
        }
        wait_open(s, idle.size());
    }
    void add_silent(size_t n) {
        for (size_t i = 0; i < n; i++)
            silent.push_back(connect_to(s.port));
    }
    // The window the rule must act within, and the arms must stay open for.
    int window() const { return std::max(500, static_cast<int>(100 * unit)); }
};

void idle_closed_with_fin_silent_kept(void **) {
    Rig r;
    r.start(kMark);
    r.serve_idle(kIdle);
    assert_int_equal(r.s.metrics().overload_level, 0);
    int64_t t0 = now_ms();
    r.add_silent(kSilent); // 16 of 20: level 1
    int64_t slowest = 0;
    for (Client &c : r.idle) {
        assert_int_equal(ending(c, bound_ms(r.window())), 0); // a FIN, not ECONNRESET
        assert_true(c.buf.empty());
        slowest = std::max(slowest, now_ms() - t0);
    }
    weir_metrics m = r.s.metrics();
    assert_int_equal(m.overload_idle_closed, kIdle);
    assert_int_equal(m.closes[WEIR_CLOSE_OVERLOAD], kIdle);
    assert_int_equal(m.overload_keepalive_off, 0);
    print_message("idle closes: unit %lld ms, all %zu FINs %lld ms after the connects began (%s)\n",
                  (long long)r.unit, kIdle, (long long)slowest, test_backend_name());
    // The silent ones were kept (new clients owed an answer), and are served.
    wait_open(r.s, kSilent);
    for (Client &c : r.silent) {
        assert_true(send_all(c, get("/fast")));
        assert_int_equal(read_response(c).status, 200);
    }
    assert_int_equal(r.s.metrics().overload_idle_closed, kIdle);
}

// An answer written keep-alive before the rise, still leaving at the sweep
// (the connection busy, not idle): once it has left, the connection is idle
// under level 1, and its settle closes it (overload_idle_close) instead of
// leaving it to the idle timeout.
void idle_after_an_answer_begun_before_the_rise_closes(void **) {
    Rig r;
    r.start(kMark);
    Client big = connect_to(r.s.port, 4096); // a small window: the answer waits on the client
    assert_true(send_all(big, get("/big")));
    assert_true(wait_for(r.s, [](const weir_metrics &x) { return x.responses >= 6; }));
    r.add_silent(15); // 16 of 20: level 1, nobody idle
    assert_true(wait_for(r.s, [](const weir_metrics &x) { return x.overload_level == 1; }));
    assert_int_equal(r.s.metrics().overload_idle_closed, 0); // busy at the sweep: kept
    Response a = read_response(big, bound_ms(10000));
    assert_int_equal(a.status, 200);
    assert_int_equal(a.body.size(), kBig.size());
    assert_string_equal(a.header("Connection").c_str(), ""); // written before the rise
    assert_int_equal(ending(big, bound_ms(r.window())), 0);
    assert_int_equal(r.s.metrics().overload_idle_closed, 1);
    assert_int_equal(r.s.metrics().closes[WEIR_CLOSE_OVERLOAD], 1);
}

// The negative arm: the watermark off holds the level at 0; the idle stay.
void without_the_watermark_idle_stay(void **) {
    Rig r;
    r.start(0);
    r.serve_idle(kIdle);
    r.add_silent(kSilent);
    wait_open(r.s, kIdle + kSilent);
    for (Client &c : r.idle)
        assert_true(stays_silent(c, r.window() / static_cast<int>(kIdle)));
    for (Client &c : r.idle) {
        assert_true(send_all(c, get("/fast")));
        Response a = read_response(c);
        assert_int_equal(a.status, 200);
        assert_string_equal(a.header("Connection").c_str(), "");
    }
    weir_metrics m = r.s.metrics();
    assert_int_equal(m.overload_level, 0);
    assert_int_equal(m.overload_idle_closed, 0);
    assert_int_equal(m.closes[WEIR_CLOSE_OVERLOAD], 0);
}

// The re-read's mutant: the batch that reached 16 is not re-read, and no
// later event comes to show it: the idle stay open through the window.
void without_the_reread_the_flood_goes_unseen(void **) {
    Rig r;
    r.start(kMark);
    r.serve_idle(kIdle);
    weir::loop_hooks().overload_skip_batch_reread = true;
    r.add_silent(kSilent);
    wait_open(r.s, kIdle + kSilent);
    for (Client &c : r.idle)
        assert_true(stays_silent(c, r.window() / static_cast<int>(kIdle)));
    weir_metrics m = r.s.metrics();
    weir::loop_hooks().overload_skip_batch_reread = false;
    assert_int_equal(m.overload_level, 0);
    assert_int_equal(m.overload_idle_closed, 0);
}

// keep-alive off with pipelined input still queued: the close lingers (the
// rule), or resets (overload_close_plain, its negative arm).
int pipelined_close(bool plain) {
    Rig r;
    r.start(kMark);
    r.add_silent(16); // level 1, nobody idle
    assert_true(wait_for(r.s, [](const weir_metrics &x) { return x.overload_level == 1; }));
    weir::loop_hooks().overload_close_plain = plain;
    Client k = connect_to(r.s.port);
    // More than io_uring's provided buffers take at once: some of it is
    // still in the kernel when the close comes. Sent from a thread: the
    // reset's arm fails the send.
    std::string many;
    while (many.size() < 1024 * 1024)
        many += get("/fast");
    int send_err = 0;
    std::thread sender([&] {
        if (!send_all(k, many))
            send_err = errno;
    });
    Seen seen = read_slowly(k.fd, bound_ms(5000));
    sender.join();
    weir::loop_hooks().overload_close_plain = false;
    if (seen.end == 0) {
        assert_true(seen.data.find("HTTP/1.1 200") == 0);
        assert_true(seen.data.find("Connection: close") != std::string::npos);
        // Whole answers only, the last one the closing one.
        size_t last = seen.data.rfind("HTTP/1.1 200");
        assert_true(seen.data.find("Connection: close", last) != std::string::npos);
        assert_true(seen.data.size() >= 4 && seen.data.compare(seen.data.size() - 4, 4, "fast") == 0);
    }
    assert_true(r.s.metrics().overload_keepalive_off >= 1);
    // The reset reaches the reader, or (once the FIN is in: io_uring's recv
    // may have taken all that had come) the sender.
    return seen.end ? seen.end : send_err;
}

void keepalive_off_close_with_pipelined_input_lingers(void **) { assert_int_equal(pipelined_close(false), 0); }

void keepalive_off_close_plain_resets(void **) {
    int e = pipelined_close(true);
    assert_true(e == ECONNRESET || e == EPIPE);
}

// Clients send while the level rises and falls: each request gets a whole
// answer, or its connection a clean EOF with no byte of an answer (the
// client then reconnects, as HTTP clients retry an idempotent request on a
// keep-alive connection closed under them). Never a reset, never a cut answer.
void requests_racing_the_sweep_never_reset(void **) {
    Rig r;
    r.start(kMark);
    constexpr int kClients = 8, kEach = 24; // 192 answers
    std::atomic<int> resets{0}, cut{0}, eofs{0}, answered{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kClients; t++) {
        ts.emplace_back([&] {
            Client c = connect_to(r.s.port);
            for (int got = 0; got < kEach;) {
                if (!send_all(c, get("/fast"))) {
                    resets++;
                    return;
                }
                Response a;
                int end = ETIMEDOUT;
                int64_t until = now_ms() + bound_ms(5000);
                while ((a = take_response(c)).status == 0 && now_ms() < until) {
                    end = ending(c, 1);
                    if (end != ETIMEDOUT)
                        break;
                }
                if (a.status == 0 && end != ETIMEDOUT)
                    a = take_response(c); // a whole answer, then the EOF
                if (a.status == 200) {
                    got++;
                    answered++;
                    if (a.header("Connection") != "close")
                        continue;
                    end = ending(c, bound_ms(5000));
                }
                if (end == 0 && c.buf.empty()) {
                    if (a.status != 200)
                        eofs++;
                    c = connect_to(r.s.port);
                    continue;
                }
                (end == ECONNRESET || end == EPIPE ? resets : cut)++;
                return;
            }
        });
    }
    // Rises and falls under them: 10 silent connects (with the 8, past 16),
    // then their close (the level falls below 70 %).
    int cycles = 0;
    while (answered.load() < kClients * kEach && resets.load() == 0 && cut.load() == 0 && cycles < 200) {
        r.add_silent(10);
        sleep_ms(2);
        r.silent.clear();
        sleep_ms(2);
        cycles++;
    }
    for (auto &t : ts)
        t.join();
    weir_metrics m = r.s.metrics();
    print_message("race: %d answers, %d clean EOFs, %d resets, %d cut, %d cycles, %llu idle closed (%s)\n",
                  answered.load(), eofs.load(), resets.load(), cut.load(), cycles,
                  (unsigned long long)m.overload_idle_closed, test_backend_name());
    assert_int_equal(resets.load(), 0);
    assert_int_equal(cut.load(), 0);
    assert_int_equal(answered.load(), kClients * kEach);
    assert_true(m.overload_engaged >= 1);
}

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idle_closed_with_fin_silent_kept),
        cmocka_unit_test(idle_after_an_answer_begun_before_the_rise_closes),
        cmocka_unit_test(without_the_watermark_idle_stay),
        cmocka_unit_test(without_the_reread_the_flood_goes_unseen),
        cmocka_unit_test(keepalive_off_close_with_pipelined_input_lingers),
        cmocka_unit_test(keepalive_off_close_plain_resets),
        cmocka_unit_test(requests_racing_the_sweep_never_reset),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
