// DESIGN.md §7: no allocation on the steady request path. After warm-up, a
// worker serving keep-alive and pipelined requests (with bodies, chunked
// uploads and trailers) must not call malloc, calloc or realloc at all.
//
// The test binary interposes malloc & co. (support/malloc_probe.h) and counts
// only calls made on the worker's own thread, which the handler names on its
// first call. Under ASan the allocator belongs to the sanitizer, so the test
// skips there and runs in the plain pass.
#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "cmocka_cxx.h"
#include "support/malloc_probe.h"
#include "support/net.h"

using namespace testnet;

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_allocs{0};
thread_local bool tl_worker = false;

inline void note() {
    if (tl_worker && g_counting.load(std::memory_order_relaxed))
        g_allocs.fetch_add(1, std::memory_order_relaxed);
}
} // namespace

bool malloc_probe_allow() {
    note();
    return true;
}

namespace {

void handler(void *, weir_exchange *ex) {
    tl_worker = true;
    const weir_request *r = weir_exchange_request(ex);
    static const weir_header_t type = {{"Content-Type", 12}, {"text/plain", 10}};
    // Echo the body (or a fixed text) back: exercises the copy into the output.
    if (r->body.len)
        weir_respond(ex, 200, &type, 1, r->body.ptr, r->body.len, 0);
    else
        weir_respond(ex, 200, &type, 1, "Hello, World!", 13, 0);
}

// One round on every connection: a GET, a pipelined pair with a body and a
// chunked upload with a trailer, all answered and read back.
void round_trip(std::vector<Client> &cs) {
    const std::string pipe = get("/a") + "POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello" +
                             "PUT /c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n";
    for (Client &c : cs)
        assert_true(send_all(c, pipe));
    for (Client &c : cs)
        for (int i = 0; i < 3; i++)
            assert_int_equal(read_response(c).status, 200);
}

// Every connection sends part of a head and waits until the server holds it:
// each then holds a pooled state at the same time, whatever the timing of
// the passes, and completing the heads gives them all back.
void hold_all_at_once(Server &s, std::vector<Client> &cs) {
    const std::string part = "GET /held HTTP/1.1\r\nHo";
    uint64_t before = s.metrics().bytes_in;
    for (Client &c : cs)
        assert_true(send_all(c, part));
    int64_t until = now_ms() + 5000;
    while (s.metrics().bytes_in < before + part.size() * cs.size() && now_ms() < until)
        sleep_ms(1);
    assert_true(s.metrics().bytes_in >= before + part.size() * cs.size());
    for (Client &c : cs)
        assert_true(send_all(c, "st: t\r\n\r\n"));
    for (Client &c : cs)
        assert_int_equal(read_response(c).status, 200);
}

void test_steady_path_allocates_nothing(void **) {
#ifdef WEIR_NO_INTERPOSE
    skip();
#endif
    Server s;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    assert_int_equal(s.start(c), 0);
    std::vector<Client> cs;
    for (int i = 0; i < 8; i++)
        cs.push_back(connect_to(s.port));
    for (int i = 0; i < 50; i++) // warm-up: pools, buffers and timers reach their size
        round_trip(cs);
    hold_all_at_once(s, cs); // the pool holds a state for every connection
    round_trip(cs);
    g_allocs = 0;
    g_counting = true;
    for (int i = 0; i < 200; i++)
        round_trip(cs);
    g_counting = false;
    weir_metrics m = s.metrics();
    print_message("steady path: %llu allocations over %llu requests\n", (unsigned long long)g_allocs.load(),
                  (unsigned long long)m.requests);
    assert_true(m.requests >= 250 * 8 * 3);
    assert_int_equal(g_allocs.load(), 0);
}

// The arm that shows the probe sees allocations at all: forty new
// connections holding a state at once need forty new pooled states, so
// counting across them must not be zero.
void test_steady_probe_sees_allocations(void **) {
#ifdef WEIR_NO_INTERPOSE
    skip();
#endif
    Server s;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    assert_int_equal(s.start(c), 0);
    std::vector<Client> cs;
    cs.push_back(connect_to(s.port));
    round_trip(cs); // names the worker thread
    g_allocs = 0;
    g_counting = true;
    std::vector<Client> more;
    for (int i = 0; i < 40; i++)
        more.push_back(connect_to(s.port));
    hold_all_at_once(s, more);
    g_counting = false;
    assert_true(g_allocs.load() > 0);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steady_path_allocates_nothing),
        cmocka_unit_test(test_steady_probe_sees_allocations),
    };
    return cmocka_run_group_tests_name("steady_alloc", tests, nullptr, nullptr);
}
