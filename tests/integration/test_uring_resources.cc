// io_uring's own resources (docs/uring.md), each with the arm that shows
// what the rule guards against. On epoll every case is a counted skip.
//
//   ring memory: a ring refused for memory (UringHooks::setup_enomem, as a
//     RLIMIT_MEMLOCK that cannot fund it on kernels that charge rings to it)
//     fails weir_engine_create with -ENOMEM and a log line that names
//     RLIMIT_MEMLOCK and how many workers it funds.
//   buffer-ring exhaustion: with 4 provided buffers, 40 connections that each
//     send a 20 KiB body while a handler parks the loop run the ring dry at
//     the loop's next enter (deterministic: all 40 recvs are ready at once
//     and 4 buffers are out after the first 4); every recv that finds it
//     empty (-ENOBUFS) is counted and re-armed once buffers come back; every
//     byte arrives (each body's checksum is echoed) and the loop does not spin.
//   the multishot accept ended by the kernel (UringHooks::end_accept, as a
//     full CQ ends it) is re-armed: connections made afterwards are served,
//     counted in uring_rearms. Without the re-arm no CQE would ever report
//     them again: they would wait forever, which this case would see.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "loop/engine.h"
#include "uring/uring_port.h"

#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

std::atomic<int> g_memlock_logs{0};

void log_fn(void *, int, const char *msg) {
    std::string m(msg);
    if (m.find("RLIMIT_MEMLOCK") != std::string::npos && m.find("workers") != std::string::npos)
        g_memlock_logs++;
}

// Answers with the sum of the body's bytes, so a lost or reordered byte shows.
void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    if (long ms = query_int(r, "block", 0); ms > 0)
        sleep_ms(static_cast<int>(ms)); // parks the loop while the others' bytes land
    unsigned long sum = 0;
    for (size_t i = 0; i < r->body.len; i++)
        sum = sum * 31 + static_cast<unsigned char>(r->body.ptr[i]);
    answer(ex, 200, std::to_string(r->body.len) + ":" + std::to_string(sum));
}

void need_uring() {
    if (test_backend() != WEIR_BACKEND_URING) {
        print_message("io_uring's own resources: nothing to test on %s\n", test_backend_name());
        skip();
    }
}

void test_ring_enomem_names_memlock(void **) {
    need_uring();
    weir_config c = config(2, WEIR_MODE_INLINE, handler, nullptr);
    c.log = log_fn;
    weir::uring_hooks().setup_enomem.store(true);
    weir_engine *e = nullptr;
    int rc = weir_engine_create(&c, &e); // not create(): its retry would wait out the hook
    weir::uring_hooks().setup_enomem.store(false);
    assert_int_equal(rc, -ENOMEM);
    assert_null(e);
    assert_int_equal(g_memlock_logs.load(), 1);
}

std::string body_of(int i, size_t n) {
    std::string b(n, 'a');
    for (size_t k = 0; k < n; k++)
        b[k] = static_cast<char>('a' + (k * 7 + static_cast<size_t>(i)) % 26);
    return b;
}

std::string expect_for(const std::string &b) {
    unsigned long sum = 0;
    for (unsigned char ch : b)
        sum = sum * 31 + ch;
    return std::to_string(b.size()) + ":" + std::to_string(sum);
}

void test_buffer_ring_exhaustion_rearms(void **) {
    need_uring();
    weir::uring_hooks().buffers.store(4);
    Server s;
    weir_config c = config(1, WEIR_MODE_INLINE, handler, nullptr);
    weir_http1_limits lim;
    weir_http1_limits_init(&lim);
    lim.max_body = 1 << 20;
    c.limits = &lim;
    int rc = s.start(c);
    weir::uring_hooks().buffers.store(0);
    assert_int_equal(rc, 0);
    constexpr int kConns = 40;
    constexpr size_t kBody = 20 * 1024;
    std::vector<Client> cl;
    for (int i = 0; i < kConns; i++)
        cl.push_back(connect_to(s.port));
    Client blocker = connect_to(s.port);
    assert_true(send_all(blocker, get("/?block=300")));
    sleep_ms(100); // the loop is in the handler now
    weir_metrics m0 = s.metrics();
    for (int i = 0; i < kConns; i++) {
        std::string b = body_of(i, kBody);
        assert_true(send_all(cl[i], "POST /sum HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(b.size()) +
                                        "\r\n\r\n" + b));
    }
    assert_int_equal(read_response(blocker).status, 200);
    for (int i = 0; i < kConns; i++) {
        Response r = read_response(cl[i]);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.body.c_str(), expect_for(body_of(i, kBody)).c_str());
    }
    weir_metrics m1 = s.metrics();
    print_message("4 buffers, %d x %zu B: %llu recvs found the ring empty, %llu re-arms, %llu passes\n", kConns, kBody,
                  static_cast<unsigned long long>(m1.uring_nobufs - m0.uring_nobufs),
                  static_cast<unsigned long long>(m1.uring_rearms - m0.uring_rearms),
                  static_cast<unsigned long long>(m1.loop_passes - m0.loop_passes));
    assert_true(m1.uring_nobufs > m0.uring_nobufs);  // the ring did run dry
    assert_true(m1.uring_rearms >= m1.uring_nobufs - m0.uring_nobufs); // and each was re-armed
    // No spin: a pass per completion batch, not thousands per request.
    assert_true(m1.loop_passes - m0.loop_passes < 40u * kConns);
    assert_int_equal(m1.uring_cq_overflows, 0);
}

void test_accept_ended_is_rearmed(void **) {
    need_uring();
    Server s;
    assert_int_equal(s.start(config(1, WEIR_MODE_INLINE, handler, nullptr)), 0);
    weir_metrics m0 = s.metrics();
    for (int round = 0; round < 3; round++) {
        weir::uring_hooks().end_accept.store(true);
        reinterpret_cast<weir::Engine *>(s.e)->worker(0)->wake();
        int64_t until = now_ms() + 2000;
        while (weir::uring_hooks().end_accept.load() && now_ms() < until)
            sleep_ms(1);
        assert_false(weir::uring_hooks().end_accept.load());
        sleep_ms(50); // the cancel's CQE ends the multishot accept
        for (int i = 0; i < 5; i++) {
            Client k = connect_to(s.port);
            assert_true(send_all(k, get("/")));
            assert_int_equal(read_response(k, 3000).status, 200);
        }
    }
    weir_metrics m1 = s.metrics();
    assert_true(m1.uring_rearms - m0.uring_rearms >= 3);
    assert_int_equal(m1.accepted - m0.accepted, 15);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_enomem_names_memlock),
        cmocka_unit_test(test_buffer_ring_exhaustion_rearms),
        cmocka_unit_test(test_accept_ended_is_rearmed),
    };
    return cmocka_run_group_tests_name("uring_resources", tests, nullptr, nullptr);
}
