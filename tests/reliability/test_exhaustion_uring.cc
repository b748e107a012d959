// Exhaustion: io_uring's own queues (issue 14), at the scale of a flood; on
// epoll there is no ring and no provided buffer, and both cases skip, saying so.
//   the provided-buffer ring runs dry: 8 buffers of 8 KiB per worker and 200
//     connections sending a 16 KiB body each, all at once. A recv that finds
//     the ring empty ends with -ENOBUFS; it is counted (uring_nobufs) and the
//     connection re-armed once half the ring is back: degraded (retried), not
//     lost. Every body arrives whole (its checksum is echoed), nothing is
//     closed by the server, and the loop does not spin.
//   the SQ fills: 8 SQEs per worker's ring and 200 open connections whose
//     requests come at once, so a pass queues more sends, and then closes,
//     than the SQ holds. The full SQ is submitted early (counted: uring_sq_full) and
//     every connection is served.
// tests/integration/test_uring_resources.cc holds the small case of the
// buffer ring (40 connections, 4 buffers) and the ring's own memory.
// The rule's mutants (checked by hand): the -ENOBUFS re-arm skipped
// (UringPort::rearm_nobufs), and a full SQ not submitted (UringPort::sqe
// returning the NULL of io_uring_get_sqe): connections are left unserved and
// these cases fail.
#include <string>
#include <vector>

#include "uring/uring_port.h"
#include "support/crowd.h"
#include "cmocka_cxx.h" // after the C++ headers: cmocka defines fail()
#include "support/net.h"

using namespace testnet;

namespace {

constexpr int kConns = 200;

void need_uring() {
    if (test_backend() != WEIR_BACKEND_URING) {
        print_message("io_uring's queues: no ring and no provided buffers on %s\n", test_backend_name());
        skip();
    }
}

// Answers with the body's length and a checksum, so a lost or reordered byte shows.
void handler(void *, weir_exchange *ex) {
    const weir_request *r = weir_exchange_request(ex);
    unsigned long sum = 0;
    for (size_t i = 0; i < r->body.len; i++)
        sum = sum * 31 + static_cast<unsigned char>(r->body.ptr[i]);
    answer(ex, 200, std::to_string(r->body.len) + ":" + std::to_string(sum));
}

std::string sum_of(const std::string &b) {
    unsigned long sum = 0;
    for (unsigned char ch : b)
        sum = sum * 31 + ch;
    return std::to_string(b.size()) + ":" + std::to_string(sum);
}

// Starts the server with the hooks set only while its rings are made.
int start_with(Server &s, weir_config c, uint32_t buffers, uint32_t sq) {
    weir::uring_hooks().buffers.store(buffers);
    weir::uring_hooks().sq_entries.store(sq);
    int rc = s.start(c);
    weir::uring_hooks().buffers.store(0);
    weir::uring_hooks().sq_entries.store(0);
    return rc;
}

void test_uring_buffer_ring_dry_under_flood(void **) {
    need_uring();
    Server s;
    weir_config c = config(2, WEIR_MODE_INLINE, handler, nullptr);
    assert_int_equal(start_with(s, c, 8, 0), 0);
    std::string body(16 * 1024, 'x');
    for (size_t k = 0; k < body.size(); k++)
        body[k] = static_cast<char>('a' + (k * 7) % 26);
    const std::string req =
        "POST /sum HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    Crowd crowd;
    assert_int_equal(crowd.connect_all(s.port, kConns, 5000), kConns);
    weir_metrics m0 = s.metrics();
    assert_int_equal(crowd.send_all(req, 10000), kConns);
    crowd.pump(10000, 2000, true);
    weir_metrics m1 = s.metrics();
    int right = 0;
    for (const Crowd::Peer &p : crowd.peers)
        right += p.answered && p.status == 200 && p.body == sum_of(body);
    print_message("8 buffers, %d x %zu B at once: %d answered right; %llu recvs found the ring empty, %llu re-arms, "
                  "%llu passes, closes by the server: resource %llu io_error %llu\n",
                  kConns, body.size(), right, static_cast<unsigned long long>(m1.uring_nobufs - m0.uring_nobufs),
                  static_cast<unsigned long long>(m1.uring_rearms - m0.uring_rearms),
                  static_cast<unsigned long long>(m1.loop_passes - m0.loop_passes),
                  static_cast<unsigned long long>(m1.closes[WEIR_CLOSE_RESOURCE]),
                  static_cast<unsigned long long>(m1.closes[WEIR_CLOSE_IO_ERROR]));
    assert_int_equal(right, kConns);
    assert_true(m1.uring_nobufs > m0.uring_nobufs);                     // the ring did run dry
    assert_true(m1.uring_rearms - m0.uring_rearms >= m1.uring_nobufs - m0.uring_nobufs); // each one retried
    assert_int_equal(m1.closes[WEIR_CLOSE_RESOURCE], 0);
    assert_int_equal(m1.closes[WEIR_CLOSE_IO_ERROR], 0);
    assert_int_equal(m1.uring_cq_overflows, 0);
    assert_int_equal(m1.uring_sq_full, 0); // the default SQ (1,024) holds a pass of 200 connections
    // No spin: passes follow completions (a few per connection), not the CPU.
    assert_true(m1.loop_passes - m0.loop_passes < 40u * kConns);
}

void test_uring_sq_full_under_flood(void **) {
    need_uring();
    Server s;
    weir_config c = config(2, WEIR_MODE_INLINE, handler, nullptr);
    assert_int_equal(start_with(s, c, 0, 8), 0);
    Crowd crowd;
    assert_int_equal(crowd.connect_all(s.port, kConns, 5000), kConns);
    // A first request each: admitted one by one by the accept batch, which
    // submits between admissions, so the SQ does not fill yet.
    assert_int_equal(crowd.send_all(get("/first")), kConns);
    crowd.pump(10000, 1000);
    assert_int_equal(crowd.count_answered(), kConns);
    for (Crowd::Peer &p : crowd.peers)
        p.answered = false, p.sent_ms = 0, p.status = 0;
    // Then all at once on open connections: one pass reads 200 requests and
    // queues 200 sends, then 200 closes, into an SQ of 8.
    weir_metrics m0 = s.metrics();
    assert_int_equal(crowd.send_all(get("/second")), kConns);
    crowd.pump(10000, 2000, true);
    weir_metrics m1 = s.metrics();
    int right = 0;
    for (const Crowd::Peer &p : crowd.peers)
        right += p.answered && p.status == 200;
    print_message("SQ of 8, %d requests at once: %d answered; the SQ was full %llu times; %llu enters in %llu "
                  "passes; closes by the server: resource %llu io_error %llu\n",
                  kConns, right, static_cast<unsigned long long>(m1.uring_sq_full - m0.uring_sq_full),
                  static_cast<unsigned long long>(m1.uring_enters - m0.uring_enters),
                  static_cast<unsigned long long>(m1.loop_passes - m0.loop_passes),
                  static_cast<unsigned long long>(m1.closes[WEIR_CLOSE_RESOURCE]),
                  static_cast<unsigned long long>(m1.closes[WEIR_CLOSE_IO_ERROR]));
    assert_int_equal(right, kConns);
    assert_true(m1.uring_sq_full > m0.uring_sq_full); // the SQ did fill, and was submitted early
    assert_int_equal(m1.closes[WEIR_CLOSE_RESOURCE], 0);
    assert_int_equal(m1.closes[WEIR_CLOSE_IO_ERROR], 0);
    assert_int_equal(m1.uring_cq_overflows, 0);
}

} // namespace

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uring_buffer_ring_dry_under_flood),
        cmocka_unit_test(test_uring_sq_full_under_flood),
    };
    return cmocka_run_group_tests_name("exhaustion_uring", tests, nullptr, nullptr);
}
