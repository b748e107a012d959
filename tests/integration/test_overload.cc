// The overload manager through real sockets (issue 32; lib/loop/overload.h,
// worker_overload.cc): one worker, cfg.overload_inflight = 20, a handler
// that holds every /slow request (weir_defer; the test answers them later
// from its own thread, as a host blocked on a database would) and answers
// /fast at once. Each action is shown engaged at its level and released:
//   16 held (80 %): keep-alive off: /fast is answered with Connection: close,
//                   then EOF (WEIR_CLOSE_OVERLOAD);
//   18 held (90 %): the accept batch shrunk (counted per batch);
//   19 held (95 %): accepting paused: a new client's request meets silence,
//                   it waits in the kernel's queue, and is served once the
//                   held drop to 16 (level 2) — not reset, not dropped;
//   20 held (100 %): a new request on a live connection is answered 503 with
//                   Retry-After at once (while all 20 are still held: only the
//                   manager can have answered), then EOF, never a reset;
//   all answered:   level 0: keep-alive again, nothing refused.
// The negative arm (the loss the rule guards against): the same flood with
// the manager off: the 21st request is queued for the host and meets
// silence, however long the host is behind.
// Runs on both backends (WEIR_TEST_BACKEND).
#include <cerrno>
#include <mutex>
#include <string>
#include <vector>

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "loop/hooks.h"
#include "loop/overload.h"
#include "support/net.h"

using namespace testnet;
using weir::loop_hooks;

namespace {

std::mutex g_mu;
std::vector<weir_exchange *> g_held;

void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (str(r->path) == "/slow") {
        assert_int_equal(weir_defer(ex), 0);
        std::lock_guard<std::mutex> g(g_mu);
        g_held.push_back(ex);
        return;
    }
    answer(ex, 200, "fast");
}

size_t held() {
    std::lock_guard<std::mutex> g(g_mu);
    return g_held.size();
}

// Answers the held exchanges until `keep` are left (foreign thread).
void release_to(size_t keep) {
    std::vector<weir_exchange *> out;
    {
        std::lock_guard<std::mutex> g(g_mu);
        while (g_held.size() > keep) {
            out.push_back(g_held.back());
            g_held.pop_back();
        }
    }
    for (weir_exchange *ex : out)
        assert_int_equal(answer(ex, 200, "late"), 0);
}

bool wait_for(const Server &s, bool (*ok)(const weir_metrics &), int ms = 5000) {
    int64_t deadline = now_ms() + bound_ms(ms);
    while (now_ms() < deadline) {
        if (ok(s.metrics()))
            return true;
        sleep_ms(2);
    }
    return ok(s.metrics());
}

bool wait_held(size_t n) {
    int64_t deadline = now_ms() + bound_ms(5000);
    while (now_ms() < deadline && held() < n)
        sleep_ms(1);
    return held() == n;
}

struct Flood {
    Server s;
    std::vector<Client> conns; // keep-alive connections, each served once
    // n connections, the first `served` of them served once with /fast
    // before any load (keep-alive). The others have sent nothing yet: the
    // rise to level 1 closes connections idle between requests
    // (test_overload_idle.cc), and keeps those whose first request is to come.
    void start(uint32_t inflight, size_t n, size_t served) {
        g_held.clear();
        weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
        c.overload_inflight = inflight;
        c.idle_timeout_ms = 30000;
        c.header_timeout_ms = 30000;
        c.defer_accept = 0; // the silent ones are accepted now, before any level pauses accepting
        assert_int_equal(s.start(c), 0);
        for (size_t i = 0; i < n; i++) {
            conns.push_back(connect_to(s.port));
            if (i >= served)
                continue;
            assert_true(send_all(conns.back(), get("/fast")));
            Response r = read_response(conns.back());
            assert_int_equal(r.status, 200);
            assert_string_equal(r.header("Connection").c_str(), "");
        }
        int64_t deadline = now_ms() + bound_ms(5000);
        while (s.metrics().connections_open < n && now_ms() < deadline)
            sleep_ms(1);
        assert_int_equal(s.metrics().connections_open, n);
    }
    // Holds /slow on conns[from, to).
    void hold(size_t from, size_t to) {
        for (size_t i = from; i < to; i++)
            assert_true(send_all(conns[i], get("/slow")));
        assert_true(wait_held(to));
    }
    // A request's round trip on a fresh connection, in ms: the run's unit.
    int64_t unit() {
        int64_t best = INT64_MAX;
        for (int i = 0; i < 5; i++) {
            int64_t t0 = now_ms();
            Client c = connect_to(s.port);
            assert_true(send_all(c, get("/fast")));
            assert_int_equal(read_response(c).status, 200);
            int64_t dt = now_ms() - t0;
            if (dt < best)
                best = dt;
        }
        return best < 1 ? 1 : best;
    }
};

// An EOF (not a reset) within the bound.
void assert_clean_eof(Client &c) {
    Seen seen = read_slowly(c.fd, bound_ms(5000));
    assert_int_equal(seen.end, 0);
}

void each_action_engaged_and_released(void **) {
    Flood f;
    f.start(20, 22, 16);
    int64_t unit = f.unit();
    weir_metrics m = f.s.metrics();
    assert_int_equal(m.overload_level, 0);
    assert_int_equal(m.overload_engaged, 0);

    // Level 1 at 16 held: keep-alive off.
    f.hold(0, 16);
    assert_true(wait_for(f.s, [](const weir_metrics &x) { return x.overload_level == 1; }));
    {
        Client k = connect_to(f.s.port);
        assert_true(send_all(k, get("/fast")));
        Response r = read_response(k);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.header("Connection").c_str(), "close");
        assert_clean_eof(k);
    }
    assert_true(wait_for(f.s, [](const weir_metrics &x) {
        return x.overload_keepalive_off >= 1 && x.closes[WEIR_CLOSE_OVERLOAD] >= 1;
    }));

    // Level 2 at 18: the accept batch shrunk.
    f.hold(16, 18);
    assert_true(wait_for(f.s, [](const weir_metrics &x) { return x.overload_level == 2; }));
    static uint64_t shrunk;
    shrunk = f.s.metrics().overload_accept_shrunk;
    {
        Client k = connect_to(f.s.port);
        assert_true(send_all(k, get("/fast")));
        assert_int_equal(read_response(k).status, 200);
    }
    // Counted once the batch ends, which may be after its connection's
    // answer left (an answer leaves when its handler returns).
    assert_true(wait_for(f.s, [](const weir_metrics &x) { return x.overload_accept_shrunk > shrunk; }));

    // Level 3 at 19: accepting paused; a new client waits in the queue.
    f.hold(18, 19);
    assert_true(wait_for(f.s, [](const weir_metrics &x) { return x.overload_level == 3; }));
    assert_int_equal(f.s.metrics().overload_accept_pauses, 1);
    uint64_t accepted = f.s.metrics().accepted;
    Client queued = connect_to(f.s.port); // the kernel completes the handshake
    assert_true(send_all(queued, get("/fast")));
    int silence = static_cast<int>(50 * unit) < 300 ? 300 : static_cast<int>(50 * unit);
    assert_true(stays_silent(queued, silence));
    assert_int_equal(f.s.metrics().accepted, accepted);

    // Level 4 at 20: the next request on a live connection is refused at once.
    f.hold(19, 20);
    assert_true(wait_for(f.s, [](const weir_metrics &x) { return x.overload_level == 4; }));
    int64_t t0 = now_ms();
    assert_true(send_all(f.conns[20], get("/slow") + "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nbody"));
    Response r = read_response(f.conns[20], bound_ms(5000));
    int64_t took = now_ms() - t0;
    assert_int_equal(r.status, 503);
    assert_string_equal(r.header("Retry-After").c_str(), "1");
    assert_string_equal(r.header("Connection").c_str(), "close");
    assert_int_equal(held(), 20); // the host answered nothing: the manager did
    assert_clean_eof(f.conns[20]); // unread input behind it: the close lingered
    m = f.s.metrics();
    assert_int_equal(m.overload_refused, 1);
    assert_int_equal(m.overload_engaged, 4);
    print_message("overload: unit %lld ms, 503 after %lld ms (%s)\n", (long long)unit, (long long)took,
                  test_backend_name());

    // Release to 16 (80 %: below 85 and 90): 503 off, accepting resumes,
    // and the queued client is served, not reset.
    release_to(16);
    Response q = read_response(queued, bound_ms(5000));
    assert_int_equal(q.status, 200);
    assert_string_equal(q.body.c_str(), "fast");
    assert_true(wait_for(f.s, [](const weir_metrics &x) { return x.overload_level == 2; }));

    // Everything answered: level 0, keep-alive again on a live connection.
    release_to(0);
    for (size_t i = 0; i < 20; i++)
        assert_int_equal(read_response(f.conns[i]).status, 200);
    assert_true(wait_for(f.s, [](const weir_metrics &x) { return x.overload_level == 0; }));
    assert_true(send_all(f.conns[21], get("/fast")));
    Response again = read_response(f.conns[21]);
    assert_int_equal(again.status, 200);
    assert_string_equal(again.header("Connection").c_str(), "");
    m = f.s.metrics();
    assert_int_equal(m.overload_refused, 1);
    assert_int_equal(m.overload_accept_pauses, 1);
    assert_int_equal(m.overload_idle_closed, 0); // every served connection was busy at the rise
    assert_int_equal(m.closes[WEIR_CLOSE_OVERLOAD], m.overload_keepalive_off);
}

// A flood of slow requests: everything past the watermark is answered 503 at
// once on every connection, and the server serves normally once it ends.
void flood_answered_then_recovers(void **) {
    Flood f;
    f.start(8, 24, 0);
    for (size_t i = 0; i < 24; i++)
        assert_true(send_all(f.conns[i], get("/slow")));
    size_t refused = 0;
    for (size_t i = 0; i < 24; i++) {
        // The held ones answer later; the refused ones at once.
        if (!wait_closed(f.conns[i], 300))
            continue;
        Response r = take_response(f.conns[i]);
        assert_int_equal(r.status, 503);
        refused++;
    }
    assert_int_equal(held(), 8);
    assert_int_equal(refused, 16);
    assert_int_equal(f.s.metrics().overload_refused, 16);
    release_to(0);
    assert_true(wait_for(f.s, [](const weir_metrics &x) { return x.overload_level == 0; }));
    Client k = connect_to(f.s.port);
    for (int i = 0; i < 3; i++) {
        assert_true(send_all(k, get("/fast")));
        Response r = read_response(k);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.header("Connection").c_str(), "");
    }
}

// The negative arm: the manager off, the same flood queues for the host and
// the 21st request meets silence.
void without_the_manager_requests_queue(void **) {
    Flood f;
    f.start(0, 21, 21);
    int64_t unit = f.unit();
    f.hold(0, 20);
    assert_true(send_all(f.conns[20], get("/slow")));
    int silence = static_cast<int>(50 * unit) < 300 ? 300 : static_cast<int>(50 * unit);
    assert_true(stays_silent(f.conns[20], silence));
    assert_int_equal(held(), 21); // queued for the host, unanswered
    weir_metrics m = f.s.metrics();
    assert_int_equal(m.overload_level, 0);
    assert_int_equal(m.overload_refused, 0);
    release_to(0);
}

// Watermarks that cannot be met are refused at create.
void bad_watermarks_are_einval(void **) {
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.max_connections = 100;
    c.overload_conns = 101;
    weir_engine *e = nullptr;
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    c.overload_conns = 100;
    c.overload_mem_mb = (4u << 20) + 1;
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    c.overload_mem_mb = 64;
    c.overload_fds = UINT32_MAX; // past any hard RLIMIT_NOFILE a test runs under
    assert_int_equal(weir_engine_create(&c, &e), -EINVAL);
    c.overload_fds = 512;
    assert_int_equal(weir_engine_create(&c, &e), 0);
    weir_engine_destroy(e);
}

// This process's open descriptors (the engine's and the test's clients'):
// the engine's own count, the one its samples take.
int open_fds() { return static_cast<int>(weir::count_open_fds()); }

// Connects and serves /fast one client at a time, keeping them open, until
// an answer closes its connection (keep-alive off: level 1) or `most` are
// open; returns how many were open then (0: never).
size_t clients_until_keepalive_off(const Server &s, std::vector<Client> &open, size_t most) {
    for (size_t i = 0; i < most; i++) {
        open.push_back(connect_to(s.port));
        assert_true(send_all(open.back(), get("/fast")));
        Response r = read_response(open.back());
        assert_int_equal(r.status, 200);
        if (r.header("Connection") == "close")
            return open.size();
    }
    return 0;
}

// The descriptor watermark between samples. /proc/self/fd is counted once
// here (the sample period set to an hour), so only the engine's own
// accounting — +1 an accept, -1 a close — can see the clients arrive:
// level 1 (80 %) is placed about 30 accepted connections above the
// sample, and up to 60 connect one by one. The rule: keep-alive goes off
// after about 30, and once they leave the level falls back to 0 (the closes
// are taken off). The negative arm (the reading is the sample alone, as it
// was): 60 connect (120 descriptors in this process, clients included) and
// the level never rises until the next sample, a flood's whole window.
void fds_reading_follows_accepts(bool rule) {
    loop_hooks().overload_fd_sample_ms = 3600 * 1000;
    loop_hooks().overload_skip_fd_drift = !rule;
    g_held.clear();
    // The engine's own descriptors (listener, poller, wakes, ring), measured
    // on a twin, so the watermark can be placed from this process's count.
    int before = open_fds();
    int engine_fds;
    {
        Server probe;
        assert_int_equal(probe.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
        engine_fds = open_fds() - before;
    }
    int base = open_fds() + engine_fds;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    c.overload_fds = static_cast<uint32_t>((base + 30) * 10 / 8); // 80 % at base + 30
    c.idle_timeout_ms = 30000;
    Server s;
    assert_int_equal(s.start(c), 0);
    {
        Client warm = connect_to(s.port); // a pass, so the one sample is taken
        assert_true(send_all(warm, get("/fast")));
        assert_int_equal(read_response(warm).status, 200);
    }
    std::vector<Client> open;
    size_t at = clients_until_keepalive_off(s, open, 60);
    print_message("overload fds (%s, %s): mark %u from %d + %d, keep-alive off at %zu clients\n", rule ? "rule" : "arm",
                  test_backend_name(), c.overload_fds, base - engine_fds, engine_fds, at);
    if (!rule) {
        assert_int_equal(at, 0);
        assert_int_equal(s.metrics().overload_level, 0);
    } else {
        assert_true(at >= 20 && at <= 40); // 30 ± the warm-up's and the sample's jitter
        assert_true(s.metrics().overload_engaged >= 1);
        open.clear(); // they leave: their closes are taken off the reading
        int64_t deadline = now_ms() + bound_ms(5000);
        while (s.metrics().connections_open > 0 && now_ms() < deadline)
            sleep_ms(2);
        Client k = connect_to(s.port); // the re-read after its accept finds the level low
        assert_true(send_all(k, get("/fast")));
        Response r = read_response(k);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.header("Connection").c_str(), "");
        assert_int_equal(s.metrics().overload_level, 0);
    }
    loop_hooks().overload_fd_sample_ms = 0;
    loop_hooks().overload_skip_fd_drift = false;
}

void fds_flood_seen_between_samples(void **) { fds_reading_follows_accepts(true); }
void fds_flood_unseen_by_the_sample_alone(void **) { fds_reading_follows_accepts(false); }

} // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_action_engaged_and_released),
        cmocka_unit_test(flood_answered_then_recovers),
        cmocka_unit_test(without_the_manager_requests_queue),
        cmocka_unit_test(bad_watermarks_are_einval),
        cmocka_unit_test(fds_flood_seen_between_samples),
        cmocka_unit_test(fds_flood_unseen_by_the_sample_alone),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
